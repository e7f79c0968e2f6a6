//! A write's caller-side half, before anything is locked or queued: the
//! DID, NSID and record key checks, strict DAG-CBOR that must be a map
//! (with `$type`, when present, equal to the collection), the size limits,
//! the record's CID and its blob links. A bad write returns a typed error
//! here and nothing is written.

use repo::cbor::ValueRef;
use repo::syntax::{validate_nsid, validate_record_key};
use repo::{Cid, Codec};

use crate::error::{Result, StoreError};
use crate::{RecordWrite, Store, WriteAction};

/// A record write after caller-side validation and encoding.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    pub action: WriteAction,
    pub collection: String,
    pub rkey: String,
    /// `collection/rkey`.
    pub path: String,
    /// The record block (creates and updates).
    pub block: Option<(Cid, Vec<u8>)>,
    /// Raw-codec links found in the record (blob references).
    pub blobs: Vec<Cid>,
    /// swapRecord: `Some(None)` = must not exist.
    pub swap_record: Option<Option<Cid>>,
}

/// Appends to `out` each distinct raw-codec link (a blob) under `v`.
pub(crate) fn collect_blob_links(v: &ValueRef<'_>, out: &mut Vec<Cid>) {
    match v {
        ValueRef::Link(c) if c.codec() == Codec::Raw && !out.contains(c) => out.push(*c),
        ValueRef::List(items) => items.iter().for_each(|i| collect_blob_links(i, out)),
        ValueRef::Map(m) => m
            .entries()
            .iter()
            .for_each(|(_, i)| collect_blob_links(i, out)),
        _ => {}
    }
}

impl Store {
    /// The writes of one applyWrites call, each checked and encoded; the
    /// call itself checked too (not empty, within
    /// [`crate::Config::max_writes`], no path written twice).
    pub(crate) fn prepare_writes(&self, writes: Vec<RecordWrite>) -> Result<Vec<Prepared>> {
        if writes.is_empty() {
            return Err(StoreError::InvalidBatch("no writes"));
        }
        if writes.len() > self.config.max_writes {
            return Err(StoreError::InvalidBatch("too many writes"));
        }
        let prepared = writes
            .into_iter()
            .map(|w| self.prepare(w))
            .collect::<Result<Vec<_>>>()?;
        let mut paths: Vec<&str> = prepared.iter().map(|p| p.path.as_str()).collect();
        paths.sort_unstable();
        if paths.windows(2).any(|w| w[0] == w[1]) {
            return Err(StoreError::InvalidBatch("a path is written twice"));
        }
        Ok(prepared)
    }

    fn prepare(&self, w: RecordWrite) -> Result<Prepared> {
        validate_nsid(&w.collection)?;
        let rkey = match w.rkey {
            Some(r) => r,
            None if w.action == WriteAction::Create => self.tids.next_tid().to_string(),
            None => {
                return Err(StoreError::InvalidBatch(
                    "update and delete need a record key",
                ));
            }
        };
        validate_record_key(&rkey)?;
        let path = format!("{}/{rkey}", w.collection);
        repo::mst::validate_key(&path)?;
        let mut blobs = Vec::new();
        let block = match (w.action, w.record) {
            (WriteAction::Delete, None) => None,
            (WriteAction::Delete, Some(_)) => {
                return Err(StoreError::InvalidBatch("a delete carries no record"));
            }
            (_, None) => {
                return Err(StoreError::InvalidBatch(
                    "a create or update needs a record",
                ));
            }
            (_, Some(bytes)) => {
                if bytes.len() > self.config.max_record_bytes {
                    return Err(StoreError::RecordTooLarge {
                        size: bytes.len(),
                        max: self.config.max_record_bytes,
                    });
                }
                let value = repo::cbor::decode(&bytes)?;
                let ValueRef::Map(map) = &value else {
                    return Err(StoreError::InvalidRecord("not a map"));
                };
                match map.get("$type") {
                    None => {}
                    Some(ValueRef::Text(t)) if *t == w.collection => {}
                    Some(_) => {
                        return Err(StoreError::InvalidRecord(
                            "$type differs from the collection",
                        ));
                    }
                }
                collect_blob_links(&value, &mut blobs);
                Some((Cid::for_dag_cbor(&bytes), bytes))
            }
        };
        Ok(Prepared {
            action: w.action,
            collection: w.collection,
            rkey,
            path,
            block,
            blobs,
            swap_record: w.swap_record,
        })
    }
}
