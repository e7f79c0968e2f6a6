//! `/.well-known/did.json` over real HTTP.

mod support;

use support::start;

/// `/.well-known/did.json`: the server's did:web document names it as the
/// PDS service at its URL (same DID as describeServer).
#[tokio::test]
async fn the_servers_did_document() {
    let s = start();
    let doc = s.get("/.well-known/did.json").await.ok_json();
    let described = s
        .get("/xrpc/com.atproto.server.describeServer")
        .await
        .ok_json();
    assert_eq!(doc["id"], described["did"]);
    assert_eq!(doc["service"][0]["id"], "#atproto_pds");
    assert_eq!(doc["service"][0]["type"], "AtprotoPersonalDataServer");
    assert_eq!(doc["service"][0]["serviceEndpoint"], s.url.as_str());
}
