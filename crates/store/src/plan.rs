//! The CPU half of a commit, computed on the caller's thread from its
//! account's lane before anything is written: the swap and existence
//! checks, the lazy MST update, the covering proof, the signed commit and
//! the `#commit` event's CAR.

use repo::Cid;
use repo::car::write_car;
use repo::commit::UnsignedCommit;
use repo::mst::{BlockSource, MemoryBlockStore, Mst, WriteOp};
use repo::syntax::{Tid, TidGenerator};

use crate::WriteAction;
use crate::error::{Result, StoreError};
use crate::lane::{Head, Lane, LazyReader};
use crate::node_pos::BlockOps;
use crate::node_rows::PositionedBlocks;
use crate::prepare::Prepared;

/// Everything a commit computes before it writes. The writer takes it if
/// the account is still at `base` (the one cheap guard) and writes its
/// rows.
pub(crate) struct Plan {
    /// The commit the plan was made on.
    pub base: Head,
    /// The MST update; `result.previous` is each write's CID before it.
    pub result: repo::mst::WriteResult,
    /// Where the new nodes go, and the released and moved ones.
    pub blocks: BlockOps,
    /// The `#commit` event's CAR: the commit block, the new records, the
    /// new MST nodes and the rest of the covering proof. Built here, on
    /// the caller's thread, so the writer (the serial part) only copies
    /// it into the frame.
    pub car: Vec<u8>,
    pub rev: String,
    pub commit: (Cid, Vec<u8>),
}

/// Where a lane's missing nodes are read from.
pub(crate) trait Nodes {
    /// The block source over a lane's tree.
    type Source<'p>: BlockSource
    where
        Self: 'p;
    /// The nodes of `lane`'s tree, noting what it reads in its positions.
    fn source<'p>(&'p self, lane: &'p Lane) -> Self::Source<'p>;
}

impl Nodes for LazyReader<'_> {
    type Source<'p>
        = PositionedBlocks<'p, Self>
    where
        Self: 'p;
    fn source<'p>(&'p self, lane: &'p Lane) -> Self::Source<'p> {
        PositionedBlocks::new(self, &lane.did, lane.head.data, &lane.positions)
    }
}

/// An account held in memory (`bench_internals/plan_detached.rs`): every node is there,
/// so nothing is read by position.
impl Nodes for MemoryBlockStore {
    type Source<'p> = &'p MemoryBlockStore;
    fn source<'p>(&'p self, _: &'p Lane) -> Self::Source<'p> {
        self
    }
}

/// Plans `writes` on top of `lane`'s head, reading nodes missing from its
/// cache from `nodes`. On success the lane has moved to the planned
/// commit (its head, its new nodes decoded, their positions noted, the
/// released ones forgotten): the caller keeps the lane locked until the
/// commit lands, and empties it if it does not. On failure the lane is
/// still at its head (what it decoded meanwhile stays cached).
pub(crate) fn plan_commit<N: Nodes>(
    lane: &mut Lane,
    nodes: &N,
    tids: &TidGenerator,
    writes: &[Prepared],
    swap_commit: Option<Cid>,
) -> Result<Plan> {
    lane.bound();
    let cache = std::mem::take(&mut lane.cache);
    let mut mst = Mst::with_cache(nodes.source(lane), lane.head.data, cache);
    let (did, head, key) = (&lane.did, &lane.head, &lane.key);
    let planned = (|| {
        if let Some(expected) = swap_commit
            && expected != head.commit
        {
            return Err(StoreError::InvalidSwap {
                what: "commit".into(),
                expected: Some(expected),
                found: Some(head.commit),
            });
        }
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
        // Each write's current CID is the leaf it replaced (the index is
        // derived from the MST; `check_repo` checks that they agree).
        let result = mst.apply(&ops)?;
        check_writes(writes, &result.previous)?;
        let mut proof_blocks = Vec::with_capacity(result.proof.len());
        for cid in &result.proof {
            if !result.commit.new_blocks.iter().any(|b| b.0 == *cid) {
                proof_blocks.push((*cid, mst.node_bytes(cid)?));
            }
        }
        let prev_tid = Tid::parse(&head.rev)?;
        let rev = tids.next_after(prev_tid).to_string();
        let rev_tid = Tid::parse(&rev)?;
        let signed = UnsignedCommit::new(did.as_str(), result.commit.root, rev_tid).sign(key);
        let commit = signed.to_block();
        let car = commit_car(&commit, writes, &result.commit.new_blocks, &proof_blocks);
        Ok((result, car, rev, commit))
    })();
    lane.cache = mst.into_cache_with_new_nodes();
    let (result, car, rev, commit) = planned?;
    // Last: nothing after this can fail, so the lane moves with the plan.
    let blocks = lane.positions.borrow_mut().commit_ops(
        Some(lane.head.data),
        result.commit.root,
        &result.commit.new_blocks,
        &result.commit.removed,
    );
    let base = std::mem::replace(
        &mut lane.head,
        Head {
            commit: commit.0,
            rev: rev.clone(),
            data: result.commit.root,
        },
    );
    Ok(Plan {
        base,
        result,
        blocks,
        car,
        rev,
        commit,
    })
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
