//! The CPU half of a commit, computed before anything is written: index
//! checks, the lazy MST update, the covering proof, the signed commit.

use repo::Cid;
use repo::car::write_car;
use repo::commit::UnsignedCommit;
use repo::crypto::Keypair;
use repo::mst::{BlockSource, Mst, NodeCache, WriteOp};
use repo::syntax::{Tid, TidGenerator};
use rusqlite::{Connection, OptionalExtension, params};

use crate::WriteAction;
use crate::error::{Result, StoreError};
use crate::node_pos::{BlockOps, SharedPositions, account_key};
use crate::writer::{Prepared, Root, SQL_INDEX_CID, cid_from_sql};

/// Everything a commit computes before it writes: index checks, the MST
/// update (nodes read lazily), the covering proof, the signed commit. Made
/// by the writer inside its transaction, or by a caller in parallel with
/// it (`caller_plan.rs`), which the writer takes only if the repository
/// is still at the plan's base commit.
pub(crate) struct Plan {
    pub base_commit: Cid,
    pub base_rev: String,
    /// The MST update; `result.previous` is each write's current CID (the
    /// record index's, which it was checked against, when the plan read it).
    pub result: repo::mst::WriteResult,
    /// Where the new nodes go, and the released and moved ones.
    pub blocks: BlockOps,
    /// The `#commit` event's CAR: the commit block, the new records, the
    /// new MST nodes and the rest of the covering proof. Built here, on
    /// the planner's thread, so the writer (the serial part) only copies
    /// it into the frame.
    pub car: Vec<u8>,
    pub rev: String,
    pub commit: (Cid, Vec<u8>),
}

/// Where a plan learns each written path's current record CID.
pub(crate) enum Current<'c> {
    /// The record index (one point query per write), checked against what
    /// the MST update replaced.
    Index(&'c Connection),
    /// The MST's own leaves, what the update replaced: no SQL at all. The
    /// index is derived from the MST, so the two agree in a sound store;
    /// the writer-side plans, which query the index, keep checking that.
    Mst,
}

/// Computes a [`Plan`] for `writes` on top of `root`, reading MST nodes
/// missing from `cache` from `source`; gives the node cache back whatever
/// happens, with the new nodes in it (the next commit starts from them).
/// `positions` (the same ones `source` reads by) learns the plan's node
/// positions once it has succeeded.
#[allow(clippy::too_many_arguments)]
pub(crate) fn plan_commit<S: BlockSource>(
    source: S,
    positions: &SharedPositions,
    current: Current<'_>,
    cache: NodeCache,
    tids: &TidGenerator,
    did: &str,
    root: &Root,
    key: &Keypair,
    writes: &[Prepared],
    swap_commit: Option<Cid>,
) -> (Result<Plan>, NodeCache) {
    let mut mst = Mst::with_cache(source, root.data, cache);
    let plan = plan_inner(
        &mut mst,
        positions,
        current,
        tids,
        did,
        root,
        key,
        writes,
        swap_commit,
    );
    (plan, mst.into_cache_with_new_nodes())
}

/// The swap and existence checks of each write against its path's current
/// CID.
fn check_writes(writes: &[Prepared], current: &[Option<Cid>]) -> Result<()> {
    for (w, cur) in writes.iter().zip(current) {
        if let Some(expected) = w.swap_record
            && expected != *cur
        {
            return Err(StoreError::InvalidSwap {
                what: w.path.clone(),
                expected,
                found: *cur,
            });
        }
        match (w.action, cur) {
            (WriteAction::Create, Some(_)) => {
                return Err(StoreError::RecordExists(w.path.clone()));
            }
            (WriteAction::Delete, None) => {
                return Err(StoreError::RecordNotFound(w.path.clone()));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Each write's current CID from the record index.
fn index_cids(conn: &Connection, did: &str, writes: &[Prepared]) -> Result<Vec<Option<Cid>>> {
    let mut st = conn.prepare_cached(SQL_INDEX_CID)?;
    let mut current = Vec::with_capacity(writes.len());
    for w in writes {
        let cur: Option<Vec<u8>> = st
            .query_row(params![did, w.collection, w.rkey], |r| r.get(0))
            .optional()?;
        current.push(cur.as_deref().map(cid_from_sql).transpose()?);
    }
    Ok(current)
}

#[allow(clippy::too_many_arguments)]
fn plan_inner<S: BlockSource>(
    mst: &mut Mst<S>,
    positions: &SharedPositions,
    current: Current<'_>,
    tids: &TidGenerator,
    did: &str,
    root: &Root,
    key: &Keypair,
    writes: &[Prepared],
    swap_commit: Option<Cid>,
) -> Result<Plan> {
    if let Some(expected) = swap_commit
        && expected != root.commit
    {
        return Err(StoreError::InvalidSwap {
            what: "commit".into(),
            expected: Some(expected),
            found: Some(root.commit),
        });
    }
    // With the index at hand, a write that cannot apply fails before any
    // MST work.
    let indexed = match current {
        Current::Index(conn) => {
            let cids = index_cids(conn, did, writes)?;
            check_writes(writes, &cids)?;
            Some(cids)
        }
        Current::Mst => None,
    };
    let ops: Vec<WriteOp> = writes
        .iter()
        .map(|w| match &w.block {
            Some((cid, _)) => WriteOp::Put {
                key: w.path.clone(),
                cid: *cid,
            },
            None => WriteOp::Delete {
                key: w.path.clone(),
            },
        })
        .collect();
    // Lazy MST update: only the nodes on the touched paths are read.
    let result = mst.apply(&ops)?;
    match indexed {
        Some(cids) => {
            for (prev, cur) in result.previous.iter().zip(&cids) {
                if prev != cur {
                    return Err(StoreError::Corrupt(format!(
                        "{did}: MST and record index disagree ({prev:?} vs {cur:?})"
                    )));
                }
            }
        }
        None => check_writes(writes, &result.previous)?,
    }
    let mut proof_blocks = Vec::with_capacity(result.proof.len());
    for cid in &result.proof {
        if !result.commit.new_blocks.iter().any(|b| b.0 == *cid) {
            proof_blocks.push((*cid, mst.node_bytes(cid)?));
        }
    }
    let prev_tid = Tid::parse(&root.rev)?;
    let rev = tids.next_after(prev_tid).to_string();
    let rev_tid = Tid::parse(&rev)?;
    let signed = UnsignedCommit::new(did, result.commit.root, rev_tid).sign(key);
    // Last: nothing after this can fail, so the positions noted are the
    // plan's.
    let blocks = positions.borrow_mut().commit_ops(
        account_key(did),
        Some(root.data),
        result.commit.root,
        &result.commit.new_blocks,
        &result.commit.removed,
    );
    let commit = signed.to_block();
    let car = commit_car(&commit, writes, &result.commit.new_blocks, &proof_blocks);
    Ok(Plan {
        base_commit: root.commit,
        base_rev: root.rev.clone(),
        result,
        blocks,
        car,
        rev,
        commit,
    })
}

/// The `#commit` CAR (root: the commit), written into one buffer sized
/// up front.
fn commit_car(
    commit: &(Cid, Vec<u8>),
    writes: &[Prepared],
    nodes: &[(Cid, Vec<u8>)],
    proof: &[(Cid, Vec<u8>)],
) -> Vec<u8> {
    let records = writes.iter().filter_map(|w| w.block.as_ref());
    let blocks = std::iter::once(commit)
        .chain(records)
        .chain(nodes)
        .chain(proof);
    // Per block: a length varint (at most 10 bytes), the CID, the bytes.
    let size = 64
        + blocks
            .clone()
            .map(|(_, b)| 10 + Cid::BYTE_LEN + b.len())
            .sum::<usize>();
    let mut car = Vec::with_capacity(size);
    write_car(
        &[commit.0],
        blocks.map(|(c, b)| (c, b.as_slice())),
        &mut car,
    );
    car
}
