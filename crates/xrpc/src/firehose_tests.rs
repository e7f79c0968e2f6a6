//! Unit tests of the hub: the feed's appends, outbox bounds, the ring and
//! the cut-over steps ([`super::Replay`]), a broadcaster that fell behind
//! the ring, and shutdown.

use store::EventFeed;

use super::*;

fn limits(frames: usize, bytes: usize) -> HubLimits {
    let mut c = ServerConfig::new("/nonexistent");
    c.outbox_frames = frames;
    c.outbox_bytes = bytes;
    HubLimits::from(&c)
}

/// A hub over a log that ended at `last` when the store opened.
fn hub_at(limits: HubLimits, last: i64) -> Hub {
    let h = Hub::new(limits);
    h.opened(last);
    h
}

fn hub(frames: usize, bytes: usize) -> Hub {
    hub_at(limits(frames, bytes), 0)
}

fn events(seqs: impl IntoIterator<Item = i64>, n: usize) -> Vec<store::Event> {
    seqs.into_iter()
        .map(|seq| store::Event {
            seq,
            frame: vec![seq as u8; n],
        })
        .collect()
}

/// The store's writer commits a batch: the hub's feed hook.
fn feed(h: &Hub, seqs: impl IntoIterator<Item = i64>) {
    h.committed(events(seqs, 4));
}

fn seqs(frames: &[Shared]) -> Vec<i64> {
    frames.iter().map(|f| f.seq).collect()
}

fn live(step: Step) -> (Arc<Outbox>, Vec<Shared>) {
    match step {
        Step::Live(o, b) => (o, b),
        Step::Read { after, .. } => panic!("sent to the store after {after}"),
    }
}

fn taken(o: &Outbox) -> Vec<i64> {
    let mut got = Vec::new();
    o.take(&mut got, 100).unwrap();
    seqs(&got)
}

#[test]
fn cut_over_has_no_gap_and_no_duplicate() {
    let h = hub(100, 1 << 20);
    feed(&h, 1..=5);
    // Cursor inside the ring: backlog is what follows it.
    let (o, backlog) = live(h.attach(Some(2), None));
    assert_eq!(seqs(&backlog), [3, 4, 5]);
    feed(&h, [6, 7]);
    h.fan_out();
    assert_eq!(taken(&o), [6, 7]);
    // Cursor at or past the head: nothing to replay.
    assert!(matches!(h.attach(Some(7), None), Step::Live(_, b) if b.is_empty()));
}

#[test]
fn frames_go_out_in_seq_order_once() {
    let h = hub(100, 1 << 20);
    let (o, _) = live(h.attach(None, None));
    feed(&h, [1, 2]);
    // A seq at or below the head is never appended again.
    feed(&h, [2, 3]);
    h.fan_out();
    let mut got = Vec::new();
    o.take(&mut got, 10).unwrap();
    assert_eq!(seqs(&got), [1, 2, 3]);
    assert_eq!(got[0].bytes, Bytes::from(vec![1u8; 4]));
    // Nothing new: nothing sent.
    h.fan_out();
    assert!(taken(&o).is_empty());
}

#[test]
fn a_live_only_subscriber_starts_after_the_head() {
    let h = hub(100, 1 << 20);
    let (first, _) = live(h.attach(None, None));
    feed(&h, [1, 2]);
    // Attached before the broadcaster sent 1 and 2: it gets neither.
    let (second, backlog) = live(h.attach(None, None));
    assert!(backlog.is_empty());
    feed(&h, [3]);
    h.fan_out();
    assert_eq!(taken(&first), [1, 2, 3]);
    assert_eq!(taken(&second), [3]);
}

#[test]
fn a_cursor_between_what_was_sent_and_the_head_gets_each_seq_once() {
    let h = hub(100, 1 << 20);
    let (_first, _) = live(h.attach(None, None));
    feed(&h, 1..=3);
    h.fan_out();
    feed(&h, 4..=6);
    // Sent up to 3; the subscriber read up to 5 from the store.
    let (o, backlog) = live(h.attach(Some(5), None));
    assert!(backlog.is_empty());
    h.fan_out();
    assert_eq!(taken(&o), [6]);
    // One that read up to 2: 3 from the ring, then 4.. from its outbox.
    let (o, backlog) = live(h.attach(Some(2), None));
    assert_eq!(seqs(&backlog), [3, 4, 5, 6]);
    feed(&h, [7]);
    h.fan_out();
    assert_eq!(taken(&o), [7]);
}

#[test]
fn cursor_older_than_the_ring_replays_from_the_store() {
    let h = hub_at(limits(100, 1 << 20), 9);
    feed(&h, 10..=12);
    assert!(matches!(
        h.attach(Some(3), None),
        Step::Read { after: 3, floor: 9 }
    ));
    assert!(matches!(h.attach(Some(9), None), Step::Live(_, b) if b.len() == 3));
}

#[test]
fn a_replay_that_ends_past_the_ring_front_reads_on_then_attaches() {
    let mut l = limits(100, 1 << 20);
    l.ring_frames = 2;
    let h = hub_at(l, 0);
    feed(&h, 1..=6);
    // The ring holds 5 and 6: a cursor of 2 replays 3 and 4 from the
    // store, then takes 5 and 6 from the ring.
    let mut r = Replay::new(Some(2));
    assert!(matches!(r.step(&h), Step::Read { after: 2, .. }));
    let page = r.page(events(3..=4, 4));
    assert_eq!(page.len(), 2);
    assert!(matches!(r.step(&h), Step::Live(_, b) if seqs(&b) == [5, 6]));
}

#[test]
fn an_empty_replay_page_attaches_while_the_ring_kept_its_floor() {
    // The ring's floor (10) is past the cursor (5), yet the store has
    // nothing after 5: a log missing events the feed never had. Read
    // once, the subscriber attaches instead of reading forever.
    let h = hub_at(limits(100, 1 << 20), 10);
    let mut r = Replay::new(Some(5));
    assert!(matches!(r.step(&h), Step::Read { after: 5, .. }));
    assert!(r.page(Vec::new()).is_empty());
    feed(&h, [11]);
    let (o, backlog) = live(r.step(&h));
    assert_eq!(seqs(&backlog), [11]);
    feed(&h, [12]);
    h.fan_out();
    assert_eq!(taken(&o), [12]);
    assert_eq!(r.last(), 5);
}

#[test]
fn an_empty_replay_page_reads_again_when_the_ring_lost_frames_since() {
    let mut l = limits(100, 1 << 20);
    l.ring_frames = 2;
    let h = hub_at(l, 10);
    let mut r = Replay::new(Some(5));
    assert!(matches!(r.step(&h), Step::Read { after: 5, .. }));
    assert!(r.page(Vec::new()).is_empty());
    // Three frames through a ring of two: 11 is evicted, the floor moved.
    feed(&h, 11..=13);
    assert!(matches!(r.step(&h), Step::Read { after: 5, .. }));
    // The next page has them; then the cursor is inside the ring.
    let page = r.page(events(11..=13, 4));
    assert_eq!(page.iter().map(|e| e.seq).collect::<Vec<_>>(), [11, 12, 13]);
    assert!(matches!(r.step(&h), Step::Live(_, b) if b.is_empty()));
}

#[test]
fn a_broadcaster_behind_the_ring_sends_every_subscriber_back_to_the_store() {
    let mut l = limits(100, 1 << 20);
    l.ring_frames = 4;
    let h = hub_at(l, 0);
    let (o, _) = live(h.attach(None, None));
    feed(&h, 1..=3);
    h.fan_out();
    assert_eq!(taken(&o), [1, 2, 3]);
    // Seven more before the broadcaster runs: 4..=6 leave the ring unsent.
    feed(&h, 4..=10);
    h.fan_out();
    assert_eq!(o.take(&mut Vec::new(), 10), Err(Stopped::Behind));
    assert!(h.subs().outboxes.is_empty());
    assert_eq!(h.stats().too_slow(), 0);
    // Its replay reads what the ring lost, then takes the rest from it.
    let mut r = Replay::new(Some(3));
    assert!(matches!(r.step(&h), Step::Read { after: 3, floor: 6 }));
    assert_eq!(r.page(events(4..=6, 4)).len(), 3);
    let (o, backlog) = live(r.step(&h));
    assert_eq!(seqs(&backlog), [7, 8, 9, 10]);
    feed(&h, [11]);
    h.fan_out();
    assert_eq!(taken(&o), [11]);
}

#[test]
fn with_nobody_listening_the_ring_fills_without_a_wake() {
    let h = hub(100, 1 << 20);
    feed(&h, 1..=3);
    assert!(!h.ring().listening);
    assert_eq!(h.head(), 3);
    // A first subscriber with a cursor in the ring takes its frames.
    let (o, backlog) = live(h.attach(Some(1), None));
    assert_eq!(seqs(&backlog), [2, 3]);
    assert!(h.ring().listening);
    h.detach(&o);
    assert!(!h.ring().listening);
}

#[test]
fn full_outbox_marks_too_slow_by_count_and_by_bytes() {
    let h = hub(2, 1 << 20);
    let (o, _) = live(h.attach(None, None));
    feed(&h, 1..=3);
    h.fan_out();
    assert_eq!(o.take(&mut Vec::new(), 10), Err(Stopped::TooSlow));
    assert!(h.subs().outboxes.is_empty());
    assert_eq!(h.stats().too_slow(), 1);

    let h = hub(100, 10);
    let (o, _) = live(h.attach(None, None));
    let (fast, _) = live(h.attach(None, None));
    h.committed(events([1], 6));
    h.fan_out();
    fast.take(&mut Vec::new(), 10).unwrap();
    h.committed(events([2], 6));
    h.fan_out();
    assert_eq!(o.take(&mut Vec::new(), 10), Err(Stopped::TooSlow));
    let mut got = Vec::new();
    fast.take(&mut got, 10).unwrap();
    assert_eq!(got.len(), 1);
}

#[tokio::test]
async fn closing_is_not_missed_when_close_comes_between_check_and_wait() {
    let wait = std::time::Duration::from_secs(5);
    let h = hub(100, 1 << 20);
    // The subscriber's order: check the flag, then wait. A close in
    // between (`notify_waiters`, which stores no permit) must still
    // end the wait.
    assert!(!h.is_closing());
    let waiting = h.closing();
    h.close();
    tokio::time::timeout(wait, waiting)
        .await
        .expect("a close before the first poll was missed");
    // And a close while it waits.
    let h = Arc::new(hub(100, 1 << 20));
    let h2 = h.clone();
    let waiter = tokio::spawn(async move { h2.closing().await });
    tokio::task::yield_now().await;
    h.close();
    tokio::time::timeout(wait, waiter)
        .await
        .expect("a close while waiting was missed")
        .unwrap();
}

#[test]
fn slots_are_limited_and_freed() {
    let mut l = limits(100, 1 << 20);
    l.max_subscribers = 1;
    let h = Hub::new(l);
    let a = h.slot().unwrap();
    assert!(h.slot().is_none());
    assert_eq!(h.stats().subscribers(), 1);
    drop(a);
    assert!(h.slot().is_some());
}

#[test]
fn every_store_write_reaches_the_hub_in_order_before_it_returns() {
    // No route and no hub call: the store's writer alone feeds the hub,
    // so a write cannot skip the firehose.
    let dir = tempfile::tempdir().unwrap();
    let h = Arc::new(hub(100, 1 << 20));
    let config = store::Config {
        feed: Some(h.clone()),
        ..store::Config::default()
    };
    let store = store::Store::open(dir.path().join("feed.sqlite"), config).unwrap();
    let (o, _) = live(h.attach(None, None));
    let did = "did:plc:feedfeedfeedfeedfeedfeed";
    let key = crate::app::new_key().unwrap();
    let created = store.create_account(did, &key).unwrap();
    assert_eq!(h.head(), created.seq);
    let renamed = store.update_identity(did, Some("feed.test")).unwrap();
    assert_eq!(h.head(), renamed);
    let record = serde_json::json!({"$type": "app.bsky.feed.post", "text": "fed"});
    let record = repo::cbor::to_vec(&repo::cbor::json::from_json_value(&record).unwrap());
    let commit = store
        .create_record(did, "app.bsky.feed.post", None, record, None)
        .unwrap();
    assert_eq!(h.head(), commit.seq);
    let status = store
        .set_account_status(did, false, Some("deactivated"))
        .unwrap();
    assert_eq!(h.head(), status);
    h.fan_out();
    let mut got = Vec::new();
    o.take(&mut got, 100).unwrap();
    let kinds: Vec<&str> = got
        .iter()
        .map(|f| match repo::firehose::Frame::decode(&f.bytes).unwrap() {
            repo::firehose::Frame::Commit(_) => "#commit",
            repo::firehose::Frame::Sync(_) => "#sync",
            repo::firehose::Frame::Identity(_) => "#identity",
            repo::firehose::Frame::Account(_) => "#account",
            other => panic!("unexpected frame {other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "#identity",
            "#account",
            "#sync",
            "#identity",
            "#commit",
            "#account"
        ]
    );
    // The very bytes the log serves, in seq order.
    let log = store.events_after(0, 100).unwrap();
    assert_eq!(seqs(&got), log.iter().map(|e| e.seq).collect::<Vec<_>>());
    for (f, e) in got.iter().zip(&log) {
        assert_eq!(f.bytes[..], e.frame[..]);
    }
}
