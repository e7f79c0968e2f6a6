//! Verifying a `#commit`: blocks, signature, and MST consistency.
//!
//! Where the non-signature time goes and how it is kept down: the CAR
//! slice's block hashes are checked two blocks at a time (interleaved
//! SHA-256, see `crate::sha256x2`), and the SHA-256 state after each whole
//! 64-byte block is kept; when the inverted tree is hashed, each edited
//! node's new encoding is compared with the stored node it was opened
//! from, and its hash resumes from the state at the last whole block the
//! two share (the bytes before the first changed entry), so only the rest
//! is hashed again. Both give exactly the plain SHA-256 (held to it by the
//! reference test in `verify_tests.rs` and by `sha256x2`'s tests).

use std::borrow::Cow;
use std::collections::HashMap;

use super::{Action, CommitEvent};
use crate::car::{BlockStates, CarError, parse_into_logged};
use crate::cid::{Cid, CidMap, Codec};
use crate::commit::{CommitError, CommitRef};
use crate::crypto::PublicKey;
use crate::mst::{
    BlockSource, BlockSourceError, Mst, MstError, NodeCache, NodeHasher, Scratch,
    common_prefix_len, validate_key,
};
use crate::sha256x2;
use crate::syntax::{SyntaxError, validate_did, validate_tid};

/// Finds a repo's current signing key (from resolved DID documents).
pub trait KeyResolver {
    /// The atproto signing key of `did`, if known.
    fn signing_key(&self, did: &str) -> Option<&PublicKey>;
}

impl KeyResolver for HashMap<String, PublicKey> {
    fn signing_key(&self, did: &str) -> Option<&PublicKey> {
        self.get(did)
    }
}

impl<F: Fn(&str) -> Option<&'static PublicKey>> KeyResolver for F {
    fn signing_key(&self, did: &str) -> Option<&PublicKey> {
        self(did)
    }
}

/// Why a `#commit` failed verification.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// `repo`, `rev` or `since` has bad syntax.
    #[error("commit event: {0}")]
    Syntax(#[from] SyntaxError),
    /// `rev` is not after `since`.
    #[error("rev {rev} is not after since {since}")]
    RevOrder {
        /// The event's rev.
        rev: String,
        /// The previous rev.
        since: String,
    },
    /// The CAR slice is malformed or a block does not hash to its CID.
    #[error("blocks: {0}")]
    Car(#[from] CarError),
    /// The CAR slice's roots do not name the commit.
    #[error("CAR roots do not name the commit {0}")]
    NotRoot(Cid),
    /// The commit block is not in the slice.
    #[error("commit block {0} missing from the CAR slice")]
    MissingCommit(Cid),
    /// The commit block is invalid or its signature does not verify.
    #[error("{0}")]
    Commit(#[from] CommitError),
    /// Commit `did` differs from the event's `repo`.
    #[error("commit DID {commit} differs from repo {repo}")]
    RepoMismatch {
        /// In the commit.
        commit: String,
        /// In the event.
        repo: String,
    },
    /// Commit `rev` differs from the event's `rev`.
    #[error("commit rev {commit} differs from event rev {event}")]
    RevMismatch {
        /// In the commit.
        commit: String,
        /// In the event.
        event: String,
    },
    /// No key for the repo's DID.
    #[error("no signing key known for {0}")]
    NoKey(String),
    /// An op is malformed for its action.
    #[error("op {path:?}: {reason}")]
    Op {
        /// The op's path.
        path: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// The MST (or its proof nodes in the slice) disagrees with an op.
    #[error("op {path:?} does not match the tree: {reason}")]
    OpMismatch {
        /// The op's path.
        path: String,
        /// What differs.
        reason: &'static str,
    },
    /// Loading or editing the tree from the slice failed (for example a
    /// proof node is missing).
    #[error("MST: {0}")]
    Mst(#[from] MstError),
    /// Inverting the ops did not give `prevData`.
    #[error("inverted ops give root {computed}, prevData is {expected}")]
    PrevData {
        /// The event's prevData.
        expected: Cid,
        /// What inversion produced.
        computed: Cid,
    },
}

/// Decodes the commit block an event names (`bytes`, if the event's CAR
/// holds it) and checks that it is the event's repo at the event's rev;
/// shared by `#commit` and `#sync` verification.
pub(super) fn event_commit<'a>(
    bytes: Option<&'a [u8]>,
    cid: Cid,
    repo: &str,
    rev: &str,
) -> Result<CommitRef<'a>, VerifyError> {
    let commit = CommitRef::decode(bytes.ok_or(VerifyError::MissingCommit(cid))?)?;
    if commit.did != repo {
        return Err(VerifyError::RepoMismatch {
            commit: commit.did.to_owned(),
            repo: repo.to_owned(),
        });
    }
    if commit.rev != rev {
        return Err(VerifyError::RevMismatch {
            commit: commit.rev.to_owned(),
            event: rev.to_owned(),
        });
    }
    Ok(commit)
}

fn op_err(path: &str, reason: &'static str) -> VerifyError {
    VerifyError::Op {
        path: path.to_owned(),
        reason,
    }
}

fn mismatch(path: &str, reason: &'static str) -> VerifyError {
    VerifyError::OpMismatch {
        path: path.to_owned(),
        reason,
    }
}

/// Verifies a decoded `#commit` against the author's key from `keys`:
/// every block of the slice hashes to its CID, the commit block is present,
/// names the same repo and rev, and is signed by the repo's key; every op
/// is well-formed and consistent with the MST (see the module docs).
///
/// Verifying a stream? [`CommitVerifier`] does the same checks and keeps
/// its scratch space from one event to the next.
pub fn verify_commit(ev: &CommitEvent<'_>, keys: &impl KeyResolver) -> Result<(), VerifyError> {
    CommitVerifier::new().verify(ev, keys)
}

/// Everything [`verify_commit`] does; with `keys: None` the ECDSA check is
/// skipped (benchmarks use this to measure the non-signature work). Returns
/// the SHA-256 of the unsigned commit (what the signature signs).
#[cfg(any(test, feature = "bench-internals"))]
pub(crate) fn verify_parts(
    ev: &CommitEvent<'_>,
    keys: Option<&dyn KeyResolver>,
) -> Result<[u8; 32], VerifyError> {
    CommitVerifier::new().verify_parts(ev, keys)
}

/// [`verify_commit`] with reusable scratch space: the CAR block list, the
/// decoded-node cache, the inverted tree's bookkeeping and the buffer the
/// inverted nodes are encoded into are kept from one call to the next, so
/// a firehose consumer verifying event after event stops allocating them
/// per event. Results (and errors) are exactly those of [`verify_commit`];
/// nothing from one event is visible to the next (every scratch structure
/// is cleared first).
pub struct CommitVerifier {
    /// Always empty between calls (its `'static` is never used: see
    /// [`recycle`]).
    blocks: Vec<(Cid, &'static [u8])>,
    /// The node cache, the replaced-node list and emptied editable nodes.
    scratch: Scratch,
    buf: Vec<u8>,
    /// The SHA-256 states met while checking the slice's block hashes, so
    /// re-hashing an inverted node starts at its first changed block.
    states: BlockStates,
}

impl Default for CommitVerifier {
    fn default() -> Self {
        CommitVerifier::new()
    }
}

impl std::fmt::Debug for CommitVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommitVerifier").finish_non_exhaustive()
    }
}

/// Node cache bound for one event's proof nodes (usually under 16).
const CACHE_CAPACITY: usize = 256;

impl CommitVerifier {
    /// A verifier with empty scratch space.
    pub fn new() -> Self {
        CommitVerifier {
            blocks: Vec::new(),
            scratch: Scratch::new(NodeCache::with_capacity(CACHE_CAPACITY, 16)),
            buf: Vec::new(),
            states: BlockStates::default(),
        }
    }

    /// [`verify_commit`], reusing this verifier's scratch space.
    pub fn verify(
        &mut self,
        ev: &CommitEvent<'_>,
        keys: &impl KeyResolver,
    ) -> Result<(), VerifyError> {
        self.verify_parts(ev, Some(keys as &dyn KeyResolver))
            .map(|_| ())
    }

    /// See the free [`verify_parts`].
    pub(crate) fn verify_parts(
        &mut self,
        ev: &CommitEvent<'_>,
        keys: Option<&dyn KeyResolver>,
    ) -> Result<[u8; 32], VerifyError> {
        let mut blocks = recycle(&mut self.blocks);
        let r = self.verify_in(ev, keys, &mut blocks);
        self.blocks = recycle(&mut blocks);
        r
    }

    fn verify_in<'a>(
        &mut self,
        ev: &CommitEvent<'a>,
        keys: Option<&dyn KeyResolver>,
        car_blocks: &mut Vec<(Cid, &'a [u8])>,
    ) -> Result<[u8; 32], VerifyError> {
        validate_did(ev.repo)?;
        validate_tid(ev.rev)?;
        if let Some(since) = ev.since {
            validate_tid(since)?;
            if since >= ev.rev {
                return Err(VerifyError::RevOrder {
                    rev: ev.rev.to_owned(),
                    since: since.to_owned(),
                });
            }
        }
        let roots = parse_into_logged(ev.blocks, car_blocks, &mut self.states)?;
        if !roots.contains(&ev.commit) {
            return Err(VerifyError::NotRoot(ev.commit));
        }
        let blocks = SliceBlocks::new(car_blocks);
        let commit = event_commit(blocks.get(&ev.commit), ev.commit, ev.repo, ev.rev)?;
        let digest = commit.signing_digest();
        if let Some(keys) = keys {
            let key = keys
                .signing_key(ev.repo)
                .ok_or_else(|| VerifyError::NoKey(ev.repo.to_owned()))?;
            key.verify_digest(&digest, commit.sig)
                .map_err(|e| VerifyError::Commit(CommitError::Signature(e)))?;
        }
        check_op_shapes(ev, &blocks)?;
        let scratch = std::mem::replace(&mut self.scratch, Scratch::new(NodeCache::new(0)));
        let mut tree = Mst::one_shot(&blocks, commit.data, scratch);
        let hasher = Resume {
            blocks: &blocks,
            states: &self.states,
        };
        let r = invert_ops(ev, &mut tree, &mut self.buf, &hasher);
        self.scratch = tree.into_scratch();
        r?;
        Ok(digest)
    }
}

/// An empty vector with `v`'s allocation, for slices of another lifetime:
/// the lists are cleared first, so no reference crosses from one call to
/// the next (the in-place `collect` keeps the allocation; the closure never
/// runs).
fn recycle<'x, 'y>(v: &mut Vec<(Cid, &'x [u8])>) -> Vec<(Cid, &'y [u8])> {
    let mut v = std::mem::take(v);
    v.clear();
    v.into_iter()
        .map(|_| -> (Cid, &'y [u8]) { unreachable!("cleared") })
        .collect()
}

fn check_op_shapes(ev: &CommitEvent<'_>, blocks: &SliceBlocks<'_, '_>) -> Result<(), VerifyError> {
    for (i, op) in ev.ops.iter().enumerate() {
        validate_key(op.path).map_err(|_| op_err(op.path, "path is not a valid MST key"))?;
        if ev.ops[..i].iter().any(|o| o.path == op.path) {
            return Err(op_err(op.path, "path appears twice"));
        }
        match op.action {
            Action::Create | Action::Update => {
                let cid = op
                    .cid
                    .ok_or_else(|| op_err(op.path, "create/update without cid"))?;
                if !ev.too_big && blocks.get(&cid).is_none() {
                    return Err(op_err(op.path, "record block missing from the slice"));
                }
            }
            Action::Delete => {
                if op.cid.is_some() {
                    return Err(op_err(op.path, "delete with a cid"));
                }
            }
        }
    }
    Ok(())
}

fn invert_ops<S: BlockSource>(
    ev: &CommitEvent<'_>,
    tree: &mut Mst<S>,
    buf: &mut Vec<u8>,
    hasher: &impl NodeHasher,
) -> Result<(), VerifyError> {
    let Some(prev_data) = ev.prev_data else {
        for op in &ev.ops {
            if tree.get(op.path)? != op.cid {
                return Err(mismatch(op.path, "tree value differs from the op"));
            }
        }
        return Ok(());
    };
    for op in ev.ops.iter().rev() {
        match op.action {
            Action::Create => {
                // Absent is a mismatch either way: skip delete's lookup.
                let removed = tree.delete_present(op.path)?;
                if removed != op.cid {
                    return Err(mismatch(op.path, "created record not in the new tree"));
                }
            }
            Action::Update => {
                let prev = op
                    .prev
                    .ok_or_else(|| op_err(op.path, "update without prev"))?;
                if tree.insert(op.path, prev)? != op.cid {
                    return Err(mismatch(op.path, "updated record not in the new tree"));
                }
            }
            Action::Delete => {
                let prev = op
                    .prev
                    .ok_or_else(|| op_err(op.path, "delete without prev"))?;
                if tree.insert(op.path, prev)?.is_some() {
                    return Err(mismatch(op.path, "deleted record still in the new tree"));
                }
            }
        }
    }
    let computed = tree.root_with(buf, hasher)?;
    if computed != prev_data {
        return Err(VerifyError::PrevData {
            expected: prev_data,
            computed,
        });
    }
    Ok(())
}

/// Hashes an inverted node from the SHA-256 state its stored original
/// reached at the last whole 64-byte block the two encodings share (kept
/// while the slice's hashes were checked), so only the blocks from the
/// first changed byte on are hashed again. The result is the plain
/// SHA-256 of the new bytes: the shared prefix is compared byte for byte,
/// and the state is that of exactly those bytes (the slice's block for the
/// origin CID, which hashed to that CID).
struct Resume<'s, 'a> {
    blocks: &'s SliceBlocks<'s, 'a>,
    states: &'s BlockStates,
}

impl NodeHasher for Resume<'_, '_> {
    fn node_cid(&self, origin: Option<&Cid>, bytes: &[u8]) -> Cid {
        if let Some(i) = origin.and_then(|o| self.blocks.index(o)) {
            let original = self.blocks.blocks[i].1;
            let states = self.states.of(i);
            let k = (common_prefix_len(original, bytes) / 64).min(states.len());
            if let Some(state) = k.checked_sub(1).map(|j| &states[j]) {
                let done = k * 64;
                return Cid::new(
                    Codec::DagCbor,
                    sha256x2::digest_resume(state, done as u64, &bytes[done..]),
                );
            }
        }
        Cid::for_dag_cbor(bytes)
    }
}

/// The slice's blocks by CID, borrowed from the parse (no copy of the
/// block list, unlike [`CarBlocks`](crate::car::CarBlocks)).
struct SliceBlocks<'s, 'a> {
    blocks: &'s [(Cid, &'a [u8])],
    /// An index for large slices (whole-repo CARs); small ones are scanned.
    map: Option<CidMap<usize>>,
}

impl<'s, 'a> SliceBlocks<'s, 'a> {
    fn new(blocks: &'s [(Cid, &'a [u8])]) -> Self {
        let map = (blocks.len() > 32).then(|| {
            let mut m = CidMap::with_capacity_and_hasher(blocks.len(), Default::default());
            // The first block with a CID wins, as in `CarSlice::get`.
            for (i, (cid, _)) in blocks.iter().enumerate().rev() {
                m.insert(*cid, i);
            }
            m
        });
        SliceBlocks { blocks, map }
    }

    #[inline]
    fn get(&self, cid: &Cid) -> Option<&'a [u8]> {
        self.index(cid).map(|i| self.blocks[i].1)
    }

    /// The position of the first block with this CID.
    #[inline]
    fn index(&self, cid: &Cid) -> Option<usize> {
        match &self.map {
            Some(m) => m.get(cid).copied(),
            None => self.blocks.iter().position(|b| b.0 == *cid),
        }
    }
}

impl BlockSource for SliceBlocks<'_, '_> {
    fn get_block(&self, cid: &Cid) -> Result<Option<Cow<'_, [u8]>>, BlockSourceError> {
        Ok(self.get(cid).map(Cow::Borrowed))
    }
}

#[cfg(test)]
#[path = "verify_tests.rs"]
mod tests;
