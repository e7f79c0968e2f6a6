//! Slow readers do not pin whole responses (issue 34, reproduction 2 at
//! test size): listRecords pages of large records, large blobs and the
//! proof of a large record are streamed chunk by chunk, so clients that
//! never read hold a few chunks each, not their answers. Measured by the
//! server's own count of the bytes heavy responses hold
//! ([`xrpc::RunningServer::heavy_bytes_held`]: deterministic, unlike the
//! resident size, which is printed beside it). Also checks that the
//! streamed answers are whole and right when read. Its own test binary: it
//! reads the process's resident memory.

mod support;

use std::time::Duration;

use support::{TestServer, start_with};
use tokio::io::AsyncWriteExt;

/// Large records in the collection.
const RECORDS: usize = 40;
/// Size of each record's text.
const TEXT: usize = 900_000;
/// Stalled clients per kind of response.
const CLIENTS: usize = 6;

/// A client with a 4 KiB receive buffer that sends `GET path` and never
/// reads.
async fn stalled_get(s: &TestServer, path: &str) -> tokio::net::TcpStream {
    let sock = tokio::net::TcpSocket::new_v4().unwrap();
    sock.set_recv_buffer_size(4096).unwrap();
    let mut c = sock
        .connect(s.url.trim_start_matches("http://").parse().unwrap())
        .await
        .unwrap();
    c.write_all(format!("GET {path} HTTP/1.1\r\nhost: x\r\n\r\n").as_bytes())
        .await
        .unwrap();
    c
}

fn held(s: &TestServer) -> usize {
    s.server.as_ref().unwrap().heavy_bytes_held()
}

/// Waits until the held bytes grew past `from` and then stopped moving
/// for half a second (the stalled responses filled what the connections
/// buffer), at most ten seconds.
async fn settle(s: &TestServer, from: usize) -> usize {
    let mut last = held(s);
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = held(s);
        if now == last && now > from {
            break;
        }
        last = now;
    }
    last
}

#[tokio::test]
async fn stalled_readers_of_large_answers_hold_a_few_chunks_each() {
    let s = start_with(|c| c.write_stall = Duration::from_secs(120));
    let (did, tok, _) = s.account("pages.test").await;
    let text = "p".repeat(TEXT);
    let mut rkeys = Vec::new();
    for _ in 0..RECORDS {
        let (uri, _) = s.post_record(&did, &tok, &text).await;
        rkeys.push(uri.rsplit('/').next().unwrap().to_owned());
    }
    // Newest first, as listRecords answers by default.
    rkeys.sort();
    rkeys.reverse();
    let blob: Vec<u8> = (0..4_000_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
    let up = s
        .request(
            hyper::Method::POST,
            "/xrpc/com.atproto.repo.uploadBlob",
            &[
                ("content-type", "application/octet-stream"),
                ("authorization", &format!("Bearer {tok}")),
            ],
            bytes::Bytes::from(blob.clone()),
        )
        .await
        .ok_json();
    let blob_cid = up["blob"]["ref"]["$link"].as_str().unwrap().to_owned();

    // Read whole, the streamed answers are right.
    let page = s
        .get(&format!(
            "/xrpc/com.atproto.repo.listRecords?repo={did}&collection=app.bsky.feed.post&limit=100"
        ))
        .await
        .ok_json();
    let got: Vec<&str> = page["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap().rsplit('/').next().unwrap())
        .collect();
    assert_eq!(got, rkeys, "a streamed page lost or reordered records");
    assert!(
        page.get("cursor").is_none(),
        "a page short of its limit has no cursor"
    );
    assert!(
        page["records"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["value"]["text"].as_str().map(str::len) == Some(TEXT))
    );
    // A full page (25 of 40) ends with its cursor; the next page is the rest.
    let first = s
        .get(&format!(
            "/xrpc/com.atproto.repo.listRecords?repo={did}&collection=app.bsky.feed.post&limit=25&reverse=true"
        ))
        .await
        .ok_json();
    let first_keys: Vec<String> = first["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r["uri"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
                .to_owned()
        })
        .collect();
    let mut ascending = rkeys.clone();
    ascending.reverse();
    assert_eq!(first_keys, ascending[..25]);
    assert_eq!(first["cursor"].as_str(), Some(ascending[24].as_str()));
    let rest = s
        .get(&format!(
            "/xrpc/com.atproto.repo.listRecords?repo={did}&collection=app.bsky.feed.post&limit=25&reverse=true&cursor={}",
            ascending[24]
        ))
        .await
        .ok_json();
    assert_eq!(rest["records"].as_array().unwrap().len(), RECORDS - 25);
    assert!(rest.get("cursor").is_none());
    // The blob, whole and in a range, streamed.
    let whole = s
        .get(&format!(
            "/xrpc/com.atproto.sync.getBlob?did={did}&cid={blob_cid}"
        ))
        .await;
    assert_eq!(whole.status, 200);
    assert_eq!(whole.body.as_ref(), &blob[..]);
    let part = s
        .request(
            hyper::Method::GET,
            &format!("/xrpc/com.atproto.sync.getBlob?did={did}&cid={blob_cid}"),
            &[("range", "bytes=1000-2999999")],
            bytes::Bytes::new(),
        )
        .await;
    assert_eq!(part.status, 206);
    assert_eq!(part.body.as_ref(), &blob[1000..3_000_000]);
    // The proof of a large record, spooled and streamed.
    let proof = s
        .get(&format!(
            "/xrpc/com.atproto.sync.getRecord?did={did}&collection=app.bsky.feed.post&rkey={}",
            rkeys[0]
        ))
        .await;
    assert_eq!(proof.status, 200);
    assert!(proof.body.len() > TEXT);
    assert!(
        proof
            .body
            .windows(1000)
            .any(|w| w.iter().all(|&b| b == b'p')),
        "the proof CAR lacks the record"
    );

    assert_eq!(held(&s), 0, "nothing is held once every answer was read");
    let before = support::rss_bytes();
    let mut stalled = Vec::new();
    for _ in 0..CLIENTS {
        stalled.push(
            stalled_get(
                &s,
                &format!(
                    "/xrpc/com.atproto.repo.listRecords?repo={did}&collection=app.bsky.feed.post&limit=100"
                ),
            )
            .await,
        );
    }
    let pages = settle(&s, 0).await;
    let grown = support::rss_bytes().saturating_sub(before);
    eprintln!(
        "{CLIENTS} stalled listRecords of {RECORDS} x {TEXT} B records: {} KiB held by the server, RSS +{} MiB",
        pages >> 10,
        grown >> 20
    );
    // A whole page each would be CLIENTS x 36 MB. A streamed one holds
    // what the connection buffers (a chunk of at least one record).
    assert!(
        pages < CLIENTS * (4 << 20),
        "{CLIENTS} stalled listRecords hold {} MiB",
        pages >> 20
    );
    // The resident size, looser (the allocator keeps what it freed): the
    // pages built whole took it past 190 MiB.
    assert!(
        grown < 128 << 20,
        "{CLIENTS} stalled listRecords grew the server by {} MiB",
        grown >> 20
    );
    for _ in 0..CLIENTS {
        stalled.push(
            stalled_get(
                &s,
                &format!("/xrpc/com.atproto.sync.getBlob?did={did}&cid={blob_cid}"),
            )
            .await,
        );
        stalled.push(
            stalled_get(
                &s,
                &format!(
                    "/xrpc/com.atproto.sync.getRecord?did={did}&collection=app.bsky.feed.post&rkey={}",
                    rkeys[0]
                ),
            )
            .await,
        );
    }
    let all = settle(&s, pages).await;
    let grown = support::rss_bytes().saturating_sub(before);
    eprintln!(
        "+ {CLIENTS} stalled getBlob (4 MB) and {CLIENTS} stalled sync.getRecord (900 KB): {} KiB held, RSS +{} MiB",
        all >> 10,
        grown >> 20
    );
    assert!(
        all - pages.min(all) < 2 * CLIENTS * (1 << 20),
        "stalled getBlob and sync.getRecord hold {} MiB",
        (all - pages.min(all)) >> 20
    );
    // A write is answered while they stall.
    let t = std::time::Instant::now();
    s.post_record(&did, &tok, "written while readers stall")
        .await;
    assert!(t.elapsed() < Duration::from_secs(10));
    drop(stalled);
    // Their connections gone, the chunks they held are freed.
    let mut left = held(&s);
    for _ in 0..40 {
        if left == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        left = held(&s);
    }
    assert_eq!(left, 0, "chunks outlived their connections");
}
