//! A counting gate: at most `n` threads inside at once, the rest asleep.
//!
//! Callers plan their commits (MST update, signature) on their own
//! threads, in parallel with the writer thread (`commit.rs`). Left
//! unbounded, ten callers planning at once on a two-core machine are ten
//! runnable threads beside the writer, which then gets a fraction of a
//! core while it holds the only write lock. The gate keeps the planners to
//! the cores there are ([`planners`]); the others sleep until a slot
//! frees.

use std::sync::{Condvar, Mutex};

/// At most `capacity` holders of a [`Slot`] at a time.
#[derive(Debug)]
pub(crate) struct Gate {
    inside: Mutex<usize>,
    freed: Condvar,
    capacity: usize,
}

/// A place inside a [`Gate`], given back on drop.
pub(crate) struct Slot<'g>(&'g Gate);

impl Gate {
    /// A gate letting `capacity` (at least one) threads in at once.
    pub(crate) fn new(capacity: usize) -> Self {
        Gate {
            inside: Mutex::new(0),
            freed: Condvar::new(),
            capacity: capacity.max(1),
        }
    }

    /// Waits for a free place and takes it.
    pub(crate) fn enter(&self) -> Slot<'_> {
        let mut inside = self.inside.lock().unwrap_or_else(|p| p.into_inner());
        while *inside >= self.capacity {
            inside = self.freed.wait(inside).unwrap_or_else(|p| p.into_inner());
        }
        *inside += 1;
        Slot(self)
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut inside = self.0.inside.lock().unwrap_or_else(|p| p.into_inner());
        *inside = inside.saturating_sub(1);
        drop(inside);
        self.0.freed.notify_one();
    }
}

/// Planners allowed at once: one per core.
///
/// One per core, not one per core besides the writer's: a planner also
/// sleeps (a node read, the gate, its wake-up), and a second one fills
/// those gaps (`examples/profile.rs apply_callers_10`, alternating runs;
/// far more planners than cores were slower).
pub(crate) fn planners() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn never_more_than_capacity_inside() {
        let gate = Gate::new(2);
        let now = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..200 {
                        let _slot = gate.enter();
                        let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(n, Ordering::SeqCst);
                        std::hint::spin_loop();
                        now.fetch_sub(1, Ordering::SeqCst);
                    }
                });
            }
        });
        assert!(most.load(Ordering::SeqCst) <= 2);
        assert_eq!(now.load(Ordering::SeqCst), 0);
        // Every slot was given back: a third and a fourth entry both pass.
        let (_a, _b) = (gate.enter(), gate.enter());
    }

    #[test]
    fn capacity_is_at_least_one() {
        let gate = Gate::new(0);
        drop(gate.enter());
        assert!(planners() >= 1);
    }
}
