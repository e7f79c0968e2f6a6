//! PRAGMAs, the connections and the startup sequence: open the file, set
//! the PRAGMAs, bring the schema up to date (`migrations.rs`, which owns
//! the tables and their history), recover the next sequence number and
//! backfill old blocks' revisions.
//!
//! Every PRAGMA the store sets is in [`PRAGMAS`] / [`pragmas`]: this is the
//! one place they live, and the benches report exactly this list.

use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags, OptionalExtension};

use crate::error::Result;
use crate::migrations::{backfill_revs, migrate};

/// Connection PRAGMAs shared by the writer and the readers, in order.
/// `synchronous` is set separately ([`pragmas`]).
pub const PRAGMAS: &[(&str, &str)] = &[
    ("journal_mode", "WAL"),
    ("cache_size", "-65536"),
    ("temp_store", "MEMORY"),
    ("mmap_size", "268435456"),
    // Checkpoints run on a background connection (see `Store`), never
    // inside a writer's COMMIT.
    ("wal_autocheckpoint", "0"),
    ("foreign_keys", "OFF"),
];

/// PRAGMAs the writer's connection sets after [`PRAGMAS`], overriding them.
/// A smaller page cache: at every COMMIT SQLite truncates the connection's
/// page cache (`pager_end_transaction` -> `pcache1TruncateUnsafe`), which
/// walks a hash table sized by the pages cached, so with a large cache it
/// grew with the database (callgrind on `examples/profile.rs tier`: the
/// smaller cache ran fewer instructions in all). Misses
/// are served from the memory map; MST nodes are cached above SQLite.
///
/// `journal_size_limit`: the WAL file is truncated back to this size by
/// the first commit after it rewinds (`checkpoint.rs`), so a WAL that grew
/// past it (a reader that held its snapshot, a burst the checkpointer fell
/// behind) gives the disk back instead of keeping its largest size.
pub const WRITER_PRAGMAS: &[(&str, &str)] =
    &[("cache_size", "-8192"), ("journal_size_limit", "67108864")];

/// The full PRAGMA list for a store (`durable` = synchronous FULL, else
/// NORMAL), as `(name, value)` pairs.
pub fn pragmas(durable: bool) -> Vec<(&'static str, &'static str)> {
    let mut v = PRAGMAS.to_vec();
    v.push(("synchronous", if durable { "FULL" } else { "NORMAL" }));
    v
}

fn apply_pragmas(conn: &mut Connection, durable: bool, writer: bool) -> Result<()> {
    // Query planner stability: plans never depend on bound values. Without
    // it, every statement on `repo_blocks` (which has a partial index) is
    // marked "re-prepare on bind" while SQLite checks whether the bound
    // WHERE terms imply the index's `repo_rev IS NULL`, so each cached
    // statement was compiled again on every execution (callgrind on
    // `store.get_record/ours/callers-1`: `sqlite3Reprepare`).
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
    conn.busy_handler(Some(wait_briefly))?;
    for (name, value) in pragmas(durable) {
        if name == "journal_mode" && !writer {
            continue;
        }
        // Some PRAGMAs answer with a row (journal_mode, mmap_size, ...).
        let sql = format!("PRAGMA {name} = {value}");
        let mut stmt = conn.prepare(&sql)?;
        let mut rows = stmt.query([])?;
        while rows.next()?.is_some() {}
    }
    Ok(())
}

/// How long a connection retries a busy lock before giving up (what
/// `busy_timeout = 10000` would allow).
const BUSY_GIVE_UP: Duration = Duration::from_secs(10);

/// The busy handler of every connection (instead of `busy_timeout`): retry
/// every 50 µs for the first 5 ms, then every 1 ms, up to [`BUSY_GIVE_UP`].
/// SQLite's own handler sleeps 1, 2, 5, 10, 15, 20, 25 ... ms between
/// tries, so a connection blocked for a moment slept for tens of ms (which
/// showed in a single caller's `BEGIN IMMEDIATE` when the checkpointer
/// still forced WAL RESTARTs).
fn wait_briefly(attempt: i32) -> bool {
    let attempt = u32::try_from(attempt).unwrap_or(0);
    let (fast, fast_step, slow_step) =
        (100u32, Duration::from_micros(50), Duration::from_millis(1));
    let waited = fast_step * attempt.min(fast) + slow_step * attempt.saturating_sub(fast);
    if waited >= BUSY_GIVE_UP {
        return false;
    }
    std::thread::sleep(if attempt < fast { fast_step } else { slow_step });
    true
}

/// Opens the writer connection (creating the file) with the store PRAGMAs.
/// Its WAL writes go through [`crate::vfs`] (one write per commit).
#[cfg(any(test, feature = "bench-internals"))]
pub(crate) fn open_writer(path: &std::path::Path, durable: bool) -> Result<Connection> {
    let mut conn = open_writer_unconfigured(path)?;
    configure_writer(&mut conn, durable)?;
    Ok(conn)
}

/// The writer's connection before any PRAGMA: opening writes nothing, so
/// the file can be identified on it first (`ownership::identify`).
fn open_writer_unconfigured(path: &std::path::Path) -> Result<Connection> {
    crate::vfs::register().map_err(crate::error::StoreError::Corrupt)?;
    let conn = Connection::open_with_flags_and_vfs(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        crate::vfs::NAME,
    )?;
    Ok(conn)
}

fn configure_writer(conn: &mut Connection, durable: bool) -> Result<()> {
    conn.set_prepared_statement_cache_capacity(64);
    apply_pragmas(conn, durable, true)?;
    for (name, value) in WRITER_PRAGMAS {
        conn.execute_batch(&format!("PRAGMA {name} = {value}"))?;
    }
    Ok(())
}

/// Opens the background checkpointer's connection.
pub(crate) fn open_checkpointer(path: &std::path::Path, durable: bool) -> Result<Connection> {
    let mut conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    apply_pragmas(&mut conn, durable, false)?;
    Ok(conn)
}

/// Opens a reader connection.
pub(crate) fn open_reader(path: &std::path::Path) -> Result<Connection> {
    let mut conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.set_prepared_statement_cache_capacity(64);
    apply_pragmas(&mut conn, false, false)?;
    conn.execute_batch("PRAGMA query_only = ON")?;
    Ok(conn)
}

/// How long each startup stage took.
#[derive(Debug, Clone, Default)]
pub struct StartupReport {
    /// Opening the file and setting the PRAGMAs.
    pub storage: Duration,
    /// Reading `user_version` and running pending migrations.
    pub migrations: Duration,
    /// Recovering the next sequence number.
    pub sequence: Duration,
    /// Backfilling `repo_rev` of unversioned blocks.
    pub backfill: Duration,
    /// Blocks whose revision was backfilled.
    pub backfilled: usize,
    /// Migrations that ran.
    pub migrated_from: i64,
    /// The next sequence number handed out.
    pub next_seq: i64,
}

impl StartupReport {
    /// Total time.
    pub fn total(&self) -> Duration {
        self.storage + self.migrations + self.sequence + self.backfill
    }
}

/// The next sequence number: one past the largest of the per-table maxima
/// (each `MAX(seq)` is answered from its table's b-tree end, not a scan of
/// a union).
pub(crate) fn next_seq(conn: &Connection) -> Result<i64> {
    let ev: Option<i64> = conn.query_row("SELECT MAX(seq) FROM seq_events", [], |r| r.get(0))?;
    let cm: Option<i64> = conn
        .query_row("SELECT MAX(seq) FROM commits", [], |r| r.get(0))
        .optional()?
        .flatten();
    Ok(ev.unwrap_or(0).max(cm.unwrap_or(0)) + 1)
}

/// Returns `did`'s MST node rows to how a build that predates revisions
/// left them: `repo_rev` NULL and no `rev_backfill` row, so the next open
/// backfills them ([`backfill_revs`]). Takes the writer lock (a store open
/// on `path` makes it fail with `Locked`). Returns how many of the
/// account's rows are unversioned.
///
/// Why this is SQL and lives here: unversioned blocks exist only in
/// stores written before revisions were tracked. No writer of this crate
/// and no migration produces them (every one since V1 carries the rev
/// over), and no old writer is kept to write them. The startup bench's
/// fixture (`store.startup/ours/history-10k`, built through the public
/// API in `fixtures.rs`) needs a store whose open runs this backfill, and
/// needs it again before each timed open; these two statements, tested
/// with the backfill they undo, are what makes one. They live here, not
/// in `migrations.rs`, because they open the writer's connection.
#[cfg(any(test, feature = "bench-internals"))]
pub(crate) fn forget_revisions(path: &std::path::Path, did: &str) -> Result<usize> {
    let _lock = crate::ownership::WriterLock::acquire(path)?;
    let conn = open_writer(path, false)?;
    crate::migrations::immediate(&conn, || {
        conn.execute(
            "UPDATE repo_blocks SET repo_rev = NULL WHERE did = ?1 AND repo_rev IS NOT NULL",
            [did],
        )?;
        conn.execute("DELETE FROM rev_backfill WHERE did = ?1", [did])?;
        let n: i64 = conn.query_row(
            "SELECT COUNT(*) FROM repo_blocks INDEXED BY repo_blocks_norev \
             WHERE did = ?1 AND repo_rev IS NULL",
            [did],
            |r| r.get(0),
        )?;
        Ok(usize::try_from(n).unwrap_or(0))
    })
}

/// Opens (creating if needed) and brings the database up to date; returns
/// the writer connection and the stage timings. `admit` sees the opened
/// connection before anything is written through it (PRAGMAs included)
/// and may refuse the file; what it returns comes back with them.
pub(crate) fn startup<T>(
    path: &std::path::Path,
    durable: bool,
    admit: impl FnOnce(&Connection) -> Result<T>,
) -> Result<(Connection, StartupReport, T)> {
    let mut report = StartupReport::default();
    let t = Instant::now();
    let mut conn = open_writer_unconfigured(path)?;
    let admitted = admit(&conn)?;
    configure_writer(&mut conn, durable)?;
    report.storage = t.elapsed();
    let t = Instant::now();
    report.migrated_from = migrate(&conn)?;
    report.migrations = t.elapsed();
    let t = Instant::now();
    report.next_seq = next_seq(&conn)?;
    report.sequence = t.elapsed();
    let t = Instant::now();
    report.backfilled = backfill_revs(&conn)?;
    report.backfill = t.elapsed();
    Ok((conn, report, admitted))
}

#[cfg(test)]
#[path = "schema_tests.rs"]
mod tests;
