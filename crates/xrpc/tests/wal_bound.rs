//! The WAL stays bounded while a getRepo client stalls and 20,000
//! createRecord calls land (issue 34): no read transaction outlives the
//! export (it is spooled), so the checkpointer keeps copying and the
//! writer keeps rewinding the WAL. Its own test binary: the WAL's peak
//! depends on how fast the writes land, which another test beside it
//! would move.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use support::start_with;
use tokio::io::AsyncWriteExt;

/// createRecord calls landed while the reader stalls.
const WRITES: usize = 20_000;
/// Concurrent writers.
const WRITERS: usize = 8;

#[tokio::test]
async fn a_stalled_get_repo_does_not_pin_the_wal() {
    let s = start_with(|c| c.write_stall = Duration::from_secs(120));
    let (did, tok, _) = s.account("wal.test").await;
    // A repository of about 11 MB, more than a small-buffered client's
    // kernel buffers hold: its export would block on the client.
    let text = "w".repeat(900_000);
    for _ in 0..12 {
        s.post_record(&did, &tok, &text).await;
    }
    let wal = s.dir.path().join("pds.sqlite-wal");
    let addr: std::net::SocketAddr = s.url.trim_start_matches("http://").parse().unwrap();
    let sock = tokio::net::TcpSocket::new_v4().unwrap();
    sock.set_recv_buffer_size(4096).unwrap();
    let mut stalled = sock.connect(addr).await.unwrap();
    stalled
        .write_all(
            format!("GET /xrpc/com.atproto.sync.getRepo?did={did} HTTP/1.1\r\nhost: x\r\n\r\n")
                .as_bytes(),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let peak = Arc::new(AtomicU64::new(0));
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let (peak, done, wal) = (peak.clone(), done.clone(), wal.clone());
        tokio::spawn(async move {
            while !done.load(Ordering::Relaxed) {
                if let Ok(m) = std::fs::metadata(&wal) {
                    peak.fetch_max(m.len(), Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    let t = Instant::now();
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let (client, url, did, tok) = (s.client.clone(), s.url.clone(), did.clone(), tok.clone());
        writers.push(tokio::spawn(async move {
            for i in 0..WRITES / WRITERS {
                let body = serde_json::json!({
                    "repo": did,
                    "collection": "app.bsky.feed.post",
                    "record": {"$type": "app.bsky.feed.post", "text": format!("post {w}/{i}"), "createdAt": "2024-01-01T00:00:00.000Z"},
                });
                let req = hyper::Request::post(format!("{url}/xrpc/com.atproto.repo.createRecord"))
                    .header("content-type", "application/json")
                    .header("authorization", format!("Bearer {tok}"))
                    .body(http_body_util::Full::new(bytes::Bytes::from(body.to_string())))
                    .unwrap();
                let resp = tokio::time::timeout(Duration::from_secs(20), client.request(req))
                    .await
                    .expect("createRecord timed out")
                    .unwrap();
                assert_eq!(resp.status(), 200);
                http_body_util::BodyExt::collect(resp.into_body()).await.unwrap();
            }
        }));
    }
    for w in writers {
        w.await.unwrap();
    }
    let took = t.elapsed();
    done.store(true, Ordering::Relaxed);
    sampler.await.unwrap();
    if let Ok(m) = std::fs::metadata(&wal) {
        peak.fetch_max(m.len(), Ordering::Relaxed);
    }
    let peak = peak.load(Ordering::Relaxed);
    eprintln!(
        "{WRITES} createRecord in {took:?} beside a stalled getRepo: WAL peak {} MiB",
        peak >> 20
    );
    // The server has the store rewind the WAL past 16 MiB of pages
    // (`ServerConfig::wal_restart_frames`); the bound allows for the
    // frames that land while the checkpointer catches up under this write
    // rate. With the store's own default (64 MiB) the WAL passed it.
    assert!(
        peak < 96 << 20,
        "the WAL grew to {} MiB beside a stalled reader",
        peak >> 20
    );
    drop(stalled);
}
