//! The firehose hub: every event is read from the store once, its frame
//! bytes put in one [`Bytes`] that every subscriber's outbox shares, and a
//! ring of recent frames lets a subscriber that replays from a cursor cut
//! over to the live stream with no gap and no duplicate.
//!
//! # Flow
//!
//! The server is the only writer of its store, so each handler that
//! committed something calls [`Hub::committed`] with the event's seq,
//! which wakes the broadcaster task. The broadcaster reads the events
//! after the last one it published (`Store::events_after`, on the read
//! pool, up to a page at a time, so a burst of commits costs one read),
//! and under the hub's lock appends each frame to the ring and to every
//! live subscriber's outbox.
//!
//! After a wake the broadcaster waits
//! [`ServerConfig::firehose_coalesce`](crate::ServerConfig::firehose_coalesce)
//! before reading, so the commits of those few milliseconds go out as one
//! batch: one wake and one socket write per subscriber instead of one per
//! frame.
//!
//! # Cut-over
//!
//! A subscriber with a cursor replays from the store in pages until its
//! cursor is inside the ring (or at the head), then attaches under the
//! same lock the broadcaster publishes under: it takes the ring's frames
//! after its cursor as its backlog and every later frame arrives in its
//! outbox. So each seq reaches it exactly once, in order; the subscriber
//! also drops any frame at or below the last seq it sent (a page read
//! from the store can run ahead of the broadcaster).
//!
//! # Outboxes
//!
//! An outbox is bounded by frames and by bytes
//! ([`ServerConfig::outbox_frames`](crate::ServerConfig::outbox_frames),
//! [`outbox_bytes`](crate::ServerConfig::outbox_bytes)). A push that would
//! pass either bound marks the subscriber too slow, empties its outbox
//! (freeing the memory at once) and signals it; its task then sends a
//! `ConsumerTooSlow` error frame and closes with 1008. Pushing never
//! waits on a subscriber, so the others are unaffected.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use store::Store;
use tokio::sync::Notify;

use crate::ServerConfig;

/// Events read from the store per page.
const PAGE: usize = 1024;
/// Frames the ring keeps for cut-over.
const RING_FRAMES: usize = 8192;
/// Bytes the ring keeps at most.
const RING_BYTES: usize = 32 << 20;

/// One event's frame, encoded once.
#[derive(Clone, Debug)]
pub struct Shared {
    /// Its seq.
    pub seq: i64,
    /// Header and body bytes.
    pub bytes: Bytes,
}

/// Counters the embedding program can read.
#[derive(Default, Debug)]
pub struct Stats {
    subscribers: AtomicUsize,
}

impl Stats {
    /// Live subscribers.
    pub fn subscribers(&self) -> usize {
        self.subscribers.load(Ordering::Relaxed)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Open,
    TooSlow,
}

struct Queue {
    frames: VecDeque<Shared>,
    bytes: usize,
    state: State,
}

/// A subscriber's outbox.
pub struct Outbox {
    q: Mutex<Queue>,
    max_frames: usize,
    max_bytes: usize,
    /// Frames were pushed.
    pub ready: Notify,
    /// It was marked too slow.
    pub slow: Notify,
}

impl Outbox {
    /// Appends `frames` and wakes the subscriber once; `false` when it is
    /// (now) marked too slow.
    fn push_all(&self, frames: &[Shared]) -> bool {
        let mut q = self.q.lock().unwrap_or_else(|p| p.into_inner());
        if q.state != State::Open {
            return false;
        }
        for f in frames {
            if q.frames.len() >= self.max_frames || q.bytes + f.bytes.len() > self.max_bytes {
                q.state = State::TooSlow;
                q.frames = VecDeque::new();
                q.bytes = 0;
                drop(q);
                self.slow.notify_one();
                return false;
            }
            q.bytes += f.bytes.len();
            q.frames.push_back(f.clone());
        }
        drop(q);
        self.ready.notify_one();
        true
    }

    /// Moves up to `max` frames into `out`; `Err` once the subscriber was
    /// marked too slow.
    pub fn take(&self, out: &mut Vec<Shared>, max: usize) -> Result<(), ()> {
        let mut q = self.q.lock().unwrap_or_else(|p| p.into_inner());
        if q.state == State::TooSlow {
            return Err(());
        }
        let n = q.frames.len().min(max);
        let mut taken = 0;
        for f in q.frames.drain(..n) {
            taken += f.bytes.len();
            out.push(f);
        }
        q.bytes -= taken;
        Ok(())
    }
}

struct Inner {
    head: i64,
    ring: VecDeque<Shared>,
    ring_bytes: usize,
    subs: Vec<Arc<Outbox>>,
}

/// What [`Hub::attach`] decided.
pub enum Attach {
    /// Live from now on: send `backlog`, then the outbox.
    Live(Arc<Outbox>, Vec<Shared>),
    /// The cursor is older than the ring: replay a page from the store.
    Behind,
}

/// The hub.
pub struct Hub {
    inner: Mutex<Inner>,
    wake: Notify,
    /// The highest seq known committed.
    committed: AtomicI64,
    /// Subscribers attached (or attaching); written under the lock only.
    /// A commit wakes the broadcaster only when it is non-zero.
    live: AtomicUsize,
    stats: Arc<Stats>,
    max_subscribers: usize,
    outbox_frames: usize,
    outbox_bytes: usize,
    closing: AtomicBool,
    coalesce: std::time::Duration,
    /// Signalled once when the server shuts down (wait with
    /// [`Hub::closing`]).
    closed: Notify,
}

/// A counted subscriber slot; dropping it frees the slot.
pub struct Slot(Arc<Stats>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.subscribers.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Hub {
    /// A hub whose last published event is `head`.
    pub fn new(config: &ServerConfig, head: i64) -> Self {
        Hub {
            inner: Mutex::new(Inner {
                head,
                ring: VecDeque::new(),
                ring_bytes: 0,
                subs: Vec::new(),
            }),
            wake: Notify::new(),
            committed: AtomicI64::new(head),
            live: AtomicUsize::new(0),
            stats: Arc::new(Stats::default()),
            max_subscribers: config.max_subscribers,
            outbox_frames: config.outbox_frames.max(1),
            outbox_bytes: config.outbox_bytes.max(1),
            closing: AtomicBool::new(false),
            coalesce: config.firehose_coalesce,
            closed: Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The counters.
    pub fn stats(&self) -> Arc<Stats> {
        self.stats.clone()
    }

    /// A write committed the event `seq` (and those before it).
    ///
    /// With nobody attached the broadcaster is not woken (a write-heavy
    /// server with no subscriber pays nothing for the firehose). This
    /// store, then the load of `live`, pairs with `attach`'s store of
    /// `live`, then load of `committed` (all SeqCst): at least one side
    /// sees the other, so either the attaching subscriber's head already
    /// covers `seq` or this wake publishes it.
    pub fn committed(&self, seq: i64) {
        self.committed.fetch_max(seq, Ordering::SeqCst);
        if self.live.load(Ordering::SeqCst) > 0 {
            self.wake.notify_one();
        }
    }

    /// The highest seq known committed.
    pub fn head(&self) -> i64 {
        self.committed.load(Ordering::SeqCst)
    }

    /// Takes a subscriber slot, if under the limit.
    pub fn slot(&self) -> Option<Slot> {
        let n = self.stats.subscribers.fetch_add(1, Ordering::AcqRel);
        let slot = Slot(self.stats.clone());
        if n >= self.max_subscribers || self.is_closing() {
            return None;
        }
        Some(slot)
    }

    /// Whether the server is shutting down.
    pub fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Acquire)
    }

    /// Ready once the server is shutting down, whenever [`Hub::close`]
    /// ran: before this future's first poll (the flag, read after it
    /// registered) or after it (the notification). A `notified()` built
    /// after a check of [`Hub::is_closing`] would miss a close between
    /// the two: `notify_waiters` stores no permit.
    pub async fn closing(&self) {
        let notified = self.closed.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if self.is_closing() {
            return;
        }
        notified.await;
    }

    /// Starts shutting down: subscribers close, the broadcaster stops.
    pub fn close(&self) {
        self.closing.store(true, Ordering::Release);
        self.closed.notify_waiters();
        self.wake.notify_one();
    }

    /// Attaches a subscriber whose last received seq is `cursor` (`None`:
    /// live only).
    pub fn attach(&self, cursor: Option<i64>) -> Attach {
        let mut inner = self.lock();
        self.live.store(inner.subs.len() + 1, Ordering::SeqCst);
        if inner.subs.is_empty() {
            // Nobody was listening, so the broadcaster may not have been
            // woken for the latest commits: move the head to them.
            Self::fast_forward(&mut inner, self.committed.load(Ordering::SeqCst));
        }
        let backlog = match cursor {
            None => Vec::new(),
            Some(c) if c >= inner.head => Vec::new(),
            Some(c) => match inner.ring.front() {
                Some(f) if f.seq <= c + 1 => {
                    inner.ring.iter().filter(|f| f.seq > c).cloned().collect()
                }
                _ => {
                    self.live.store(inner.subs.len(), Ordering::SeqCst);
                    return Attach::Behind;
                }
            },
        };
        let outbox = Arc::new(Outbox {
            q: Mutex::new(Queue {
                frames: VecDeque::new(),
                bytes: 0,
                state: State::Open,
            }),
            max_frames: self.outbox_frames,
            max_bytes: self.outbox_bytes,
            ready: Notify::new(),
            slow: Notify::new(),
        });
        inner.subs.push(outbox.clone());
        Attach::Live(outbox, backlog)
    }

    /// Detaches a subscriber.
    pub fn detach(&self, outbox: &Arc<Outbox>) {
        let mut inner = self.lock();
        inner.subs.retain(|s| !Arc::ptr_eq(s, outbox));
        self.live.store(inner.subs.len(), Ordering::SeqCst);
    }

    /// Moves the head to `to` without publishing; the ring, no longer
    /// contiguous with the head, is emptied.
    fn fast_forward(inner: &mut Inner, to: i64) {
        if to > inner.head {
            inner.head = to;
            inner.ring.clear();
            inner.ring_bytes = 0;
        }
    }

    fn publish(&self, mut frames: Vec<Shared>) {
        let mut inner = self.lock();
        let inner = &mut *inner;
        // Strictly after the head and increasing: nothing is sent twice.
        let mut prev = inner.head;
        frames.retain(|f| {
            let keep = f.seq > prev;
            prev = prev.max(f.seq);
            keep
        });
        let Some(last) = frames.last() else {
            return;
        };
        inner.head = last.seq;
        // Each subscriber gets the whole batch under one lock of its
        // outbox and one wake; one that overflowed is let go here.
        let before = inner.subs.len();
        inner.subs.retain(|s| s.push_all(&frames));
        if inner.subs.len() != before {
            self.live.store(inner.subs.len(), Ordering::SeqCst);
        }
        for f in frames {
            inner.ring_bytes += f.bytes.len();
            inner.ring.push_back(f);
        }
        while inner.ring.len() > RING_FRAMES || inner.ring_bytes > RING_BYTES {
            match inner.ring.pop_front() {
                Some(old) => inner.ring_bytes -= old.bytes.len(),
                None => break,
            }
        }
        self.committed.fetch_max(inner.head, Ordering::SeqCst);
    }

    /// With no subscriber, moves the head to the last committed event
    /// without reading anything (a write-heavy server with nobody
    /// listening pays nothing for the firehose). Checked and done under
    /// the lock `attach` takes, so a subscriber attaching afterwards sees
    /// the new head, and one with an older cursor replays from the store.
    fn skip_when_idle(&self) -> bool {
        let mut inner = self.lock();
        if !inner.subs.is_empty() {
            return false;
        }
        Self::fast_forward(&mut inner, self.committed.load(Ordering::SeqCst));
        true
    }

    /// The broadcaster: reads new events after each wake and publishes them.
    pub async fn run(self: Arc<Self>, store: Arc<Store>, reads: Arc<crate::pool::Pool>) {
        loop {
            self.wake.notified().await;
            if self.is_closing() {
                return;
            }
            if self.skip_when_idle() {
                continue;
            }
            if !self.coalesce.is_zero() {
                tokio::time::sleep(self.coalesce).await;
            }
            loop {
                let head = self.lock().head;
                let st = store.clone();
                let page = reads.run(move || Ok(st.events_after(head, PAGE)?)).await;
                let events = match page {
                    Ok(e) => e,
                    // A failed read is retried at the next wake; the
                    // subscribers' replay reads the store themselves.
                    Err(_) => break,
                };
                let full = events.len() == PAGE;
                self.publish(
                    events
                        .into_iter()
                        .map(|e| Shared {
                            seq: e.seq,
                            bytes: Bytes::from(e.frame),
                        })
                        .collect(),
                );
                if !full {
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
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
        assert!(matches!(h.attach(Some(3)), Attach::Behind));
        assert!(matches!(h.attach(Some(9)), Attach::Live(_, b) if b.len() == 3));
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
        assert!(matches!(h.attach(Some(2)), Attach::Behind));
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
}
