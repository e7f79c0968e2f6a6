//! The schema and its history: the eight versions a store has been
//! through, each a step of SQL (and, for V6 and V8, a hook that does what
//! SQL cannot), the [`BASELINE`] a fresh store gets in one script instead, and
//! the revision backfill the startup runs for blocks written before
//! revisions were tracked. `schema.rs` opens the connections and runs
//! [`migrate`] and [`backfill_revs`] at startup; `lib.rs` describes the
//! tables as they are now.
//!
//! # What each version changed
//!
//! | version | change |
//! |---|---|
//! | V1 | every table keyed by account; CIDs as 36-byte blobs |
//! | V2 | `repo_root` gains the account state: handle, active flag, status (`accounts.rs`) |
//! | V3 | `rev_backfill`: the revision of an account's unversioned blocks, one narrow row per account (`export_repo`'s `since` reads `COALESCE(repo_rev, rev_backfill.rev)`); the partial index holds `repo_rev` |
//! | V4 | record blocks move into their `records` row (`bytes`), with `cid_dup` |
//! | V5 | `commits` becomes the log keyed by seq, with no secondary index; the commit block moves into `repo_root.commit_bytes` |
//! | V6 | `repo_blocks` keyed `(did, pos, cid)`: MST nodes clustered by their position in the key space (`node_pos.rs`) |
//! | V7 | `blobs` becomes a rowid table with a unique `(did, cid)` index |
//! | V8 | `blobs.created_at` and its index `blobs_age`, for the orphan sweep; `record_blobs` re-derived from the records (`blob_refs.rs`: blobs are freed) |
//!
//! Each version's constant below says why, in full.

use rusqlite::{Connection, OptionalExtension};

use crate::error::Result;

/// The schema version this build writes (`PRAGMA user_version`): the
/// number of migration steps.
pub const SCHEMA_VERSION: i64 = STEPS.len() as i64;

/// One migration: its SQL, then an optional hook that does what SQL
/// cannot (in the same transaction).
struct Step {
    sql: &'static str,
    then: Option<fn(&Connection) -> Result<()>>,
}

/// A step of SQL alone.
const fn sql(sql: &'static str) -> Step {
    Step { sql, then: None }
}

/// The migrations, in order: step `i` takes a store from version `i` to
/// `i + 1`.
const STEPS: [Step; 8] = [
    sql(V1),
    sql(V2),
    sql(V3),
    sql(V4),
    sql(V5),
    Step {
        sql: V6,
        then: Some(place_nodes),
    },
    sql(V7),
    Step {
        sql: V8,
        then: Some(adopt_blob_refs),
    },
];

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

/// Version 8: blobs are freed (`blob_refs.rs`). A blob loses its row when the
/// last record naming it goes, which needs `record_blobs` to be complete,
/// and one no record ever named is swept a grace period after its upload,
/// which needs the upload's time: `created_at` (unix seconds), with an
/// index so the sweep reads only the uploads that crossed the grace line
/// since its last pass, never the blob rows (whose bytes come first).
/// [`adopt_blob_refs`] then re-derives `record_blobs` from the records and
/// gives every blob no record names the migration's time, so an upload
/// made just before the upgrade keeps its whole grace.
const V8: &str = r#"
ALTER TABLE blobs ADD COLUMN created_at INTEGER NOT NULL DEFAULT 0;
CREATE INDEX blobs_age ON blobs (created_at);
"#;

/// A fresh store's whole schema at [`SCHEMA_VERSION`] in one script: the
/// objects V1..V8 leave behind, in the order SQLite lists them after the
/// steps, formatted by hand (SQLite keeps each `CREATE` as written, so a
/// stepped store's `sqlite_master` holds the same statements with the
/// steps' spacing and quotes; a test checks the two roads end at the same
/// schema, token for token). A fresh store skips the table rebuilds of V6
/// and V7 (`store.startup/ours/fresh`); a store at an older version still
/// takes the steps.
const BASELINE: &str = r#"
CREATE TABLE repo_root (
    did          TEXT PRIMARY KEY,
    commit_cid   BLOB NOT NULL,
    rev          TEXT NOT NULL,
    data_cid     BLOB NOT NULL,
    signing_key  BLOB,
    handle       TEXT,
    active       INTEGER NOT NULL DEFAULT 1,
    status       TEXT,
    commit_bytes BLOB
) WITHOUT ROWID;
CREATE TABLE records (
    did        TEXT NOT NULL,
    collection TEXT NOT NULL,
    rkey       TEXT NOT NULL,
    cid        BLOB NOT NULL,
    repo_rev   TEXT NOT NULL,
    bytes      BLOB,
    cid_dup    INTEGER NOT NULL DEFAULT 0,
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
CREATE TABLE commits (
    seq INTEGER PRIMARY KEY,
    did TEXT NOT NULL,
    rev TEXT NOT NULL,
    cid BLOB NOT NULL
);
CREATE TABLE repo_blocks (
    did      TEXT NOT NULL,
    pos      INTEGER NOT NULL,
    cid      BLOB NOT NULL,
    repo_rev TEXT,
    bytes    BLOB NOT NULL,
    PRIMARY KEY (did, pos, cid)
) WITHOUT ROWID;
CREATE INDEX repo_blocks_norev ON repo_blocks (did, repo_rev) WHERE repo_rev IS NULL;
CREATE TABLE blobs (
    did   TEXT NOT NULL,
    cid   BLOB NOT NULL,
    mime  TEXT NOT NULL,
    size  INTEGER NOT NULL,
    bytes BLOB NOT NULL, created_at INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX blobs_key ON blobs (did, cid);
CREATE INDEX blobs_age ON blobs (created_at);
"#;

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
pub(crate) fn immediate<T>(conn: &Connection, f: impl FnOnce() -> Result<T>) -> Result<T> {
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

/// The migrations after version `from`, in the caller's transaction: each
/// step's SQL, then its hook.
pub(crate) fn migrate_steps(conn: &Connection, from: i64) -> Result<()> {
    for step in STEPS.iter().skip(usize::try_from(from).unwrap_or(0)) {
        conn.execute_batch(step.sql)?;
        if let Some(then) = step.then {
            then(conn)?;
        }
    }
    Ok(())
}

/// V6's hook, after its SQL: every account's MST nodes, all at position
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

/// V8's hook: `record_blobs` re-derived from the records' bytes (the
/// write path has kept it since V1; re-deriving it makes sure that no
/// blob a record names is ever taken for unreferenced, now that such a
/// blob is deleted), then every blob no record names gets the migration's
/// time as its upload time. A record whose bytes are missing (a V4
/// migration that found no block) keeps the references it had. Only
/// records holding a CID link (CBOR tag 42, bytes `d8 2a`) are decoded.
fn adopt_blob_refs(conn: &Connection) -> Result<()> {
    conn.execute_batch(
        "DELETE FROM record_blobs WHERE NOT EXISTS (SELECT 1 FROM records r \
         WHERE r.did = record_blobs.did \
         AND r.collection = substr(record_blobs.record, 1, instr(record_blobs.record, '/') - 1) \
         AND r.rkey = substr(record_blobs.record, instr(record_blobs.record, '/') + 1) \
         AND r.bytes IS NULL)",
    )?;
    let mut put =
        conn.prepare("INSERT OR IGNORE INTO record_blobs (did, blob, record) VALUES (?1, ?2, ?3)")?;
    let mut st = conn.prepare(
        "SELECT did, collection, rkey, bytes FROM records WHERE instr(bytes, X'd82a') > 0",
    )?;
    let mut rows = st.query([])?;
    let mut links = Vec::new();
    while let Some(row) = rows.next()? {
        let Ok(value) = repo::cbor::decode(row.get_ref(3)?.as_blob()?) else {
            continue;
        };
        links.clear();
        crate::prepare::collect_blob_links(&value, &mut links);
        let did = row.get_ref(0)?.as_str()?;
        let path = format!(
            "{}/{}",
            row.get_ref(1)?.as_str()?,
            row.get_ref(2)?.as_str()?
        );
        for blob in &links {
            put.execute(rusqlite::params![did, &blob.to_bytes()[..], path])?;
        }
    }
    conn.execute(
        "UPDATE blobs SET created_at = ?1 WHERE NOT EXISTS (SELECT 1 FROM record_blobs rb \
         WHERE rb.did = blobs.did AND rb.blob = blobs.cid)",
        [crate::blob_refs::unix_now()],
    )?;
    Ok(())
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

#[cfg(test)]
#[path = "migrations_tests.rs"]
mod tests;
