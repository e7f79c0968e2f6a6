//! Schema, PRAGMAs, migrations and the startup sequence.
//!
//! Every PRAGMA the store sets is in [`PRAGMAS`] / [`pragmas`]: this is the
//! one place they live, and the benches report exactly this list.

use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags, OptionalExtension};

use crate::error::Result;

/// The schema version this build writes (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i64 = 7;

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
pub const WRITER_PRAGMAS: &[(&str, &str)] = &[("cache_size", "-8192")];

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

/// Version 1: every table keyed by account; CIDs as 36-byte blobs.
const V1: &str = r#"
CREATE TABLE repo_root (
    did         TEXT PRIMARY KEY,
    commit_cid  BLOB NOT NULL,
    rev         TEXT NOT NULL,
    data_cid    BLOB NOT NULL,
    signing_key BLOB
) WITHOUT ROWID;
CREATE TABLE repo_blocks (
    did      TEXT NOT NULL,
    cid      BLOB NOT NULL,
    repo_rev TEXT,
    bytes    BLOB NOT NULL,
    PRIMARY KEY (did, cid)
) WITHOUT ROWID;
CREATE INDEX repo_blocks_norev ON repo_blocks (did, cid) WHERE repo_rev IS NULL;
CREATE TABLE records (
    did        TEXT NOT NULL,
    collection TEXT NOT NULL,
    rkey       TEXT NOT NULL,
    cid        BLOB NOT NULL,
    repo_rev   TEXT NOT NULL,
    PRIMARY KEY (did, collection, rkey)
) WITHOUT ROWID;
CREATE INDEX records_cid ON records (did, cid);
CREATE TABLE commits (
    did TEXT NOT NULL,
    rev TEXT NOT NULL,
    cid BLOB NOT NULL,
    seq INTEGER,
    PRIMARY KEY (did, rev)
) WITHOUT ROWID;
CREATE INDEX commits_cid ON commits (did, cid);
CREATE INDEX commits_seq ON commits (seq);
CREATE TABLE seq_events (
    seq     INTEGER PRIMARY KEY,
    did     TEXT NOT NULL,
    kind    TEXT NOT NULL,
    payload BLOB NOT NULL
);
CREATE TABLE blobs (
    did  TEXT NOT NULL,
    cid  BLOB NOT NULL,
    mime TEXT NOT NULL,
    size INTEGER NOT NULL,
    bytes BLOB NOT NULL,
    PRIMARY KEY (did, cid)
) WITHOUT ROWID;
CREATE TABLE record_blobs (
    did    TEXT NOT NULL,
    blob   BLOB NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (did, blob, record)
) WITHOUT ROWID;
CREATE INDEX record_blobs_record ON record_blobs (did, record);
"#;

/// Version 2: account state for `#identity` / `#account` (`accounts.rs`).
const V2: &str = r#"
ALTER TABLE repo_root ADD COLUMN handle TEXT;
ALTER TABLE repo_root ADD COLUMN active INTEGER NOT NULL DEFAULT 1;
ALTER TABLE repo_root ADD COLUMN status TEXT;
"#;

/// Version 3: the revision backfill's state moves out of the block rows.
/// A block whose `repo_rev` is NULL (written before revisions were
/// tracked) has its account's `rev_backfill.rev` as its revision; the
/// backfill writes one narrow row per account instead of rewriting every
/// unversioned block (each holding its bytes) and its partial-index entry.
/// The partial index now holds `repo_rev` too (and the primary key, as
/// every index of a WITHOUT ROWID table), so finding and counting
/// unversioned blocks never reads a block row (an index-only count instead
/// of a table lookup per block).
const V3: &str = r#"
DROP INDEX repo_blocks_norev;
CREATE INDEX repo_blocks_norev ON repo_blocks (did, repo_rev) WHERE repo_rev IS NULL;
CREATE TABLE rev_backfill (
    did TEXT PRIMARY KEY,
    rev TEXT NOT NULL
) WITHOUT ROWID;
"#;

/// Version 4: record blocks move from `repo_blocks` into their `records`
/// row (`bytes`), so getRecord and listRecords read a record's index entry
/// and its bytes from one row: a listRecords page is one range scan
/// instead of a scan plus one `repo_blocks` seek per record
/// (`store.list_records/full/limit-50`), and a commit writes one b-tree
/// entry per record instead of two. `repo_blocks` keeps the commit and the MST
/// nodes. Two records of an account can hold the same bytes (same CID);
/// `cid_dup` is 0 on the first of them in `(collection, rkey)` order and 1
/// on the others, so getRepo emits each block once by skipping
/// `cid_dup = 1` rows (the writer keeps the flag canonical, see
/// `rows.rs`).
const V4: &str = r#"
ALTER TABLE records ADD COLUMN bytes BLOB;
ALTER TABLE records ADD COLUMN cid_dup INTEGER NOT NULL DEFAULT 0;
UPDATE records SET bytes = (SELECT b.bytes FROM repo_blocks b
    WHERE b.did = records.did AND b.cid = records.cid);
UPDATE records SET cid_dup = 1 WHERE EXISTS (SELECT 1 FROM records o
    INDEXED BY records_cid WHERE o.did = records.did AND o.cid = records.cid
    AND (o.collection, o.rkey) < (records.collection, records.rkey));
DELETE FROM repo_blocks WHERE EXISTS (SELECT 1 FROM records r
    INDEXED BY records_cid WHERE r.did = repo_blocks.did AND r.cid = repo_blocks.cid);
"#;

/// Version 5: `commits` becomes the append-only log it is, keyed by the
/// sequence number of the event that carried each commit. Nothing reads
/// it by `(did, rev)` or by CID, and its three b-trees (the `(did, rev)`
/// key, `commits_cid`, `commits_seq`) cost every commit three WAL pages, a
/// tenth of a createRecord's; the log costs one (appends share the last
/// leaf), and `MAX(seq)` at startup is its rowid's end. Rows without a seq
/// (none are written by this crate) are not carried over.
///
/// The current commit block moves from `repo_blocks` into its account's
/// `repo_root` row (`commit_bytes`), which every commit rewrites anyway:
/// a commit no longer inserts one random-keyed block row and deletes
/// another (with their WAL pages). `repo_blocks` holds MST nodes only.
const V5: &str = r#"
ALTER TABLE repo_root ADD COLUMN commit_bytes BLOB;
UPDATE repo_root SET commit_bytes = (SELECT b.bytes FROM repo_blocks b
    WHERE b.did = repo_root.did AND b.cid = repo_root.commit_cid);
DELETE FROM repo_blocks WHERE EXISTS (SELECT 1 FROM repo_root r
    WHERE r.did = repo_blocks.did AND r.commit_cid = repo_blocks.cid);
CREATE TABLE commits_log (
    seq INTEGER PRIMARY KEY,
    did TEXT NOT NULL,
    rev TEXT NOT NULL,
    cid BLOB NOT NULL
);
INSERT INTO commits_log (seq, did, rev, cid)
    SELECT seq, did, rev, cid FROM commits WHERE seq IS NOT NULL ORDER BY seq;
DROP TABLE commits;
ALTER TABLE commits_log RENAME TO commits;
"#;

/// Version 6: MST node rows keyed `(did, pos, cid)`, `pos` being where the
/// node sits in its account's key space (`node_pos.rs`), so the nodes a
/// commit writes and releases share pages instead of landing on random
/// ones. The rows are copied at position 0, then [`place_nodes`] walks
/// each account's tree and moves every node to its position.
const V6: &str = r#"
CREATE TABLE repo_blocks_v6 (
    did      TEXT NOT NULL,
    pos      INTEGER NOT NULL,
    cid      BLOB NOT NULL,
    repo_rev TEXT,
    bytes    BLOB NOT NULL,
    PRIMARY KEY (did, pos, cid)
) WITHOUT ROWID;
INSERT INTO repo_blocks_v6 (did, pos, cid, repo_rev, bytes)
    SELECT did, 0, cid, repo_rev, bytes FROM repo_blocks;
DROP TABLE repo_blocks;
ALTER TABLE repo_blocks_v6 RENAME TO repo_blocks;
CREATE INDEX repo_blocks_norev ON repo_blocks (did, repo_rev) WHERE repo_rev IS NULL;
"#;

/// Version 7: `blobs` becomes a rowid table with a unique `(did, cid)`
/// index. As a `WITHOUT ROWID` table its b-tree was keyed by the whole
/// row, bytes included, and SQLite compares a key whose record spills to
/// overflow pages by reading the whole record first: every cell a lookup
/// passed on its way to a small blob cost a read of that cell's blob, so
/// after a few large blobs a 4 KiB read cost more than a 1 MiB one
/// (`store.blob_get/ours/4KiB`; `examples/profile.rs blob_get_4096` with
/// `PROFILE_BIG_PUTS`). Now a lookup compares only the index's short keys
/// and then seeks the row by rowid.
const V7: &str = r#"
CREATE TABLE blobs_v7 (
    did  TEXT NOT NULL,
    cid  BLOB NOT NULL,
    mime TEXT NOT NULL,
    size INTEGER NOT NULL,
    bytes BLOB NOT NULL
);
INSERT INTO blobs_v7 (did, cid, mime, size, bytes)
    SELECT did, cid, mime, size, bytes FROM blobs;
DROP TABLE blobs;
ALTER TABLE blobs_v7 RENAME TO blobs;
CREATE UNIQUE INDEX blobs_key ON blobs (did, cid);
"#;

/// A fresh store's whole schema at [`SCHEMA_VERSION`] in one script: the
/// objects V1..V7 leave behind, each `CREATE` as SQLite keeps it after
/// them (`sqlite_master.sql`, quotes of renamed tables included; a test
/// checks the two roads end at the same schema). A fresh store skips the
/// table rebuilds of V6 and V7 (`store.startup/ours/fresh`); a store at an
/// older version still takes the steps.
const BASELINE: &str = r#"
CREATE TABLE repo_root (
    did         TEXT PRIMARY KEY,
    commit_cid  BLOB NOT NULL,
    rev         TEXT NOT NULL,
    data_cid    BLOB NOT NULL,
    signing_key BLOB
, handle TEXT, active INTEGER NOT NULL DEFAULT 1, status TEXT, commit_bytes BLOB) WITHOUT ROWID;
CREATE TABLE records (
    did        TEXT NOT NULL,
    collection TEXT NOT NULL,
    rkey       TEXT NOT NULL,
    cid        BLOB NOT NULL,
    repo_rev   TEXT NOT NULL, bytes BLOB, cid_dup INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (did, collection, rkey)
) WITHOUT ROWID;
CREATE INDEX records_cid ON records (did, cid);
CREATE TABLE seq_events (
    seq     INTEGER PRIMARY KEY,
    did     TEXT NOT NULL,
    kind    TEXT NOT NULL,
    payload BLOB NOT NULL
);
CREATE TABLE record_blobs (
    did    TEXT NOT NULL,
    blob   BLOB NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (did, blob, record)
) WITHOUT ROWID;
CREATE INDEX record_blobs_record ON record_blobs (did, record);
CREATE TABLE rev_backfill (
    did TEXT PRIMARY KEY,
    rev TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE "commits" (
    seq INTEGER PRIMARY KEY,
    did TEXT NOT NULL,
    rev TEXT NOT NULL,
    cid BLOB NOT NULL
);
CREATE TABLE "repo_blocks" (
    did      TEXT NOT NULL,
    pos      INTEGER NOT NULL,
    cid      BLOB NOT NULL,
    repo_rev TEXT,
    bytes    BLOB NOT NULL,
    PRIMARY KEY (did, pos, cid)
) WITHOUT ROWID;
CREATE INDEX repo_blocks_norev ON repo_blocks (did, repo_rev) WHERE repo_rev IS NULL;
CREATE TABLE "blobs" (
    did  TEXT NOT NULL,
    cid  BLOB NOT NULL,
    mime TEXT NOT NULL,
    size INTEGER NOT NULL,
    bytes BLOB NOT NULL
);
CREATE UNIQUE INDEX blobs_key ON blobs (did, cid);
"#;

/// Migrations, index = version - 1.
const MIGRATIONS: &[&str] = &[V1, V2, V3, V4, V5, V6, V7];

/// The v6 step after its SQL: every account's MST nodes, all at position
/// 0, moved to their positions (a walk from each root). Blocks no tree
/// reaches, and the subtrees of a node that does not decode, stay at 0:
/// the migration does not refuse a store over one bad block (a read then
/// finds such a node by a scan, and `check_repo` reports it).
fn place_nodes(conn: &Connection) -> Result<()> {
    let roots: Vec<(String, Vec<u8>)> = conn
        .prepare("SELECT did, data_cid FROM repo_root")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut get =
        conn.prepare("SELECT bytes FROM repo_blocks WHERE did = ?1 AND pos = 0 AND cid = ?2")?;
    let mut mv =
        conn.prepare("UPDATE repo_blocks SET pos = ?3 WHERE did = ?1 AND pos = 0 AND cid = ?2")?;
    for (did, root) in roots {
        let root = crate::rows::cid_from_sql(&root)?;
        let mut placed = Vec::new();
        // Rows are not re-hashed here, so a damaged store could link nodes
        // in a cycle: each node is placed once.
        let mut seen = std::collections::HashSet::new();
        let mut stack = vec![(root, crate::node_pos::ROOT_POS)];
        while let Some((cid, pos)) = stack.pop() {
            if !seen.insert(cid) {
                continue;
            }
            let bytes: Option<Vec<u8>> = get
                .query_row(rusqlite::params![did, &cid.to_bytes()[..]], |r| r.get(0))
                .optional()?;
            let Some(bytes) = bytes else { continue };
            placed.push((cid, pos));
            if let Ok(node) = repo::mst::Node::decode(&bytes) {
                crate::node_pos::for_each_child(&node, |c, p| stack.push((c, p)));
            }
        }
        for (cid, pos) in placed {
            if pos != 0 {
                mv.execute(rusqlite::params![did, &cid.to_bytes()[..], pos])?;
            }
        }
    }
    Ok(())
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

/// Runs the pending migrations, all of them in one transaction: a store
/// moves from its version to [`SCHEMA_VERSION`] whole or not at all, and
/// pays one commit (one WAL sync) rather than one per migration. A fresh
/// store runs [`BASELINE`] instead of the steps.
pub(crate) fn migrate(conn: &Connection) -> Result<i64> {
    let from: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if from > SCHEMA_VERSION {
        return Err(crate::StoreError::Corrupt(format!(
            "schema version {from} is newer than this build ({SCHEMA_VERSION})"
        )));
    }
    if from == SCHEMA_VERSION {
        return Ok(from);
    }
    immediate(conn, || {
        if from <= 0 {
            conn.execute_batch(BASELINE)?;
        } else {
            migrate_steps(conn, from)?;
        }
        conn.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))?;
        Ok(())
    })?;
    Ok(from)
}

/// Runs `f` in one `BEGIN IMMEDIATE` transaction: committed if it
/// succeeds, rolled back if not.
fn immediate<T>(conn: &Connection, f: impl FnOnce() -> Result<T>) -> Result<T> {
    conn.execute_batch("BEGIN IMMEDIATE")?;
    match f() {
        Ok(v) => {
            conn.execute_batch("COMMIT")?;
            Ok(v)
        }
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

/// The migrations after version `from`, in the caller's transaction.
fn migrate_steps(conn: &Connection, from: i64) -> Result<()> {
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(from.max(0) as usize) {
        conn.execute_batch(sql)?;
        if i + 1 == 6 {
            place_nodes(conn)?;
        }
    }
    Ok(())
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

/// Gives blocks with no `repo_rev` their account's current rev: accounts
/// with unversioned blocks are found through the partial index, and each
/// one not yet backfilled gets a `rev_backfill` row (schema v3) holding the
/// rev of all its unversioned blocks. Returns how many blocks it covered.
/// A store with none pays one empty index probe; a store whose unversioned
/// blocks were backfilled at an earlier open pays one probe per account.
pub(crate) fn backfill_revs(conn: &Connection) -> Result<usize> {
    // Accounts with unversioned blocks: a skip-scan of the partial index
    // (one probe per such account, none at all in a store without any).
    let mut dids = Vec::new();
    {
        let mut st = conn.prepare(
            "SELECT did FROM repo_blocks INDEXED BY repo_blocks_norev \
             WHERE repo_rev IS NULL AND did > ?1 ORDER BY did LIMIT 1",
        )?;
        let mut done = conn.prepare("SELECT 1 FROM rev_backfill WHERE did = ?1")?;
        let mut last = String::new();
        while let Some(d) = st
            .query_row([&last], |r| r.get::<_, String>(0))
            .optional()?
        {
            if !done.exists([&d])? {
                dids.push(d.clone());
            }
            last = d;
        }
    }
    if dids.is_empty() {
        return Ok(0);
    }
    immediate(conn, || {
        let mut n = 0;
        let mut rev_of = conn.prepare("SELECT rev FROM repo_root WHERE did = ?1")?;
        let mut count = conn.prepare(
            "SELECT COUNT(*) FROM repo_blocks INDEXED BY repo_blocks_norev \
             WHERE did = ?1 AND repo_rev IS NULL",
        )?;
        let mut put = conn.prepare("INSERT INTO rev_backfill (did, rev) VALUES (?1, ?2)")?;
        for did in &dids {
            let rev: Option<String> = rev_of.query_row([did], |r| r.get(0)).optional()?;
            if let Some(rev) = rev {
                put.execute(rusqlite::params![did, rev])?;
                let c: i64 = count.query_row([did], |r| r.get(0))?;
                n += usize::try_from(c).unwrap_or(0);
            }
        }
        Ok(n)
    })
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
/// needs it again before each timed open; these two statements, next to
/// the backfill they undo and tested with it, are what makes one.
#[cfg(any(test, feature = "bench-internals"))]
pub(crate) fn forget_revisions(path: &std::path::Path, did: &str) -> Result<usize> {
    let _lock = crate::ownership::WriterLock::acquire(path)?;
    let conn = open_writer(path, false)?;
    immediate(&conn, || {
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
