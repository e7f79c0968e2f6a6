//! E4 (2026-11-05 alpha; E4-shaped, not wire-verified): the streamed STAR
//! getRepo and the per-request MAC.
//!
//! Known (the E4 `types.ts`, tests and release notes): the commit is
//! `{ver, repo, space, rev, data}` and unsigned; the MAC is
//! `base64(HMAC-SHA256(sharedSecret, baseString))` with the shared secret
//! from the syncer's KEM key share, in two profiles (commit, record); the
//! STAR `$type` is `atproto-space-repo` and its integrity is the LtHash
//! over the entries.
//!
//! Chosen here, because the E4 `mac.ts` and the STAR profile are not
//! published (each is one function below, to replace when they are):
//! - request header `Atproto-Space-Mac: profile=commit;key-share="did:key:…"`
//!   (the syncer also may send it as the `keyShare` query parameter);
//!   response header `Atproto-Space-Mac: profile=commit;mac=:BASE64:`;
//! - base strings: `"commit\n" || keyShare || "\n" || DRISL(commit)` and
//!   `"record\n" || keyShare || "\n" || uri || "\n" || cid`;
//! - STAR meta `{"$type": "atproto-space-repo", "commit": commit}`; keys
//!   `"{collection}/{rkey}"`, values the record's DRISL bytes, in bytewise
//!   key order (the order rows stream out of the index).

use std::io::Write;
use std::sync::Arc;

use hmac::{Hmac, Mac};
use repo::Cid;
use repo::cbor::{Map, Value};
use sha2::Sha256;

use super::kem::KemKey;
use super::{Authed, Envelope, Era, RequestAuth};
use crate::commit::Commit;
use crate::error::{Result, SpaceError};
use crate::star::{REPO_STAR_TYPE, StarWriter};
use crate::store::SpaceStore;
use crate::types::RepoState;
use crate::uri::SpaceRef;

/// The MAC header's name (request and response).
pub const MAC_HEADER: &str = "Atproto-Space-Mac";
/// The commit profile's name.
pub const COMMIT_PROFILE: &str = "commit";
/// The record profile's name.
pub const RECORD_PROFILE: &str = "record";

/// The E4 envelope: decapsulates with the host's KEM key.
#[derive(Clone)]
pub struct E4 {
    kem: Arc<KemKey>,
}

impl E4 {
    /// An envelope keyed by `kem`.
    pub fn new(kem: Arc<KemKey>) -> E4 {
        E4 { kem }
    }

    fn mac(&self, req: &RequestAuth, profile: &str, tail: &[&[u8]]) -> Result<(String, String)> {
        let share = req.key_share.as_deref().ok_or_else(|| {
            SpaceError::InvalidKeyShare("E4 responses need the syncer's key share".into())
        })?;
        let secret = self.kem.decapsulate(share)?;
        let tag = mac(&secret, profile, share, tail);
        Ok((
            MAC_HEADER.to_owned(),
            format!(
                "profile={profile};mac=:{}:",
                data_encoding::BASE64.encode(&tag)
            ),
        ))
    }
}

/// `HMAC-SHA256(secret, profile "\n" share "\n" tail…)`, `tail` parts
/// joined by "\n".
pub fn mac(secret: &[u8; 32], profile: &str, share: &str, tail: &[&[u8]]) -> [u8; 32] {
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(secret).unwrap_or_else(|_| unreachable!());
    m.update(profile.as_bytes());
    m.update(b"\n");
    m.update(share.as_bytes());
    for t in tail {
        m.update(b"\n");
        m.update(t);
    }
    m.finalize().into_bytes().into()
}

/// Parses a request's `Atproto-Space-Mac` header value for its key share.
pub fn parse_request_header(v: &str) -> Option<String> {
    v.split(';').find_map(|p| {
        let p = p.trim();
        p.strip_prefix("key-share=\"")
            .and_then(|s| s.strip_suffix('"'))
            .map(str::to_owned)
    })
}

/// The STAR meta's DRISL bytes.
pub fn star_meta(commit: &Commit) -> Vec<u8> {
    let mut m = Map::new();
    m.insert("$type", Value::Text(REPO_STAR_TYPE.to_owned()));
    m.insert("commit", commit.to_value());
    repo::cbor::to_vec(&Value::Map(m))
}

impl Envelope for E4 {
    fn era(&self) -> Era {
        Era::E4
    }

    fn repo_content_type(&self) -> &'static str {
        "application/vnd.dasl.star"
    }

    fn commit(
        &self,
        space: &SpaceRef,
        repo: &str,
        state: &RepoState,
        req: &RequestAuth,
    ) -> Result<Authed> {
        let c = Commit::of(&space.to_uri(), repo, state);
        let header = self.mac(req, COMMIT_PROFILE, &[&c.to_cbor()])?;
        Ok(Authed {
            commit: c.to_value(),
            headers: vec![header],
        })
    }

    fn record(&self, uri: &str, cid: &Cid, req: &RequestAuth) -> Result<Vec<(String, String)>> {
        let cid = cid.to_string();
        Ok(vec![self.mac(
            req,
            RECORD_PROFILE,
            &[uri.as_bytes(), cid.as_bytes()],
        )?])
    }

    fn get_repo(
        &self,
        store: &SpaceStore,
        space: &SpaceRef,
        repo: &str,
        _exclude_values: bool,
        req: &RequestAuth,
        out: &mut dyn Write,
    ) -> Result<Authed> {
        let uri = space.to_uri();
        let mut authed = None;
        let star: std::cell::RefCell<Option<StarWriter<&mut dyn Write>>> =
            std::cell::RefCell::new(None);
        let mut out = Some(out);
        store.export(
            space,
            repo,
            true,
            &mut |state| {
                let c = Commit::of(&uri, repo, state);
                let header = self.mac(req, COMMIT_PROFILE, &[&c.to_cbor()])?;
                authed = Some(Authed {
                    commit: c.to_value(),
                    headers: vec![header],
                });
                let o = out
                    .take()
                    .ok_or_else(|| SpaceError::Corrupt("state reported twice".into()))?;
                *star.borrow_mut() = Some(StarWriter::new(o, &star_meta(&c))?);
                Ok(())
            },
            &mut |path, _cid, value| {
                let mut w = star.borrow_mut();
                let w = w
                    .as_mut()
                    .ok_or_else(|| SpaceError::Corrupt("record before state".into()))?;
                w.entry(path.as_bytes(), value.unwrap_or_default())?;
                Ok(())
            },
        )?;
        match (star.into_inner(), authed) {
            (Some(w), Some(a)) => {
                w.finish()?;
                Ok(a)
            }
            _ => Err(SpaceError::Corrupt("export reported no state".into())),
        }
    }
}
