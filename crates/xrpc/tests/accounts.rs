//! Accounts, sessions and auth refusals over real HTTP.

mod support;

use serde_json::json;
use support::{start, start_with};

#[tokio::test]
async fn health_describe_and_unknown_routes() {
    let s = start();
    let h = s.get("/xrpc/_health").await.ok_json();
    assert!(h["version"].is_string());
    let d = s
        .get("/xrpc/com.atproto.server.describeServer")
        .await
        .ok_json();
    assert_eq!(d["did"], "did:web:localhost");
    assert_eq!(d["blobUploadLimit"], 5 << 20);
    assert!(d["availableUserDomains"].is_array());
    s.get("/xrpc/com.example.nothing")
        .await
        .expect_error(501, "MethodNotImplemented");
    s.get("/nothing").await.expect_error(404, "NotFound");
    s.post("/xrpc/com.atproto.server.describeServer", None, &json!({}))
        .await
        .expect_error(405, "InvalidRequest");
    s.get("/xrpc/com.atproto.server.createSession")
        .await
        .expect_error(405, "InvalidRequest");
}

#[tokio::test]
async fn create_account_and_its_refusals() {
    let s = start();
    let created = s
        .post(
            "/xrpc/com.atproto.server.createAccount",
            None,
            &json!({"handle": "Alice.Test", "password": "hunter2"}),
        )
        .await
        .ok_json();
    let did = created["did"].as_str().unwrap();
    assert!(did.starts_with("did:plc:") && did.len() == 32, "{did}");
    assert_eq!(created["handle"], "alice.test");
    assert!(created["accessJwt"].is_string() && created["refreshJwt"].is_string());
    assert_eq!(created["didDoc"]["id"], did);
    assert_eq!(created["didDoc"]["service"][0]["serviceEndpoint"], s.url);
    let create = |body: serde_json::Value| {
        let s = &s;
        async move {
            s.post("/xrpc/com.atproto.server.createAccount", None, &body)
                .await
        }
    };
    create(json!({"handle": "alice.test", "password": "x"}))
        .await
        .expect_error(400, "HandleNotAvailable");
    create(json!({"handle": "not a handle", "password": "x"}))
        .await
        .expect_error(400, "InvalidHandle");
    create(json!({"handle": "bob.localhost", "password": "x"}))
        .await
        .expect_error(400, "InvalidHandle");
    create(json!({"handle": "bob.test"}))
        .await
        .expect_error(400, "InvalidPassword");
    create(json!({"password": "x"}))
        .await
        .expect_error(400, "InvalidRequest");
    s.request(
        hyper::Method::POST,
        "/xrpc/com.atproto.server.createAccount",
        &[("content-type", "application/json")],
        bytes::Bytes::from_static(b"{not json"),
    )
    .await
    .expect_error(400, "InvalidRequest");
    // The handle resolves; the repository exists and is empty.
    let r = s
        .get("/xrpc/com.atproto.identity.resolveHandle?handle=alice.test")
        .await
        .ok_json();
    assert_eq!(r["did"], did);
    s.get("/xrpc/com.atproto.identity.resolveHandle?handle=nobody.test")
        .await
        .expect_error(400, "HandleNotFound");
    s.get("/xrpc/com.atproto.identity.resolveHandle?handle=-bad-")
        .await
        .expect_error(400, "InvalidRequest");
    s.get("/xrpc/com.atproto.identity.resolveHandle")
        .await
        .expect_error(400, "InvalidRequest");
    let wk = s
        .request(
            hyper::Method::GET,
            "/.well-known/atproto-did",
            &[("host", "alice.test")],
            bytes::Bytes::new(),
        )
        .await;
    assert_eq!((wk.status.as_u16(), &wk.body[..]), (200, did.as_bytes()));
    s.get("/.well-known/atproto-did")
        .await
        .expect_error(404, "NotFound");
}

#[tokio::test]
async fn sessions_login_refresh_rotate_and_delete() {
    let s = start();
    let (did, access, refresh) = s.account("carol.test").await;
    let login = |id: &str, pw: &str| {
        let body = json!({"identifier": id, "password": pw});
        let s = &s;
        async move {
            s.post("/xrpc/com.atproto.server.createSession", None, &body)
                .await
        }
    };
    let v = login("carol.test", "pw-").await.ok_json();
    assert_eq!(v["did"], did);
    login(&did, "pw-").await.ok_json();
    login("carol.test@example.com", "pw-").await.ok_json();
    login("carol.test", "wrong")
        .await
        .expect_error(401, "AuthenticationRequired");
    login("nobody.test", "pw-")
        .await
        .expect_error(401, "AuthenticationRequired");

    let me = s
        .get_auth("/xrpc/com.atproto.server.getSession", &access)
        .await
        .ok_json();
    assert_eq!(
        (me["did"].as_str(), me["handle"].as_str()),
        (Some(did.as_str()), Some("carol.test"))
    );
    s.get("/xrpc/com.atproto.server.getSession")
        .await
        .expect_error(401, "AuthRequired");
    s.get_auth("/xrpc/com.atproto.server.getSession", "garbage")
        .await
        .expect_error(401, "AuthRequired");
    // A refresh token is not an access token, nor the reverse.
    s.get_auth("/xrpc/com.atproto.server.getSession", &refresh)
        .await
        .expect_error(401, "AuthRequired");
    s.post(
        "/xrpc/com.atproto.server.refreshSession",
        Some(&access),
        &json!({}),
    )
    .await
    .expect_error(401, "AuthRequired");

    let r = s
        .post(
            "/xrpc/com.atproto.server.refreshSession",
            Some(&refresh),
            &json!({}),
        )
        .await
        .ok_json();
    let refresh2 = r["refreshJwt"].as_str().unwrap().to_owned();
    assert_ne!(refresh2, refresh);
    s.get_auth(
        "/xrpc/com.atproto.server.getSession",
        r["accessJwt"].as_str().unwrap(),
    )
    .await
    .ok_json();
    // Rotation: the old refresh token is spent.
    s.post(
        "/xrpc/com.atproto.server.refreshSession",
        Some(&refresh),
        &json!({}),
    )
    .await
    .expect_error(400, "ExpiredToken");
    let del = s
        .post(
            "/xrpc/com.atproto.server.deleteSession",
            Some(&refresh2),
            &json!({}),
        )
        .await;
    assert_eq!(del.status, 200);
    s.post(
        "/xrpc/com.atproto.server.refreshSession",
        Some(&refresh2),
        &json!({}),
    )
    .await
    .expect_error(400, "ExpiredToken");
}

#[tokio::test]
async fn expired_access_token_is_400_expired_token() {
    let s = start_with(|c| c.access_ttl = std::time::Duration::ZERO);
    let (did, access, _) = s.account("dave.test").await;
    s.get_auth("/xrpc/com.atproto.server.getSession", &access)
        .await
        .expect_error(400, "ExpiredToken");
    let w = s
        .post(
            "/xrpc/com.atproto.repo.createRecord",
            Some(&access),
            &json!({"repo": did, "collection": "app.bsky.feed.post", "record": {"text": "x"}}),
        )
        .await;
    w.expect_error(400, "ExpiredToken");
}

#[tokio::test]
async fn writes_need_a_token_of_the_repo_owner() {
    let s = start();
    let (_, a_tok, _) = s.account("a.test").await;
    let (b, b_tok, _) = s.account("b.test").await;
    let rec = |repo: &str| json!({"repo": repo, "collection": "app.bsky.feed.post", "record": {"text": "hi"}});
    let latest = format!("/xrpc/com.atproto.sync.getLatestCommit?did={b}");
    // B's head before any refused write: every refusal below must leave it.
    let head_before = s.get(&latest).await.ok_json();
    s.post("/xrpc/com.atproto.repo.createRecord", None, &rec(&b))
        .await
        .expect_error(401, "AuthRequired");
    s.post(
        "/xrpc/com.atproto.repo.createRecord",
        Some(&a_tok),
        &rec(&b),
    )
    .await
    .expect_error(403, "Forbidden");
    s.post(
        "/xrpc/com.atproto.repo.createRecord",
        Some(&a_tok),
        &rec("b.test"),
    )
    .await
    .expect_error(403, "Forbidden");
    let put = json!({"repo": b, "collection": "app.bsky.feed.post", "rkey": "x", "record": {"text": "hi"}});
    s.post("/xrpc/com.atproto.repo.putRecord", Some(&a_tok), &put)
        .await
        .expect_error(403, "Forbidden");
    let del = json!({"repo": b, "collection": "app.bsky.feed.post", "rkey": "x"});
    s.post("/xrpc/com.atproto.repo.deleteRecord", Some(&a_tok), &del)
        .await
        .expect_error(403, "Forbidden");
    let batch = json!({"repo": b, "writes": [{"$type": "com.atproto.repo.applyWrites#create", "collection": "app.bsky.feed.post", "value": {"text": "x"}}]});
    s.post("/xrpc/com.atproto.repo.applyWrites", Some(&a_tok), &batch)
        .await
        .expect_error(403, "Forbidden");
    s.request(
        hyper::Method::POST,
        "/xrpc/com.atproto.repo.uploadBlob",
        &[("content-type", "text/plain")],
        bytes::Bytes::from_static(b"x"),
    )
    .await
    .expect_error(401, "AuthRequired");
    // Nothing was written to B.
    let listed = s
        .get(&format!(
            "/xrpc/com.atproto.repo.listRecords?repo={b}&collection=app.bsky.feed.post"
        ))
        .await
        .ok_json();
    assert_eq!(listed["records"].as_array().unwrap().len(), 0);
    assert_eq!(s.get(&latest).await.ok_json(), head_before);
    // B's own token works, and moves the head.
    s.post(
        "/xrpc/com.atproto.repo.createRecord",
        Some(&b_tok),
        &rec(&b),
    )
    .await
    .ok_json();
    let head_after = s.get(&latest).await.ok_json();
    assert_ne!(head_after["cid"], head_before["cid"]);
    assert_ne!(head_after["rev"], head_before["rev"]);
}

type Seen = std::sync::Arc<std::sync::Mutex<Vec<(String, serde_json::Value)>>>;

/// A PLC directory stand-in: records each POST (path, JSON body) and
/// answers `status`.
async fn fake_plc(status: u16) -> (String, Seen) {
    fake_plc_slow(status, usize::MAX, std::time::Duration::ZERO).await
}

/// [`fake_plc`] that answers the POSTs from the `slow_from`-th on (0 the
/// first) only after `delay` (recorded at once).
async fn fake_plc_slow(
    status: u16,
    slow_from: usize,
    delay: std::time::Duration,
) -> (String, Seen) {
    use http_body_util::BodyExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let seen = seen2.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(
                    move |req: hyper::Request<hyper::body::Incoming>| {
                        let seen = seen.clone();
                        async move {
                            let path = req.uri().path().to_owned();
                            let body = req.into_body().collect().await.unwrap().to_bytes();
                            let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
                            let n = {
                                let mut seen = seen.lock().unwrap();
                                seen.push((path, v));
                                seen.len() - 1
                            };
                            if n >= slow_from {
                                tokio::time::sleep(delay).await;
                            }
                            let mut r = hyper::Response::new(http_body_util::Full::new(
                                bytes::Bytes::from_static(b"{}"),
                            ));
                            *r.status_mut() = hyper::StatusCode::from_u16(status).unwrap();
                            Ok::<_, std::convert::Infallible>(r)
                        }
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    (url, seen)
}

#[tokio::test]
async fn genesis_operation_is_submitted_to_the_plc_directory() {
    let (plc, seen) = fake_plc(200).await;
    let s = start_with(|c| c.plc_url = Some(plc.clone()));
    let (did, _, _) = s.account("plc.test").await;
    let ops = seen.lock().unwrap().clone();
    assert_eq!(ops.len(), 1);
    let (path, op) = &ops[0];
    assert_eq!(path, &format!("/{did}"));
    assert_eq!(op["type"], "plc_operation");
    assert_eq!(op["prev"], serde_json::Value::Null);
    assert_eq!(op["alsoKnownAs"], json!(["at://plc.test"]));
    assert_eq!(op["services"]["atproto_pds"]["endpoint"], s.url);
    // The DID is the hash of the signed operation (what a directory
    // recomputes), and the signature verifies with the rotation key.
    let signed = repo::cbor::to_vec(&repo::cbor::json::from_json_value(op).unwrap());
    let hash = <sha2::Sha256 as sha2::Digest>::digest(&signed);
    let b32 = data_encoding::BASE32_NOPAD
        .encode(&hash)
        .to_ascii_lowercase();
    assert_eq!(&did["did:plc:".len()..], &b32[..24]);
    let mut unsigned = op.clone();
    let sig = unsigned.as_object_mut().unwrap().remove("sig").unwrap();
    let sig = data_encoding::BASE64URL_NOPAD
        .decode(sig.as_str().unwrap().as_bytes())
        .unwrap();
    let rot =
        repo::crypto::PublicKey::from_did_key(op["rotationKeys"][0].as_str().unwrap()).unwrap();
    rot.verify(
        &repo::cbor::to_vec(&repo::cbor::json::from_json_value(&unsigned).unwrap()),
        &sig,
    )
    .unwrap();
    // The verification method is the key the repository is signed with.
    let key = op["verificationMethods"]["atproto"].as_str().unwrap();
    let doc = s
        .get(&format!("/xrpc/com.atproto.repo.describeRepo?repo={did}"))
        .await
        .ok_json();
    assert_eq!(
        doc["didDoc"]["verificationMethod"][0]["publicKeyMultibase"],
        key.trim_start_matches("did:key:")
    );
}

#[tokio::test]
async fn a_refusing_plc_directory_fails_the_account_and_frees_the_handle() {
    let (plc, _) = fake_plc(400).await;
    let s = start_with(|c| c.plc_url = Some(plc));
    let body = json!({"handle": "refused.test", "password": "x"});
    s.post("/xrpc/com.atproto.server.createAccount", None, &body)
        .await
        .expect_error(502, "UpstreamFailure");
    s.get("/xrpc/com.atproto.identity.resolveHandle?handle=refused.test")
        .await
        .expect_error(400, "HandleNotFound");
    let repos = s.get("/xrpc/com.atproto.sync.listRepos").await.ok_json();
    assert_eq!(repos["repos"], json!([]));
    // Unreachable directory: the same.
    let s2 = start_with(|c| c.plc_url = Some("http://127.0.0.1:1".into()));
    s2.post("/xrpc/com.atproto.server.createAccount", None, &body)
        .await
        .expect_error(502, "UpstreamFailure");
}

/// The password-hash permit covers the hash only: a createAccount waiting
/// on a slow PLC directory does not hold up a login (one permit:
/// read_threads = 1). Before, createAccount kept it through the PLC
/// submission, and the login waited the directory's delay out.
#[tokio::test]
async fn a_slow_plc_directory_does_not_hold_up_logins() {
    let delay = std::time::Duration::from_secs(4);
    let (plc, seen) = fake_plc_slow(200, 1, delay).await;
    let s = start_with(|c| {
        c.plc_url = Some(plc);
        c.read_threads = 1;
    });
    s.account("fast.test").await;
    let slow = json!({"handle": "slow.test", "password": "pw-"});
    let login = json!({"identifier": "fast.test", "password": "pw-"});
    let (created, (logged_in, took)) = tokio::join!(
        s.post("/xrpc/com.atproto.server.createAccount", None, &slow),
        async {
            // Once the slow account's operation reached the directory, its
            // password hash is done and its submission is waiting.
            while seen.lock().unwrap().len() < 2 {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            let t = std::time::Instant::now();
            let a = s
                .post("/xrpc/com.atproto.server.createSession", None, &login)
                .await;
            (a, t.elapsed())
        }
    );
    created.ok_json();
    logged_in.ok_json();
    assert!(
        took < delay / 2,
        "the login waited {took:?} behind a PLC submission"
    );
}
