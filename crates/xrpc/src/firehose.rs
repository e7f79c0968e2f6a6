//! The firehose hub: every event's frame is encoded once (by the store's
//! writer), its bytes put in one [`Bytes`] that every subscriber's outbox
//! shares, and a ring of recent frames lets a subscriber that replays from
//! a cursor cut over to the live stream with no gap and no duplicate.
//!
//! # Flow
//!
//! The server is the only writer of its store, so each handler that
//! committed something tells the hub: a record write hands over its
//! `#commit` frame with its seq ([`Hub::committed_frame`], the bytes
//! `Store::apply_writes_framed` returns: the ones the writer stored), other
//! writes (account creation's events) only their last seq
//! ([`Hub::committed`]). Either wakes the broadcaster task, which
//! publishes, in seq order, the run of handed frames that follows the last
//! one it published: under the hub's lock it appends each to the ring and
//! to every live subscriber's outbox. Handed frames can arrive out of
//! order (commits finish their hand-off in any order); one after a missing
//! seq waits in a buffer. A seq missing at two ticks in a row, or one no
//! frame will come for (at or below a frame-less `committed`), is read
//! from the store instead (`Store::events_after`, on the read pool, a page
//! at a time), so nothing is read back that a handler handed over.
//!
//! After a wake the broadcaster waits
//! [`ServerConfig::firehose_coalesce`](crate::ServerConfig::firehose_coalesce)
//! before publishing, so the commits of those few milliseconds go out as
//! one batch: one wake and one socket write per subscriber instead of one
//! per frame.
//!
//! # Cut-over
//!
//! A subscriber with a cursor replays from the store in pages until its
//! cursor is inside the ring (at or past the ring's floor: the ring holds
//! every frame published after it), then attaches under the same lock the
//! broadcaster publishes under: it takes the ring's frames after its
//! cursor as its backlog and every later frame arrives in its outbox. So
//! each seq reaches it exactly once, in order; the subscriber also drops
//! any frame at or below the last seq it sent (a page read from the store
//! can run ahead of the broadcaster). [`Replay`] holds these steps.
//!
//! A page that comes back empty proves that nothing after the
//! subscriber's last seq was stored when it was read, so everything after
//! it is still to be published or was published since, into the ring: the
//! subscriber attaches at its own last seq and takes the ring's frames
//! after it, provided the ring's floor has not moved since the hub sent it
//! to the store (nothing evicted or skipped meanwhile). Attaching at the
//! hub's head instead would skip a commit published between the read and
//! the attach.
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

use std::collections::{BTreeMap, VecDeque};
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
    too_slow: AtomicUsize,
}

impl Stats {
    /// Live subscribers.
    pub fn subscribers(&self) -> usize {
        self.subscribers.load(Ordering::Relaxed)
    }

    /// Subscribers let go as too slow so far (counted when their outbox
    /// overflowed, before their goodbye is sent).
    pub fn too_slow(&self) -> usize {
        self.too_slow.load(Ordering::Relaxed)
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
    /// The ring holds every frame published with a seq in `(floor,
    /// head]`; none at or below it (evicted, or skipped by a fast-forward).
    floor: i64,
    ring: VecDeque<Shared>,
    ring_bytes: usize,
    subs: Vec<Arc<Outbox>>,
}

/// What [`Hub::attach`] decided.
pub enum Attach {
    /// Live from now on: send `backlog`, then the outbox.
    Live(Arc<Outbox>, Vec<Shared>),
    /// The cursor is older than the ring: replay a page from the store.
    /// Holds the ring's floor at this answer.
    Behind(i64),
}

/// The hub.
pub struct Hub {
    inner: Mutex<Inner>,
    /// Frames handed over by the handlers that committed them, by seq,
    /// until published (only while someone is attached). Locked after
    /// `inner` when both are.
    handed: Mutex<BTreeMap<i64, Bytes>>,
    wake: Notify,
    /// The highest seq known committed.
    committed: AtomicI64,
    /// The highest seq committed without a frame handed over: a missing
    /// seq at or below it is read from the store at once.
    unframed: AtomicI64,
    /// Subscribers attached (or attaching); written under the lock only.
    /// A commit wakes the broadcaster only when it is non-zero.
    live: AtomicUsize,
    stats: Arc<Stats>,
    max_subscribers: usize,
    outbox_frames: usize,
    outbox_bytes: usize,
    closing: AtomicBool,
    coalesce: std::time::Duration,
    /// Frames the ring keeps.
    ring_frames: usize,
    /// Bytes the ring keeps at most.
    ring_bytes: usize,
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
                floor: head,
                ring: VecDeque::new(),
                ring_bytes: 0,
                subs: Vec::new(),
            }),
            handed: Mutex::new(BTreeMap::new()),
            wake: Notify::new(),
            committed: AtomicI64::new(head),
            unframed: AtomicI64::new(head),
            live: AtomicUsize::new(0),
            stats: Arc::new(Stats::default()),
            max_subscribers: config.max_subscribers,
            outbox_frames: config.outbox_frames.max(1),
            outbox_bytes: config.outbox_bytes.max(1),
            closing: AtomicBool::new(false),
            coalesce: config.firehose_coalesce,
            ring_frames: RING_FRAMES,
            ring_bytes: RING_BYTES,
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

    /// A write committed the events up to `seq` without handing over
    /// their frames (the broadcaster reads them from the store).
    ///
    /// With nobody attached the broadcaster is not woken (a write-heavy
    /// server with no subscriber pays nothing for the firehose). This
    /// store, then the load of `live`, pairs with `attach`'s store of
    /// `live`, then load of `committed` (all SeqCst): at least one side
    /// sees the other, so either the attaching subscriber's head already
    /// covers `seq` or this wake publishes it.
    pub fn committed(&self, seq: i64) {
        self.unframed.fetch_max(seq, Ordering::SeqCst);
        self.committed.fetch_max(seq, Ordering::SeqCst);
        if self.live.load(Ordering::SeqCst) > 0 {
            self.wake.notify_one();
        }
    }

    /// A write committed the event `seq`, whose frame is `frame` (the
    /// bytes the store stored for it): published as it is, not read back.
    /// Kept only while someone is attached (the pairing of
    /// [`committed`](Self::committed)).
    pub fn committed_frame(&self, seq: i64, frame: Bytes) {
        self.committed.fetch_max(seq, Ordering::SeqCst);
        if self.live.load(Ordering::SeqCst) > 0 {
            self.handed
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(seq, frame);
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
    /// live only); subscribers attach through [`Replay`].
    #[cfg(test)]
    fn attach(&self, cursor: Option<i64>) -> Attach {
        self.attach_after(cursor, None)
    }

    /// [`attach`](Self::attach); with `caught_up: Some(floor)` the
    /// subscriber read the store after `cursor` and found nothing, having
    /// been sent there when the ring's floor was `floor`: while the floor
    /// is still there, every event after `cursor` is in the ring or yet to
    /// be published (see "Cut-over").
    fn attach_after(&self, cursor: Option<i64>, caught_up: Option<i64>) -> Attach {
        let mut inner = self.lock();
        self.live.store(inner.subs.len() + 1, Ordering::SeqCst);
        if inner.subs.is_empty() {
            // Nobody was listening, so the broadcaster may not have been
            // woken for the latest commits: move the head to them.
            Self::fast_forward(&mut inner, self.committed.load(Ordering::SeqCst));
        }
        let backlog = match cursor {
            None => Vec::new(),
            Some(c) if c >= inner.floor || caught_up == Some(inner.floor) => {
                inner.ring.iter().filter(|f| f.seq > c).cloned().collect()
            }
            Some(_) => {
                self.live.store(inner.subs.len(), Ordering::SeqCst);
                return Attach::Behind(inner.floor);
            }
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
            inner.floor = to;
            inner.ring.clear();
            inner.ring_bytes = 0;
        }
    }

    fn publish(&self, frames: Vec<Shared>) {
        let mut inner = self.lock();
        self.publish_locked(&mut inner, frames);
    }

    /// Publishes the handed frames that follow the head without a gap;
    /// returns the first seq after the new head when a later one is known
    /// committed (its frame is missing, for now or for good).
    fn publish_handed(&self) -> Option<i64> {
        let mut inner = self.lock();
        let mut next = inner.head + 1;
        let run: Vec<Shared> = {
            let mut handed = self.handed.lock().unwrap_or_else(|p| p.into_inner());
            let mut run = Vec::new();
            while let Some(e) = handed.first_entry() {
                let seq = *e.key();
                if seq < next {
                    // Published already (read from the store, or skipped).
                    e.remove();
                } else if seq == next {
                    run.push(Shared {
                        seq,
                        bytes: e.remove(),
                    });
                    next += 1;
                } else {
                    break;
                }
            }
            run
        };
        self.publish_locked(&mut inner, run);
        let head = inner.head;
        (self.committed.load(Ordering::SeqCst) > head).then_some(head + 1)
    }

    fn publish_locked(&self, inner: &mut Inner, mut frames: Vec<Shared>) {
        // Strictly after the head and increasing: nothing is sent twice.
        let mut prev = inner.head;
        frames.retain(|f| {
            let keep = f.seq > prev;
            prev = prev.max(f.seq);
            keep
        });
        let (Some(first), Some(last)) = (frames.first(), frames.last()) else {
            return;
        };
        if first.seq > inner.head + 1 {
            // Seqs between the head and this batch were never published:
            // the ring may not claim them.
            Self::fast_forward(inner, first.seq - 1);
        }
        inner.head = last.seq;
        // Each subscriber gets the whole batch under one lock of its
        // outbox and one wake; one that overflowed is let go here.
        let before = inner.subs.len();
        inner.subs.retain(|s| s.push_all(&frames));
        if inner.subs.len() != before {
            self.live.store(inner.subs.len(), Ordering::SeqCst);
            self.stats
                .too_slow
                .fetch_add(before - inner.subs.len(), Ordering::Relaxed);
        }
        for f in frames {
            inner.ring_bytes += f.bytes.len();
            inner.ring.push_back(f);
        }
        while inner.ring.len() > self.ring_frames || inner.ring_bytes > self.ring_bytes {
            match inner.ring.pop_front() {
                Some(old) => {
                    inner.ring_bytes -= old.bytes.len();
                    inner.floor = old.seq;
                }
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
        let head = inner.head;
        self.handed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|seq, _| *seq > head);
        true
    }

    /// Reads the page of events after the head from the store and
    /// publishes it; how many it read (`None`: the read failed).
    async fn publish_from_store(
        &self,
        store: &Arc<Store>,
        reads: &crate::pool::Pool,
    ) -> Option<usize> {
        let head = self.lock().head;
        let st = store.clone();
        let events = reads
            .run(move || Ok(st.events_after(head, PAGE)?))
            .await
            .ok()?;
        let n = events.len();
        self.publish(
            events
                .into_iter()
                .map(|e| Shared {
                    seq: e.seq,
                    bytes: Bytes::from(e.frame),
                })
                .collect(),
        );
        Some(n)
    }

    /// The broadcaster: after each wake (and a coalescing pause),
    /// publishes the handed frames in seq order, and reads from the store
    /// the events no frame came for.
    pub async fn run(self: Arc<Self>, store: Arc<Store>, reads: Arc<crate::pool::Pool>) {
        // The seq found missing at the last tick: its frame gets one more
        // tick to arrive (its handler is usually between the commit and
        // the hand-off) before it is read from the store.
        let mut stalled: Option<i64> = None;
        loop {
            if stalled.is_none() {
                self.wake.notified().await;
            }
            if self.is_closing() {
                return;
            }
            if self.skip_when_idle() {
                stalled = None;
                continue;
            }
            if !self.coalesce.is_zero() {
                tokio::time::sleep(self.coalesce).await;
            } else if stalled.is_some() {
                tokio::task::yield_now().await;
            }
            let mut full_page = false;
            loop {
                let Some(missing) = self.publish_handed() else {
                    stalled = None;
                    break;
                };
                let overdue = full_page
                    || stalled == Some(missing)
                    || missing <= self.unframed.load(Ordering::SeqCst);
                if !overdue {
                    stalled = Some(missing);
                    break;
                }
                stalled = None;
                match self.publish_from_store(&store, &reads).await {
                    // Then the handed frames past the page, if any.
                    Some(n) if n > 0 => full_page = n == PAGE,
                    // A failed read is retried at the next wake; the
                    // subscribers' replay reads the store themselves.
                    _ => break,
                }
            }
        }
    }
}

/// What a replaying subscriber does next ([`Replay::step`]).
pub enum Step {
    /// Live from now on: send the backlog, then the outbox.
    Live(Arc<Outbox>, Vec<Shared>),
    /// Read a page of the store's events after this seq and hand it to
    /// [`Replay::page`].
    Read(i64),
}

/// A subscriber's way from its cursor to the live stream: store pages
/// until the hub takes it (see "Cut-over").
pub struct Replay {
    /// The last seq sent: nothing at or below it is sent again.
    last: i64,
    /// What to attach with next.
    at: Option<i64>,
    /// The ring's floor when the hub last sent it to the store.
    floor: i64,
    /// The last page read was empty.
    caught_up: bool,
}

impl Replay {
    /// A subscriber with `cursor` (`None`: live only).
    pub fn new(cursor: Option<i64>) -> Self {
        Replay {
            last: cursor.unwrap_or(i64::MIN),
            at: cursor,
            floor: i64::MIN,
            caught_up: false,
        }
    }

    /// The last seq sent.
    pub fn last(&self) -> i64 {
        self.last
    }

    /// Attaches to `hub`, or says which page to read.
    pub fn step(&mut self, hub: &Hub) -> Step {
        let caught_up = self.caught_up.then_some(self.floor);
        match hub.attach_after(self.at, caught_up) {
            Attach::Live(o, b) => Step::Live(o, b),
            Attach::Behind(floor) => {
                self.floor = floor;
                self.caught_up = false;
                Step::Read(self.last)
            }
        }
    }

    /// Takes the page read after [`Replay::last`]; returns its events to
    /// send, in order.
    pub fn page(&mut self, events: Vec<store::Event>) -> Vec<store::Event> {
        // Empty: nothing after `last` was stored at the read, so whatever
        // follows it is in the ring or still to come; attach at `last`
        // itself, not at the hub's head, which a commit published since
        // may have passed (see "Cut-over").
        self.caught_up = events.is_empty();
        let last = self.last;
        let out: Vec<store::Event> = events.into_iter().filter(|e| e.seq > last).collect();
        if let Some(e) = out.last() {
            self.last = e.seq;
        }
        self.at = Some(self.last);
        out
    }
}

#[cfg(test)]
#[path = "firehose_tests.rs"]
mod tests;
