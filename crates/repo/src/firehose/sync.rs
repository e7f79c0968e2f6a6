//! Verifying a `#sync` event: the repo's current commit, signed, asserted
//! without a diff (relays emit it after a repo was reset or resynced, and a
//! consumer must then forget what it knew and trust this commit).
//!
//! Choices where the spec is silent (the lexicon says the CAR holds the
//! commit block and names it as its first root):
//! - the CAR must have at least one root and the first one is the commit;
//!   the commit block must be in the CAR; every block in the CAR is
//!   hash-checked, and blocks besides the commit are allowed (ignored);
//! - the commit's `did` and `rev` must equal the event's `did` and `rev`,
//!   and both must pass their syntax checks;
//! - nothing about the MST is checked (the event carries no tree), so the
//!   returned `data` is the commit's claim, authenticated by the signature.

use super::SyncEvent;
use super::verify::{KeyResolver, VerifyError, event_commit};
use crate::car::{CarError, CarErrorKind, CarSlice};
use crate::cid::Cid;
use crate::commit::CommitError;
use crate::syntax::{validate_did, validate_tid};

/// What a verified `#sync` asserts: the repo's current commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncCommit<'a> {
    /// The commit block's CID (the CAR's first root).
    pub commit: Cid,
    /// The commit's rev (equal to the event's).
    pub rev: &'a str,
    /// The commit's MST root.
    pub data: Cid,
}

/// Verifies a decoded `#sync` against the author's key from `keys`: the
/// CAR parses and every block hashes to its CID, its first root is the
/// commit block, which is present, names the event's `did` and `rev`, and
/// is signed by that DID's key. Returns the commit's CID, rev and MST root.
///
/// Rules where the spec is silent: the first root is the commit (more
/// roots are ignored); blocks besides the commit are allowed but
/// hash-checked like the rest; the MST is not checked (the event carries
/// no tree), so `data` is the commit's claim, authenticated by the
/// signature.
pub fn verify_sync<'a>(
    ev: &SyncEvent<'a>,
    keys: &impl KeyResolver,
) -> Result<SyncCommit<'a>, VerifyError> {
    validate_did(ev.did)?;
    validate_tid(ev.rev)?;
    let car = CarSlice::parse(ev.blocks, true)?;
    let commit_cid = *car.roots.first().ok_or(CarError {
        offset: 0,
        kind: CarErrorKind::HeaderShape("#sync CAR has no root"),
    })?;
    let commit = event_commit(car.get(&commit_cid), commit_cid, ev.did, ev.rev)?;
    let key = keys
        .signing_key(ev.did)
        .ok_or_else(|| VerifyError::NoKey(ev.did.to_owned()))?;
    key.verify_digest(&commit.signing_digest(), commit.sig)
        .map_err(|e| VerifyError::Commit(CommitError::Signature(e)))?;
    Ok(SyncCommit {
        commit: commit_cid,
        // The event's rev: equal to the commit's, and it borrows from the
        // frame rather than from this function's parse.
        rev: ev.rev,
        data: commit.data,
    })
}
