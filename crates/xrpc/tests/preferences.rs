//! `app.bsky.actor.getPreferences` / `putPreferences` over real HTTP: per
//! account, replaced whole by each put, kept across a restart, refused
//! without a token or outside the `app.bsky` namespace (the field named).

mod support;

use serde_json::json;
use support::{config, start};

const GET: &str = "/xrpc/app.bsky.actor.getPreferences";
const PUT: &str = "/xrpc/app.bsky.actor.putPreferences";

#[tokio::test]
async fn preferences_are_per_account_replaced_whole_and_survive_a_restart() {
    let mut s = start();
    let (_, alice, _) = s.account("alice.test").await;
    let (_, bob, _) = s.account("bob.test").await;
    assert_eq!(
        s.get_auth(GET, &alice).await.ok_json(),
        json!({"preferences": []})
    );

    let first = json!([
        {"$type": "app.bsky.actor.defs#adultContentPref", "enabled": true},
        {"$type": "app.bsky.actor.defs#contentLabelPref", "label": "nsfw", "visibility": "warn"},
    ]);
    let put = s
        .post(PUT, Some(&alice), &json!({"preferences": first}))
        .await;
    assert_eq!(put.status, 200, "{:?}", put.body);
    assert_eq!(
        s.get_auth(GET, &alice).await.ok_json()["preferences"],
        first
    );
    assert_eq!(
        s.get_auth(GET, &bob).await.ok_json()["preferences"],
        json!([])
    );

    let second = json!([{"$type": "app.bsky.actor.defs#adultContentPref", "enabled": false}]);
    let put = s
        .post(PUT, Some(&alice), &json!({"preferences": second}))
        .await;
    assert_eq!(put.status, 200);
    assert_eq!(
        s.get_auth(GET, &alice).await.ok_json()["preferences"],
        second
    );

    // A restart on the same files keeps them.
    s.shutdown();
    let again = xrpc::spawn(config(&s.dir)).unwrap();
    s.url = again.url();
    s.server = Some(again);
    assert_eq!(
        s.get_auth(GET, &alice).await.ok_json()["preferences"],
        second
    );
}

#[tokio::test]
async fn preferences_refusals() {
    let s = start();
    let (_, alice, _) = s.account("alice.test").await;
    s.get(GET).await.expect_error(401, "AuthRequired");
    s.post(PUT, None, &json!({"preferences": []}))
        .await
        .expect_error(401, "AuthRequired");
    s.post(GET, Some(&alice), &json!({}))
        .await
        .expect_error(405, "InvalidRequest");
    for (body, field) in [
        (json!({}), "preferences"),
        (json!({"preferences": {"a": 1}}), "preferences"),
        (
            json!({"preferences": [{"enabled": true}]}),
            "preferences[0].$type",
        ),
        (
            json!({"preferences": [{"$type": "com.example.pref"}]}),
            "preferences[0].$type",
        ),
    ] {
        let a = s.post(PUT, Some(&alice), &body).await;
        a.expect_error(400, "InvalidRequest");
        assert!(
            a.json()["message"]
                .as_str()
                .unwrap_or_default()
                .contains(field),
            "{body}: {}",
            a.error()
        );
    }
    // Nothing refused was stored.
    assert_eq!(
        s.get_auth(GET, &alice).await.ok_json()["preferences"],
        json!([])
    );
}
