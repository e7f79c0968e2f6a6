//! Writers never wait behind stalled readers (issue 34): getRepo clients
//! that never read hold no server thread, so `createRecord` and
//! `createSession` keep the blocking pool's capacity. Its own test binary:
//! it counts the process's threads, which another server beside it would
//! move.

mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::start_with;
use tokio::io::AsyncWriteExt;

/// The threads of this process (the server runs in it).
fn threads() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap()
}

#[tokio::test]
async fn stalled_get_repo_clients_hold_no_thread_and_writes_go_on() {
    // The write deadline far past the test: the stalled clients stay.
    let s = start_with(|c| c.write_stall = Duration::from_secs(120));
    let (did, tok, _) = s.account("reader.test").await;
    // A repository of about 3.6 MB: more than the kernel's buffers of a
    // client with a small receive buffer hold.
    // Each record's text its own (records of equal content share one
    // block, which the export writes once).
    let text = "r".repeat(900_000);
    for i in 0..4 {
        s.post_record(&did, &tok, &format!("{i} {text}")).await;
    }
    let before = threads();
    let addr: std::net::SocketAddr = s.url.trim_start_matches("http://").parse().unwrap();
    let mut stalled = Vec::new();
    for _ in 0..32 {
        let sock = tokio::net::TcpSocket::new_v4().unwrap();
        sock.set_recv_buffer_size(4096).unwrap();
        let mut c = sock.connect(addr).await.unwrap();
        c.write_all(
            format!("GET /xrpc/com.atproto.sync.getRepo?did={did} HTTP/1.1\r\nhost: x\r\n\r\n")
                .as_bytes(),
        )
        .await
        .unwrap();
        stalled.push(c);
    }
    // Let every export start and block on its client.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let grown = threads().saturating_sub(before);
    eprintln!("32 stalled getRepo clients: +{grown} server threads");
    // A thread held per stalled client was the starvation: the blocking
    // pool the writes and scrypt run on filled with stalled exports.
    assert!(grown < 8, "32 stalled getRepo clients took {grown} threads");
    let t = Instant::now();
    s.post_record(&did, &tok, "written while readers stall")
        .await;
    s.post(
        "/xrpc/com.atproto.server.createSession",
        None,
        &json!({"identifier": "reader.test", "password": "pw-"}),
    )
    .await
    .ok_json();
    eprintln!(
        "createRecord + createSession during the stall: {:?}",
        t.elapsed()
    );
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "writes waited {:?} behind stalled readers",
        t.elapsed()
    );
    drop(stalled);
}
