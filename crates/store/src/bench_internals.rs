//! The narrow facade the benches use, re-exports only: the PRAGMA list,
//! one commit's planning over an in-memory account (`--bench
//! instructions`), the startup history fixture, and two units measured
//! below the public API (the index-only write, Tranquil's metastore unit,
//! and `current_cid` without its cache).

pub use crate::fixtures::{HISTORY_UNVERSIONED_DID, build_history_fixture, reset_unversioned};
pub use crate::plan_detached::{DetachedRepo, PlannedCommit};
pub use crate::schema::{WRITER_PRAGMAS, pragmas};

use crate::{Result, Store};

/// Index-only write: record index upsert + block-ownership row + event
/// append in one group-committed job, no CBOR, MST or signing.
pub fn index_only_write(
    store: &Store,
    did: &str,
    collection: &str,
    rkey: &str,
    cid: repo::Cid,
) -> Result<i64> {
    store.index_only_write(did, collection, rkey, cid)
}

/// `current_cid` bypassing the writer-coherent cache: the SQLite index
/// lookup alone (the adjacent probe `store.current_cid/ours.uncached`).
pub fn current_cid_uncached(
    store: &Store,
    did: &str,
    collection: &str,
    rkey: &str,
) -> Result<Option<repo::Cid>> {
    store.current_cid_uncached(did, collection, rkey)
}
