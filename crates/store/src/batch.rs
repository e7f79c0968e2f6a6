//! The writer's queue and group commit.
//!
//! Callers validate and encode their input on their own thread, then hand
//! over a [`Job`]. The writer state (its connection and sequence) sits
//! behind one mutex. A caller that finds no job queued and the writer idle runs
//! its job itself, as a batch of one, on its own thread ([`Queue::submit`]):
//! a lone writer then pays no thread hand-off (two wake-ups per commit).
//! Otherwise it queues the job and blocks on its reply; the writer
//! thread takes the first queued job plus whatever else is queued (up to
//! `max_batch`). Either way a batch opens one `BEGIN IMMEDIATE`
//! transaction, runs each job inside its own `SAVEPOINT` (a failing job is
//! rolled back alone, the others keep their writes), commits once (one WAL
//! append, one fsync under `synchronous = FULL`), and only then answers
//! every caller in it. Savepoints are not free (SQLite first copies every
//! page a job dirties into the statement journal, a visible share of a
//! createRecord's writer time in callgrind and perf), so a batch of one
//! job runs without one, and so do commits (unguarded [`Task`]s): they
//! check their guard before their first write and say which side of it
//! they failed on ([`Failed`]); one that fails while writing its rows (an
//! I/O error, say) rolls the whole batch back, and every caller in it gets
//! the error, as if its COMMIT had failed.
//!
//! After the COMMIT and before any caller is answered, still under the
//! writer's lock, the batch's events go to the store's feed in seq order
//! (`feed.rs`); the events of a job rolled back, or of a batch that did not
//! commit, never do.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use rusqlite::Connection;

use crate::checkpoint::{WalBacklog, finish_wal};
use crate::error::{Failed, Result, StoreError};
use crate::writer::Writer;

/// How a job's run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// It did its work.
    Done,
    /// It failed before writing anything.
    Refused,
    /// It failed after it began writing: its writes must be undone.
    Broke,
}

/// A queued unit of work for the writer thread.
pub(crate) trait Job: Send {
    /// Runs inside the batch transaction (and the job's savepoint, unless
    /// [`guarded`](Job::guarded) says it needs none); a failure's error is
    /// kept for [`finish`](Job::finish).
    fn run(&mut self, w: &mut Writer) -> Outcome;
    /// Whether the job runs inside its own savepoint. An unguarded job
    /// that [`Broke`](Outcome::Broke) rolls its whole batch back.
    fn guarded(&self) -> bool;
    /// Answers the caller once the batch committed (or failed to).
    fn finish(self: Box<Self>, committed: std::result::Result<(), String>);
}

/// A closure job with a typed answer.
pub(crate) struct Task<T, F> {
    f: Option<F>,
    out: Option<Result<T>>,
    reply: SyncSender<Result<T>>,
    guarded: bool,
}

impl<T, F> Task<T, F> {
    /// A job run inside its own savepoint (`guarded`), or one that tells
    /// whether it failed before or after writing (its [`Failed`]).
    pub(crate) fn new(f: F, reply: SyncSender<Result<T>>, guarded: bool) -> Self {
        Task {
            f: Some(f),
            out: None,
            reply,
            guarded,
        }
    }
}

impl<T: Send, F: FnOnce(&mut Writer) -> std::result::Result<T, Failed> + Send> Job for Task<T, F> {
    fn run(&mut self, w: &mut Writer) -> Outcome {
        let Some(f) = self.f.take() else {
            return Outcome::Refused;
        };
        let (out, outcome) = match f(w) {
            Ok(v) => (Ok(v), Outcome::Done),
            Err(Failed { error, wrote }) => {
                // A guarded job's writes are undone by its savepoint, or
                // with its transaction when it runs alone.
                let outcome = if wrote || self.guarded {
                    Outcome::Broke
                } else {
                    Outcome::Refused
                };
                (Err(error), outcome)
            }
        };
        self.out = Some(out);
        outcome
    }

    fn guarded(&self) -> bool {
        self.guarded
    }

    fn finish(self: Box<Self>, committed: std::result::Result<(), String>) {
        let out = match (self.out, committed) {
            (Some(Err(e)), _) => Err(e),
            (Some(Ok(v)), Ok(())) => Ok(v),
            (Some(Ok(_)), Err(msg)) => Err(StoreError::BatchFailed(msg)),
            (None, Err(msg)) => Err(StoreError::BatchFailed(msg)),
            (None, Ok(())) => Err(StoreError::BatchFailed("job did not run".into())),
        };
        // The caller may have gone away; nothing to do then.
        let _ = self.reply.send(out);
    }
}

/// The caller-facing half of the queue: the shared writer state, the
/// channel to the writer thread, and how many jobs wait in it.
pub(crate) struct Queue {
    writer: Arc<Mutex<Writer>>,
    tx: Option<Sender<Box<dyn Job>>>,
    queued: Arc<AtomicUsize>,
    wal: Arc<WalBacklog>,
}

impl Queue {
    /// Starts the writer thread over `w`.
    pub(crate) fn start(
        w: Writer,
        max_batch: usize,
        wal: Arc<WalBacklog>,
    ) -> std::io::Result<(Queue, JoinHandle<()>)> {
        let writer = Arc::new(Mutex::new(w));
        let queued = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = mpsc::channel::<Box<dyn Job>>();
        let (w2, q2, wal2) = (writer.clone(), queued.clone(), wal.clone());
        let h = std::thread::Builder::new()
            .name("atstore-writer".into())
            .spawn(move || run(&w2, &q2, &wal2, rx, max_batch.max(1)))?;
        Ok((
            Queue {
                writer,
                tx: Some(tx),
                queued,
                wal,
            },
            h,
        ))
    }

    /// Closes the channel: the writer thread finishes what is queued and
    /// exits.
    pub(crate) fn close(&mut self) {
        self.tx = None;
    }

    /// Runs `job` and waits until it is answered (its batch committed):
    /// on this thread when the writer is idle and nothing is queued, else
    /// through the writer thread.
    pub(crate) fn submit<T>(
        &self,
        job: Box<dyn Job>,
        reply: &mpsc::Receiver<Result<T>>,
    ) -> Result<T> {
        let job = if self.queued.load(Ordering::Acquire) == 0 {
            match self.writer.try_lock() {
                Ok(mut w) => {
                    let mut batch = vec![job];
                    process(&mut w, &mut batch);
                    finish_wal(&w.conn, &self.wal);
                    None
                }
                Err(_) => Some(job),
            }
        } else {
            Some(job)
        };
        if let Some(job) = job {
            let tx = self.tx.as_ref().ok_or(StoreError::WriterGone)?;
            self.queued.fetch_add(1, Ordering::AcqRel);
            if tx.send(job).is_err() {
                self.queued.fetch_sub(1, Ordering::AcqRel);
                return Err(StoreError::WriterGone);
            }
        }
        reply.recv().map_err(|_| StoreError::WriterGone)?
    }
}

/// The writer thread's loop: batches of whatever is queued.
fn run(
    writer: &Mutex<Writer>,
    queued: &AtomicUsize,
    wal: &WalBacklog,
    rx: Receiver<Box<dyn Job>>,
    max_batch: usize,
) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < max_batch {
            match rx.try_recv() {
                Ok(j) => batch.push(j),
                Err(_) => break,
            }
        }
        queued.fetch_sub(batch.len(), Ordering::AcqRel);
        // A job panicking inside SQLite code is not expected; if one did,
        // the state is still a valid connection, so keep serving.
        let mut w = writer.lock().unwrap_or_else(|p| p.into_inner());
        process(&mut w, &mut batch);
        finish_wal(&w.conn, wal);
    }
}

/// One batch: savepoints, one commit, cache invalidation, the events to
/// the feed, then the answers.
fn process(w: &mut Writer, batch: &mut Vec<Box<dyn Job>>) {
    let outcome = run_batch(w, batch);
    // Committed or not, before anyone is answered (`cid_cache.rs`).
    w.invalidate_touched();
    if outcome.is_err() {
        // The database did not take the batch: recover the sequence.
        w.events.discard();
        if let Ok(n) = crate::schema::next_seq(&w.conn) {
            w.next_seq = n;
        }
    } else {
        w.events.deliver();
    }
    for job in batch.drain(..) {
        job.finish(outcome.clone());
    }
}

fn exec(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(|_| ())
}

/// Rolls the batch's transaction back.
fn roll_back(w: &mut Writer) {
    let _ = w.conn.execute_batch("ROLLBACK");
}

fn run_batch(w: &mut Writer, batch: &mut [Box<dyn Job>]) -> std::result::Result<(), String> {
    exec(&w.conn, "BEGIN IMMEDIATE").map_err(|e| e.to_string())?;
    let alone = batch.len() == 1;
    for job in batch.iter_mut() {
        let seq_before = w.next_seq;
        // A savepoint is not free: SQLite copies every page the job then
        // dirties into the statement journal first (callgrind and perf show
        // it in `subjournalPage` on `store.apply_commit`). A job
        // alone needs none (rolling the transaction back undoes exactly its
        // writes), nor does an unguarded one (see `Job::guarded`).
        if alone || !job.guarded() {
            match job.run(w) {
                Outcome::Done => {}
                Outcome::Refused => w.rewind(seq_before),
                Outcome::Broke => {
                    // Writes to undo: the batch goes, as a failed COMMIT
                    // would take it (a job alone keeps its own error).
                    w.rewind(seq_before);
                    roll_back(w);
                    return Err(
                        "a job failed while writing its rows; its batch was rolled back".into(),
                    );
                }
            }
            continue;
        }
        let step = (|| -> rusqlite::Result<()> {
            exec(&w.conn, "SAVEPOINT job")?;
            if job.run(w) == Outcome::Done {
                exec(&w.conn, "RELEASE job")
            } else {
                w.rewind(seq_before);
                exec(&w.conn, "ROLLBACK TO job")?;
                exec(&w.conn, "RELEASE job")
            }
        })();
        if let Err(e) = step {
            roll_back(w);
            return Err(e.to_string());
        }
    }
    match exec(&w.conn, "COMMIT") {
        Ok(()) => Ok(()),
        Err(e) => {
            roll_back(w);
            Err(e.to_string())
        }
    }
}

#[cfg(test)]
#[path = "batch_tests.rs"]
mod tests;
