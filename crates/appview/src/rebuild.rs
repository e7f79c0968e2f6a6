//! Rebuilding the index from the repository alone: export it as a CAR
//! (`getRepo`), check the blocks' hashes, walk the MST from the signed
//! commit's root, and apply every record of the appview's collections.
//! The live index must equal this one (a test shows it, also after the
//! store restarts).

use repo::car::CarReader;
use repo::commit::CommitRef;
use repo::mst::{MemoryBlockStore, Mst};
use store::Store;

use crate::error::{AppviewError, Result};
use crate::index::Index;
use crate::record;

fn bad(e: impl std::fmt::Display) -> AppviewError {
    AppviewError::BadCommit(e.to_string())
}

/// The index of `did`'s repository in `store`.
pub(crate) fn rebuild(store: &Store, did: &str) -> Result<Index> {
    let mut car = Vec::new();
    store.export_repo(did, None, &mut car)?;
    index_car(&car)
}

/// The index of a repository CAR (its first root is the commit).
pub(crate) fn index_car(car: &[u8]) -> Result<Index> {
    let mut reader = CarReader::new(car).map_err(bad)?.verify(true);
    let root = *reader
        .roots()
        .first()
        .ok_or_else(|| bad("repository CAR without a root"))?;
    let mut blocks = MemoryBlockStore::new();
    while let Some((cid, bytes)) = reader.next_block().map_err(bad)? {
        blocks.put(cid, bytes);
    }
    let commit = blocks
        .get(&root)
        .ok_or_else(|| bad(format!("commit block {root} not in the CAR")))?;
    let data = CommitRef::decode(commit).map_err(bad)?.data;
    let mut mst = Mst::load(&blocks, data);
    let mut index = Index::new();
    for (key, cid) in mst.entries().map_err(bad)? {
        let (collection, rkey) = key
            .split_once('/')
            .ok_or_else(|| bad(format!("MST key {key:?} has no '/'")))?;
        let bytes = blocks
            .get(&cid)
            .ok_or_else(|| bad(format!("record block {cid} of {key} not in the CAR")))?;
        if let Some(r) = crate::task_run::decode(collection, rkey, bytes)? {
            index.tasks.apply(r);
        } else if let Some(r) = record::decode(collection, rkey, bytes)? {
            index.apply_record(r);
        }
    }
    Ok(index)
}
