//! The read path: current CID, index + block fetch, getRecord and
//! listRecords (rendered by `render.rs`), collections, the repo root, the
//! table counts ([`Store::stats`]).
//! Every read takes a pooled reader connection (WAL snapshot, never waits
//! on the writer); statements are prepared once per connection.

use repo::Cid;
use repo::syntax::{validate_did, validate_nsid, validate_record_key};
use rusqlite::{Connection, OptionalExtension, params};

use crate::error::Result;
use crate::render::render_record;
use crate::rows::cid_from_sql;
use crate::{ListOptions, RecordView, RepoRoot, Stats, Store};

/// One account's counts ([`Store::account_counts`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccountCounts {
    /// Blocks of its current repository.
    pub repo_blocks: u64,
    /// Records.
    pub indexed_records: u64,
    /// Distinct blobs its records reference.
    pub expected_blobs: u64,
    /// Of those, the ones the store holds.
    pub imported_blobs: u64,
}

/// What [`Store::repo_blocks`] found.
#[derive(Debug, Default)]
pub struct RepoBlocks {
    /// The blocks found, as asked.
    pub found: Vec<(Cid, Vec<u8>)>,
    /// The CIDs not in the repository.
    pub missing: Vec<Cid>,
}

const SQL_CURRENT_CID: &str =
    "SELECT cid FROM records WHERE did = ?1 AND collection = ?2 AND rkey = ?3";
/// Index entry and block bytes: one row since schema v4.
const SQL_RECORD: &str =
    "SELECT cid, bytes FROM records WHERE did = ?1 AND collection = ?2 AND rkey = ?3";

impl Store {
    /// The current root of `did`'s repository.
    pub fn repo_root(&self, did: &str) -> Result<Option<RepoRoot>> {
        validate_did(did)?;
        let r = self.reader()?;
        root_of(&r, did)
    }

    /// The current record CID at (did, collection, rkey), from the index
    /// (through the writer-coherent cache of `cid_cache.rs`).
    pub fn current_cid(&self, did: &str, collection: &str, rkey: &str) -> Result<Option<Cid>> {
        validate_did(did)?;
        validate_nsid(collection)?;
        validate_record_key(rkey)?;
        if self.is_read_only() {
            // No writer here keeps the cache coherent: another process may.
            return self.current_cid_from_index(did, collection, rkey);
        }
        let miss = match self.cids.get(did, collection, rkey) {
            Ok(hit) => return Ok(hit),
            Err(miss) => miss,
        };
        let cid = self.current_cid_from_index(did, collection, rkey)?;
        self.cids.insert(miss, did, collection, rkey, cid);
        Ok(cid)
    }

    /// `current_cid` straight from the SQLite index (inputs validated).
    pub(crate) fn current_cid_from_index(
        &self,
        did: &str,
        collection: &str,
        rkey: &str,
    ) -> Result<Option<Cid>> {
        let r = self.reader()?;
        let mut st = r.prepare_cached(SQL_CURRENT_CID)?;
        let mut rows = st.query(params![did, collection, rkey])?;
        match rows.next()? {
            Some(row) => Ok(Some(cid_from_sql(row.get_ref(0)?.as_blob()?)?)),
            None => Ok(None),
        }
    }

    /// Index row plus block bytes (no decode).
    pub fn record_block(
        &self,
        did: &str,
        collection: &str,
        rkey: &str,
    ) -> Result<Option<(Cid, Vec<u8>)>> {
        validate_did(did)?;
        validate_nsid(collection)?;
        validate_record_key(rkey)?;
        let r = self.reader()?;
        let mut st = r.prepare_cached(SQL_RECORD)?;
        let mut rows = st.query(params![did, collection, rkey])?;
        match rows.next()? {
            Some(row) => Ok(Some((
                cid_from_sql(row.get_ref(0)?.as_blob()?)?,
                row.get_ref(1)?.as_blob()?.to_vec(),
            ))),
            None => Ok(None),
        }
    }

    /// The blocks of `did`'s current repository among `cids` (its commit,
    /// MST nodes and records: what `export_repo` writes), in the order
    /// asked, each once; the CIDs it does not hold come back apart, in
    /// order. `None` when the store holds no repository for `did`.
    pub fn repo_blocks(&self, did: &str, cids: &[Cid]) -> Result<Option<RepoBlocks>> {
        validate_did(did)?;
        let r = self.reader()?;
        let commit: Option<(Vec<u8>, Option<Vec<u8>>)> = r
            .prepare_cached("SELECT commit_cid, commit_bytes FROM repo_root WHERE did = ?1")?
            .query_row([did], |row| Ok((row.get(0)?, row.get(1)?)))
            .optional()?;
        let Some((commit_cid, commit_bytes)) = commit else {
            return Ok(None);
        };
        let mut out = RepoBlocks::default();
        let mut seen = std::collections::HashSet::new();
        for cid in cids {
            if !seen.insert(*cid) {
                continue;
            }
            let key = cid.to_bytes();
            let bytes: Option<Vec<u8>> = if key[..] == commit_cid[..] {
                commit_bytes.clone()
            } else {
                let record: Option<Vec<u8>> = r
                    .prepare_cached(
                        "SELECT bytes FROM records WHERE did = ?1 AND cid = ?2 \
                         AND bytes IS NOT NULL LIMIT 1",
                    )?
                    .query_row(params![did, &key[..]], |row| row.get(0))
                    .optional()?;
                match record {
                    Some(b) => Some(b),
                    // MST nodes are keyed by position: a scan of the
                    // account's nodes (the caller bounds how many CIDs).
                    None => r
                        .prepare_cached(
                            "SELECT bytes FROM repo_blocks WHERE did = ?1 AND cid = ?2 LIMIT 1",
                        )?
                        .query_row(params![did, &key[..]], |row| row.get(0))
                        .optional()?,
                }
            };
            match bytes {
                Some(b) => out.found.push((*cid, b)),
                None => out.missing.push(*cid),
            }
        }
        Ok(Some(out))
    }

    /// `did`'s counts for `checkAccountStatus`: `None` for an unknown
    /// account. Blocks are the commit, the MST nodes and the distinct
    /// record blocks; expected blobs are the distinct blobs its records
    /// reference, imported ones those of them the store holds.
    pub fn account_counts(&self, did: &str) -> Result<Option<AccountCounts>> {
        validate_did(did)?;
        let r = self.reader()?;
        if root_of(&r, did)?.is_none() {
            return Ok(None);
        }
        let one = |sql: &str| -> Result<u64> {
            Ok(r.prepare_cached(sql)?
                .query_row([did], |row| row.get::<_, i64>(0))? as u64)
        };
        let nodes = one("SELECT COUNT(*) FROM repo_blocks WHERE did = ?1")?;
        let records = one("SELECT COUNT(*) FROM records WHERE did = ?1")?;
        let record_blocks = one("SELECT COUNT(*) FROM records WHERE did = ?1 AND cid_dup = 0")?;
        let expected = one("SELECT COUNT(DISTINCT blob) FROM record_blobs WHERE did = ?1")?;
        let imported = one(
            "SELECT COUNT(*) FROM (SELECT DISTINCT blob FROM record_blobs WHERE did = ?1) e \
             WHERE EXISTS (SELECT 1 FROM blobs b WHERE b.did = ?1 AND b.cid = e.blob)",
        )?;
        Ok(Some(AccountCounts {
            repo_blocks: 1 + nodes + record_blocks,
            indexed_records: records,
            expected_blobs: expected,
            imported_blobs: imported,
        }))
    }

    /// getRecord: the record as atproto JSON.
    pub fn get_record(
        &self,
        did: &str,
        collection: &str,
        rkey: &str,
    ) -> Result<Option<RecordView>> {
        validate_did(did)?;
        validate_nsid(collection)?;
        validate_record_key(rkey)?;
        let r = self.reader()?;
        let mut st = r.prepare_cached(SQL_RECORD)?;
        let mut rows = st.query(params![did, collection, rkey])?;
        match rows.next()? {
            Some(row) => {
                let cid = cid_from_sql(row.get_ref(0)?.as_blob()?)?;
                let json = render_record(did, collection, rkey, &cid, row.get_ref(1)?.as_blob()?)?;
                Ok(Some(RecordView {
                    rkey: rkey.to_owned(),
                    cid,
                    json,
                }))
            }
            None => Ok(None),
        }
    }

    fn list_sql(full: bool, cursor: bool, reverse: bool) -> &'static str {
        match (full, cursor, reverse) {
            (false, false, false) => {
                "SELECT rkey, cid FROM records WHERE did = ?1 AND collection = ?2 ORDER BY rkey DESC LIMIT ?3"
            }
            (false, false, true) => {
                "SELECT rkey, cid FROM records WHERE did = ?1 AND collection = ?2 ORDER BY rkey ASC LIMIT ?3"
            }
            (false, true, false) => {
                "SELECT rkey, cid FROM records WHERE did = ?1 AND collection = ?2 AND rkey < ?4 ORDER BY rkey DESC LIMIT ?3"
            }
            (false, true, true) => {
                "SELECT rkey, cid FROM records WHERE did = ?1 AND collection = ?2 AND rkey > ?4 ORDER BY rkey ASC LIMIT ?3"
            }
            (true, false, false) => {
                "SELECT rkey, cid, bytes FROM records WHERE did = ?1 AND collection = ?2 ORDER BY rkey DESC LIMIT ?3"
            }
            (true, false, true) => {
                "SELECT rkey, cid, bytes FROM records WHERE did = ?1 AND collection = ?2 ORDER BY rkey ASC LIMIT ?3"
            }
            (true, true, false) => {
                "SELECT rkey, cid, bytes FROM records WHERE did = ?1 AND collection = ?2 AND rkey < ?4 ORDER BY rkey DESC LIMIT ?3"
            }
            (true, true, true) => {
                "SELECT rkey, cid, bytes FROM records WHERE did = ?1 AND collection = ?2 AND rkey > ?4 ORDER BY rkey ASC LIMIT ?3"
            }
        }
    }

    fn list_check(did: &str, collection: &str, opts: &ListOptions<'_>) -> Result<i64> {
        validate_did(did)?;
        validate_nsid(collection)?;
        if let Some(c) = opts.cursor {
            validate_record_key(c)?;
        }
        Ok(match opts.limit {
            0 => 50,
            n => n.min(100) as i64,
        })
    }

    /// listRecords, index only: `(rkey, cid)` of one page.
    pub fn list_record_cids(
        &self,
        did: &str,
        collection: &str,
        opts: &ListOptions<'_>,
    ) -> Result<Vec<(String, Cid)>> {
        let limit = Self::list_check(did, collection, opts)?;
        let r = self.reader()?;
        let mut st =
            r.prepare_cached(Self::list_sql(false, opts.cursor.is_some(), opts.reverse))?;
        let mut rows = match opts.cursor {
            Some(c) => st.query(params![did, collection, limit, c])?,
            None => st.query(params![did, collection, limit])?,
        };
        let mut out = Vec::with_capacity(limit as usize);
        while let Some(row) = rows.next()? {
            out.push((
                row.get_ref(0)?.as_str()?.to_owned(),
                cid_from_sql(row.get_ref(1)?.as_blob()?)?,
            ));
        }
        Ok(out)
    }

    /// listRecords, full: one page rendered to atproto JSON.
    pub fn list_records(
        &self,
        did: &str,
        collection: &str,
        opts: &ListOptions<'_>,
    ) -> Result<Vec<RecordView>> {
        self.list_records_within(did, collection, opts, usize::MAX)
    }

    /// [`Store::list_records`], bounded in bytes: the page stops after the
    /// record that brings its rendered JSON to `max_bytes` or past it (at
    /// least one record, whatever its size). A page shorter than the limit
    /// whose records add up to `max_bytes` or more may have more after it:
    /// the caller goes on from its last key. Each call is one short read
    /// transaction, so a caller that pages a large answer out chunk by
    /// chunk holds none between chunks.
    pub fn list_records_within(
        &self,
        did: &str,
        collection: &str,
        opts: &ListOptions<'_>,
        max_bytes: usize,
    ) -> Result<Vec<RecordView>> {
        let limit = Self::list_check(did, collection, opts)?;
        let r = self.reader()?;
        let mut st = r.prepare_cached(Self::list_sql(true, opts.cursor.is_some(), opts.reverse))?;
        let mut rows = match opts.cursor {
            Some(c) => st.query(params![did, collection, limit, c])?,
            None => st.query(params![did, collection, limit])?,
        };
        let mut out = Vec::with_capacity(limit as usize);
        let mut bytes = 0usize;
        while let Some(row) = rows.next()? {
            let rkey = row.get_ref(0)?.as_str()?;
            let cid = cid_from_sql(row.get_ref(1)?.as_blob()?)?;
            let json = render_record(did, collection, rkey, &cid, row.get_ref(2)?.as_blob()?)?;
            bytes = bytes.saturating_add(json.len());
            out.push(RecordView {
                rkey: rkey.to_owned(),
                cid,
                json,
            });
            if bytes >= max_bytes {
                break;
            }
        }
        Ok(out)
    }

    /// The collections of `did` that hold records.
    pub fn collections(&self, did: &str) -> Result<Vec<String>> {
        validate_did(did)?;
        let r = self.reader()?;
        let mut out = Vec::new();
        let mut st = r.prepare_cached(
            "SELECT collection FROM records WHERE did = ?1 AND collection > ?2 ORDER BY collection LIMIT 1",
        )?;
        let mut last = String::new();
        while let Some(c) = st
            .query_row(params![did, last], |r| r.get::<_, String>(0))
            .optional()?
        {
            out.push(c.clone());
            last = c;
        }
        Ok(out)
    }

    /// Table counts.
    pub fn stats(&self) -> Result<Stats> {
        let r = self.reader()?;
        let q = |sql: &str| -> Result<i64> {
            Ok(r.query_row(sql, [], |row| row.get::<_, Option<i64>>(0))?
                .unwrap_or(0))
        };
        // (blocks, bytes) of one table, in one scan.
        let blocks_of = |sql: &str| -> Result<(i64, i64)> {
            Ok(r.query_row(sql, [], |row| {
                Ok((row.get(0)?, row.get::<_, Option<i64>>(1)?.unwrap_or(0)))
            })?)
        };
        let nodes = blocks_of("SELECT COUNT(*), SUM(length(bytes)) FROM repo_blocks")?;
        let recs = blocks_of("SELECT COUNT(*), SUM(length(bytes)) FROM records WHERE cid_dup = 0")?;
        // Accounts, and their commit blocks (v5: in `repo_root`).
        let (accounts, commits) = r.query_row(
            "SELECT COUNT(*), COUNT(commit_bytes), SUM(length(commit_bytes)) FROM repo_root",
            [],
            |row| {
                Ok((
                    row.get::<_, i64>(0)?,
                    (
                        row.get::<_, i64>(1)?,
                        row.get::<_, Option<i64>>(2)?.unwrap_or(0),
                    ),
                ))
            },
        )?;
        Ok(Stats {
            accounts: accounts as u64,
            records: q("SELECT COUNT(*) FROM records")? as u64,
            blocks: (nodes.0 + recs.0 + commits.0) as u64,
            block_bytes: (nodes.1 + recs.1 + commits.1) as u64,
            events: q("SELECT COUNT(*) FROM seq_events")? as u64,
            blobs: q("SELECT COUNT(*) FROM blobs")? as u64,
            blob_bytes: q("SELECT SUM(size) FROM blobs")? as u64,
            last_seq: q("SELECT MAX(seq) FROM seq_events")?,
        })
    }
}

pub(crate) fn root_of(conn: &Connection, did: &str) -> Result<Option<RepoRoot>> {
    let row = conn
        .prepare_cached("SELECT commit_cid, rev, data_cid FROM repo_root WHERE did = ?1")?
        .query_row([did], |r| {
            Ok((
                r.get::<_, Vec<u8>>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Vec<u8>>(2)?,
            ))
        })
        .optional()?;
    row.map(|(c, rev, d)| {
        Ok(RepoRoot {
            commit: cid_from_sql(&c)?,
            rev,
            data: cid_from_sql(&d)?,
        })
    })
    .transpose()
}
