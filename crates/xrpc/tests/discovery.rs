//! The OAuth discovery documents (truthful: no grant), CORS as the
//! reference answers it, `checkAccountStatus` and `sync.getBlocks` over
//! real HTTP.

mod support;

use bytes::Bytes;
use hyper::Method;
use repo::Cid;
use repo::car::CarReader;
use serde_json::json;
use support::start;

#[tokio::test]
async fn oauth_documents_say_no_grant_is_supported() {
    let s = start();
    let pr = s
        .get("/.well-known/oauth-protected-resource")
        .await
        .ok_json();
    assert_eq!(pr["resource"], s.url.as_str());
    assert_eq!(pr["authorization_servers"], json!([s.url]));
    assert_eq!(pr["bearer_methods_supported"], json!(["header"]));
    let asm = s
        .get("/.well-known/oauth-authorization-server")
        .await
        .ok_json();
    assert_eq!(asm["issuer"], s.url.as_str());
    for list in [
        "grant_types_supported",
        "response_types_supported",
        "scopes_supported",
        "token_endpoint_auth_methods_supported",
    ] {
        assert_eq!(asm[list], json!([]), "{list}");
    }
    assert!(asm.get("token_endpoint").is_none());
    assert!(asm.get("authorization_endpoint").is_none());
    let jwks_uri = asm["jwks_uri"].as_str().unwrap();
    let path = jwks_uri.strip_prefix(&s.url).unwrap();
    assert_eq!(s.get(path).await.ok_json(), json!({"keys": []}));
}

#[tokio::test]
async fn cors_preflight_and_answers() {
    let s = start();
    let pre = s
        .request(
            Method::OPTIONS,
            "/xrpc/com.atproto.repo.createRecord",
            &[
                ("origin", "https://app.example"),
                ("access-control-request-method", "POST"),
                (
                    "access-control-request-headers",
                    "authorization,content-type,atproto-proxy",
                ),
            ],
            Bytes::new(),
        )
        .await;
    assert_eq!(pre.status, 204);
    let h = |a: &support::Answer, k: &str| {
        a.headers
            .get(k)
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default()
    };
    assert_eq!(h(&pre, "access-control-allow-origin"), "*");
    assert!(h(&pre, "access-control-allow-methods").contains("POST"));
    assert_eq!(
        h(&pre, "access-control-allow-headers"),
        "authorization,content-type,atproto-proxy"
    );
    assert_eq!(h(&pre, "access-control-max-age"), "86400");
    assert!(pre.body.is_empty());
    // Answers, errors included, carry the origin and the exposed headers.
    for a in [
        s.get("/xrpc/_health").await,
        s.get("/xrpc/com.atproto.server.getSession").await,
        s.get("/xrpc/no.such.method").await,
    ] {
        assert_eq!(h(&a, "access-control-allow-origin"), "*");
        assert!(h(&a, "access-control-expose-headers").contains("RateLimit-Remaining"));
    }
}

#[tokio::test]
async fn check_account_status_counts_the_repository() {
    let s = start();
    let (did, token, _) = s.account("alice.test").await;
    let before = s
        .get_auth("/xrpc/com.atproto.server.checkAccountStatus", &token)
        .await
        .ok_json();
    assert_eq!(before["activated"], true);
    // No PLC directory configured: the did:plc resolves nowhere.
    assert_eq!(before["validDid"], false);
    assert_eq!(before["indexedRecords"], 0);
    s.post_record(&did, &token, "one").await;
    s.post_record(&did, &token, "two").await;
    let after = s
        .get_auth("/xrpc/com.atproto.server.checkAccountStatus", &token)
        .await
        .ok_json();
    assert_eq!(after["indexedRecords"], 2);
    assert!(after["repoBlocks"].as_u64().unwrap() >= 4, "{after}");
    let latest = s
        .get(&format!("/xrpc/com.atproto.sync.getLatestCommit?did={did}"))
        .await
        .ok_json();
    assert_eq!(after["repoCommit"], latest["cid"]);
    assert_eq!(after["repoRev"], latest["rev"]);
    assert_eq!(after["expectedBlobs"], 0);
    s.get("/xrpc/com.atproto.server.checkAccountStatus")
        .await
        .expect_error(401, "AuthRequired");
}

#[tokio::test]
async fn get_blocks_answers_a_car_of_the_named_blocks() {
    let s = start();
    let (did, token, _) = s.account("alice.test").await;
    let (_, rec) = s.post_record(&did, &token, "hello").await;
    let commit = s
        .get(&format!("/xrpc/com.atproto.sync.getLatestCommit?did={did}"))
        .await
        .ok_json()["cid"]
        .as_str()
        .unwrap()
        .to_owned();
    let a = s
        .get(&format!(
            "/xrpc/com.atproto.sync.getBlocks?did={did}&cids={commit}&cids={rec}"
        ))
        .await;
    assert_eq!(a.status, 200, "{:?}", a.body);
    assert_eq!(
        a.headers.get("content-type").unwrap(),
        "application/vnd.ipld.car"
    );
    let mut car = CarReader::new(&a.body[..]).unwrap().verify(true);
    assert!(car.roots().is_empty());
    let mut got = Vec::new();
    while let Some((cid, _)) = car.next_block().unwrap() {
        got.push(cid.to_string());
    }
    assert_eq!(got, [commit.clone(), rec.clone()]);
    // Every block of a record's proof (commit, MST nodes, record) comes
    // back from getBlocks, byte for byte.
    let rkey = s
        .get(&format!(
            "/xrpc/com.atproto.repo.listRecords?repo={did}&collection=app.bsky.feed.post"
        ))
        .await
        .ok_json()["records"][0]["uri"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned();
    let proof = s
        .get(&format!(
            "/xrpc/com.atproto.sync.getRecord?did={did}&collection=app.bsky.feed.post&rkey={rkey}"
        ))
        .await;
    let mut proof_car = CarReader::new(&proof.body[..]).unwrap();
    let mut want = Vec::new();
    while let Some((cid, bytes)) = proof_car.next_block().unwrap() {
        want.push((cid, bytes));
    }
    assert!(want.len() >= 3);
    let q: Vec<String> = want.iter().map(|(c, _)| format!("cids={c}")).collect();
    let a = s
        .get(&format!(
            "/xrpc/com.atproto.sync.getBlocks?did={did}&{}",
            q.join("&")
        ))
        .await;
    let mut car = CarReader::new(&a.body[..]).unwrap().verify(true);
    for (cid, bytes) in &want {
        assert_eq!(
            car.next_block().unwrap().as_ref(),
            Some(&(*cid, bytes.clone()))
        );
    }
    assert!(car.next_block().unwrap().is_none());
    let _: Option<Cid> = None;

    // A CID the repository does not hold: BlockNotFound naming it.
    let other = "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm";
    let e = s
        .get(&format!(
            "/xrpc/com.atproto.sync.getBlocks?did={did}&cids={rec}&cids={other}"
        ))
        .await;
    e.expect_error(400, "BlockNotFound");
    assert!(e.json()["message"].as_str().unwrap().contains(other));
    s.get(&format!(
        "/xrpc/com.atproto.sync.getBlocks?did=did:plc:nobodyhere&cids={rec}"
    ))
    .await
    .expect_error(400, "RepoNotFound");
    for (q, field) in [
        (format!("did={did}"), "cids"),
        (format!("did={did}&cids=notacid"), "cids"),
        (format!("cids={rec}"), "did"),
    ] {
        let e = s
            .get(&format!("/xrpc/com.atproto.sync.getBlocks?{q}"))
            .await;
        e.expect_error(400, "InvalidRequest");
        assert!(e.json()["message"].as_str().unwrap().contains(field), "{q}");
    }
}
