//! The cap on heavy responses in flight (issue 34): per client address a
//! 429, in total a 503, both with `Retry-After` and before any work; the
//! slots come back once the stalled clients go.

mod support;

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use support::start_with;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// A client from `from` that asks for `path` and never reads.
async fn stalled(server: SocketAddr, from: IpAddr, path: &str) -> TcpStream {
    let sock = tokio::net::TcpSocket::new_v4().unwrap();
    sock.set_recv_buffer_size(4096).unwrap();
    sock.bind(SocketAddr::new(from, 0)).unwrap();
    let mut c = sock.connect(server).await.unwrap();
    c.write_all(format!("GET {path} HTTP/1.1\r\nhost: x\r\n\r\n").as_bytes())
        .await
        .unwrap();
    c
}

#[tokio::test]
async fn heavy_responses_past_the_caps_are_refused_with_retry_after() {
    let s = start_with(|c| {
        c.write_stall = Duration::from_secs(120);
        c.heavy_per_address = 2;
        c.heavy_total = 3;
        c.blob_upload_limit = 16 << 20;
    });
    let (did, tok, _) = s.account("heavy.test").await;
    // A blob larger than the kernel's buffers on both sides of a
    // small-buffered client hold, so its getBlob stays in flight.
    let auth = format!("Bearer {tok}");
    let up = s
        .request(
            hyper::Method::POST,
            "/xrpc/com.atproto.repo.uploadBlob",
            &[
                ("content-type", "application/octet-stream"),
                ("authorization", &auth),
            ],
            bytes::Bytes::from(vec![7u8; 12 << 20]),
        )
        .await
        .ok_json();
    let cid = up["blob"]["ref"]["$link"].as_str().unwrap().to_owned();
    let server: SocketAddr = s.url.trim_start_matches("http://").parse().unwrap();
    let path = format!("/xrpc/com.atproto.sync.getBlob?did={did}&cid={cid}");
    let one: IpAddr = [127, 0, 0, 1].into();
    let two: IpAddr = [127, 0, 0, 2].into();
    let mut held = vec![
        stalled(server, one, &path).await,
        stalled(server, one, &path).await,
    ];
    tokio::time::sleep(Duration::from_secs(1)).await;
    // The third from the same address: 429, whatever the route.
    let list =
        format!("/xrpc/com.atproto.repo.listRecords?repo={did}&collection=app.bsky.feed.post");
    let repo = format!("/xrpc/com.atproto.sync.getRepo?did={did}");
    for p in [&path, &list, &repo] {
        let a = s.get(p).await;
        a.expect_error(429, "RateLimitExceeded");
        assert_eq!(a.headers["retry-after"], "1");
    }
    // Light routes are not counted.
    s.get(&format!("/xrpc/com.atproto.sync.getLatestCommit?did={did}"))
        .await
        .ok_json();
    // Another address takes the last slot in total; the next is 503.
    held.push(stalled(server, two, &path).await);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let sock = tokio::net::TcpSocket::new_v4().unwrap();
    sock.bind(SocketAddr::new(two, 0)).unwrap();
    let mut c = sock.connect(server).await.unwrap();
    c.write_all(format!("GET {list} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(
        Duration::from_secs(20),
        tokio::io::AsyncReadExt::read_to_end(&mut c, &mut answer),
    )
    .await
    .expect("no answer")
    .unwrap();
    let answer = String::from_utf8_lossy(&answer).to_ascii_lowercase();
    assert!(answer.starts_with("http/1.1 503"), "{answer}");
    assert!(answer.contains("retry-after: 1\r\n"), "{answer}");
    assert!(answer.contains("notenoughresources"), "{answer}");
    // The stalled clients go: their slots come back.
    drop(held);
    let t = Instant::now();
    loop {
        let a = s.get(&list).await;
        if a.status == 200 {
            a.ok_json();
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "slots not freed: {}",
            a.status
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
