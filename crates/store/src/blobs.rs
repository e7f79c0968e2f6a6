//! Blobs: put (size and MIME checked, raw sha-256 CID), get, ranged get,
//! referenced-blob listing.

use repo::Cid;
use repo::syntax::validate_did;
use rusqlite::{OptionalExtension, params};

use crate::error::{Result, StoreError};
use crate::rows::cid_from_sql;
use crate::{Blob, Store};

fn validate_mime(mime: &str) -> Result<()> {
    let ok = mime.len() <= 255
        && mime.split_once('/').is_some_and(|(t, s)| {
            let tok = |x: &str| {
                !x.is_empty()
                    && x.bytes()
                        .all(|c| c.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&c))
            };
            tok(t) && tok(s.split(';').next().unwrap_or(""))
        });
    if ok {
        Ok(())
    } else {
        Err(StoreError::InvalidMime(mime.to_owned()))
    }
}

impl Store {
    /// Stores a blob (raw sha-256 CID); size and MIME checked.
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
            // again and again).
            w.conn
                .prepare_cached(
                    "INSERT INTO blobs (did, cid, mime, size, bytes) VALUES (?1, ?2, ?3, ?4, ?5) \
                     ON CONFLICT (did, cid) DO UPDATE SET mime = excluded.mime",
                )?
                .execute(params![
                    did,
                    &cid.to_bytes()[..],
                    mime,
                    bytes.len() as i64,
                    bytes
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
