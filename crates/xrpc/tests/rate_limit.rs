//! Write points and rate limits (`ServerConfig::rate_limits`, the
//! reference PDS's semantics; issue 35 item 5): off by default; write
//! points per DID (create 3, update 2, delete 1, putRecord 2 even when it
//! creates, applyWrites the sum); the global per-IP limit; uploadBlob and
//! createSession limits; the `RateLimit-*` headers of the tightest limit;
//! 429 `RateLimitExceeded` with `Retry-After`; a refused write lands
//! nothing. Limits are set small so a test reaches them.

mod support;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::json;
use support::{Answer, TestServer, start_with};
use xrpc::{Limit, RateLimits};

fn limits(f: impl FnOnce(&mut RateLimits)) -> RateLimits {
    let mut l = RateLimits::reference();
    f(&mut l);
    l
}

fn header(a: &Answer, name: &str) -> Option<String> {
    a.headers.get(name).map(|v| v.to_str().unwrap().to_owned())
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Asserts the four `RateLimit-*` headers: limit, remaining, policy, and
/// a reset `window` seconds from now (give or take a second or two).
#[track_caller]
fn assert_limit(a: &Answer, limit: u32, remaining: u32, window: u64) {
    assert_eq!(header(a, "ratelimit-limit"), Some(limit.to_string()));
    assert_eq!(
        header(a, "ratelimit-remaining"),
        Some(remaining.to_string())
    );
    assert_eq!(
        header(a, "ratelimit-policy"),
        Some(format!("{limit};w={window}"))
    );
    let reset: u64 = header(a, "ratelimit-reset").unwrap().parse().unwrap();
    let now = now_secs();
    assert!(
        reset + 2 >= now + window && reset <= now + window,
        "reset {reset} is not about {window} s from {now}"
    );
}

async fn create(s: &TestServer, did: &str, tok: &str, rkey: &str) -> Answer {
    s.post(
        "/xrpc/com.atproto.repo.createRecord",
        Some(tok),
        &json!({"repo": did, "collection": "app.bsky.feed.post", "rkey": rkey,
            "record": {"$type": "app.bsky.feed.post", "text": "hi", "createdAt": "2024-01-01T00:00:00.000Z"}}),
    )
    .await
}

async fn count(s: &TestServer, did: &str) -> usize {
    s.get(&format!(
        "/xrpc/com.atproto.repo.listRecords?repo={did}&collection=app.bsky.feed.post&limit=100"
    ))
    .await
    .ok_json()["records"]
        .as_array()
        .unwrap()
        .len()
}

#[tokio::test]
async fn off_by_default_no_headers() {
    let s = start_with(|_| {});
    let (did, tok, _) = s.account("off.test").await;
    let a = create(&s, &did, &tok, "a1").await;
    assert_eq!(a.status, 200);
    assert!(header(&a, "ratelimit-limit").is_none());
    let a = s.get("/xrpc/com.atproto.server.describeServer").await;
    assert!(header(&a, "ratelimit-limit").is_none());
}

#[tokio::test]
async fn write_points_per_did_and_the_refusal() {
    let s = start_with(|c| {
        c.rate_limits = Some(limits(|l| l.writes_hour = Limit::per(10, 3600)));
    });
    let (did, tok, _) = s.account("points.test").await;
    // createRecord: 3 points.
    let a = create(&s, &did, &tok, "r1").await;
    assert_eq!(a.status, 200);
    assert_limit(&a, 10, 7, 3600);
    // putRecord of a new record: 2 points (an update's, even when it
    // creates).
    let a = s
        .post(
            "/xrpc/com.atproto.repo.putRecord",
            Some(&tok),
            &json!({"repo": did, "collection": "app.bsky.feed.post", "rkey": "r2",
                "record": {"$type": "app.bsky.feed.post", "text": "put", "createdAt": "2024-01-01T00:00:00.000Z"}}),
        )
        .await;
    assert_eq!(a.status, 200, "{:?}", a.body);
    assert_limit(&a, 10, 5, 3600);
    // deleteRecord: 1 point.
    let a = s
        .post(
            "/xrpc/com.atproto.repo.deleteRecord",
            Some(&tok),
            &json!({"repo": did, "collection": "app.bsky.feed.post", "rkey": "r2"}),
        )
        .await;
    assert_eq!(a.status, 200);
    assert_limit(&a, 10, 4, 3600);
    assert_eq!(count(&s, &did).await, 1);
    // applyWrites: create 3 + update 2 + delete 1 = 6 > 4 left: refused,
    // nothing lands.
    let a = s
        .post(
            "/xrpc/com.atproto.repo.applyWrites",
            Some(&tok),
            &json!({"repo": did, "writes": [
                {"$type": "com.atproto.repo.applyWrites#create", "collection": "app.bsky.feed.post", "rkey": "r3",
                 "value": {"$type": "app.bsky.feed.post", "text": "x", "createdAt": "2024-01-01T00:00:00.000Z"}},
                {"$type": "com.atproto.repo.applyWrites#update", "collection": "app.bsky.feed.post", "rkey": "r1",
                 "value": {"$type": "app.bsky.feed.post", "text": "y", "createdAt": "2024-01-01T00:00:00.000Z"}},
                {"$type": "com.atproto.repo.applyWrites#delete", "collection": "app.bsky.feed.post", "rkey": "r1"},
            ]}),
        )
        .await;
    a.expect_error(429, "RateLimitExceeded");
    assert_limit(&a, 10, 0, 3600);
    let retry: u64 = header(&a, "retry-after").unwrap().parse().unwrap();
    assert!((3598..=3600).contains(&retry), "Retry-After {retry}");
    assert_eq!(count(&s, &did).await, 1, "a refused applyWrites landed");
    // A refused charge still counts: the next delete (1 point) is refused
    // too.
    let a = s
        .post(
            "/xrpc/com.atproto.repo.deleteRecord",
            Some(&tok),
            &json!({"repo": did, "collection": "app.bsky.feed.post", "rkey": "r1"}),
        )
        .await;
    a.expect_error(429, "RateLimitExceeded");
    assert_eq!(count(&s, &did).await, 1);
    // Another account has its own points.
    let (did2, tok2, _) = s.account("other.test").await;
    let a = create(&s, &did2, &tok2, "o1").await;
    assert_eq!(a.status, 200);
    assert_limit(&a, 10, 7, 3600);
    // A request without a valid token is refused before any charge, and
    // carries no headers.
    let a = create(&s, &did2, "not-a-token", "o2").await;
    assert_eq!(a.status, 401);
    assert!(header(&a, "ratelimit-limit").is_none());
    let a = create(&s, &did2, &tok2, "o3").await;
    assert_limit(&a, 10, 4, 3600);
}

#[tokio::test]
async fn the_global_limit_per_ip_and_the_tightest_headers() {
    let s = start_with(|c| {
        c.rate_limits = Some(limits(|l| l.global = Limit::per(8, 60)));
    });
    // createAccount is a global-limited route: 1 of 8.
    let (did, tok, _) = s.account("global.test").await;
    // A write: its own limits (hour 5,000 left 4,997) beside the global
    // one (8 left 6): the headers are the tightest, the global's.
    let a = create(&s, &did, &tok, "g1").await;
    assert_eq!(a.status, 200);
    assert_limit(&a, 8, 6, 60);
    for left in (0..6).rev() {
        let a = s.get("/xrpc/com.atproto.server.describeServer").await;
        assert_eq!(a.status, 200);
        assert_limit(&a, 8, left, 60);
    }
    let a = s.get("/xrpc/com.atproto.server.describeServer").await;
    a.expect_error(429, "RateLimitExceeded");
    assert_limit(&a, 8, 0, 60);
    let retry: u64 = header(&a, "retry-after").unwrap().parse().unwrap();
    assert!((58..=60).contains(&retry), "Retry-After {retry}");
    // Refused writes too, by the global limit.
    let a = create(&s, &did, &tok, "g2").await;
    a.expect_error(429, "RateLimitExceeded");
    assert_limit(&a, 8, 0, 60);
    // Not limited: the health check, the root.
    let a = s.get("/xrpc/_health").await;
    assert_eq!(a.status, 200);
    assert!(header(&a, "ratelimit-limit").is_none());
}

#[tokio::test]
async fn a_window_ends_and_points_come_back() {
    let s = start_with(|c| {
        c.rate_limits = Some(limits(|l| l.global = Limit::per(2, 1)));
    });
    for left in [1, 0] {
        let a = s.get("/xrpc/com.atproto.server.describeServer").await;
        assert_eq!(a.status, 200);
        assert_eq!(header(&a, "ratelimit-remaining"), Some(left.to_string()));
    }
    let a = s.get("/xrpc/com.atproto.server.describeServer").await;
    a.expect_error(429, "RateLimitExceeded");
    assert_eq!(header(&a, "retry-after").as_deref(), Some("1"));
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let a = s.get("/xrpc/com.atproto.server.describeServer").await;
    assert_eq!(a.status, 200);
    assert_eq!(header(&a, "ratelimit-remaining").as_deref(), Some("1"));
}

#[tokio::test]
async fn upload_blob_and_create_session_limits() {
    let s = start_with(|c| {
        c.rate_limits = Some(limits(|l| {
            l.upload_blob = Limit::per(2, 86_400);
            l.session_short = Limit::per(3, 300);
        }));
    });
    let (_, tok, _) = s.account("blobs.test").await;
    let upload = || async {
        s.request(
            hyper::Method::POST,
            "/xrpc/com.atproto.repo.uploadBlob",
            &[
                ("content-type", "image/png"),
                ("authorization", &format!("Bearer {tok}")),
            ],
            bytes::Bytes::from_static(b"png bytes"),
        )
        .await
    };
    let a = upload().await;
    assert_eq!(a.status, 200);
    assert_limit(&a, 2, 1, 86_400);
    assert_limit(&upload().await, 2, 0, 86_400);
    let a = upload().await;
    a.expect_error(429, "RateLimitExceeded");
    assert_limit(&a, 2, 0, 86_400);
    // createSession: per identifier and IP, 3 per 5 minutes; the day's
    // 300 is looser, so the short window's headers show.
    let s = &s;
    let login = |id: &'static str, pw: &'static str| async move {
        s.post(
            "/xrpc/com.atproto.server.createSession",
            None,
            &json!({"identifier": id, "password": pw}),
        )
        .await
    };
    let a = login("blobs.test", "wrong").await;
    assert_eq!(a.status, 401);
    assert_limit(&a, 3, 2, 300);
    assert_eq!(login("blobs.test", "pw-").await.status, 200);
    assert_eq!(login("blobs.test", "wrong").await.status, 401);
    // The fourth, even with the right password, is refused.
    let a = login("blobs.test", "pw-").await;
    a.expect_error(429, "RateLimitExceeded");
    assert_limit(&a, 3, 0, 300);
    assert!(header(&a, "retry-after").is_some());
    // Another identifier from the same address has its own count.
    let a = login("nobody.test", "x").await;
    assert_eq!(a.status, 401);
    assert_limit(&a, 3, 2, 300);
}
