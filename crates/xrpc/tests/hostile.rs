//! atpds under slow and hostile clients (issue 34): what a client learns
//! from timing, what it can make the server store, and the bounds on what
//! it can make the server hold.

mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::start_with;

const POST: &str = "app.bsky.feed.post";

/// A POST of raw `body` bytes with `tok`'s authorization.
async fn post_raw(
    s: &support::TestServer,
    path: &str,
    content_type: &str,
    tok: &str,
    body: impl Into<bytes::Bytes>,
) -> support::Answer {
    let auth = format!("Bearer {tok}");
    s.request(
        hyper::Method::POST,
        path,
        &[("content-type", content_type), ("authorization", &auth)],
        body.into(),
    )
    .await
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[tokio::test]
async fn login_takes_one_scrypt_whether_or_not_the_account_exists() {
    // The reference cost: each check of a password is one scrypt at
    // N = 2^14 (16 MiB), tens of milliseconds, against well under one for
    // an identifier lookup alone.
    let s = start_with(|c| c.scrypt_log_n = 14);
    s.account("known.test").await;
    let login = |identifier: &'static str| {
        let s = &s;
        async move {
            let t = Instant::now();
            s.post(
                "/xrpc/com.atproto.server.createSession",
                None,
                &json!({"identifier": identifier, "password": "wrong"}),
            )
            .await
            .expect_error(401, "AuthenticationRequired");
            t.elapsed()
        }
    };
    let (mut unknown, mut wrong) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        unknown.push(login("nobody.test").await);
        wrong.push(login("known.test").await);
    }
    let (unknown, wrong) = (median(unknown), median(wrong));
    // Without the dummy hash the unknown identifier answers in a small
    // fraction of the wrong password's time.
    assert!(
        unknown * 2 >= wrong,
        "unknown identifier {unknown:?} vs wrong password {wrong:?}"
    );
}

#[tokio::test]
async fn an_integer_outside_i64_is_refused_naming_the_field() {
    let s = start_with(|_| {});
    let (did, tok, _) = s.account("ints.test").await;
    let body = format!(
        r#"{{"repo":"{did}","collection":"{POST}","record":{{"$type":"{POST}","text":"x","count":-9223372036854775809}}}}"#
    );
    let a = post_raw(
        &s,
        "/xrpc/com.atproto.repo.createRecord",
        "application/json",
        &tok,
        body,
    )
    .await;
    a.expect_error(400, "InvalidRequest");
    let message = a.json()["message"].as_str().unwrap().to_owned();
    assert!(message.contains("/count"), "{message}");
    // The edges of the range go in and come back unchanged.
    for n in ["-9223372036854775808", "9223372036854775807"] {
        let body = format!(
            r#"{{"repo":"{did}","collection":"{POST}","rkey":"edge{}","record":{{"$type":"{POST}","count":{n}}}}}"#,
            n.len()
        );
        post_raw(
            &s,
            "/xrpc/com.atproto.repo.createRecord",
            "application/json",
            &tok,
            body,
        )
        .await
        .ok_json();
        let got = s
            .get(&format!(
                "/xrpc/com.atproto.repo.getRecord?repo={did}&collection={POST}&rkey=edge{}",
                n.len()
            ))
            .await;
        let text = String::from_utf8_lossy(&got.body).into_owned();
        assert!(text.contains(&format!("\"count\":{n}")), "{text}");
    }
}

#[tokio::test]
async fn a_record_without_type_gets_its_collection_as_the_reference_pds_does() {
    let s = start_with(|_| {});
    let (did, tok, _) = s.account("untyped.test").await;
    for (rkey, record) in [
        ("absent", json!({"text": "no type"})),
        ("null", json!({"$type": null, "text": "null type"})),
    ] {
        s.post(
            "/xrpc/com.atproto.repo.createRecord",
            Some(&tok),
            &json!({"repo": did, "collection": POST, "rkey": rkey, "record": record}),
        )
        .await
        .ok_json();
        let got = s
            .get(&format!(
                "/xrpc/com.atproto.repo.getRecord?repo={did}&collection={POST}&rkey={rkey}"
            ))
            .await
            .ok_json();
        assert_eq!(got["value"]["$type"], POST, "{rkey}");
    }
    // applyWrites too.
    s.post(
        "/xrpc/com.atproto.repo.applyWrites",
        Some(&tok),
        &json!({"repo": did, "writes": [
            {"$type": "com.atproto.repo.applyWrites#create", "collection": POST, "rkey": "batch", "value": {"text": "b"}},
        ]}),
    )
    .await
    .ok_json();
    let got = s
        .get(&format!(
            "/xrpc/com.atproto.repo.getRecord?repo={did}&collection={POST}&rkey=batch"
        ))
        .await
        .ok_json();
    assert_eq!(got["value"]["$type"], POST);
    // Another collection's $type is still refused.
    s.post(
        "/xrpc/com.atproto.repo.createRecord",
        Some(&tok),
        &json!({"repo": did, "collection": POST, "record": {"$type": "app.bsky.feed.like"}}),
    )
    .await
    .expect_error(400, "InvalidRequest");
}

#[tokio::test]
async fn list_records_of_an_unknown_repo_is_an_error() {
    let s = start_with(|_| {});
    let (did, _, _) = s.account("lister.test").await;
    s.get(&format!(
        "/xrpc/com.atproto.repo.listRecords?repo={did}&collection={POST}"
    ))
    .await
    .ok_json();
    for repo in ["did:plc:aaaaaaaaaaaaaaaaaaaaaaaa", "nobody.test"] {
        let a = s
            .get(&format!(
                "/xrpc/com.atproto.repo.listRecords?repo={repo}&collection={POST}"
            ))
            .await;
        a.expect_error(400, "InvalidRequest");
        let message = a.json()["message"].as_str().unwrap().to_owned();
        assert_eq!(message, format!("Could not find repo: {repo}"));
    }
}

#[tokio::test]
async fn a_stalled_request_body_is_cut_off_at_its_deadline() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // A 1,000,000-byte body may take 0.3 s plus 1,000,000 / 4 MiB/s.
    let s = start_with(|c| {
        c.body_grace = Duration::from_millis(300);
        c.body_min_rate = 4 << 20;
    });
    let addr = s.url.trim_start_matches("http://").to_owned();
    let head = b"POST /xrpc/com.atproto.server.createAccount HTTP/1.1\r\nhost: x\r\n\
        content-type: application/json\r\ncontent-length: 1000000\r\n\r\n";
    let mut stalled = Vec::new();
    for _ in 0..20 {
        let mut c = tokio::net::TcpStream::connect(&addr).await.unwrap();
        c.write_all(head).await.unwrap();
        // All but the last 100 bytes, then nothing.
        c.write_all(&vec![b' '; 999_900]).await.unwrap();
        stalled.push(c);
    }
    let started = Instant::now();
    // The server answers others meanwhile.
    s.get("/xrpc/_health").await.ok_json();
    for (i, mut c) in stalled.into_iter().enumerate() {
        let mut answer = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(10), c.read_to_end(&mut answer))
            .await
            .unwrap_or_else(|_| panic!("connection {i} still open after 10 s"));
        // Closed: after a 408 (or reset, when the close raced the bytes).
        if read.is_ok() {
            assert!(
                answer.starts_with(b"HTTP/1.1 408"),
                "connection {i}: {:?}",
                String::from_utf8_lossy(&answer[..answer.len().min(200)])
            );
        }
    }
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "stalled bodies held for {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_client_that_stops_reading_is_dropped_at_the_write_deadline() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let s = start_with(|c| {
        c.write_stall = Duration::from_millis(300);
        c.blob_upload_limit = 16 << 20;
    });
    let (did, tok, _) = s.account("stall.test").await;
    // More than the kernel's buffers on both sides hold.
    let size = 12 << 20;
    let up = post_raw(
        &s,
        "/xrpc/com.atproto.repo.uploadBlob",
        "application/octet-stream",
        &tok,
        vec![7u8; size],
    )
    .await
    .ok_json();
    let cid = up["blob"]["ref"]["$link"].as_str().unwrap().to_owned();
    let sock = tokio::net::TcpSocket::new_v4().unwrap();
    sock.set_recv_buffer_size(4096).unwrap();
    let mut c = sock
        .connect(s.url.trim_start_matches("http://").parse().unwrap())
        .await
        .unwrap();
    c.write_all(
        format!(
            "GET /xrpc/com.atproto.sync.getBlob?did={did}&cid={cid} HTTP/1.1\r\nhost: x\r\n\r\n"
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    // Not reading, well past the deadline; others are served meanwhile.
    tokio::time::sleep(Duration::from_secs(2)).await;
    s.get("/xrpc/_health").await.ok_json();
    let mut got = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match c.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    assert!(ended.is_ok(), "the stalled connection was kept");
    assert!(got.starts_with(b"HTTP/1.1 200"));
    assert!(
        got.len() < size,
        "the whole blob ({} bytes) was sent to a client that stopped reading",
        got.len()
    );
}
