//! `getServiceAuth` and app passwords over real HTTP: the token verifies
//! against the `#atproto` key of the account's DID document and carries
//! `iss`, `aud`, `exp`, `lxm`, `jti`; the reference's expiry bounds
//! (`BadExpiration`) and protected methods; app passwords log in, are
//! listed without their secret, cannot manage app passwords, and end
//! their sessions (access and refresh) when revoked.

mod support;

use data_encoding::BASE64URL_NOPAD as B64;
use repo::crypto::PublicKey;
use serde_json::{Value, json};
use support::{TestServer, start};

const GSA: &str = "/xrpc/com.atproto.server.getServiceAuth";
const CREATE_AP: &str = "/xrpc/com.atproto.server.createAppPassword";
const LIST_AP: &str = "/xrpc/com.atproto.server.listAppPasswords";
const REVOKE_AP: &str = "/xrpc/com.atproto.server.revokeAppPassword";
const SESSION: &str = "/xrpc/com.atproto.server.createSession";

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// The claims of `token` once its ES256K signature verifies against `key`.
fn verify(token: &str, key: &PublicKey) -> Result<Value, String> {
    let (signed, sig) = token.rsplit_once('.').ok_or("malformed")?;
    let (header, payload) = signed.split_once('.').ok_or("malformed")?;
    let header: Value = serde_json::from_slice(&B64.decode(header.as_bytes()).unwrap()).unwrap();
    assert_eq!(header, json!({"typ": "JWT", "alg": "ES256K"}));
    let sig = B64.decode(sig.as_bytes()).map_err(|e| e.to_string())?;
    key.verify(signed.as_bytes(), &sig)
        .map_err(|e| e.to_string())?;
    Ok(serde_json::from_slice(&B64.decode(payload.as_bytes()).unwrap()).unwrap())
}

/// The account's key from its DID document, as getSession gives it.
async fn doc_key(s: &TestServer, token: &str) -> PublicKey {
    let sess = s
        .get_auth("/xrpc/com.atproto.server.getSession", token)
        .await
        .ok_json();
    PublicKey::from_did_document(&sess["didDoc"]).unwrap()
}

#[tokio::test]
async fn service_auth_tokens_verify_against_the_did_document() {
    let s = start();
    let (did, token, _) = s.account("alice.test").await;
    let (_, bob_token, _) = s.account("bob.test").await;
    let key = doc_key(&s, &token).await;
    let exp = now() + 1800;
    let v = s
        .get_auth(
            &format!("{GSA}?aud=did:web:appview.test&lxm=app.bsky.feed.getTimeline&exp={exp}"),
            &token,
        )
        .await
        .ok_json();
    let jwt = v["token"].as_str().unwrap();
    let claims = verify(jwt, &key).unwrap();
    assert_eq!(claims["iss"], did.as_str());
    assert_eq!(claims["aud"], "did:web:appview.test");
    assert_eq!(claims["lxm"], "app.bsky.feed.getTimeline");
    assert_eq!(claims["exp"], exp);
    assert_eq!(claims["jti"].as_str().unwrap().len(), 32);
    // Another account's key does not verify it.
    let bob_key = doc_key(&s, &bob_token).await;
    assert!(verify(jwt, &bob_key).is_err());
    // A tampered payload does not verify.
    let mut parts: Vec<&str> = jwt.split('.').collect();
    let forged = B64.encode(
        serde_json::to_string(&json!({"iss": "did:plc:someoneelse", "aud": "x"}))
            .unwrap()
            .as_bytes(),
    );
    parts[1] = &forged;
    assert!(verify(&parts.join("."), &key).is_err());

    // Defaults: 60 s, no lxm; a fresh jti each time.
    let a = s
        .get_auth(&format!("{GSA}?aud=did:web:appview.test"), &token)
        .await
        .ok_json();
    let b = s
        .get_auth(&format!("{GSA}?aud=did:web:appview.test"), &token)
        .await
        .ok_json();
    let (ca, cb) = (
        verify(a["token"].as_str().unwrap(), &key).unwrap(),
        verify(b["token"].as_str().unwrap(), &key).unwrap(),
    );
    assert!(ca.get("lxm").is_none());
    let ttl = ca["exp"].as_i64().unwrap() - now();
    assert!((55..=61).contains(&ttl), "{ttl}");
    assert_ne!(ca["jti"], cb["jti"]);
}

#[tokio::test]
async fn service_auth_refusals_are_the_lexicons() {
    let s = start();
    let (_, token, _) = s.account("alice.test").await;
    let at = |q: String| {
        let token = token.clone();
        let s = &s;
        async move { s.get_auth(&format!("{GSA}?{q}"), &token).await }
    };
    let n = now();
    at(format!("aud=did:web:a.test&exp={}", n - 10))
        .await
        .expect_error(400, "BadExpiration");
    at(format!(
        "aud=did:web:a.test&lxm=app.bsky.feed.getTimeline&exp={}",
        n + 3700
    ))
    .await
    .expect_error(400, "BadExpiration");
    // A method-less token: a minute at most.
    at(format!("aud=did:web:a.test&exp={}", n + 600))
        .await
        .expect_error(400, "BadExpiration");
    let bad = at("aud=notadid".into()).await;
    bad.expect_error(400, "InvalidRequest");
    assert!(bad.json()["message"].as_str().unwrap().contains("aud"));
    let bad = at("lxm=app.bsky.feed.getTimeline".into()).await;
    bad.expect_error(400, "InvalidRequest");
    assert!(bad.json()["message"].as_str().unwrap().contains("aud"));
    let bad = at("aud=did:web:a.test&exp=soon".into()).await;
    bad.expect_error(400, "InvalidRequest");
    assert!(bad.json()["message"].as_str().unwrap().contains("exp"));
    let bad = at("aud=did:web:a.test&lxm=not%20an%20nsid".into()).await;
    bad.expect_error(400, "InvalidRequest");
    assert!(bad.json()["message"].as_str().unwrap().contains("lxm"));
    at("aud=did:web:a.test&lxm=com.atproto.server.createAppPassword".into())
        .await
        .expect_error(400, "InvalidRequest");
    s.get(&format!("{GSA}?aud=did:web:a.test"))
        .await
        .expect_error(401, "AuthRequired");
}

#[tokio::test]
async fn app_passwords_log_in_with_a_restricted_scope_and_end_when_revoked() {
    let s = start();
    let (did, full, _) = s.account("alice.test").await;
    let created = s
        .post(CREATE_AP, Some(&full), &json!({"name": "my client"}))
        .await
        .ok_json();
    let pass = created["password"].as_str().unwrap().to_owned();
    assert_eq!(pass.len(), 19, "{pass}");
    assert_eq!(created["name"], "my client");
    assert_eq!(created["privileged"], false);
    assert!(created["createdAt"].as_str().unwrap().ends_with('Z'));
    // Names are unique per account.
    s.post(CREATE_AP, Some(&full), &json!({"name": "my client"}))
        .await
        .expect_error(400, "InvalidRequest");
    let bad = s.post(CREATE_AP, Some(&full), &json!({"nam": "x"})).await;
    bad.expect_error(400, "InvalidRequest");
    assert!(bad.json()["message"].as_str().unwrap().contains("name"));
    s.post(CREATE_AP, Some(&full), &json!({"name": ""}))
        .await
        .expect_error(400, "InvalidRequest");
    s.post(CREATE_AP, None, &json!({"name": "x"}))
        .await
        .expect_error(401, "AuthRequired");

    // It logs in, as the handle, the email or the DID.
    let login = |id: String, pw: String| {
        let s = &s;
        async move {
            s.post(SESSION, None, &json!({"identifier": id, "password": pw}))
                .await
        }
    };
    let sess = login("alice.test".into(), pass.clone()).await.ok_json();
    assert_eq!(sess["did"], did.as_str());
    let ap_access = sess["accessJwt"].as_str().unwrap().to_owned();
    let ap_refresh = sess["refreshJwt"].as_str().unwrap().to_owned();
    login(did.clone(), pass.clone()).await.ok_json();
    // Not another account's, not a wrong one of the same shape.
    s.account("bob.test").await;
    login("bob.test".into(), pass.clone())
        .await
        .expect_error(401, "AuthenticationRequired");
    login("alice.test".into(), "aaaa-bbbb-cccc-dddd".into())
        .await
        .expect_error(401, "AuthenticationRequired");

    // The app-password session works for ordinary calls ...
    s.get_auth("/xrpc/com.atproto.server.getSession", &ap_access)
        .await
        .ok_json();
    s.post_record(&did, &ap_access, "from an app").await;
    let listed = s.get_auth(LIST_AP, &ap_access).await.ok_json();
    assert_eq!(
        listed["passwords"],
        json!([{"name": "my client", "createdAt": created["createdAt"], "privileged": false}])
    );
    assert!(!listed.to_string().contains(&pass));
    // ... but cannot manage app passwords nor ask for privileged methods.
    s.post(CREATE_AP, Some(&ap_access), &json!({"name": "another"}))
        .await
        .expect_error(401, "InvalidToken");
    s.post(REVOKE_AP, Some(&ap_access), &json!({"name": "my client"}))
        .await
        .expect_error(401, "InvalidToken");
    s.get_auth(
        &format!("{GSA}?aud=did:web:chat.test&lxm=chat.bsky.convo.listConvos"),
        &ap_access,
    )
    .await
    .expect_error(400, "InvalidRequest");
    s.get_auth(
        &format!("{GSA}?aud=did:web:chat.test&lxm=chat.bsky.convo.listConvos"),
        &full,
    )
    .await
    .ok_json();
    // A privileged app password may.
    let privileged = s
        .post(
            CREATE_AP,
            Some(&full),
            &json!({"name": "trusted", "privileged": true}),
        )
        .await
        .ok_json();
    assert_eq!(privileged["privileged"], true);
    let p_sess = login(
        "alice.test".into(),
        privileged["password"].as_str().unwrap().into(),
    )
    .await
    .ok_json();
    s.get_auth(
        &format!("{GSA}?aud=did:web:chat.test&lxm=chat.bsky.convo.listConvos"),
        p_sess["accessJwt"].as_str().unwrap(),
    )
    .await
    .ok_json();

    // Refreshing keeps the restricted scope.
    let refreshed = s
        .post(
            "/xrpc/com.atproto.server.refreshSession",
            Some(&ap_refresh),
            &json!({}),
        )
        .await
        .ok_json();
    let ap_access2 = refreshed["accessJwt"].as_str().unwrap().to_owned();
    let ap_refresh2 = refreshed["refreshJwt"].as_str().unwrap().to_owned();
    s.post(CREATE_AP, Some(&ap_access2), &json!({"name": "again"}))
        .await
        .expect_error(401, "InvalidToken");

    // Revoking ends its sessions at once; the other app password's and
    // the account password's go on.
    assert_eq!(
        s.post(REVOKE_AP, Some(&full), &json!({"name": "my client"}))
            .await
            .status,
        200
    );
    for t in [&ap_access, &ap_access2] {
        s.get_auth("/xrpc/com.atproto.server.getSession", t)
            .await
            .expect_error(401, "AuthRequired");
    }
    s.post(
        "/xrpc/com.atproto.server.refreshSession",
        Some(&ap_refresh2),
        &json!({}),
    )
    .await
    .expect_error(401, "AuthRequired");
    login("alice.test".into(), pass)
        .await
        .expect_error(401, "AuthenticationRequired");
    s.get_auth(
        "/xrpc/com.atproto.server.getSession",
        p_sess["accessJwt"].as_str().unwrap(),
    )
    .await
    .ok_json();
    let names: Vec<Value> = s.get_auth(LIST_AP, &full).await.ok_json()["passwords"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].clone())
        .collect();
    assert_eq!(names, [json!("trusted")]);
}
