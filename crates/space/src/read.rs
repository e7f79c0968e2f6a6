//! The read path: getRecord, listRecords, listRepoOps, a repo's state and
//! its full export. Every read runs on a pooled reader connection; the
//! multi-statement ones (listRepoOps' last page, the export) inside one
//! read transaction, so the state they report is the one their rows came
//! from.

use repo::Cid;
use rusqlite::{Connection, OptionalExtension, params};

use crate::error::{Result, SpaceError};
use crate::lthash::LtHash;
use crate::sql;
use crate::store::{SpaceStore, space_row};
use crate::types::{
    ListPage, ListParams, ListedRecord, MAX_LIMIT, OpEntry, OpsPage, OpsParams, RepoState,
};
use crate::uri::{SpaceRef, check_did, check_path};
use crate::write::ACTION_DELETE;

/// Upper bound of every path (NSID and record-key characters are ASCII
/// below 0x7f).
const PATH_MAX: &str = "\u{7f}";

fn cid_of(b: &[u8], what: &str) -> Result<Cid> {
    Cid::from_bytes(b).map_err(|e| SpaceError::Corrupt(format!("cid of {what}: {e}")))
}

fn split_path(path: &str) -> Result<(&str, &str)> {
    path.split_once('/')
        .ok_or_else(|| SpaceError::Corrupt(format!("path {path:?}")))
}

fn repo_row(conn: &Connection, space: &SpaceRef, repo: &str) -> Result<(i64, RepoState)> {
    let info = space_row(conn, space)?;
    let row: Option<(i64, Vec<u8>, String)> = conn
        .prepare_cached(sql::REPO_GET)?
        .query_row(params![info.id, repo], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .optional()?;
    let (id, bytes, rev) = row.ok_or_else(|| SpaceError::RepoNotFound {
        space: space.to_uri(),
        repo: repo.to_owned(),
    })?;
    let hash = LtHash::from_bytes(&bytes)
        .ok_or_else(|| SpaceError::Corrupt(format!("set hash of {repo}: {} bytes", bytes.len())))?;
    Ok((id, RepoState { hash, rev }))
}

/// What [`SpaceStore::export`] calls per record: `(path, cid, value)`.
pub type RecordSink<'a> = dyn FnMut(&str, Cid, Option<&[u8]>) -> Result<()> + 'a;

impl SpaceStore {
    /// A writer repo's state (its LtHash and rev).
    pub fn repo_state(&self, space: &SpaceRef, repo: &str) -> Result<RepoState> {
        check_did("repo", repo)?;
        let r = self.reader()?;
        Ok(repo_row(&r, space, repo)?.1)
    }

    /// One record: its CID and DRISL bytes.
    pub fn get_record(
        &self,
        space: &SpaceRef,
        repo: &str,
        collection: &str,
        rkey: &str,
    ) -> Result<(Cid, Vec<u8>)> {
        check_did("repo", repo)?;
        check_path(collection, rkey)?;
        let r = self.reader()?;
        let (id, _) = repo_row(&r, space, repo)?;
        let path = format!("{collection}/{rkey}");
        let row: Option<(Vec<u8>, Vec<u8>)> = r
            .prepare_cached(sql::RECORD_GET)?
            .query_row(params![id, path], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        match row {
            Some((cid, value)) => Ok((cid_of(&cid, &path)?, value)),
            None => Err(SpaceError::RecordNotFound(
                space.record_uri(repo, collection, rkey),
            )),
        }
    }

    /// listRecords: ordered by record URI, descending unless `reverse`
    /// (E2); the cursor is the last record's URI, given on a full page.
    pub fn list_records(&self, space: &SpaceRef, repo: &str, p: &ListParams) -> Result<ListPage> {
        check_did("repo", repo)?;
        let limit = p.limit.unwrap_or(50);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(SpaceError::invalid(
                "limit",
                format!("{limit} (1..={MAX_LIMIT})"),
            ));
        }
        let (mut lo, mut hi) = match &p.collection {
            Some(c) => {
                check_path(c, "x")?;
                // Every "c/…" lies strictly between "c/" and "c0".
                (format!("{c}/"), format!("{c}0"))
            }
            None => (String::new(), PATH_MAX.to_owned()),
        };
        let prefix = format!("{}/{repo}/", space.to_uri());
        if let Some(cur) = &p.cursor {
            let path = cur
                .strip_prefix(&prefix)
                .filter(|s| s.contains('/'))
                .ok_or_else(|| SpaceError::invalid("cursor", "not a record URI of this repo"))?;
            if p.reverse {
                if *path > *lo {
                    lo = path.to_owned();
                }
            } else if *path < *hi {
                hi = path.to_owned();
            }
        }
        let r = self.reader()?;
        let (id, _) = repo_row(&r, space, repo)?;
        let q = match (p.reverse, p.exclude_values) {
            (false, false) => sql::LIST_DESC,
            (true, false) => sql::LIST_ASC,
            (false, true) => sql::LIST_DESC_NOVALUE,
            (true, true) => sql::LIST_ASC_NOVALUE,
        };
        let mut st = r.prepare_cached(q)?;
        let mut rows = st.query(params![id, lo, hi, limit])?;
        let mut records = Vec::with_capacity(limit as usize);
        while let Some(row) = rows.next()? {
            let path = row.get_ref(0)?.as_str()?;
            let (collection, rkey) = split_path(path)?;
            let cid = cid_of(row.get_ref(1)?.as_blob()?, path)?;
            let value = if p.exclude_values {
                None
            } else {
                Some(row.get_ref(2)?.as_blob()?.to_vec())
            };
            records.push(ListedRecord {
                collection: collection.to_owned(),
                rkey: rkey.to_owned(),
                cid,
                value,
            });
        }
        let cursor = (records.len() == limit as usize)
            .then(|| {
                records
                    .last()
                    .map(|l| format!("{prefix}{}/{}", l.collection, l.rkey))
            })
            .flatten();
        Ok(ListPage { records, cursor })
    }

    /// listRepoOps: ops in `(rev, idx)` order after the cursor (or after
    /// every op of `since` and earlier batches). A full page carries a
    /// cursor and no state; a short page carries the repo's state from the
    /// same snapshot and no cursor (E2 `listRepoOps.ts`).
    pub fn list_repo_ops(&self, space: &SpaceRef, repo: &str, p: &OpsParams) -> Result<OpsPage> {
        check_did("repo", repo)?;
        let limit = p.limit.unwrap_or(100);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(SpaceError::invalid(
                "limit",
                format!("{limit} (1..={MAX_LIMIT})"),
            ));
        }
        let (after_rev, after_idx) = match (&p.cursor, &p.since) {
            (Some(c), _) => {
                let (rev, idx) = c
                    .split_once('/')
                    .ok_or_else(|| SpaceError::invalid("cursor", "not {rev}/{idx}"))?;
                repo::syntax::validate_tid(rev)
                    .map_err(|e| SpaceError::invalid("cursor", e.to_string()))?;
                let idx: i64 = idx
                    .parse()
                    .map_err(|_| SpaceError::invalid("cursor", "idx is not an integer"))?;
                (rev.to_owned(), idx)
            }
            (None, Some(s)) => {
                repo::syntax::validate_tid(s)
                    .map_err(|e| SpaceError::invalid("since", e.to_string()))?;
                (s.clone(), i64::MAX)
            }
            (None, None) => (String::new(), i64::MAX),
        };
        let mut r = self.reader()?;
        let tx = r.transaction()?;
        let (id, state) = repo_row(&tx, space, repo)?;
        let mut ops = Vec::with_capacity(limit as usize);
        {
            let q = if p.exclude_values {
                sql::OPS_AFTER_NOVALUE
            } else {
                sql::OPS_AFTER
            };
            let mut st = tx.prepare_cached(q)?;
            let mut rows = st.query(params![id, after_rev, after_idx, limit])?;
            while let Some(row) = rows.next()? {
                let path = row.get_ref(3)?.as_str()?;
                let (collection, rkey) = split_path(path)?;
                let action: i64 = row.get(2)?;
                let cid = row
                    .get_ref(4)?
                    .as_blob_or_null()?
                    .map(|b| cid_of(b, path))
                    .transpose()?;
                let prev = row
                    .get_ref(5)?
                    .as_blob_or_null()?
                    .map(|b| cid_of(b, path))
                    .transpose()?;
                if (action == ACTION_DELETE) != cid.is_none() {
                    return Err(SpaceError::Corrupt(format!(
                        "op on {path}: action {action} with cid {cid:?}"
                    )));
                }
                let value = if p.exclude_values {
                    None
                } else {
                    row.get_ref(6)?.as_blob_or_null()?.map(<[u8]>::to_vec)
                };
                let idx: i64 = row.get(1)?;
                ops.push(OpEntry {
                    rev: row.get(0)?,
                    idx: u32::try_from(idx)
                        .map_err(|_| SpaceError::Corrupt(format!("idx {idx}")))?,
                    collection: collection.to_owned(),
                    rkey: rkey.to_owned(),
                    cid,
                    prev,
                    value,
                });
            }
        }
        tx.finish()?;
        if ops.len() == limit as usize {
            let last = &ops[ops.len() - 1];
            let cursor = Some(format!("{}/{}", last.rev, last.idx));
            Ok(OpsPage {
                ops,
                cursor,
                state: None,
            })
        } else {
            Ok(OpsPage {
                ops,
                cursor: None,
                state: Some(state),
            })
        }
    }

    /// The full export of a writer repo, in one snapshot: `on_state` with
    /// the state first, then `on_record(path, cid, value)` per record in
    /// path order (`value` only if `values`). Rows stream from SQLite; none
    /// is held after its callback returns.
    pub fn export(
        &self,
        space: &SpaceRef,
        repo: &str,
        values: bool,
        on_state: &mut dyn FnMut(&RepoState) -> Result<()>,
        on_record: &mut RecordSink<'_>,
    ) -> Result<()> {
        check_did("repo", repo)?;
        let mut r = self.reader()?;
        let tx = r.transaction()?;
        let (id, state) = repo_row(&tx, space, repo)?;
        on_state(&state)?;
        {
            let mut st = tx.prepare_cached(if values {
                sql::ALL_RECORDS
            } else {
                sql::ALL_RECORD_CIDS
            })?;
            let mut rows = st.query([id])?;
            while let Some(row) = rows.next()? {
                let path = row.get_ref(0)?.as_str()?;
                let cid = cid_of(row.get_ref(1)?.as_blob()?, path)?;
                let value = if values {
                    Some(row.get_ref(2)?.as_blob()?)
                } else {
                    None
                };
                on_record(path, cid, value)?;
            }
        }
        tx.finish()?;
        Ok(())
    }

    /// Whether a record in `space` references blob `cid` (getBlob serves
    /// only those).
    pub fn blob_in_space(&self, space: &SpaceRef, cid: &Cid) -> Result<bool> {
        let r = self.reader()?;
        let info = space_row(&r, space)?;
        let hit: Option<i64> = r
            .prepare_cached(sql::BLOB_REF_IN_SPACE)?
            .query_row(params![info.id, &cid.to_bytes()[..]], |r| r.get(0))
            .optional()?;
        Ok(hit.is_some())
    }
}
