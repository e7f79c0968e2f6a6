//! The warm state, cached on disk per remote: identity (DID, PDS), the
//! session's tokens, the repository record and every ref record with its
//! CID. It lives in `$GIT_DIR/knot/<16 hex of sha-256(url)>.json` (mode
//! 0600: it holds tokens), written whole to a temporary file and renamed,
//! so a killed helper leaves the old file or the new one. Without
//! `GIT_DIR` nothing is kept.
//!
//! A stale cache is never trusted for a write: every ref write is a
//! compare-and-swap on the cached record CID, and a failed swap re-reads.
//! It is trusted for a read only while the account's latest commit is the
//! one asked before the listing (`refs_commit`): any write anywhere in the
//! account makes a new commit.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{KnotError, Result};
use crate::records::RefRecord;

/// Session tokens.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Tokens {
    /// The account.
    pub did: String,
    /// The access JWT.
    pub access: String,
    /// The refresh JWT.
    pub refresh: String,
}

/// A ref record as last seen.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct CachedRef {
    /// The record's CID (the `swapRecord` of the next write).
    pub cid: String,
    /// The record.
    pub record: RefRecord,
}

/// The repository record as last seen.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct CachedRepo {
    /// Its HEAD; `None` when the record did not exist.
    pub head: Option<String>,
}

/// Everything kept between runs.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct State {
    /// The remote URL this state belongs to.
    pub url: String,
    /// The account's DID.
    pub did: Option<String>,
    /// Its PDS.
    pub pds: Option<String>,
    /// The session.
    pub tokens: Option<Tokens>,
    /// The repository record.
    pub repo: Option<CachedRepo>,
    /// Every ref record, by ref name; `None` until listed once.
    pub refs: Option<BTreeMap<String, CachedRef>>,
    /// The account's commit after this helper's last ref write, and the
    /// ref it wrote: while the account's commit is still that one, that
    /// ref's record is the cached one (`push/mod.rs`'s one-request path).
    #[serde(default)]
    pub last_commit: Option<LastCommit>,
    /// When `refs` was last listed (unix seconds).
    #[serde(default)]
    pub refs_read_at: Option<u64>,
    /// The account's latest commit (`sync.getLatestCommit`'s CID) asked
    /// *before* `refs` was last listed: while the account is still at
    /// it, nothing was written since and `refs` is the repository's
    /// (`Remote::refs_now`). `None` (a state of an older knot, or a
    /// listing made without asking) means "list again".
    #[serde(default)]
    pub refs_commit: Option<String>,
    /// What the PDS's answer to this helper's last record write said
    /// remains of its limit (`RateLimit-Remaining` until
    /// `RateLimit-Reset`): a push costing more is refused before writing.
    #[serde(default)]
    pub write_allowance: Option<WriteAllowance>,
}

/// The `RateLimit-Remaining` and `RateLimit-Reset` of a record write's
/// answer.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct WriteAllowance {
    /// Points left in the window.
    pub remaining: u64,
    /// When the window ends (unix seconds).
    pub reset: u64,
}

impl WriteAllowance {
    /// Folds in a later answer's: within one window the least remaining
    /// (answers to concurrent writes arrive in any order; a window's
    /// reset, sent rounded to seconds, may move by one), a later window
    /// replaces an earlier one.
    pub fn merge(self, later: WriteAllowance) -> WriteAllowance {
        if self.reset.abs_diff(later.reset) <= 2 {
            WriteAllowance {
                remaining: self.remaining.min(later.remaining),
                reset: self.reset.max(later.reset),
            }
        } else if later.reset > self.reset {
            later
        } else {
            self
        }
    }

    /// Still in force at `now` (unix seconds).
    pub fn current(self, now: u64) -> Option<WriteAllowance> {
        (now < self.reset).then_some(self)
    }
}

/// How long a listing of the refs is trusted for a push (seconds;
/// `KNOT_REFS_TTL` overrides). A push copies the pack lists of the refs
/// its objects build on from the listing, and `knot compact` deletes a
/// folded pack only a grace period (600 s by default) after no ref names
/// it: a listing younger than the grace period never names a deleted pack.
pub const REFS_TTL_SECS: u64 = 300;

/// The refs' time to live (`KNOT_REFS_TTL`, else [`REFS_TTL_SECS`]).
pub fn refs_ttl() -> u64 {
    std::env::var("KNOT_REFS_TTL")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(REFS_TTL_SECS)
}

/// Now in unix seconds.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl State {
    /// The cached refs when listed within the time to live.
    pub fn fresh_refs(&self) -> Option<&BTreeMap<String, CachedRef>> {
        let at = self.refs_read_at?;
        let now = unix_now();
        (now >= at && now - at < refs_ttl())
            .then_some(self.refs.as_ref())
            .flatten()
    }
}

/// The commit a ref write made.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct LastCommit {
    /// The commit's CID.
    pub commit: String,
    /// The ref written in it.
    pub name: String,
}

/// Where a remote's state lives.
pub fn path_for(git_dir: &Path, url: &str) -> PathBuf {
    let h = Sha256::digest(url.as_bytes());
    git_dir
        .join("knot")
        .join(format!("{}.json", data_encoding::HEXLOWER.encode(&h[..8])))
}

impl State {
    /// Loads the state at `path`; a missing, unreadable or foreign file is
    /// a cold start, not an error.
    pub fn load(path: Option<&Path>, url: &str) -> State {
        let fresh = State {
            url: url.to_owned(),
            ..State::default()
        };
        let Some(path) = path else { return fresh };
        match std::fs::read(path) {
            Ok(b) if b.len() < (64 << 20) => match serde_json::from_slice::<State>(&b) {
                Ok(s) if s.url == url => s,
                _ => fresh,
            },
            _ => fresh,
        }
    }

    /// Writes the state to `path` (temporary file, then rename).
    pub fn save(&self, path: Option<&Path>) -> Result<()> {
        let Some(path) = path else { return Ok(()) };
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| KnotError::io(dir.display().to_string(), e))?;
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        let text = serde_json::to_vec(self)
            .map_err(|e| KnotError::io("state", std::io::Error::other(e)))?;
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600);
        }
        let write = || -> std::io::Result<()> {
            use std::io::Write;
            let mut f = opts.open(&tmp)?;
            f.write_all(&text)?;
            drop(f);
            std::fs::rename(&tmp, path)
        };
        write().map_err(|e| KnotError::io(path.display().to_string(), e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_foreign_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = path_for(dir.path(), "at+http://h/did:plc:x/r");
        let mut s = State::load(Some(&p), "at+http://h/did:plc:x/r");
        assert!(s.refs.is_none());
        s.did = Some("did:plc:x".into());
        s.refs = Some(BTreeMap::new());
        s.save(Some(&p)).unwrap();
        let back = State::load(Some(&p), "at+http://h/did:plc:x/r");
        assert_eq!(back.did.as_deref(), Some("did:plc:x"));
        // Another URL's state is not read.
        assert!(
            State::load(Some(&p), "at+http://h/did:plc:x/other")
                .did
                .is_none()
        );
        std::fs::write(&p, b"{not json").unwrap();
        assert!(
            State::load(Some(&p), "at+http://h/did:plc:x/r")
                .did
                .is_none()
        );
    }
}
