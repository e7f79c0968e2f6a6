//! The firehose hub: it fans out the store's event feed. Every event's
//! frame is encoded once (by the store's writer), its bytes put in one
//! [`Bytes`] that every subscriber's outbox shares, and a ring of recent
//! frames lets a subscriber that replays from a cursor cut over to the
//! live stream with no gap and no duplicate.
//!
//! # Flow
//!
//! The store's writer owns the event order: the hub is the store's
//! [`store::EventFeed`], registered when the store opens, so each
//! committed batch's events (`#commit`, `#sync`, `#identity`, `#account`,
//! whichever write produced them) are appended to the ring in seq order,
//! on the committing thread, after COMMIT and before the writer's callers
//! hear back. No route tells the hub anything. The append is the whole of
//! the hook: a short lock of the ring, a push per frame (the frame's
//! buffer moves into a `Bytes`, no copy), evictions, and a wake of the
//! broadcaster task when anyone listens.
//!
//! The broadcaster fans out: after a wake it waits
//! [`ServerConfig::firehose_coalesce`](crate::ServerConfig::firehose_coalesce),
//! so the commits of those few milliseconds go out as one batch (one wake
//! and one socket write per subscriber instead of one per frame), then
//! takes the ring's frames after the last seq it sent and appends them to
//! every live subscriber's outbox. It holds the subscriber list's lock
//! while it does, never the ring's, so the writer never waits on a
//! subscriber.
//!
//! # When the ring is full
//!
//! The ring keeps the last `ring_frames` frames and `ring_bytes` bytes
//! ([`HubLimits`]); the oldest go first, whoever still needs them. That
//! never loses an event: the store's log holds every one. A subscriber
//! whose cursor is older than the ring replays from the log (below); and
//! should the broadcaster fall so far behind that frames leave the ring
//! before it sent them, every live subscriber is told it is
//! [`Stopped::Behind`] and goes back to replaying from the log after the
//! last seq it sent, then cuts over again.
//!
//! # Cut-over
//!
//! A subscriber with a cursor replays from the store in pages until its
//! cursor is inside the ring (at or past the ring's floor: the ring holds
//! every event after it), then attaches under the subscriber list's lock,
//! which the broadcaster sends under: it takes the ring's frames after its
//! cursor up to the last seq the broadcaster sent as its backlog, and its
//! outbox gets every later frame. So each seq reaches it exactly once, in
//! order. A page read from the store may run ahead of the ring (an event
//! is in the log at COMMIT, in the ring a moment later): the outbox skips
//! frames at or below the cursor it attached with, and the subscriber
//! drops any frame at or below the last seq it sent. [`Replay`] holds
//! these steps.
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
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::Notify;

use crate::ServerConfig;

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

/// The hub's bounds, taken from the [`ServerConfig`].
#[derive(Debug, Clone)]
pub struct HubLimits {
    /// Concurrent subscribers.
    pub max_subscribers: usize,
    /// Frames an outbox holds before its subscriber is too slow.
    pub outbox_frames: usize,
    /// Bytes an outbox holds before its subscriber is too slow.
    pub outbox_bytes: usize,
    /// The broadcaster's pause after a wake.
    pub coalesce: Duration,
    /// Frames the ring keeps.
    pub ring_frames: usize,
    /// Bytes the ring keeps at most.
    pub ring_bytes: usize,
}

impl From<&ServerConfig> for HubLimits {
    fn from(c: &ServerConfig) -> Self {
        HubLimits {
            max_subscribers: c.max_subscribers,
            outbox_frames: c.outbox_frames.max(1),
            outbox_bytes: c.outbox_bytes.max(1),
            coalesce: c.firehose_coalesce,
            ring_frames: RING_FRAMES,
            ring_bytes: RING_BYTES,
        }
    }
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

/// Why an outbox takes no more frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// Its subscriber did not keep up with its outbox's bounds.
    TooSlow,
    /// The ring let go of frames before the broadcaster sent them: the
    /// subscriber replays them from the store (see "When the ring is
    /// full").
    Behind,
}

struct Queue {
    frames: VecDeque<Shared>,
    bytes: usize,
    stopped: Option<Stopped>,
}

/// A subscriber's outbox.
pub struct Outbox {
    q: Mutex<Queue>,
    /// Frames at or below this seq are not pushed (the subscriber has them
    /// from its backlog or from the store).
    from: i64,
    max_frames: usize,
    max_bytes: usize,
    /// Frames were pushed.
    pub ready: Notify,
    /// It was stopped ([`Outbox::take`] says why).
    pub stopped: Notify,
}

impl Outbox {
    fn new(from: i64, limits: &HubLimits) -> Self {
        Outbox {
            q: Mutex::new(Queue {
                frames: VecDeque::new(),
                bytes: 0,
                stopped: None,
            }),
            from,
            max_frames: limits.outbox_frames,
            max_bytes: limits.outbox_bytes,
            ready: Notify::new(),
            stopped: Notify::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.q.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The seq it was attached after: frames at or below it are not
    /// pushed.
    pub fn from(&self) -> i64 {
        self.from
    }

    /// Stops the outbox for `why`, emptying it, and signals its subscriber.
    fn stop(&self, q: &mut Queue, why: Stopped) {
        q.stopped = Some(why);
        q.frames = VecDeque::new();
        q.bytes = 0;
        self.stopped.notify_one();
    }

    /// Appends the frames after [`from`](Self::from) and wakes the
    /// subscriber once; `false` when it is (now) stopped.
    fn push_all(&self, frames: &[Shared]) -> bool {
        let mut q = self.lock();
        if q.stopped.is_some() {
            return false;
        }
        let mut pushed = false;
        for f in frames.iter().filter(|f| f.seq > self.from) {
            if q.frames.len() >= self.max_frames || q.bytes + f.bytes.len() > self.max_bytes {
                self.stop(&mut q, Stopped::TooSlow);
                return false;
            }
            q.bytes += f.bytes.len();
            q.frames.push_back(f.clone());
            pushed = true;
        }
        drop(q);
        if pushed {
            self.ready.notify_one();
        }
        true
    }

    /// Moves up to `max` frames into `out`; once stopped, says why.
    pub fn take(&self, out: &mut Vec<Shared>, max: usize) -> Result<(), Stopped> {
        let mut q = self.lock();
        if let Some(why) = q.stopped {
            return Err(why);
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

/// The ring: the frames the feed appended, newest last.
struct Ring {
    /// The last seq appended.
    head: i64,
    /// The ring holds every event with a seq in `(floor, head]`: none at or
    /// below it (evicted, or from before the store opened).
    floor: i64,
    frames: VecDeque<Shared>,
    bytes: usize,
    /// Someone is subscribed: appends wake the broadcaster.
    listening: bool,
}

impl Ring {
    /// The frames with a seq in `(after, upto]`.
    fn between(&self, after: i64, upto: i64) -> Vec<Shared> {
        let start = self.frames.partition_point(|f| f.seq <= after);
        let end = self.frames.partition_point(|f| f.seq <= upto);
        self.frames.range(start..end.max(start)).cloned().collect()
    }
}

/// The live subscribers and what the broadcaster sent them.
struct Subs {
    /// The last seq the broadcaster sent (or, with nobody subscribed, the
    /// head when the first subscriber attached: nothing before it is owed
    /// to anyone).
    sent: i64,
    outboxes: Vec<Arc<Outbox>>,
}

/// What a subscriber does next ([`Replay::step`], [`Hub::attach`]).
pub enum Step {
    /// Live from now on: send the backlog, then the outbox.
    Live(Arc<Outbox>, Vec<Shared>),
    /// Read a page of the store's events after `after` and hand it to
    /// [`Replay::page`]: the cursor is older than the ring, whose floor
    /// was `floor`.
    Read {
        /// The seq to read after.
        after: i64,
        /// The ring's floor when the hub said so.
        floor: i64,
    },
}

/// The hub. Lock order: `subs`, then `ring`; the feed takes `ring` alone.
pub struct Hub {
    ring: Mutex<Ring>,
    subs: Mutex<Subs>,
    /// Wakes the broadcaster.
    wake: Notify,
    stats: Arc<Stats>,
    limits: HubLimits,
    closing: AtomicBool,
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

impl store::EventFeed for Hub {
    fn opened(&self, last_seq: i64) {
        let mut subs = self.subs();
        let mut ring = self.ring();
        ring.head = last_seq;
        ring.floor = last_seq;
        subs.sent = last_seq;
    }

    /// The append (see "Flow"): on the store's committing thread, under
    /// the writer's lock, so it only takes the ring's lock.
    fn committed(&self, events: Vec<store::Event>) {
        let mut ring = self.ring();
        for e in events {
            // In seq order from the one writer; nothing is appended twice.
            if e.seq <= ring.head {
                continue;
            }
            ring.head = e.seq;
            ring.bytes += e.frame.len();
            ring.frames.push_back(Shared {
                seq: e.seq,
                bytes: Bytes::from(e.frame),
            });
        }
        while ring.frames.len() > self.limits.ring_frames || ring.bytes > self.limits.ring_bytes {
            match ring.frames.pop_front() {
                Some(old) => {
                    ring.bytes -= old.bytes.len();
                    ring.floor = old.seq;
                }
                None => break,
            }
        }
        let wake = ring.listening;
        drop(ring);
        if wake {
            self.wake.notify_one();
        }
    }
}

impl Hub {
    /// A hub within `limits`; the store it feeds on sets its head when it
    /// opens ([`store::EventFeed::opened`]).
    pub fn new(limits: HubLimits) -> Self {
        Hub {
            ring: Mutex::new(Ring {
                head: 0,
                floor: 0,
                frames: VecDeque::new(),
                bytes: 0,
                listening: false,
            }),
            subs: Mutex::new(Subs {
                sent: 0,
                outboxes: Vec::new(),
            }),
            wake: Notify::new(),
            stats: Arc::new(Stats::default()),
            limits,
            closing: AtomicBool::new(false),
            closed: Notify::new(),
        }
    }

    fn ring(&self) -> MutexGuard<'_, Ring> {
        self.ring.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn subs(&self) -> MutexGuard<'_, Subs> {
        self.subs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The counters.
    pub fn stats(&self) -> Arc<Stats> {
        self.stats.clone()
    }

    /// The last seq the store fed.
    pub fn head(&self) -> i64 {
        self.ring().head
    }

    /// Takes a subscriber slot, if under the limit.
    pub fn slot(&self) -> Option<Slot> {
        let n = self.stats.subscribers.fetch_add(1, Ordering::AcqRel);
        let slot = Slot(self.stats.clone());
        if n >= self.limits.max_subscribers || self.is_closing() {
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
    /// live only, from the head on), or sends it to the store when its
    /// cursor is older than the ring (see "Cut-over"). Subscribers attach
    /// through [`Replay`].
    ///
    /// `dry: Some(floor)`: the subscriber was sent to the store when the
    /// ring's floor was `floor` and its page after `cursor` came back
    /// empty. While the floor is still there, nothing between `cursor` and
    /// it was ever stored (all of it was committed before that read), so
    /// the subscriber attaches as if at the floor instead of reading the
    /// same empty page forever. A log consistent with the feed never
    /// answers empty there; this is the guard.
    fn attach(&self, cursor: Option<i64>, dry: Option<i64>) -> Step {
        let mut subs = self.subs();
        let mut ring = self.ring();
        if subs.outboxes.is_empty() {
            // Nobody listened, so nothing was sent: nothing before the
            // head is owed to anyone.
            subs.sent = ring.head;
        }
        let (from, backlog) = match cursor {
            None => (ring.head, Vec::new()),
            Some(c) if c >= ring.floor || dry == Some(ring.floor) => {
                (c.max(subs.sent), ring.between(c, subs.sent))
            }
            Some(c) => {
                return Step::Read {
                    after: c,
                    floor: ring.floor,
                };
            }
        };
        // From here on every append wakes the broadcaster.
        ring.listening = true;
        drop(ring);
        let outbox = Arc::new(Outbox::new(from, &self.limits));
        subs.outboxes.push(outbox.clone());
        Step::Live(outbox, backlog)
    }

    /// Detaches a subscriber.
    pub fn detach(&self, outbox: &Arc<Outbox>) {
        let mut subs = self.subs();
        subs.outboxes.retain(|s| !Arc::ptr_eq(s, outbox));
        if subs.outboxes.is_empty() {
            self.ring().listening = false;
        }
    }

    /// Sends the ring's frames after the last seq sent to every live
    /// subscriber (see "Flow" and "When the ring is full").
    fn fan_out(&self) {
        let mut subs = self.subs();
        let mut ring = self.ring();
        if subs.outboxes.is_empty() {
            ring.listening = false;
            subs.sent = ring.head;
            return;
        }
        if subs.sent < ring.floor {
            // Frames left the ring before they went out: nobody may skip
            // them, so every subscriber reads them from the store.
            ring.listening = false;
            subs.sent = ring.head;
            drop(ring);
            for o in subs.outboxes.drain(..) {
                o.stop(&mut o.lock(), Stopped::Behind);
            }
            return;
        }
        let frames = ring.between(subs.sent, ring.head);
        subs.sent = ring.head;
        drop(ring);
        if frames.is_empty() {
            return;
        }
        // Each subscriber gets the whole batch under one lock of its
        // outbox and one wake; one that overflowed is let go here.
        let before = subs.outboxes.len();
        subs.outboxes.retain(|s| s.push_all(&frames));
        let dropped = before - subs.outboxes.len();
        if dropped > 0 {
            self.stats.too_slow.fetch_add(dropped, Ordering::Relaxed);
            if subs.outboxes.is_empty() {
                self.ring().listening = false;
            }
        }
    }

    /// The broadcaster: after each wake (and a coalescing pause), sends
    /// what the feed appended since.
    pub async fn run(self: Arc<Self>) {
        loop {
            self.wake.notified().await;
            if self.is_closing() {
                return;
            }
            if !self.limits.coalesce.is_zero() {
                tokio::time::sleep(self.limits.coalesce).await;
            }
            self.fan_out();
        }
    }
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
    dry: bool,
}

impl Replay {
    /// A subscriber with `cursor` (`None`: live only).
    pub fn new(cursor: Option<i64>) -> Self {
        Replay {
            last: cursor.unwrap_or(i64::MIN),
            at: cursor,
            floor: i64::MIN,
            dry: false,
        }
    }

    /// The last seq sent.
    pub fn last(&self) -> i64 {
        self.last
    }

    /// Attaches to `hub`, or says which page to read.
    pub fn step(&mut self, hub: &Hub) -> Step {
        let step = hub.attach(self.at, self.dry.then_some(self.floor));
        if let Step::Read { floor, .. } = step {
            self.floor = floor;
            self.dry = false;
        }
        step
    }

    /// Takes the page read after [`Replay::last`]; returns its events to
    /// send, in order.
    pub fn page(&mut self, events: Vec<store::Event>) -> Vec<store::Event> {
        self.dry = events.is_empty();
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
