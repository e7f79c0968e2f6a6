//! Verifying a `#commit`: blocks, signature, and MST consistency.

use std::collections::HashMap;

use super::{Action, CommitEvent};
use crate::car::{CarBlocks, CarError, CarSlice};
use crate::cid::Cid;
use crate::commit::{CommitError, CommitRef};
use crate::crypto::PublicKey;
use crate::mst::{Mst, MstError, NodeCache, validate_key};
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
pub fn verify_commit(ev: &CommitEvent<'_>, keys: &impl KeyResolver) -> Result<(), VerifyError> {
    verify_parts(ev, Some(keys as &dyn KeyResolver)).map(|_| ())
}

/// Everything [`verify_commit`] does; with `keys: None` the ECDSA check is
/// skipped (benchmarks use this to measure the non-signature work). Returns
/// the SHA-256 of the unsigned commit (what the signature signs).
pub(crate) fn verify_parts(
    ev: &CommitEvent<'_>,
    keys: Option<&dyn KeyResolver>,
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
    let car = CarSlice::parse(ev.blocks, true)?;
    if !car.roots.contains(&ev.commit) {
        return Err(VerifyError::NotRoot(ev.commit));
    }
    let blocks = CarBlocks::new(&car.blocks);
    let commit_bytes = blocks
        .get(&ev.commit)
        .ok_or(VerifyError::MissingCommit(ev.commit))?;
    let commit = CommitRef::decode(commit_bytes)?;
    if commit.did != ev.repo {
        return Err(VerifyError::RepoMismatch {
            commit: commit.did.to_owned(),
            repo: ev.repo.to_owned(),
        });
    }
    if commit.rev != ev.rev {
        return Err(VerifyError::RevMismatch {
            commit: commit.rev.to_owned(),
            event: ev.rev.to_owned(),
        });
    }
    let digest = commit.signing_digest();
    if let Some(keys) = keys {
        let key = keys
            .signing_key(ev.repo)
            .ok_or_else(|| VerifyError::NoKey(ev.repo.to_owned()))?;
        key.verify_digest(&digest, commit.sig)
            .map_err(|e| VerifyError::Commit(CommitError::Signature(e)))?;
    }
    check_ops(ev, &blocks, commit.data)?;
    Ok(digest)
}

fn check_ops(ev: &CommitEvent<'_>, blocks: &CarBlocks<'_>, data: Cid) -> Result<(), VerifyError> {
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
    // Sized for a frame's proof nodes (usually under 16).
    let mut tree = Mst::with_cache(blocks, data, NodeCache::with_capacity(256, 16));
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
                let removed = tree.delete(op.path)?;
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
    let computed = tree.root()?;
    if computed != prev_data {
        return Err(VerifyError::PrevData {
            expected: prev_data,
            computed,
        });
    }
    Ok(())
}
