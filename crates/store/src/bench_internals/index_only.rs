//! The index-only write unit: per record of one commit, its index row (no
//! bytes) and a block-ownership row where a node holding its key would go,
//! then one prepared event, in one group-committed job: no CBOR, MST or
//! signing (`store.apply_commit`'s index-only unit).

use std::sync::Arc;

use super::SeqlessEvent;
use crate::node_rows::put_nodes;
use crate::writer::Writer;
use crate::{Result, Store};

/// One index-only write, prepared outside the timing: the records of one
/// commit (key and CID of each), the rev their index rows carry, and the
/// event appended with them.
#[derive(Debug, Clone)]
pub struct IndexOnly {
    /// The commit's records, one index row and one ownership row each.
    pub records: Vec<IndexOnlyRecord>,
    /// The rev written in their index and ownership rows.
    pub rev: String,
    /// The event appended (its seq filled in by the writer).
    pub event: SeqlessEvent,
}

/// One record of an [`IndexOnly`] write.
#[derive(Debug, Clone)]
pub struct IndexOnlyRecord {
    /// The record's collection.
    pub collection: String,
    /// The record's key.
    pub rkey: String,
    /// The record's CID.
    pub cid: repo::Cid,
}

/// Index-only write of `did` (see the module doc). Returns the event's
/// seq.
pub fn index_only_write(store: &Store, did: &str, write: Arc<IndexOnly>) -> Result<i64> {
    let did = did.to_owned();
    store.submit(move |w| write_rows(w, &did, &write))
}

fn write_rows(w: &mut Writer, did: &str, write: &IndexOnly) -> Result<i64> {
    w.touch(did);
    for r in &write.records {
        let c = r.cid.to_bytes();
        let pos = crate::node_pos::path_position(r.collection.as_bytes(), r.rkey.as_bytes());
        w.conn
            .prepare_cached(
                "INSERT INTO records (did, collection, rkey, cid, repo_rev) VALUES (?1, ?2, ?3, ?4, ?5) \
                 ON CONFLICT (did, collection, rkey) DO UPDATE SET cid = excluded.cid, repo_rev = excluded.repo_rev",
            )?
            .execute(rusqlite::params![did, r.collection, r.rkey, &c[..], write.rev])?;
        put_nodes(&w.conn, did, Some(&write.rev), [(pos, &r.cid, &b""[..])])?;
    }
    let seq = w.next_seq;
    let event = write.event.encoded(seq);
    w.put_event(did, write.event.kind(), event)?;
    Ok(seq)
}
