//! The event feed: the writer is the one owner of the event order, and it
//! hands each committed batch's events (`#commit`, `#sync`, `#identity`,
//! `#account`) to the [`EventFeed`] registered at [`crate::Store::open`]
//! ([`crate::Config::feed`]), in seq order, each exactly once.
//!
//! The hand-off happens inside the writer, after the batch's COMMIT and
//! before any caller in the batch hears back, under the writer's lock: so
//! the feed sees batches in the order they committed (one batch at a
//! time), and a caller that returns from a write knows its events are
//! already in the feed. Events of a job that was rolled back (a savepoint
//! undone, a refused commit) or of a batch whose COMMIT failed never reach
//! it; their seqs are handed out again, so the feed's seqs run without a
//! gap.
//!
//! Because the hook runs on the committing thread while the writer lock is
//! held, an implementation must only enqueue: no I/O, no waiting on
//! anything a reader or a subscriber holds, no call back into the store.
//! A bounded implementation decides what "full" means; it must never drop
//! an event silently, since the store's log (`events_after`) is the only
//! other copy (the xrpc hub lets its subscribers fall behind its ring and
//! replay from the log; appview's index rebuilds from the repository).

use std::fmt;
use std::sync::Arc;

use crate::Event;

/// Where the writer hands committed events (see the module doc).
pub trait EventFeed: Send + Sync {
    /// The log's last seq when the store opened (0 for an empty log),
    /// before any [`committed`](Self::committed) call: the first event
    /// fed is `last_seq + 1`.
    fn opened(&self, last_seq: i64) {
        let _ = last_seq;
    }

    /// The events of one committed batch, in seq order (gapless, and
    /// following the last batch's). Called on the committing thread under
    /// the writer's lock, before the batch's callers hear back: enqueue
    /// and return.
    fn committed(&self, events: Vec<Event>);
}

impl fmt::Debug for dyn EventFeed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EventFeed")
    }
}

/// The events of the batch being written, held for the feed until the
/// batch commits (owned by the writer). With no feed registered nothing
/// is kept.
pub(crate) struct Pending {
    feed: Option<Arc<dyn EventFeed>>,
    events: Vec<Event>,
}

impl Pending {
    pub(crate) fn new(feed: Option<Arc<dyn EventFeed>>) -> Self {
        Pending {
            feed,
            events: Vec::new(),
        }
    }

    /// Keeps the frame of event `seq` (header and body) for the feed.
    pub(crate) fn push(&mut self, seq: i64, frame: Vec<u8>) {
        if self.feed.is_some() {
            self.events.push(Event { seq, frame });
        }
    }

    /// Forgets the events from `seq` on (their job was rolled back, and
    /// the seqs go to the next job).
    pub(crate) fn rewind(&mut self, seq: i64) {
        let keep = self.events.partition_point(|e| e.seq < seq);
        self.events.truncate(keep);
    }

    /// Forgets every event of the batch (it did not commit).
    pub(crate) fn discard(&mut self) {
        self.events.clear();
    }

    /// Hands the batch's events to the feed (after its COMMIT).
    pub(crate) fn deliver(&mut self) {
        if let (Some(feed), false) = (&self.feed, self.events.is_empty()) {
            feed.committed(std::mem::take(&mut self.events));
        }
    }
}
