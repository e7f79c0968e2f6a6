//! subscribeRepos over a real WebSocket: replay, cut-over to live,
//! FutureCursor, OutdatedCursor, ConsumerTooSlow, pings, the connection limit.

mod support;

use std::time::Duration;

use futures_util::StreamExt;
use repo::firehose::Frame;
use serde_json::json;
use support::{TestServer, start_with};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn connect(s: &TestServer, query: &str) -> Ws {
    let (ws, _) = tokio_tungstenite::connect_async(s.ws_url(query))
        .await
        .unwrap();
    ws
}

/// (seq, kind) of the next frame, or the error name; `None` on close.
#[derive(Debug, PartialEq)]
enum Got {
    Event(i64, &'static str),
    Error(String),
    Info(String),
    Closed(Option<CloseCode>),
}

async fn next(ws: &mut Ws) -> Got {
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .expect("no frame within 10 s");
        match msg {
            Some(Ok(Message::Binary(b))) => {
                return match Frame::decode(&b).unwrap() {
                    Frame::Commit(c) => Got::Event(c.seq, "#commit"),
                    Frame::Sync(c) => Got::Event(c.seq, "#sync"),
                    Frame::Identity(c) => Got::Event(c.seq, "#identity"),
                    Frame::Account(c) => Got::Event(c.seq, "#account"),
                    Frame::Error(e) => Got::Error(e.error.to_owned()),
                    Frame::Info(i) => Got::Info(i.name.to_owned()),
                    other => panic!("unexpected frame {other:?}"),
                };
            }
            Some(Ok(Message::Close(c))) => return Got::Closed(c.map(|c| c.code)),
            Some(Ok(_)) => continue,
            Some(Err(_)) | None => return Got::Closed(None),
        }
    }
}

fn seq(g: &Got) -> i64 {
    match g {
        Got::Event(s, _) => *s,
        other => panic!("expected an event, got {other:?}"),
    }
}

#[tokio::test]
async fn replay_from_zero_then_live_without_gap_or_duplicate() {
    let s = start_with(|_| {});
    let (did, tok, _) = s.account("fh.test").await;
    for i in 0..10 {
        s.post_record(&did, &tok, &format!("before {i}")).await;
    }
    let mut ws = connect(&s, "?cursor=0").await;
    // Account creation: #identity, #account, #sync, then #identity (handle).
    let mut kinds = Vec::new();
    for _ in 0..4 {
        match next(&mut ws).await {
            Got::Event(_, k) => kinds.push(k),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(kinds, ["#identity", "#account", "#sync", "#identity"]);
    let mut last = 4;
    for _ in 0..10 {
        let g = next(&mut ws).await;
        assert!(matches!(g, Got::Event(_, "#commit")));
        assert_eq!(seq(&g), last + 1);
        last = seq(&g);
    }
    // Live: writes from another task while the subscriber reads; a second
    // subscriber joins mid-stream with a cursor.
    let writer = {
        let url = s.url.clone();
        let (did, tok) = (did.clone(), tok.clone());
        tokio::spawn(async move {
            let client =
                hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                    .build_http::<http_body_util::Full<bytes::Bytes>>();
            for i in 0..200 {
                let body = json!({"repo": did, "collection": "app.bsky.feed.post", "record": {"text": format!("live {i}")}});
                let req = hyper::Request::post(format!("{url}/xrpc/com.atproto.repo.createRecord"))
                    .header("authorization", format!("Bearer {tok}"))
                    .header("content-type", "application/json")
                    .body(http_body_util::Full::new(bytes::Bytes::from(
                        body.to_string(),
                    )))
                    .unwrap();
                assert_eq!(client.request(req).await.unwrap().status(), 200);
            }
        })
    };
    let mut late = None;
    for i in 0..200 {
        let g = next(&mut ws).await;
        assert_eq!(seq(&g), last + 1, "gap or duplicate at {i}");
        last = seq(&g);
        if i == 50 {
            late = Some((
                connect(&s, &format!("?cursor={}", last - 20)).await,
                last - 20,
            ));
        }
    }
    writer.await.unwrap();
    let (mut late, mut l) = late.unwrap();
    while l < last {
        let g = next(&mut late).await;
        assert_eq!(seq(&g), l + 1);
        l = seq(&g);
    }
    // No cursor: live only.
    let mut live = connect(&s, "").await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    s.post_record(&did, &tok, "one more").await;
    assert_eq!(seq(&next(&mut live).await), last + 1);
    assert_eq!(s.server.as_ref().unwrap().subscribers(), 3);
}

#[tokio::test]
async fn live_frames_of_record_writes_and_of_new_accounts_come_in_seq_order() {
    // Record writes hand their frames to the hub; account creation's
    // events are read from the store: both interleave in seq order.
    let s = start_with(|_| {});
    let (did, tok, _) = s.account("mix.test").await;
    let mut ws = connect(&s, "").await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut expected = Vec::new();
    for i in 0..5 {
        s.post_record(&did, &tok, &format!("r{i}")).await;
        expected.push("#commit");
        s.account(&format!("mix{i}.test")).await;
        expected.extend(["#identity", "#account", "#sync", "#identity"]);
    }
    let mut last = None;
    for (i, kind) in expected.iter().enumerate() {
        let g = next(&mut ws).await;
        let Got::Event(seq, k) = g else {
            panic!("event {i}: {g:?}")
        };
        assert_eq!(k, *kind, "event {i}");
        if let Some(l) = last {
            assert_eq!(seq, l + 1, "gap or duplicate at event {i}");
        }
        last = Some(seq);
    }
}

#[tokio::test]
async fn future_cursor_is_an_error_frame() {
    let s = start_with(|_| {});
    let (did, tok, _) = s.account("fc.test").await;
    s.post_record(&did, &tok, "x").await;
    let mut ws = connect(&s, "?cursor=1000000").await;
    assert_eq!(next(&mut ws).await, Got::Error("FutureCursor".into()));
    assert_eq!(next(&mut ws).await, Got::Closed(Some(CloseCode::Policy)));
    // The head itself is not in the future.
    let mut ws = connect(&s, "?cursor=5").await;
    s.post_record(&did, &tok, "y").await;
    assert_eq!(seq(&next(&mut ws).await), 6);
}

#[tokio::test]
async fn a_cursor_before_the_log_start_is_told_outdated_then_replayed() {
    let mut s = start_with(|_| {});
    let (did, tok, _) = s.account("oc.test").await;
    for i in 0..4 {
        s.post_record(&did, &tok, &format!("p{i}")).await;
    }
    // The log trimmed outside atpds (a trimmed backup): seqs 1..=5 gone.
    s.shutdown();
    let db = s.dir.path().join("pds.sqlite");
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute("DELETE FROM seq_events WHERE seq <= 5", [])
        .unwrap();
    let server = xrpc::spawn(support::config(&s.dir)).unwrap();
    s.url = server.url();
    s.server = Some(server);
    let mut ws = connect(&s, "?cursor=2").await;
    assert_eq!(next(&mut ws).await, Got::Info("OutdatedCursor".into()));
    assert_eq!(seq(&next(&mut ws).await), 6);
    // A cursor at the log's start is not outdated.
    let mut ws = connect(&s, "?cursor=5").await;
    assert_eq!(seq(&next(&mut ws).await), 6);
}

/// With a retention of zero the sweep prunes every event but the newest:
/// a cursor before that horizon is told `OutdatedCursor`, then replayed
/// from the first event still held.
#[tokio::test]
async fn events_pruned_past_the_retention_make_an_older_cursor_outdated() {
    let s = start_with(|c| {
        c.sweep.event_retention = Some(Duration::ZERO);
        c.sweep_interval = Duration::from_millis(100);
    });
    let (did, tok, _) = s.account("ret.test").await;
    for i in 0..4 {
        s.post_record(&did, &tok, &format!("p{i}")).await;
    }
    // Account creation's four events and four commits: seq 8 is the head.
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    loop {
        let mut ws = connect(&s, "?cursor=2").await;
        match next(&mut ws).await {
            Got::Info(name) => {
                assert_eq!(name, "OutdatedCursor");
                // Then what is held, in order, up to the head (the hub's
                // ring may still hold frames the log no longer does).
                let mut at = seq(&next(&mut ws).await);
                assert!((3..=8).contains(&at), "{at}");
                while at < 8 {
                    let n = seq(&next(&mut ws).await);
                    assert_eq!(n, at + 1);
                    at = n;
                }
                break;
            }
            got => assert!(std::time::Instant::now() < deadline, "not pruned: {got:?}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The head itself is not outdated.
    let mut ws = connect(&s, "?cursor=8").await;
    s.post_record(&did, &tok, "after").await;
    assert_eq!(seq(&next(&mut ws).await), 9);
}

#[tokio::test]
async fn a_slow_consumer_is_dropped_and_the_others_go_on() {
    // The count bound decides here: the slow consumer's kernel buffers
    // (a 128 KiB send buffer, a 4 KiB receive buffer) hold about one
    // frame, so it overflows after some 17 of the 60; the fast one, read
    // by a task sharing this thread with the writer, has 16 frames of
    // slack.
    let s = start_with(|c| {
        c.outbox_frames = 16;
        c.outbox_bytes = 64 << 20;
    });
    let (did, tok, _) = s.account("slow.test").await;
    // A consumer that does not read, with a small receive buffer.
    let sock = tokio::net::TcpSocket::new_v4().unwrap();
    sock.set_recv_buffer_size(4096).unwrap();
    let stream = sock
        .connect(s.url.trim_start_matches("http://").parse().unwrap())
        .await
        .unwrap();
    let (mut slow, _) = tokio_tungstenite::client_async(
        s.ws_url(""),
        tokio_tungstenite::MaybeTlsStream::Plain(stream),
    )
    .await
    .unwrap();
    let mut fast = connect(&s, "").await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Large records fill the kernel buffers quickly.
    let text = "z".repeat(200_000);
    let n = 60;
    let reader = tokio::spawn(async move {
        let mut got = 0;
        while got < n {
            match next(&mut fast).await {
                Got::Event(_, "#commit") => got += 1,
                other => panic!("fast consumer got {other:?}"),
            }
        }
        got
    });
    for _ in 0..n {
        s.post_record(&did, &tok, &text).await;
    }
    assert_eq!(reader.await.unwrap(), n);
    // The slow one: whatever was buffered, then ConsumerTooSlow and 1008.
    let mut events = 0;
    let end = loop {
        match next(&mut slow).await {
            Got::Event(..) => events += 1,
            other => break other,
        }
    };
    assert_eq!(end, Got::Error("ConsumerTooSlow".into()));
    assert!(events < n);
    assert_eq!(next(&mut slow).await, Got::Closed(Some(CloseCode::Policy)));
}

#[tokio::test]
async fn pings_and_the_connection_limit() {
    let s = start_with(|c| {
        c.max_subscribers = 2;
        c.ping_interval = Duration::from_millis(50);
    });
    let mut a = connect(&s, "").await;
    let _b = connect(&s, "").await;
    let refused = tokio_tungstenite::connect_async(s.ws_url("")).await;
    match refused {
        Err(tokio_tungstenite::tungstenite::Error::Http(r)) => assert_eq!(r.status(), 503),
        other => panic!("third subscriber: {:?}", other.map(|_| ())),
    }
    // Pings arrive (and are answered by the client library as it reads).
    let mut pings = 0;
    while pings < 3 {
        match tokio::time::timeout(Duration::from_secs(5), a.next()).await {
            Ok(Some(Ok(Message::Ping(_)))) => pings += 1,
            other => panic!("{other:?}"),
        }
    }
    drop(a);
    // The freed slot is taken again.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        if tokio_tungstenite::connect_async(s.ws_url("")).await.is_ok() {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "slot never freed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // A plain GET is not an upgrade.
    s.get("/xrpc/com.atproto.sync.subscribeRepos")
        .await
        .expect_error(400, "InvalidRequest");
}

#[tokio::test]
async fn a_subscriber_that_never_answers_pings_is_closed() {
    let s = start_with(|c| c.ping_interval = Duration::from_millis(40));
    // Connected but never read: its library never answers the pings.
    let _silent = connect(&s, "").await;
    let server = s.server.as_ref().unwrap();
    assert_eq!(server.subscribers(), 1);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while server.subscribers() != 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "an unresponsive subscriber was kept"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
