//! `com.atproto.sync.subscribeRepos` frames: a DAG-CBOR header `{op, t}`
//! followed by a DAG-CBOR body, and verification of `#commit` and `#sync`
//! events.
//!
//! What this module owns: the borrowed event types ([`Frame`] and its
//! bodies; strings, bytes and the CAR slice point into the frame), their
//! strict decoding ([`Frame::decode`]) and canonical encoding
//! ([`Frame::encode`]), and [`verify_commit`]: CAR slice hash checks,
//! commit signature against the author's key, and MST consistency of the
//! ops; and [`verify_sync`]: the signed commit a `#sync` carries (the
//! rules are in its docs).
//!
//! Choices where the spec is silent:
//! - unknown body fields are skipped (but still checked as strict
//!   DAG-CBOR, keys in canonical order) so newer relays keep decoding; an
//!   unknown `t` decodes to [`Frame::Unknown`] with its raw body;
//! - encoding omits optional fields that are `None` (`prevData`, op
//!   `prev`, `handle`, `status`, `message`) and writes nullable ones
//!   (`since`, op `cid`) as null;
//! - verification with `prevData` inverts the ops on the new tree loaded
//!   lazily from the CAR slice alone (a missing node is a
//!   [`VerifyError::Mst`] naming it) and requires the result to hash to
//!   `prevData`; without `prevData` each op is checked against the new tree
//!   only. Ops must name distinct paths; creates and updates need their
//!   record block in the slice unless `tooBig` is set.

mod frame;
mod sync;
pub(crate) mod verify;

pub use frame::FrameError;
pub use sync::{SyncCommit, verify_sync};
pub use verify::{CommitVerifier, KeyResolver, VerifyError, verify_commit};

use crate::cid::Cid;

/// A decoded frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame<'a> {
    /// `#commit`.
    Commit(CommitEvent<'a>),
    /// `#sync`.
    Sync(SyncEvent<'a>),
    /// `#identity`.
    Identity(IdentityEvent<'a>),
    /// `#account`.
    Account(AccountEvent<'a>),
    /// `#info`.
    Info(InfoEvent<'a>),
    /// An error frame (`op: -1`).
    Error(ErrorFrame<'a>),
    /// A message type this crate does not know.
    Unknown {
        /// The header's `t`.
        t: &'a str,
        /// The body's bytes (strictly decoded, not interpreted).
        body: &'a [u8],
    },
}

/// What a repo op did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// A new record.
    Create,
    /// A changed record.
    Update,
    /// A removed record.
    Delete,
}

impl Action {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Update => "update",
            Action::Delete => "delete",
        }
    }
}

/// One op of a `#commit`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoOp<'a> {
    /// create / update / delete.
    pub action: Action,
    /// `collection/rkey`.
    pub path: &'a str,
    /// New record CID (None for deletes).
    pub cid: Option<Cid>,
    /// Previous record CID (updates and deletes, Sync 1.1).
    pub prev: Option<Cid>,
}

/// A `#commit` body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitEvent<'a> {
    /// Stream sequence number.
    pub seq: i64,
    /// Deprecated, always false.
    pub rebase: bool,
    /// Deprecated: the slice was too big to include.
    pub too_big: bool,
    /// The repo's DID.
    pub repo: &'a str,
    /// The commit block's CID.
    pub commit: Cid,
    /// The commit's rev.
    pub rev: &'a str,
    /// The previous commit's rev.
    pub since: Option<&'a str>,
    /// The CAR slice (commit block, changed records, proof nodes).
    pub blocks: &'a [u8],
    /// The ops.
    pub ops: Vec<RepoOp<'a>>,
    /// Blob CIDs referenced by new records (deprecated).
    pub blobs: Vec<Cid>,
    /// The previous MST root (Sync 1.1).
    pub prev_data: Option<Cid>,
    /// When the event was emitted (datetime).
    pub time: &'a str,
}

/// A `#sync` body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncEvent<'a> {
    /// Stream sequence number.
    pub seq: i64,
    /// The repo's DID.
    pub did: &'a str,
    /// CAR with the commit block.
    pub blocks: &'a [u8],
    /// The commit's rev.
    pub rev: &'a str,
    /// Emission time.
    pub time: &'a str,
}

/// An `#identity` body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentityEvent<'a> {
    /// Stream sequence number.
    pub seq: i64,
    /// The DID.
    pub did: &'a str,
    /// Emission time.
    pub time: &'a str,
    /// The current handle, if known.
    pub handle: Option<&'a str>,
}

/// An `#account` body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountEvent<'a> {
    /// Stream sequence number.
    pub seq: i64,
    /// The DID.
    pub did: &'a str,
    /// Emission time.
    pub time: &'a str,
    /// Whether the account is active.
    pub active: bool,
    /// Why not, when inactive.
    pub status: Option<&'a str>,
}

/// An `#info` body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InfoEvent<'a> {
    /// e.g. `OutdatedCursor`.
    pub name: &'a str,
    /// Human-readable detail.
    pub message: Option<&'a str>,
}

/// An error frame's body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorFrame<'a> {
    /// Error name.
    pub error: &'a str,
    /// Human-readable detail.
    pub message: Option<&'a str>,
}
