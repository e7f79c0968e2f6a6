//! The CPU half of a commit, computed before anything is written: index
//! checks, the lazy MST update, the covering proof, the signed commit.

use repo::Cid;
use repo::commit::UnsignedCommit;
use repo::crypto::Keypair;
use repo::mst::{Mst, NodeCache, WriteOp};
use repo::syntax::{Tid, TidGenerator};
use rusqlite::{Connection, OptionalExtension, params};

use crate::WriteAction;
use crate::error::{Result, StoreError};
use crate::writer::{Prepared, Root, SQL_INDEX_CID, SqlBlocks, cid_from_sql};

/// Everything a commit computes before it writes: index checks, the MST
/// update (read lazily through `conn`), the covering proof, the signed
/// commit. Made by the caller on a reader snapshot (so signing and tree
/// work run in parallel across callers) or by the writer as a fallback.
pub(crate) struct Plan {
    pub base_commit: Cid,
    pub base_rev: String,
    pub current: Vec<Option<Cid>>,
    pub result: repo::mst::WriteResult,
    pub proof_blocks: Vec<(Cid, Vec<u8>)>,
    pub rev: String,
    pub commit: (Cid, Vec<u8>),
}

/// Computes a [`Plan`] for `writes` on top of `root`; gives the node cache
/// back whatever happens.
#[allow(clippy::too_many_arguments)]
pub(crate) fn plan_commit(
    conn: &Connection,
    cache: NodeCache,
    tids: &TidGenerator,
    did: &str,
    root: &Root,
    key: &Keypair,
    writes: &[Prepared],
    swap_commit: Option<Cid>,
) -> (Result<Plan>, NodeCache) {
    let mut mst = Mst::with_cache(SqlBlocks { conn, did }, root.data, cache);
    let plan = plan_inner(conn, &mut mst, tids, did, root, key, writes, swap_commit);
    (plan, mst.into_cache())
}

#[allow(clippy::too_many_arguments)]
fn plan_inner(
    conn: &Connection,
    mst: &mut Mst<SqlBlocks<'_>>,
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
    // Current index state and swap checks.
    let mut current = Vec::with_capacity(writes.len());
    let mut ops = Vec::with_capacity(writes.len());
    {
        let mut st = conn.prepare_cached(SQL_INDEX_CID)?;
        for w in writes {
            let cur: Option<Vec<u8>> = st
                .query_row(params![did, w.collection, w.rkey], |r| r.get(0))
                .optional()?;
            let cur = cur.as_deref().map(cid_from_sql).transpose()?;
            if let Some(expected) = w.swap_record
                && expected != cur
            {
                return Err(StoreError::InvalidSwap {
                    what: w.path.clone(),
                    expected,
                    found: cur,
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
            current.push(cur);
            ops.push(match &w.block {
                Some((cid, _)) => WriteOp::Put {
                    key: w.path.clone(),
                    cid: *cid,
                },
                None => WriteOp::Delete {
                    key: w.path.clone(),
                },
            });
        }
    }
    // Lazy MST update: only the nodes on the touched paths are read.
    let result = mst.apply(&ops)?;
    let mut proof_blocks = Vec::with_capacity(result.proof.len());
    for cid in &result.proof {
        if !result.commit.new_blocks.iter().any(|b| b.0 == *cid) {
            proof_blocks.push((*cid, mst.node_bytes(cid)?));
        }
    }
    for (prev, cur) in result.previous.iter().zip(&current) {
        if prev != cur {
            return Err(StoreError::Corrupt(format!(
                "{did}: MST and record index disagree ({prev:?} vs {cur:?})"
            )));
        }
    }
    let prev_tid = Tid::parse(&root.rev)?;
    let rev = tids.next_after(prev_tid).to_string();
    let rev_tid = Tid::parse(&rev)?;
    let signed = UnsignedCommit::new(did, result.commit.root, rev_tid).sign(key);
    Ok(Plan {
        base_commit: root.commit,
        base_rev: root.rev.clone(),
        current,
        result,
        proof_blocks,
        rev,
        commit: signed.to_block(),
    })
}
