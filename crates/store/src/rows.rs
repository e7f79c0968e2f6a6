//! The row layout the write path keeps: the `repo_root` row, the record
//! rows (index entry and block bytes together, schema v4) with their
//! `cid_dup` upkeep, the `record_blobs` references and the commit log, and
//! how a CID column decodes. MST node rows are `node_rows.rs`; event rows
//! `events.rs`.

use repo::Cid;
use rusqlite::{CachedStatement, Connection, OptionalExtension, params};

use crate::error::{Result, StoreError};
use crate::prepare::Prepared;

/// A CID column's 36 bytes as a CID; anything else is a corrupt store.
pub(crate) fn cid_from_sql(bytes: &[u8]) -> Result<Cid> {
    Cid::from_bytes(bytes).map_err(|e| StoreError::Corrupt(format!("stored CID: {e}")))
}

const SQL_ROOT: &str =
    "SELECT commit_cid, rev, data_cid, signing_key FROM repo_root WHERE did = ?1";
const SQL_ROOT_COMMIT: &str = "SELECT commit_cid FROM repo_root WHERE did = ?1";
// Record rows hold their block's bytes (schema v4). `cid_dup` is kept
// canonical: 0 on the first row of an account holding a CID, in
// `(collection, rkey)` order, 1 on the others. Each statement below is one
// probe of `records_cid` (plus a primary-key update when a flag moves), so
// a write costs the same however many records share its block.

/// Upserts a record row; its `cid_dup` says whether an earlier row holds
/// the same CID.
const SQL_UPSERT_RECORD: &str = "INSERT INTO records (did, collection, rkey, cid, repo_rev, bytes, cid_dup) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, EXISTS (SELECT 1 FROM records INDEXED BY records_cid \
     WHERE did = ?1 AND cid = ?4 AND (collection, rkey) < (?2, ?3))) \
     ON CONFLICT (did, collection, rkey) DO UPDATE SET cid = excluded.cid, \
     repo_rev = excluded.repo_rev, bytes = excluded.bytes, cid_dup = excluded.cid_dup";
/// After an upsert of (?3, ?4) with CID ?2: the next row holding ?2 is not
/// the first (it may have been before the upsert).
const SQL_DEMOTE_NEXT: &str = "UPDATE records SET cid_dup = 1 WHERE did = ?1 AND (collection, rkey) = \
     (SELECT collection, rkey FROM records INDEXED BY records_cid WHERE did = ?1 AND cid = ?2 \
     AND (collection, rkey) > (?3, ?4) ORDER BY collection, rkey LIMIT 1) AND cid_dup = 0";
/// After a row stopped holding CID ?2: the first row still holding it.
const SQL_PROMOTE_FIRST: &str = "UPDATE records SET cid_dup = 0 WHERE did = ?1 AND (collection, rkey) = \
     (SELECT collection, rkey FROM records INDEXED BY records_cid WHERE did = ?1 AND cid = ?2 \
     ORDER BY collection, rkey LIMIT 1) AND cid_dup = 1";
const SQL_DEL_RECORD: &str = "DELETE FROM records WHERE did = ?1 AND collection = ?2 AND rkey = ?3";
/// The blobs a record names, read before its rows are deleted (for
/// [`crate::blob_refs::free_unnamed`]). Not `DELETE ... RETURNING`: SQLite
/// buffers a RETURNING statement's rows in an ephemeral table it opens
/// even when no row matches, which cost every update and delete of a
/// record naming no blob more than the seek (`examples/profile.rs
/// apply_delete` under callgrind); a seek that finds nothing deletes
/// nothing.
const SQL_RECORD_BLOBS: &str = "SELECT blob FROM record_blobs WHERE did = ?1 AND record = ?2";
const SQL_DEL_RECORD_BLOBS: &str = "DELETE FROM record_blobs WHERE did = ?1 AND record = ?2";
const SQL_PUT_RECORD_BLOB: &str =
    "INSERT OR IGNORE INTO record_blobs (did, blob, record) VALUES (?1, ?2, ?3)";
const SQL_MOVE_ROOT: &str = "UPDATE repo_root SET commit_cid = ?2, rev = ?3, data_cid = ?4, \
     commit_bytes = ?5 WHERE did = ?1";
const SQL_NEW_ROOT: &str = "INSERT INTO repo_root (did, commit_cid, rev, data_cid, commit_bytes, signing_key) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
const SQL_REPLACE_ROOT: &str = "INSERT INTO repo_root (did, commit_cid, rev, data_cid, signing_key, commit_bytes) \
     VALUES (?1, ?2, ?3, ?4, NULL, ?5) ON CONFLICT (did) DO UPDATE SET \
     commit_cid = excluded.commit_cid, rev = excluded.rev, \
     data_cid = excluded.data_cid, commit_bytes = excluded.commit_bytes";
const SQL_PUT_COMMIT: &str = "INSERT INTO commits (did, rev, cid, seq) VALUES (?1, ?2, ?3, ?4)";

/// A repo_root row.
pub(crate) struct Root {
    pub commit: Cid,
    pub rev: String,
    pub data: Cid,
    /// The k256 secret (`None`: an imported, read-only repository).
    pub key: Option<Vec<u8>>,
}

/// Reads `did`'s repo_root row.
pub(crate) fn read_root(conn: &Connection, did: &str) -> Result<Option<Root>> {
    let mut st = conn.prepare_cached(SQL_ROOT)?;
    let row = st
        .query_row([did], |r| {
            Ok((
                r.get::<_, Vec<u8>>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Vec<u8>>(2)?,
                r.get::<_, Option<Vec<u8>>>(3)?,
            ))
        })
        .optional()?;
    match row {
        None => Ok(None),
        Some((c, rev, d, key)) => Ok(Some(Root {
            commit: cid_from_sql(&c)?,
            rev,
            data: cid_from_sql(&d)?,
            key,
        })),
    }
}

/// `did`'s current commit CID, `None` for an unknown account.
pub(crate) fn root_commit(conn: &Connection, did: &str) -> Result<Option<Cid>> {
    let c: Option<Vec<u8>> = conn
        .prepare_cached(SQL_ROOT_COMMIT)?
        .query_row([did], |r| r.get(0))
        .optional()?;
    c.as_deref().map(cid_from_sql).transpose()
}

/// How a commit becomes an account's root row.
pub(crate) enum RootWrite<'k> {
    /// A new account, with its signing key.
    New { secret: &'k [u8] },
    /// An imported repository (no signing key when new; an existing row
    /// keeps its key).
    Import,
    /// The next commit of an account.
    Move,
}

/// Writes `did`'s root row: commit, rev, MST root and commit block.
pub(crate) fn write_root(
    conn: &Connection,
    how: RootWrite<'_>,
    did: &str,
    commit: (&Cid, &[u8]),
    rev: &str,
    data: &Cid,
) -> Result<()> {
    let (c, d) = (commit.0.to_bytes(), data.to_bytes());
    let row = params![did, &c[..], rev, &d[..], commit.1];
    match how {
        RootWrite::New { secret } => conn.prepare_cached(SQL_NEW_ROOT)?.execute(params![
            did,
            &c[..],
            rev,
            &d[..],
            commit.1,
            secret
        ])?,
        RootWrite::Import => conn.prepare_cached(SQL_REPLACE_ROOT)?.execute(row)?,
        RootWrite::Move => conn.prepare_cached(SQL_MOVE_ROOT)?.execute(row)?,
    };
    Ok(())
}

/// Appends a commit to the log, by the seq of the event that carried it.
pub(crate) fn log_commit(
    conn: &Connection,
    did: &str,
    rev: &str,
    commit: &Cid,
    seq: i64,
) -> Result<()> {
    conn.prepare_cached(SQL_PUT_COMMIT)?
        .execute(params![did, rev, &commit.to_bytes()[..], seq])?;
    Ok(())
}

/// A cached statement taken from the connection's cache on first use.
struct LazyStatement<'c> {
    conn: &'c Connection,
    sql: &'static str,
    statement: Option<CachedStatement<'c>>,
}

impl<'c> LazyStatement<'c> {
    fn new(conn: &'c Connection, sql: &'static str) -> Self {
        LazyStatement {
            conn,
            sql,
            statement: None,
        }
    }

    fn get(&mut self) -> Result<&mut CachedStatement<'c>> {
        let statement = match self.statement.take() {
            Some(st) => st,
            None => self.conn.prepare_cached(self.sql)?,
        };
        Ok(self.statement.insert(statement))
    }
}

/// The record rows and blob references of one commit's `writes` to `did`
/// at `rev`; `current` is each write's CID before the commit. A blob whose
/// last reference the commit dropped is deleted (`blob_refs.rs`): only an
/// update or delete of a record that named blobs pays for it.
pub(crate) fn write_records(
    conn: &Connection,
    did: &str,
    rev: &str,
    writes: &[Prepared],
    current: &[Option<Cid>],
) -> Result<()> {
    // Each statement is taken from the cache once per commit, and only if
    // a write needs it.
    let mut up = LazyStatement::new(conn, SQL_UPSERT_RECORD);
    let mut del = LazyStatement::new(conn, SQL_DEL_RECORD);
    let mut demote = LazyStatement::new(conn, SQL_DEMOTE_NEXT);
    let mut promote = LazyStatement::new(conn, SQL_PROMOTE_FIRST);
    let mut named_rb = LazyStatement::new(conn, SQL_RECORD_BLOBS);
    let mut del_rb = LazyStatement::new(conn, SQL_DEL_RECORD_BLOBS);
    let mut put_rb = LazyStatement::new(conn, SQL_PUT_RECORD_BLOB);
    let mut dropped: Vec<Vec<u8>> = Vec::new();
    for (w, cur) in writes.iter().zip(current) {
        if cur.is_some() {
            let before = dropped.len();
            let mut rows = named_rb.get()?.query(params![did, w.path])?;
            while let Some(row) = rows.next()? {
                dropped.push(row.get(0)?);
            }
            drop(rows);
            if dropped.len() > before {
                del_rb.get()?.execute(params![did, w.path])?;
            }
        }
        let new_cid = w.block.as_ref().map(|b| b.0);
        match &w.block {
            Some((cid, bytes)) => {
                let c = cid.to_bytes();
                up.get()?
                    .execute(params![did, w.collection, w.rkey, &c[..], rev, bytes])?;
                demote
                    .get()?
                    .execute(params![did, &c[..], w.collection, w.rkey])?;
                for b in &w.blobs {
                    put_rb
                        .get()?
                        .execute(params![did, &b.to_bytes()[..], w.path])?;
                }
            }
            None => {
                del.get()?.execute(params![did, w.collection, w.rkey])?;
            }
        }
        if let Some(old) = cur
            && new_cid != Some(*old)
        {
            promote.get()?.execute(params![did, &old.to_bytes()[..]])?;
        }
    }
    if !dropped.is_empty() {
        crate::blob_refs::free_unnamed(conn, did, &dropped)?;
    }
    Ok(())
}

/// The record rows and blob references of an imported repository
/// (`records`: collection, rkey, CID, block; `blob_refs`: record path,
/// blob), into an account whose rows were just deleted.
pub(crate) fn import_records(
    conn: &Connection,
    did: &str,
    rev: &str,
    records: &[(String, String, Cid, Vec<u8>)],
    blob_refs: &[(String, Cid)],
) -> Result<()> {
    let mut up = conn.prepare_cached(SQL_UPSERT_RECORD)?;
    // MST order is not `(collection, rkey)` order, so the write path's flag
    // upkeep runs for each row as it would for a write.
    let mut demote = conn.prepare_cached(SQL_DEMOTE_NEXT)?;
    for (coll, rkey, cid, bytes) in records {
        let c = cid.to_bytes();
        up.execute(params![did, coll, rkey, &c[..], rev, bytes])?;
        demote.execute(params![did, &c[..], coll, rkey])?;
    }
    let mut put_rb = conn.prepare_cached(SQL_PUT_RECORD_BLOB)?;
    for (path, blob) in blob_refs {
        put_rb.execute(params![did, &blob.to_bytes()[..], path])?;
    }
    Ok(())
}
