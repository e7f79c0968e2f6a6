//! Moving WAL frames into the database file off the writer's path: the
//! background checkpointer thread, and the hand-over of the WAL's last
//! frames to the writer so that the WAL rewinds under a steady load.
//!
//! The writer's connection has `wal_autocheckpoint = 0`, so its COMMIT
//! never pays for a checkpoint (and its fsync); the checkpointer runs
//! PASSIVE checkpoints every [`crate::Config::checkpoint_interval`], which
//! never block the writer or the readers.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc::{self, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::Connection;

use crate::error::Result;
use crate::schema;

/// The shortest pause between two background checkpoints
/// ([`crate::Config::checkpoint_interval`] is raised to it), so a zero
/// interval cannot spin the thread.
const MIN_CHECKPOINT_INTERVAL: Duration = Duration::from_millis(1);

/// The hand-over of the WAL's last frames from the background checkpointer
/// to the writer (see [`finish_wal`]): idle, requested by the checkpointer
/// (after it caught up with a WAL past its restart size), or being done by
/// the writer. The checkpointer does not checkpoint while it is not idle,
/// so the two never collide (a second PASSIVE checkpoint while one runs
/// gets SQLITE_BUSY and copies nothing).
#[derive(Default)]
pub(crate) struct WalBacklog(AtomicU8);

const WAL_IDLE: u8 = 0;
const WAL_REQUESTED: u8 = 1;
const WAL_WRITER: u8 = 2;

impl WalBacklog {
    /// Asks the writer to copy the WAL's last frames after its current
    /// batch.
    fn request(&self) {
        self.0.store(WAL_REQUESTED, Ordering::Release);
    }

    /// Whether the checkpointer may run (no hand-over pending).
    fn idle(&self) -> bool {
        self.0.load(Ordering::Acquire) == WAL_IDLE
    }
}

/// Lets the WAL restart from its beginning (the writer calls it between
/// two batches). SQLite rewinds the WAL when a write transaction starts and
/// every frame has been copied back to the database (and no reader still
/// needs them). Under a steady write load the background checkpointer
/// never sees that moment, since frames keep arriving while it copies. A
/// `RESTART` checkpoint from that thread would force it, but holds the
/// write lock while it copies what arrived meanwhile and, contending with a
/// writer that takes the lock back right away, held it for long stretches
/// per restart (`store.apply_commit/ours.nosync/callers-1`).
/// So the writer does it itself, when asked: a PASSIVE checkpoint on its
/// own connection copies only the frames written since the checkpointer's
/// last pass (it has just caught up), never waits for a lock or a reader,
/// and its next `BEGIN` then rewinds the WAL.
pub(crate) fn finish_wal(conn: &Connection, wal: &WalBacklog) {
    if wal
        .0
        .compare_exchange(
            WAL_REQUESTED,
            WAL_WRITER,
            Ordering::AcqRel,
            Ordering::Acquire,
        )
        .is_ok()
    {
        let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
        wal.0.store(WAL_IDLE, Ordering::Release);
    }
}

/// Starts the checkpointer over its own connection to `path`: a PASSIVE
/// checkpoint every `every`; once the WAL holds more than `restart_frames`
/// frames, it catches up and asks the writer (through `wal`) to finish. It
/// stops when the returned sender is dropped, after one last checkpoint.
pub(crate) fn spawn(
    path: &Path,
    durable: bool,
    restart_frames: i64,
    every: Duration,
    wal: Arc<WalBacklog>,
) -> Result<(Sender<()>, JoinHandle<()>)> {
    let conn = schema::open_checkpointer(path, durable)?;
    let (stop, rx) = mpsc::channel::<()>();
    let h = std::thread::Builder::new()
        .name("atstore-checkpoint".into())
        .spawn(move || {
            loop {
                let done = !matches!(
                    rx.recv_timeout(every.max(MIN_CHECKPOINT_INTERVAL)),
                    Err(mpsc::RecvTimeoutError::Timeout)
                );
                if !wal.idle() && !done {
                    // The writer is about to copy the last frames.
                    continue;
                }
                // (busy, frames in the WAL, frames checkpointed)
                let passive = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
                    Ok((r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
                });
                // Under a steady write load the WAL never rewinds by itself
                // (see `finish_wal`). Past a size, catch up with
                // back-to-back passes (each copies what arrived during the
                // last; a pass under 2 ms means little is left), then have
                // the writer copy the rest between two batches.
                if let Ok((log, _)) = passive
                    && log > restart_frames
                {
                    for _ in 0..8 {
                        let t = Instant::now();
                        let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
                        if t.elapsed() < Duration::from_millis(2) {
                            break;
                        }
                    }
                    wal.request();
                }
                if done {
                    break;
                }
            }
        })?;
    Ok((stop, h))
}
