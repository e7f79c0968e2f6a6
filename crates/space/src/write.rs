//! The write path: one SQLite transaction per batch.
//!
//! Before the writer mutex: every write is checked, its value decoded
//! strictly (a DRISL map of at most [`MAX_RECORD_BYTES`]), its CID hashed,
//! its blob references collected, and the LtHash expansion of the element
//! it adds computed. Under the mutex, in one IMMEDIATE transaction: the
//! repo's state is read, the batch's rev taken (a TID after the current
//! one), and per write the previous CID read, the record row written or
//! deleted, the expansion of the element it removes computed and applied,
//! the blob references replaced and an oplog row buffered; then the state
//! row and the oplog rows are written and the transaction commits. A
//! caller hears back only after COMMIT: an acknowledged batch is in the
//! WAL, so a killed process loses nothing acknowledged.

use repo::Cid;
use repo::cbor::{self, ValueRef};
use repo::syntax::Tid;
use rusqlite::{OptionalExtension, params};

use crate::error::{Result, SpaceError};
use crate::lthash::{Expansion, LtHash};
use crate::sql;
use crate::store::{SpaceStore, space_row};
use crate::types::{BatchResult, MAX_RECORD_BYTES, MAX_WRITES, Write, WriteResult};
use crate::uri::{SpaceRef, check_did, check_path};

/// Oplog action codes.
pub(crate) const ACTION_CREATE: i64 = 0;
pub(crate) const ACTION_UPDATE: i64 = 1;
pub(crate) const ACTION_DELETE: i64 = 2;

struct Prepared {
    collection: String,
    rkey: String,
    path: String,
    /// `None`: a delete.
    put: Option<Put>,
    must_be_new: bool,
}

struct Put {
    cid: Cid,
    value: Vec<u8>,
    add: Expansion,
    blobs: Vec<Cid>,
}

/// Blob CIDs referenced by a record: every `{"$type": "blob", "ref": link}`.
pub(crate) fn blob_refs(v: &ValueRef<'_>, out: &mut Vec<Cid>) {
    match v {
        ValueRef::Map(m) => {
            if let (Some(ValueRef::Text("blob")), Some(ValueRef::Link(c))) =
                (m.get("$type"), m.get("ref"))
            {
                out.push(*c);
            }
            for (_, e) in m.entries() {
                blob_refs(e, out);
            }
        }
        ValueRef::List(l) => l.iter().for_each(|e| blob_refs(e, out)),
        _ => {}
    }
}

fn prepare_put(collection: &str, rkey: &str, value: Vec<u8>) -> Result<Put> {
    if value.len() > MAX_RECORD_BYTES {
        return Err(SpaceError::TooLarge(format!(
            "record {collection}/{rkey} is {} bytes, over {MAX_RECORD_BYTES}",
            value.len()
        )));
    }
    let decoded = cbor::decode(&value)
        .map_err(|e| SpaceError::invalid("record", format!("{collection}/{rkey}: {e}")))?;
    if !matches!(decoded, ValueRef::Map(_)) {
        return Err(SpaceError::invalid(
            "record",
            format!("{collection}/{rkey} is not a map"),
        ));
    }
    let mut blobs = Vec::new();
    blob_refs(&decoded, &mut blobs);
    blobs.sort();
    blobs.dedup();
    let cid = Cid::for_dag_cbor(&value);
    Ok(Put {
        add: Expansion::of(collection, rkey, &cid),
        cid,
        value,
        blobs,
    })
}

impl SpaceStore {
    /// Applies a batch of writes to `repo`'s records in `space` as one
    /// transaction and one rev (no access check: [`SpaceStore::authorize`]
    /// first).
    pub fn apply_writes(
        &self,
        space: &SpaceRef,
        repo: &str,
        writes: Vec<Write>,
    ) -> Result<BatchResult> {
        check_did("repo", repo)?;
        if writes.is_empty() || writes.len() > MAX_WRITES {
            return Err(SpaceError::invalid(
                "writes",
                format!("{} writes (1..={MAX_WRITES})", writes.len()),
            ));
        }
        let mut prepared = Vec::with_capacity(writes.len());
        for w in writes {
            let (collection, rkey, value, must_be_new) = match w {
                Write::Create {
                    collection,
                    rkey,
                    value,
                } => {
                    let rkey = match rkey {
                        Some(r) => r,
                        None => {
                            String::from_utf8_lossy(&self.tids.next_tid().encode()).into_owned()
                        }
                    };
                    (collection, rkey, Some(value), true)
                }
                Write::Update {
                    collection,
                    rkey,
                    value,
                } => (collection, rkey, Some(value), false),
                Write::Delete { collection, rkey } => (collection, rkey, None, false),
            };
            check_path(&collection, &rkey)?;
            let put = value
                .map(|v| prepare_put(&collection, &rkey, v))
                .transpose()?;
            prepared.push(Prepared {
                path: format!("{collection}/{rkey}"),
                collection,
                rkey,
                put,
                must_be_new,
            });
        }

        let mut w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let tx = w.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let info = space_row(&tx, space)?;
        let existing: Option<(i64, Vec<u8>, String)> = tx
            .prepare_cached(sql::REPO_GET)?
            .query_row(params![info.id, repo], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .optional()?;
        let (repo_id, mut hash, old_rev) = match existing {
            Some((id, bytes, rev)) => (
                id,
                LtHash::from_bytes(&bytes).ok_or_else(|| {
                    SpaceError::Corrupt(format!("set hash of {repo}: {} bytes", bytes.len()))
                })?,
                rev,
            ),
            None => {
                tx.prepare_cached(sql::REPO_INSERT)?.execute(params![
                    info.id,
                    repo,
                    &LtHash::new().to_bytes()[..],
                    ""
                ])?;
                (tx.last_insert_rowid(), LtHash::new(), String::new())
            }
        };
        let rev_tid = match Tid::parse(&old_rev) {
            Ok(t) => self.tids.next_after(t),
            Err(_) => self.tids.next_tid(),
        };
        let rev_bytes = rev_tid.encode();
        let rev = String::from_utf8_lossy(&rev_bytes).into_owned();
        let mut results = Vec::with_capacity(prepared.len());
        let mut idx = 0i64;
        {
            let mut get_cid = tx.prepare_cached(sql::RECORD_CID)?;
            let mut upsert = tx.prepare_cached(sql::RECORD_UPSERT)?;
            let mut delete = tx.prepare_cached(sql::RECORD_DELETE)?;
            let mut oplog = tx.prepare_cached(sql::OPLOG_INSERT)?;
            let mut ref_del = tx.prepare_cached(sql::BLOB_REF_DELETE)?;
            let mut ref_ins = tx.prepare_cached(sql::BLOB_REF_INSERT)?;
            for p in prepared {
                let prev: Option<Vec<u8>> = get_cid
                    .query_row(params![repo_id, p.path], |r| r.get(0))
                    .optional()?;
                let prev = prev
                    .map(|b| {
                        Cid::from_bytes(&b)
                            .map_err(|e| SpaceError::Corrupt(format!("cid of {}: {e}", p.path)))
                    })
                    .transpose()?;
                if p.must_be_new && prev.is_some() {
                    return Err(SpaceError::RecordAlreadyExists(space.record_uri(
                        repo,
                        &p.collection,
                        &p.rkey,
                    )));
                }
                let action = match (&p.put, prev) {
                    (None, None) => {
                        // deleteRecord of a missing record: nothing to log.
                        results.push(WriteResult {
                            collection: p.collection,
                            rkey: p.rkey,
                            cid: None,
                        });
                        continue;
                    }
                    (None, Some(_)) => ACTION_DELETE,
                    (Some(_), None) => ACTION_CREATE,
                    (Some(_), Some(_)) => ACTION_UPDATE,
                };
                if let Some(prev) = &prev {
                    hash.remove(&Expansion::of(&p.collection, &p.rkey, prev));
                    ref_del.execute(params![repo_id, p.path])?;
                }
                let cid = match &p.put {
                    Some(put) => {
                        hash.add(&put.add);
                        upsert.execute(params![
                            repo_id,
                            p.path,
                            &put.cid.to_bytes()[..],
                            rev,
                            put.value
                        ])?;
                        for b in &put.blobs {
                            ref_ins.execute(params![
                                info.id,
                                &b.to_bytes()[..],
                                repo_id,
                                p.path
                            ])?;
                        }
                        Some(put.cid)
                    }
                    None => {
                        delete.execute(params![repo_id, p.path])?;
                        None
                    }
                };
                oplog.execute(params![
                    repo_id,
                    rev,
                    idx,
                    action,
                    p.path,
                    cid.map(|c| c.to_bytes().to_vec()),
                    prev.map(|c| c.to_bytes().to_vec()),
                ])?;
                idx += 1;
                results.push(WriteResult {
                    collection: p.collection,
                    rkey: p.rkey,
                    cid,
                });
            }
        }
        if idx == 0 {
            tx.rollback()?;
            return Ok(BatchResult {
                rev: old_rev,
                results,
            });
        }
        tx.prepare_cached(sql::REPO_UPDATE)?.execute(params![
            repo_id,
            &hash.to_bytes()[..],
            rev
        ])?;
        tx.commit()?;
        Ok(BatchResult { rev, results })
    }
}
