//! The space tables, their migrations, and the connection PRAGMAs.
//!
//! The tables live in the store's SQLite file beside the public repo's, and
//! never touch them: every name starts with `space`, the version is kept in
//! `space_schema` (the store owns `PRAGMA user_version`), and the migrations
//! only create. A store opened on the file afterwards sees its own tables
//! unchanged (its ownership check counts only its own).
//!
//! | table | key | holds |
//! |---|---|---|
//! | `space_schema` | — | one row: the space schema version |
//! | `space` | `id`, unique `uri` | authority DID, type, skey, policy, app access, created / deleted time |
//! | `space_member` | `(space_id, did)` | read and write access |
//! | `space_repo` | `id`, unique `(space_id, did)` | a writer repo's LtHash state (2,048 B) and rev |
//! | `space_record` | rowid, unique `(repo, path)` | CID (36 B), rev, the record's DRISL bytes (last column, so reads without the value never load its overflow pages) |
//! | `space_oplog` | `(repo, rev, idx)` | one row per op of a write batch: action, path, cid, prev |
//! | `space_blob_ref` | `(space_id, blob, repo, path)`, index `(repo, path)` | blobs the space's records reference |
//!
//! `path` is `"{collection}/{rkey}"`: ordering by it is ordering by the E2
//! record URI within one writer repo (the URI's prefix is the same), which
//! plain `(collection, rkey)` order is not (`a.b.c/x` sorts before `a.b/x`).

use rusqlite::{Connection, OptionalExtension};

use crate::error::Result;

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = 1;

const V1: &str = "
CREATE TABLE space_schema (version INTEGER NOT NULL);
CREATE TABLE space (
  id INTEGER PRIMARY KEY,
  uri TEXT NOT NULL UNIQUE,
  authority TEXT NOT NULL,
  type TEXT NOT NULL,
  skey TEXT NOT NULL,
  policy TEXT NOT NULL,
  managing_app TEXT,
  app_access TEXT NOT NULL,
  created_at TEXT NOT NULL,
  deleted_at TEXT
);
CREATE INDEX space_by_authority ON space(authority, uri);
CREATE TABLE space_member (
  space_id INTEGER NOT NULL,
  did TEXT NOT NULL,
  can_read INTEGER NOT NULL,
  can_write INTEGER NOT NULL,
  PRIMARY KEY (space_id, did)
) WITHOUT ROWID;
CREATE TABLE space_repo (
  id INTEGER PRIMARY KEY,
  space_id INTEGER NOT NULL,
  did TEXT NOT NULL,
  set_hash BLOB NOT NULL,
  rev TEXT NOT NULL,
  UNIQUE (space_id, did)
);
CREATE TABLE space_record (
  repo INTEGER NOT NULL,
  path TEXT NOT NULL,
  cid BLOB NOT NULL,
  rev TEXT NOT NULL,
  value BLOB NOT NULL
);
CREATE UNIQUE INDEX space_record_path ON space_record(repo, path);
CREATE TABLE space_oplog (
  repo INTEGER NOT NULL,
  rev TEXT NOT NULL,
  idx INTEGER NOT NULL,
  action INTEGER NOT NULL,
  path TEXT NOT NULL,
  cid BLOB,
  prev BLOB,
  PRIMARY KEY (repo, rev, idx)
) WITHOUT ROWID;
CREATE TABLE space_blob_ref (
  space_id INTEGER NOT NULL,
  blob BLOB NOT NULL,
  repo INTEGER NOT NULL,
  path TEXT NOT NULL,
  PRIMARY KEY (space_id, blob, repo, path)
) WITHOUT ROWID;
CREATE INDEX space_blob_ref_by_record ON space_blob_ref(repo, path);
";

/// PRAGMAs of every space connection (WAL, as the store). `synchronous`
/// NORMAL: durable against a killed process (the WAL is written before
/// COMMIT returns), not against power loss; `durable` makes it FULL.
pub fn apply_pragmas(conn: &Connection, durable: bool, autocheckpoint: bool) -> Result<()> {
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", if durable { "FULL" } else { "NORMAL" })?;
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    conn.pragma_update(None, "foreign_keys", "OFF")?;
    // Beside a running store its checkpointer owns the WAL; alone, SQLite's
    // default automatic checkpoints keep it bounded.
    if !autocheckpoint {
        conn.pragma_update(None, "wal_autocheckpoint", 0)?;
    }
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    Ok(())
}

/// Brings the space tables up to [`SCHEMA_VERSION`] in one transaction.
pub fn migrate(conn: &mut Connection) -> Result<()> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let exists: bool = tx.query_row(
        "SELECT EXISTS(SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'space_schema')",
        [],
        |r| r.get(0),
    )?;
    let version: i64 = if exists {
        tx.query_row("SELECT version FROM space_schema", [], |r| r.get(0))
            .optional()?
            .unwrap_or(0)
    } else {
        0
    };
    if version < 1 {
        tx.execute_batch(V1)?;
        tx.execute("INSERT INTO space_schema (version) VALUES (1)", [])?;
    }
    tx.commit()?;
    Ok(())
}
