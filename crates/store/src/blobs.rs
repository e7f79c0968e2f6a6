//! Blobs: put (size and MIME checked, raw sha-256 CID), get, ranged get,
//! referenced-blob listing. When a blob is freed: `blob_refs.rs`.

use repo::Cid;
use repo::syntax::validate_did;
use rusqlite::{OptionalExtension, params};

use crate::blob_refs::unix_now;
use crate::error::{Result, StoreError};
use crate::rows::cid_from_sql;
use crate::{Blob, BlobHead, Store};

/// Whether `mime` is a concrete `type/subtype` (RFC 6838 token characters,
/// parameters after `;` allowed, at most 255 bytes): what [`Store::put_blob`]
/// accepts. A wildcard such as `*/*` is not one.
pub fn is_valid_mime(mime: &str) -> bool {
    mime.len() <= 255
        && mime.split_once('/').is_some_and(|(t, s)| {
            let tok = |x: &str| {
                !x.is_empty()
                    && x.bytes()
                        .all(|c| c.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&c))
            };
            tok(t) && tok(s.split(';').next().unwrap_or(""))
        })
}

fn validate_mime(mime: &str) -> Result<()> {
    if is_valid_mime(mime) {
        Ok(())
    } else {
        Err(StoreError::InvalidMime(mime.to_owned()))
    }
}

impl Store {
    /// Stores a blob (raw sha-256 CID); size and MIME checked. Until a
    /// record names it, it is an orphan that [`Store::sweep`] deletes once
    /// older than its grace; a put of a blob already held restarts that.
    pub fn put_blob(&self, did: &str, bytes: Vec<u8>, mime: &str) -> Result<Cid> {
        validate_did(did)?;
        validate_mime(mime)?;
        if bytes.len() > self.config.max_blob_bytes {
            return Err(StoreError::BlobTooLarge {
                size: bytes.len(),
                max: self.config.max_blob_bytes,
            });
        }
        let cid = Cid::for_raw(&bytes);
        let did = did.to_owned();
        let mime = mime.to_owned();
        self.submit(move |w| {
            let exists: Option<i64> = w
                .conn
                .prepare_cached("SELECT 1 FROM repo_root WHERE did = ?1")?
                .query_row([&did], |r| r.get(0))
                .optional()?;
            if exists.is_none() {
                return Err(StoreError::UnknownAccount(did));
            }
            // A blob's row is addressed by its CID, so a row already there
            // holds these bytes: only the MIME type is taken from the new
            // put. `INSERT OR REPLACE` would delete the row and its
            // overflow pages and write them again, with a new rowid and
            // index entry (`store.blob_put/ours/4KiB` puts the same bytes
            // again and again). The upload time moves (the orphan grace
            // restarts) only when it changed, which leaves `blobs_age`
            // alone for a put within the same second.
            w.conn
                .prepare_cached(
                    "INSERT INTO blobs (did, cid, mime, size, bytes, created_at) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
                     ON CONFLICT (did, cid) DO UPDATE SET mime = excluded.mime, \
                     created_at = excluded.created_at WHERE created_at <> excluded.created_at \
                     OR mime <> excluded.mime",
                )?
                .execute(params![
                    did,
                    &cid.to_bytes()[..],
                    mime,
                    bytes.len() as i64,
                    bytes,
                    unix_now()
                ])?;
            Ok(cid)
        })
    }

    /// A whole blob.
    pub fn get_blob(&self, did: &str, cid: &Cid) -> Result<Option<Blob>> {
        validate_did(did)?;
        let r = self.reader()?;
        let mut st =
            r.prepare_cached("SELECT mime, bytes FROM blobs WHERE did = ?1 AND cid = ?2")?;
        let mut rows = st.query(params![did, &cid.to_bytes()[..]])?;
        match rows.next()? {
            Some(row) => Ok(Some(Blob {
                mime: row.get_ref(0)?.as_str()?.to_owned(),
                bytes: row.get_ref(1)?.as_blob()?.to_vec(),
            })),
            None => Ok(None),
        }
    }

    /// Bytes `offset..offset+len` of a blob (clamped to its end).
    pub fn get_blob_range(
        &self,
        did: &str,
        cid: &Cid,
        offset: u64,
        len: u64,
    ) -> Result<Option<Vec<u8>>> {
        validate_did(did)?;
        let r = self.reader()?;
        let mut st = r.prepare_cached(
            "SELECT substr(bytes, ?3, ?4) FROM blobs WHERE did = ?1 AND cid = ?2",
        )?;
        let start = i64::try_from(offset)
            .unwrap_or(i64::MAX - 1)
            .saturating_add(1);
        let len = i64::try_from(len).unwrap_or(i64::MAX);
        let mut rows = st.query(params![did, &cid.to_bytes()[..], start, len])?;
        match rows.next()? {
            Some(row) => {
                let v = row.get_ref(0)?;
                Ok(Some(match v {
                    rusqlite::types::ValueRef::Blob(b) => b.to_vec(),
                    _ => Vec::new(),
                }))
            }
            None => Ok(None),
        }
    }

    /// A blob's MIME type and size, and its bytes when it is at most
    /// `inline_max` bytes long: one lookup answers a small blob whole,
    /// and a large one is then read piece by piece
    /// ([`Store::read_blob_at`]) rather than held whole.
    pub fn blob_head(&self, did: &str, cid: &Cid, inline_max: u64) -> Result<Option<BlobHead>> {
        validate_did(did)?;
        let r = self.reader()?;
        // The CASE leaves a large blob's overflow pages unread.
        let mut st = r.prepare_cached(
            "SELECT mime, size, CASE WHEN size <= ?3 THEN bytes END FROM blobs \
             WHERE did = ?1 AND cid = ?2",
        )?;
        let max = i64::try_from(inline_max).unwrap_or(i64::MAX);
        let mut rows = st.query(params![did, &cid.to_bytes()[..], max])?;
        match rows.next()? {
            Some(row) => Ok(Some(BlobHead {
                mime: row.get_ref(0)?.as_str()?.to_owned(),
                size: u64::try_from(row.get::<_, i64>(1)?).unwrap_or(0),
                bytes: match row.get_ref(2)? {
                    rusqlite::types::ValueRef::Blob(b) => Some(b.to_vec()),
                    _ => None,
                },
            })),
            None => Ok(None),
        }
    }

    /// Reads a blob's bytes from `offset` into `buf` (as many as fit and
    /// the blob has): the count read (0 at or past its end), `None` when
    /// the store does not hold the blob. SQLite's incremental blob I/O
    /// reads only the pages under the range, and the read transaction
    /// lasts this call only, so a large blob is streamed chunk by chunk
    /// without holding it whole or pinning the WAL between chunks.
    pub fn read_blob_at(
        &self,
        did: &str,
        cid: &Cid,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<Option<usize>> {
        validate_did(did)?;
        let r = self.reader()?;
        let rowid: Option<i64> = r
            .prepare_cached("SELECT rowid FROM blobs WHERE did = ?1 AND cid = ?2")?
            .query_row(params![did, &cid.to_bytes()[..]], |row| row.get(0))
            .optional()?;
        let Some(rowid) = rowid else {
            return Ok(None);
        };
        let blob = r.blob_open(rusqlite::MAIN_DB, "blobs", "bytes", rowid, true)?;
        let len = blob.len() as u64;
        if offset >= len {
            return Ok(Some(0));
        }
        let n = buf
            .len()
            .min(usize::try_from(len - offset).unwrap_or(usize::MAX));
        // `offset < len`, and a blob's length fits an i32 (SQLite's own
        // limit), so the conversion holds.
        let at = usize::try_from(offset).unwrap_or(usize::MAX);
        blob.read_at_exact(&mut buf[..n], at)?;
        Ok(Some(n))
    }

    /// A blob's MIME type and size, without its bytes (HEAD, Range).
    pub fn blob_meta(&self, did: &str, cid: &Cid) -> Result<Option<(String, u64)>> {
        validate_did(did)?;
        let r = self.reader()?;
        let mut st =
            r.prepare_cached("SELECT mime, size FROM blobs WHERE did = ?1 AND cid = ?2")?;
        let mut rows = st.query(params![did, &cid.to_bytes()[..]])?;
        match rows.next()? {
            Some(row) => Ok(Some((
                row.get_ref(0)?.as_str()?.to_owned(),
                u64::try_from(row.get::<_, i64>(1)?).unwrap_or(0),
            ))),
            None => Ok(None),
        }
    }

    /// listMissingBlobs: blobs `did`'s records reference that the store does
    /// not hold, each with one record path (`collection/rkey`) naming it,
    /// in CID byte order after `cursor`.
    pub fn missing_blobs(
        &self,
        did: &str,
        cursor: Option<&Cid>,
        limit: usize,
    ) -> Result<Vec<(Cid, String)>> {
        validate_did(did)?;
        let r = self.reader()?;
        let mut st = r.prepare_cached(
            "SELECT rb.blob, MIN(rb.record) FROM record_blobs rb WHERE rb.did = ?1 AND rb.blob > ?2 \
             AND NOT EXISTS (SELECT 1 FROM blobs b WHERE b.did = rb.did AND b.cid = rb.blob) \
             GROUP BY rb.blob ORDER BY rb.blob LIMIT ?3",
        )?;
        let after = cursor.map(|c| c.to_bytes().to_vec()).unwrap_or_default();
        let mut rows = st.query(params![
            did,
            after,
            i64::try_from(limit).unwrap_or(i64::MAX)
        ])?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            out.push((
                cid_from_sql(row.get_ref(0)?.as_blob()?)?,
                row.get_ref(1)?.as_str()?.to_owned(),
            ));
        }
        Ok(out)
    }

    /// listBlobs: the blobs `did`'s current records reference, in CID byte
    /// order after `cursor`; with `since`, only those referenced by records
    /// written after that rev.
    pub fn list_blobs(
        &self,
        did: &str,
        since: Option<&str>,
        cursor: Option<&Cid>,
        limit: usize,
    ) -> Result<Vec<Cid>> {
        validate_did(did)?;
        if let Some(s) = since {
            repo::syntax::validate_tid(s)?;
        }
        let r = self.reader()?;
        let mut st = r.prepare_cached(
            "SELECT DISTINCT rb.blob FROM record_blobs rb WHERE rb.did = ?1 AND rb.blob > ?2 \
             AND (?3 IS NULL OR EXISTS (SELECT 1 FROM records r WHERE r.did = rb.did \
             AND r.collection = substr(rb.record, 1, instr(rb.record, '/') - 1) \
             AND r.rkey = substr(rb.record, instr(rb.record, '/') + 1) AND r.repo_rev > ?3)) \
             ORDER BY rb.blob LIMIT ?4",
        )?;
        let after = cursor.map(|c| c.to_bytes().to_vec()).unwrap_or_default();
        let mut rows = st.query(params![
            did,
            after,
            since,
            i64::try_from(limit).unwrap_or(i64::MAX)
        ])?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            out.push(cid_from_sql(row.get_ref(0)?.as_blob()?)?);
        }
        Ok(out)
    }

    /// Blobs referenced by `did`'s current records.
    pub fn referenced_blobs(&self, did: &str) -> Result<Vec<Cid>> {
        validate_did(did)?;
        let r = self.reader()?;
        let mut st = r.prepare_cached(
            "SELECT DISTINCT blob FROM record_blobs WHERE did = ?1 ORDER BY blob",
        )?;
        let mut rows = st.query([did])?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            out.push(cid_from_sql(row.get_ref(0)?.as_blob()?)?);
        }
        Ok(out)
    }
}
