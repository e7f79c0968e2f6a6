//! A blob's lifetime, as the reference PDS keeps it (its
//! `processWriteBlobs`):
//!
//! - a record may name only a blob the account uploaded: the writer's
//!   guard refuses the commit with [`StoreError::BlobNotFound`] before it
//!   writes anything ([`check_uploaded`]);
//! - a blob's row goes in the commit that drops the last record naming it,
//!   by update or delete ([`free_unnamed`], from the `record_blobs` rows
//!   the commit deleted; a blob another record or a write of the same
//!   commit names stays);
//! - an upload no record ever named is swept once it is older than the
//!   grace ([`crate::Sweep`], `sweep.rs`); re-uploading it restarts the
//!   grace.
//!
//! An import replaces the account's references: a blob only the replaced
//! records named is freed as a delete frees it. Imported records may name
//! blobs the store does not hold yet (listMissingBlobs); such a blob,
//! once uploaded, is already named, and the sweep leaves it.
//!
//! Permissioned-data records (`crates/space`) name blobs too: their
//! references live in that crate's `space_blob_ref` table in the same
//! file, and the blobs stay in `blobs`. A blob such a row names counts as
//! named (whichever account's space record it is: the safe side), so
//! neither a commit nor the sweep frees it; the table is looked up by name
//! and only when a blob is about to be freed.
//!
//! What this costs a commit: a write naming no blob pays nothing new (an
//! update or delete already probed `record_blobs` by record; it now reads
//! the rows there before deleting them, and deletes only when it found
//! some); each blob link a create or update names costs one probe
//! of `blobs_key` in the guard, and each reference an update or delete
//! drops one probe of `record_blobs` (and the blob row's delete when it
//! was the last).

use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, params};

use crate::error::{Result, StoreError};
use crate::prepare::Prepared;

/// `t` as unix seconds (0 before the epoch).
pub(crate) fn unix_secs(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Now as unix seconds: a blob's upload time (`blobs.created_at`).
pub(crate) fn unix_now() -> i64 {
    unix_secs(SystemTime::now())
}

const SQL_BLOB_HELD: &str = "SELECT 1 FROM blobs WHERE did = ?1 AND cid = ?2";
const SQL_STILL_NAMED: &str = "SELECT 1 FROM record_blobs WHERE did = ?1 AND blob = ?2 LIMIT 1";
const SQL_FREE_BLOB: &str = "DELETE FROM blobs WHERE did = ?1 AND cid = ?2";

/// The writer's guard for a commit's blob links: each blob a create or
/// update names is one `did` uploaded, else [`StoreError::BlobNotFound`]
/// (the reference's error name). One probe of `blobs_key` per link; a
/// write naming no blob costs nothing.
pub(crate) fn check_uploaded(conn: &Connection, did: &str, writes: &[Prepared]) -> Result<()> {
    for blob in writes.iter().flat_map(|w| &w.blobs) {
        let held = conn
            .prepare_cached(SQL_BLOB_HELD)?
            .exists(params![did, &blob.to_bytes()[..]])?;
        if !held {
            return Err(StoreError::BlobNotFound(*blob));
        }
    }
    Ok(())
}

const SQL_HAS_SPACE_REFS: &str =
    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'space_blob_ref'";
const SQL_SPACE_NAMED: &str = "SELECT 1 FROM space_blob_ref WHERE blob = ?1 LIMIT 1";

/// Whether a permissioned-data record names `blob` (a CID column).
pub(crate) fn named_by_a_space(conn: &Connection, blob: &[u8]) -> Result<bool> {
    if !conn.prepare_cached(SQL_HAS_SPACE_REFS)?.exists([])? {
        return Ok(false);
    }
    Ok(conn.prepare_cached(SQL_SPACE_NAMED)?.exists([blob])?)
}

/// Deletes each blob of `dropped` (CID columns whose `record_blobs` rows
/// a commit just deleted, after it wrote its new ones) that no record of
/// `did` names any more.
pub(crate) fn free_unnamed(conn: &Connection, did: &str, dropped: &[Vec<u8>]) -> Result<()> {
    for (i, blob) in dropped.iter().enumerate() {
        if dropped[..i].contains(blob) {
            continue;
        }
        let named = conn
            .prepare_cached(SQL_STILL_NAMED)?
            .exists(params![did, blob])?;
        if !named && !named_by_a_space(conn, blob)? {
            conn.prepare_cached(SQL_FREE_BLOB)?
                .execute(params![did, blob])?;
        }
    }
    Ok(())
}
