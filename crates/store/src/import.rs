//! Importing a repository CAR: every block checked against its CID, the
//! commit decoded (and its signature verified when a key is given), the MST
//! checked and walked from the commit's `data` CID; only the blocks the
//! commit reaches are kept.

use std::io::Read;

use repo::Cid;
use repo::car::CarReader;
use repo::commit::CommitRef;
use repo::crypto::PublicKey;
use repo::mst::{MemoryBlockStore, Mst};
use repo::syntax::validate_did;

use crate::error::{Result, StoreError};

/// A repository that passed every check, ready to be written.
#[derive(Debug)]
pub(crate) struct Verified {
    pub did: String,
    pub commit: Cid,
    pub data: Cid,
    pub rev: String,
    /// Commit and MST nodes.
    pub blocks: Vec<(Cid, Vec<u8>)>,
    /// (collection, rkey, record CID, record block), in MST order.
    pub records: Vec<(String, String, Cid, Vec<u8>)>,
    /// (record path, blob CID) for blobs the records reference.
    pub blob_refs: Vec<(String, Cid)>,
}

/// Reads and verifies a CAR.
pub(crate) fn verify_car(input: impl Read, key: Option<&PublicKey>) -> Result<Verified> {
    let mut reader = CarReader::new(input)?.verify(true);
    let roots = reader.roots().to_vec();
    let [commit_cid] = roots[..] else {
        return Err(StoreError::InvalidRepo(format!(
            "expected one root, found {}",
            roots.len()
        )));
    };
    let mut mem = MemoryBlockStore::new();
    while let Some((cid, bytes)) = reader.next_block()? {
        mem.put(cid, bytes);
    }
    let commit_bytes = mem
        .get(&commit_cid)
        .ok_or_else(|| StoreError::InvalidRepo(format!("commit block {commit_cid} missing")))?
        .to_vec();
    let commit = CommitRef::decode(&commit_bytes)?;
    validate_did(commit.did)?;
    if let Some(key) = key {
        commit.verify(key)?;
    }
    let did = commit.did.to_owned();
    let rev = commit.rev.to_owned();
    let data = commit.data;
    let mut mst = Mst::load(&mem, data);
    mst.check_structure()?;
    let node_cids = mst.node_cids()?;
    let entries = mst.entries()?;
    let mut blocks = Vec::with_capacity(node_cids.len() + 1);
    blocks.push((commit_cid, commit_bytes));
    for cid in node_cids {
        let b = mem
            .get(&cid)
            .ok_or_else(|| StoreError::InvalidRepo(format!("MST node {cid} missing")))?;
        blocks.push((cid, b.to_vec()));
    }
    let mut records = Vec::with_capacity(entries.len());
    let mut blob_refs = Vec::new();
    for (key, cid) in entries {
        let Some((coll, rkey)) = key.split_once('/') else {
            return Err(StoreError::InvalidRepo(format!("bad MST key {key}")));
        };
        repo::syntax::validate_nsid(coll)?;
        repo::syntax::validate_record_key(rkey)?;
        let b = mem.get(&cid).ok_or_else(|| {
            StoreError::InvalidRepo(format!("record block {cid} of {key} missing"))
        })?;
        let value = repo::cbor::decode(b)?;
        if !matches!(value, repo::cbor::ValueRef::Map(_)) {
            return Err(StoreError::InvalidRepo(format!(
                "record {key} is not a map"
            )));
        }
        let mut links = Vec::new();
        crate::prepare::collect_blob_links(&value, &mut links);
        blob_refs.extend(links.into_iter().map(|c| (key.clone(), c)));
        records.push((coll.to_owned(), rkey.to_owned(), cid, b.to_vec()));
    }
    Ok(Verified {
        did,
        commit: commit_cid,
        data,
        rev,
        blocks,
        records,
        blob_refs,
    })
}
