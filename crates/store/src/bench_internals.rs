//! The narrow facade the benches use: the PRAGMA list, one commit's
//! planning over an in-memory account (`--bench instructions`, and the
//! index-only unit's events), the startup history fixture (`fixtures.rs`),
//! and two units measured below the public API (the index-only write,
//! Tranquil's metastore unit, and `current_cid` without its cache).

use std::sync::Arc;

pub use crate::events::SeqlessEvent;
pub use crate::fixtures::{HistoryFixture, HistoryShape, build_history_fixture, reset_unversioned};
pub use crate::plan_detached::{DetachedRepo, PlannedCommit};
pub use crate::schema::{WRITER_PRAGMAS, pragmas};
pub use crate::writer::{IndexOnly, IndexOnlyRecord};

use crate::{Result, Store};

/// Index-only write of `did`: per record, index upsert + block-ownership
/// row; then the append of the prepared event, in one group-committed job, no CBOR, MST
/// or signing. Returns the event's seq.
pub fn index_only_write(store: &Store, did: &str, write: Arc<IndexOnly>) -> Result<i64> {
    store.index_only_write(did, write)
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
