//! Unit tests of the hub: outbox bounds, the ring and the cut-over steps
//! ([`super::Replay`]), frame hand-off order, and shutdown.

use super::*;

fn frame(seq: i64, n: usize) -> Shared {
    Shared {
        seq,
        bytes: Bytes::from(vec![0u8; n]),
    }
}

fn hub(frames: usize, bytes: usize) -> Hub {
    let mut c = ServerConfig::new("/nonexistent");
    c.outbox_frames = frames;
    c.outbox_bytes = bytes;
    Hub::new(&c, 0)
}

#[test]
fn cut_over_has_no_gap_and_no_duplicate() {
    let h = hub(100, 1 << 20);
    h.publish((1..=5).map(|s| frame(s, 4)).collect());
    // Cursor inside the ring: backlog is what follows it.
    let Attach::Live(o, backlog) = h.attach(Some(2)) else {
        panic!()
    };
    assert_eq!(backlog.iter().map(|f| f.seq).collect::<Vec<_>>(), [3, 4, 5]);
    h.publish(vec![frame(6, 4), frame(6, 4), frame(7, 4)]);
    let mut got = Vec::new();
    o.take(&mut got, 10).unwrap();
    assert_eq!(got.iter().map(|f| f.seq).collect::<Vec<_>>(), [6, 7]);
    // Cursor at or past the head: nothing to replay.
    assert!(matches!(h.attach(Some(7)), Attach::Live(_, b) if b.is_empty()));
}

#[test]
fn cursor_older_than_the_ring_replays_from_the_store() {
    let h = hub(100, 1 << 20);
    h.publish((10..=12).map(|s| frame(s, 4)).collect());
    assert!(matches!(h.attach(Some(3)), Attach::Behind(_)));
    assert!(matches!(h.attach(Some(9)), Attach::Live(_, b) if b.len() == 3));
}

fn seqs(frames: &[Shared]) -> Vec<i64> {
    frames.iter().map(|f| f.seq).collect()
}

#[test]
fn an_empty_replay_page_attaches_at_the_last_seq_sent() {
    // The hub's head (10) is past the cursor (5) with nothing of the
    // ring after it, so the subscriber is sent to the store. Its page
    // comes back empty; then commit 11 is counted and published before
    // it attaches. (A store consistent with the hub never answers
    // empty here; the branch is a guard, driven directly.)
    let h = Hub::new(&ServerConfig::new("/nonexistent"), 10);
    let mut r = Replay::new(Some(5));
    assert!(matches!(r.step(&h), Step::Read(5)));
    assert!(r.page(Vec::new()).is_empty());
    h.committed(11);
    h.publish(vec![frame(11, 4)]);
    let Step::Live(o, backlog) = r.step(&h) else {
        panic!("the hub sent the subscriber back to the store")
    };
    assert_eq!(seqs(&backlog), [11]);
    h.publish(vec![frame(12, 4)]);
    let mut got = Vec::new();
    o.take(&mut got, 10).unwrap();
    assert_eq!(seqs(&got), [12]);
    assert_eq!(r.last(), 5);
}

#[test]
fn an_empty_replay_page_reads_again_when_the_ring_lost_frames_since() {
    let mut h = Hub::new(&ServerConfig::new("/nonexistent"), 10);
    h.ring_frames = 2;
    let mut r = Replay::new(Some(5));
    assert!(matches!(r.step(&h), Step::Read(5)));
    assert!(r.page(Vec::new()).is_empty());
    // Three frames through a ring of two: 11 is evicted.
    h.publish((11..=13).map(|s| frame(s, 4)).collect());
    assert!(matches!(r.step(&h), Step::Read(5)));
    // The next page has them; then the cursor is inside the ring.
    let page = r.page(
        (11..=13)
            .map(|seq| store::Event {
                seq,
                frame: vec![0; 4],
            })
            .collect(),
    );
    assert_eq!(page.iter().map(|e| e.seq).collect::<Vec<_>>(), [11, 12, 13]);
    assert!(matches!(r.step(&h), Step::Live(_, b) if b.is_empty()));
}

#[test]
fn a_replay_that_ends_past_the_ring_front_reads_on_then_attaches() {
    let mut h = hub(100, 1 << 20);
    h.ring_frames = 2;
    h.publish((1..=6).map(|s| frame(s, 4)).collect());
    // The ring holds 5 and 6: a cursor of 2 replays 3 and 4 from the
    // store, then takes 5 and 6 from the ring.
    let mut r = Replay::new(Some(2));
    assert!(matches!(r.step(&h), Step::Read(2)));
    let page = r.page(
        (3..=4)
            .map(|seq| store::Event {
                seq,
                frame: vec![0; 4],
            })
            .collect(),
    );
    assert_eq!(page.len(), 2);
    assert!(matches!(r.step(&h), Step::Live(_, b) if seqs(&b) == [5, 6]));
}

#[test]
fn handed_frames_go_out_in_seq_order_and_a_gap_holds_the_rest() {
    let h = hub(100, 1 << 20);
    let Attach::Live(o, _) = h.attach(None) else {
        panic!()
    };
    // Hand-offs finish out of order: 2 and 3 wait for 1.
    h.committed_frame(3, Bytes::from_static(b"c"));
    h.committed_frame(2, Bytes::from_static(b"b"));
    assert_eq!(h.publish_handed(), Some(1));
    let mut got = Vec::new();
    o.take(&mut got, 10).unwrap();
    assert!(got.is_empty());
    h.committed_frame(1, Bytes::from_static(b"a"));
    assert_eq!(h.publish_handed(), None);
    o.take(&mut got, 10).unwrap();
    assert_eq!(seqs(&got), [1, 2, 3]);
    assert_eq!(got[0].bytes, Bytes::from_static(b"a"));
    // Events without a frame (4, 5) leave a gap the store fills; the
    // handed 6 waits behind it, and is dropped once the store's page
    // covered it.
    h.committed(5);
    h.committed_frame(6, Bytes::from_static(b"f"));
    assert_eq!(h.publish_handed(), Some(4));
    assert!(4 <= h.unframed.load(Ordering::SeqCst));
    h.publish((4..=6).map(|s| frame(s, 4)).collect());
    assert_eq!(h.publish_handed(), None);
    assert!(h.handed.lock().unwrap().is_empty());
    got.clear();
    o.take(&mut got, 10).unwrap();
    assert_eq!(seqs(&got), [4, 5, 6]);
}

#[test]
fn with_nobody_attached_no_frame_is_kept() {
    let h = hub(100, 1 << 20);
    h.committed_frame(1, Bytes::from_static(b"a"));
    assert!(h.handed.lock().unwrap().is_empty());
    assert_eq!(h.head(), 1);
}

#[test]
fn full_outbox_marks_too_slow_by_count_and_by_bytes() {
    let h = hub(2, 1 << 20);
    let Attach::Live(o, _) = h.attach(None) else {
        panic!()
    };
    h.publish((1..=3).map(|s| frame(s, 4)).collect());
    assert!(o.take(&mut Vec::new(), 10).is_err());
    assert!(h.lock().subs.is_empty());
    assert_eq!(h.stats().too_slow(), 1);

    let h = hub(100, 10);
    let Attach::Live(o, _) = h.attach(None) else {
        panic!()
    };
    let Attach::Live(fast, _) = h.attach(None) else {
        panic!()
    };
    h.publish(vec![frame(1, 6)]);
    fast.take(&mut Vec::new(), 10).unwrap();
    h.publish(vec![frame(2, 6)]);
    assert!(o.take(&mut Vec::new(), 10).is_err());
    let mut got = Vec::new();
    fast.take(&mut got, 10).unwrap();
    assert_eq!(got.len(), 1);
}

#[test]
fn with_nobody_listening_the_head_moves_and_a_cursor_replays_from_the_store() {
    let h = hub(100, 1 << 20);
    h.publish((1..=3).map(|s| frame(s, 4)).collect());
    h.committed(9);
    assert!(h.skip_when_idle());
    assert_eq!(h.lock().head, 9);
    assert!(matches!(h.attach(Some(2)), Attach::Behind(_)));
    assert!(matches!(h.attach(Some(9)), Attach::Live(_, b) if b.is_empty()));
    assert!(!h.skip_when_idle());
    // A first subscriber after unpublished commits starts at them.
    let h = hub(100, 1 << 20);
    h.committed(4);
    assert!(matches!(h.attach(None), Attach::Live(..)));
    assert_eq!(h.lock().head, 4);
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
    let mut c = ServerConfig::new("/nonexistent");
    c.max_subscribers = 1;
    let h = Hub::new(&c, 0);
    let a = h.slot().unwrap();
    assert!(h.slot().is_none());
    assert_eq!(h.stats().subscribers(), 1);
    drop(a);
    assert!(h.slot().is_some());
}
