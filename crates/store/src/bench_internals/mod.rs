//! The narrow facade the benches use, and the bench-only code itself, in
//! one place: the PRAGMA list, one commit's planning over an in-memory
//! account (`--bench instructions`), the startup history fixture
//! (`fixtures.rs`), and the units measured below the public API: the
//! index-only write (`index_only.rs`, with the seqless events it appends,
//! `seqless.rs`; Tranquil's metastore unit) and `current_cid` without its
//! cache. Bench code reaches the writer only through `Store::submit`, as
//! every write does.

#[cfg(feature = "bench-internals")]
mod index_only;
// Commit planning over an in-memory account: counted by `--bench
// instructions` and checked by its own tests; not part of the store's API.
mod plan_detached;
mod seqless;

pub use seqless::SeqlessEvent;

#[cfg(feature = "bench-internals")]
pub use index_only::{IndexOnly, IndexOnlyRecord, index_only_write};

#[cfg(feature = "bench-internals")]
pub use crate::fixtures::{HistoryFixture, HistoryShape, build_history_fixture, reset_unversioned};
#[cfg(feature = "bench-internals")]
pub use crate::schema::{WRITER_PRAGMAS, pragmas};
#[cfg(feature = "bench-internals")]
pub use plan_detached::{DetachedRepo, PlannedCommit};

/// `current_cid` bypassing the writer-coherent cache: the SQLite index
/// lookup alone, its inputs checked (the adjacent probe
/// `store.current_cid/ours.uncached`).
#[cfg(feature = "bench-internals")]
pub fn current_cid_uncached(
    store: &crate::Store,
    did: &str,
    collection: &str,
    rkey: &str,
) -> crate::Result<Option<repo::Cid>> {
    repo::syntax::validate_did(did)?;
    repo::syntax::validate_nsid(collection)?;
    repo::syntax::validate_record_key(rkey)?;
    store.current_cid_from_index(did, collection, rkey)
}
