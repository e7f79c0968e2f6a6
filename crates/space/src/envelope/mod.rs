//! The envelope: how getRepo is encoded and how each response is
//! authenticated, behind one trait ([`Envelope`]) with one implementation
//! per era. Every benchmark row and every response names its [`Era`].
//!
//! - [`E2`] (August 2026 alpha, byte-exact): getRepo is a CARv1 with two
//!   roots, the signed commit then the canonical index; each response's
//!   commit is signed afresh ([`crate::commit::SignedCommit`]).
//! - [`E4`] (2026-11-05 alpha, E4-shaped, not wire-verified): getRepo is
//!   a STAR archive streamed row by row; each response carries a MAC keyed
//!   from a P-256 KEM shared secret the syncer's request sets up
//!   ([`kem`]). The unpublished details (header names, MAC base string,
//!   STAR meta fields) are choices documented in `e4.rs`, replaceable by
//!   another implementation of the trait.

mod e2;
mod e4;
pub mod kem;

use std::io::Write;

use repo::cbor::Value;

pub use e2::E2;
pub use e4::{
    COMMIT_PROFILE, E4, MAC_HEADER, RECORD_PROFILE, mac, parse_request_header, star_meta,
};

use crate::error::Result;
use crate::store::SpaceStore;
use crate::types::RepoState;
use crate::uri::SpaceRef;

/// The alpha era an envelope implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Era {
    /// August 2026.
    E2,
    /// 2026-11-05.
    E4,
}

impl Era {
    /// The label used in bench ids and docs (`e2`, `e4`).
    pub fn label(self) -> &'static str {
        match self {
            Era::E2 => "e2",
            Era::E4 => "e4",
        }
    }
}

/// What a request brings to its response's authentication.
#[derive(Clone, Debug, Default)]
pub struct RequestAuth {
    /// E4: the syncer's KEM key share (a `did:key` of its ephemeral P-256
    /// key). E2 ignores it.
    pub key_share: Option<String>,
}

/// A response's authentication: the commit (as a data-model value, for
/// JSON bodies) and the headers to send.
#[derive(Clone, Debug)]
pub struct Authed {
    /// The commit value (`#signedCommit` in E2, `#commit` in E4).
    pub commit: Value,
    /// Response headers (E4's MAC header; none in E2).
    pub headers: Vec<(String, String)>,
}

/// One era's getRepo encoding and per-response authentication.
pub trait Envelope: Send + Sync {
    /// The era.
    fn era(&self) -> Era;

    /// getRepo's media type.
    fn repo_content_type(&self) -> &'static str;

    /// The commit of `state` for one response (getLatestCommit, the last
    /// page of listRepoOps).
    fn commit(
        &self,
        space: &SpaceRef,
        repo: &str,
        state: &RepoState,
        req: &RequestAuth,
    ) -> Result<Authed>;

    /// A record response's authentication (getRecord): E4's record MAC,
    /// nothing in E2.
    fn record(
        &self,
        uri: &str,
        cid: &repo::Cid,
        req: &RequestAuth,
    ) -> Result<Vec<(String, String)>>;

    /// Writes `repo`'s full state in `space` to `out` and returns the
    /// response's authentication. `exclude_values` is E2's (only the two
    /// root blocks); E4 dropped it and ignores it.
    fn get_repo(
        &self,
        store: &SpaceStore,
        space: &SpaceRef,
        repo: &str,
        exclude_values: bool,
        req: &RequestAuth,
        out: &mut dyn Write,
    ) -> Result<Authed>;
}
