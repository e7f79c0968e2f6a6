//! A stalled `subscribeRepos` replay holds a bounded buffer, whatever the
//! size of the commits it replays (issue 34). Its own test binary: it reads
//! the process's resident memory, which another test running beside it
//! would move.

mod support;

use std::time::Duration;

use support::start_with;

#[tokio::test]
async fn stalled_replays_of_large_commits_hold_a_bounded_buffer_each() {
    let s = start_with(|_| {});
    let (did, tok, _) = s.account("big.test").await;
    // 50 commits of about 900 KB: more than the hub's ring keeps (32 MiB),
    // so a replay from 0 reads them from the store, where a page of them
    // is 45 MB.
    let text = "b".repeat(900_000);
    for _ in 0..50 {
        s.post_record(&did, &tok, &text).await;
    }
    let before = support::rss_bytes();
    let mut stalled = Vec::new();
    for _ in 0..8 {
        let sock = tokio::net::TcpSocket::new_v4().unwrap();
        sock.set_recv_buffer_size(4096).unwrap();
        let stream = sock
            .connect(s.url.trim_start_matches("http://").parse().unwrap())
            .await
            .unwrap();
        let (ws, _) = tokio_tungstenite::client_async(
            s.ws_url("?cursor=0"),
            tokio_tungstenite::MaybeTlsStream::Plain(stream),
        )
        .await
        .unwrap();
        stalled.push(ws);
    }
    // Let every replay read its first page and block on its socket.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let grown = support::rss_bytes().saturating_sub(before);
    eprintln!("8 stalled replays: the server grew by {} MiB", grown >> 20);
    // A whole page each would be 8 x 45 MB; a bounded page is 4 MiB plus
    // one frame each.
    assert!(
        grown < 100 << 20,
        "8 stalled replays grew the server by {} MiB",
        grown >> 20
    );
    drop(stalled);
}
