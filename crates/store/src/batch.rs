//! The writer's queue and group commit.
//!
//! Callers validate and encode their input on their own thread, then send a
//! [`Job`] and block on its reply. The writer takes the first queued job
//! plus whatever else is queued (up to `max_batch`), opens one
//! `BEGIN IMMEDIATE` transaction, runs each job inside its own `SAVEPOINT`
//! (a failing job is rolled back alone, the others keep their writes),
//! commits once (one WAL append, one fsync under `synchronous = FULL`),
//! and only then answers every caller.

use std::sync::mpsc::{Receiver, SyncSender};

use rusqlite::Connection;

use crate::error::{Result, StoreError};
use crate::writer::Writer;

/// A queued unit of work for the writer thread.
pub(crate) trait Job: Send {
    /// Runs inside the batch transaction (and the job's savepoint); `false`
    /// when it failed (its error is kept for [`finish`](Job::finish)).
    fn run(&mut self, w: &mut Writer) -> bool;
    /// Answers the caller once the batch committed (or failed to).
    fn finish(self: Box<Self>, committed: std::result::Result<(), String>);
}

/// A closure job with a typed answer.
pub(crate) struct Task<T, F> {
    f: Option<F>,
    out: Option<Result<T>>,
    reply: SyncSender<Result<T>>,
}

impl<T, F> Task<T, F> {
    pub(crate) fn new(f: F, reply: SyncSender<Result<T>>) -> Self {
        Task {
            f: Some(f),
            out: None,
            reply,
        }
    }
}

impl<T: Send, F: FnOnce(&mut Writer) -> Result<T> + Send> Job for Task<T, F> {
    fn run(&mut self, w: &mut Writer) -> bool {
        let Some(f) = self.f.take() else {
            return false;
        };
        let r = f(w);
        let ok = r.is_ok();
        self.out = Some(r);
        ok
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

/// The writer thread's loop: batches, savepoints, one commit per batch.
pub(crate) fn run(mut w: Writer, rx: Receiver<Box<dyn Job>>, max_batch: usize) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < max_batch {
            match rx.try_recv() {
                Ok(j) => batch.push(j),
                Err(_) => break,
            }
        }
        let outcome = run_batch(&mut w, &mut batch);
        // Committed or not, before anyone is answered (`cid_cache.rs`).
        w.invalidate_touched();
        if outcome.is_err() {
            // The database did not take the batch: recover the sequence.
            if let Ok(n) = crate::schema::next_seq(&w.conn) {
                w.next_seq = n;
            }
        }
        for job in batch {
            job.finish(outcome.clone());
        }
    }
}

fn exec(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(|_| ())
}

fn run_batch(w: &mut Writer, batch: &mut [Box<dyn Job>]) -> std::result::Result<(), String> {
    exec(&w.conn, "BEGIN IMMEDIATE").map_err(|e| e.to_string())?;
    for job in batch.iter_mut() {
        let seq_before = w.next_seq;
        let step = (|| -> rusqlite::Result<()> {
            exec(&w.conn, "SAVEPOINT job")?;
            if job.run(w) {
                exec(&w.conn, "RELEASE job")
            } else {
                w.next_seq = seq_before;
                exec(&w.conn, "ROLLBACK TO job")?;
                exec(&w.conn, "RELEASE job")
            }
        })();
        if let Err(e) = step {
            let _ = w.conn.execute_batch("ROLLBACK");
            return Err(e.to_string());
        }
    }
    match exec(&w.conn, "COMMIT") {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = w.conn.execute_batch("ROLLBACK");
            Err(e.to_string())
        }
    }
}
