//! The commits a response carries.
//!
//! **E2 signed commit** (`com.atproto.space.defs#signedCommit`):
//! `{ver: 1, hash, ikm, sig, mac, rev}`, built fresh for every response
//! from the stored `(set hash, rev)`:
//! - `ikm`: 32 random bytes per response;
//! - `ctx = "atproto-space-v1" || u16be(len) space || u16be(len) author ||
//!   u16be(len) rev || u16be(len) ikm` (the normalized space-ref, the
//!   writer repo's DID);
//! - `mac = HMAC-SHA256(HKDF-Expand-SHA256(PRK = ikm, info = ctx, L = 32), hash)`
//!   (no HKDF-Extract step);
//! - `sig = sign(ctx)` with the repo's atproto signing key: the signature
//!   covers the context only, never the hash, so the commit is deniable.
//!
//! **E4 commit** (`com.atproto.space.defs#commit`): `{ver: 1, repo, space,
//! rev, data}` with `data` the LtHash digest; not signed (the response
//! carries a MAC instead, `envelope::e4`).

use hmac::{Hmac, Mac};
use repo::cbor::{Map, Value};
use repo::crypto::{Keypair, PublicKey};
use sha2::Sha256;

use crate::error::{Result, SpaceError};
use crate::types::RepoState;

/// The context's domain separator.
pub const CONTEXT_TAG: &[u8] = b"atproto-space-v1";

/// Signs a message as a repo: ECDSA over SHA-256(msg), compact low-S, the
/// atproto rules. The store implements it with the account's key.
pub trait Signer: Send + Sync {
    /// The signature of `msg` by `did`'s signing key.
    fn sign_as(&self, did: &str, msg: &[u8]) -> Result<[u8; 64]>;
}

/// One key that signs for every DID (tests, benches).
impl Signer for Keypair {
    fn sign_as(&self, _did: &str, msg: &[u8]) -> Result<[u8; 64]> {
        Ok(self.sign(msg))
    }
}

/// An E2 signed commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedCommit {
    /// Always 1.
    pub ver: i64,
    /// LtHash digest.
    pub hash: [u8; 32],
    /// Per-response key material.
    pub ikm: [u8; 32],
    /// Signature over the context.
    pub sig: [u8; 64],
    /// MAC over the hash.
    pub mac: [u8; 32],
    /// The repo's rev.
    pub rev: String,
}

fn push_part(out: &mut Vec<u8>, part: &[u8]) -> Result<()> {
    let len = u16::try_from(part.len()).map_err(|_| {
        SpaceError::invalid("commit context", format!("a part of {} bytes", part.len()))
    })?;
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(part);
    Ok(())
}

/// The E2 context bytes.
pub fn context(space: &str, author: &str, rev: &str, ikm: &[u8]) -> Result<Vec<u8>> {
    let mut ctx = Vec::with_capacity(
        CONTEXT_TAG.len() + 8 + space.len() + author.len() + rev.len() + ikm.len(),
    );
    ctx.extend_from_slice(CONTEXT_TAG);
    push_part(&mut ctx, space.as_bytes())?;
    push_part(&mut ctx, author.as_bytes())?;
    push_part(&mut ctx, rev.as_bytes())?;
    push_part(&mut ctx, ikm)?;
    Ok(ctx)
}

/// `HMAC-SHA256(HKDF-Expand(ikm, ctx, 32), hash)`.
pub fn e2_mac(ikm: &[u8; 32], ctx: &[u8], hash: &[u8; 32]) -> [u8; 32] {
    let mut m = e2_hmac(ikm, ctx);
    m.update(hash);
    m.finalize().into_bytes().into()
}

/// The HMAC keyed with `HKDF-Expand(ikm, ctx, 32)`.
fn e2_hmac(ikm: &[u8; 32], ctx: &[u8]) -> Hmac<Sha256> {
    let mut key = [0u8; 32];
    // `from_prk` takes the ikm as the PRK (no extract); it fails only for a
    // PRK shorter than the hash, and 32 bytes is not.
    if let Ok(h) = hkdf::Hkdf::<Sha256>::from_prk(ikm) {
        // 32 bytes is far below HKDF's 255 * 32 cap.
        let _ = h.expand(ctx, &mut key);
    }
    // HMAC takes a key of any length.
    <Hmac<Sha256> as Mac>::new_from_slice(&key).unwrap_or_else(|_| unreachable!())
}

impl SignedCommit {
    /// Builds the commit of `state` for one response with a fresh `ikm`.
    pub fn build(
        space: &str,
        author: &str,
        state: &RepoState,
        signer: &dyn Signer,
    ) -> Result<SignedCommit> {
        let mut ikm = [0u8; 32];
        getrandom::fill(&mut ikm)
            .map_err(|e| SpaceError::Io(std::io::Error::other(e.to_string())))?;
        SignedCommit::build_with_ikm(space, author, state, signer, ikm)
    }

    /// Builds with a given `ikm` (test vectors).
    pub fn build_with_ikm(
        space: &str,
        author: &str,
        state: &RepoState,
        signer: &dyn Signer,
        ikm: [u8; 32],
    ) -> Result<SignedCommit> {
        let hash = state.hash.digest();
        let ctx = context(space, author, &state.rev, &ikm)?;
        let mac = e2_mac(&ikm, &ctx, &hash);
        let sig = signer.sign_as(author, &ctx)?;
        Ok(SignedCommit {
            ver: 1,
            hash,
            ikm,
            sig,
            mac,
            rev: state.rev.clone(),
        })
    }

    /// Verifies as a syncer does: version, rev, MAC, then the signature
    /// against the author's key.
    pub fn verify(&self, space: &str, author: &str, rev: &str, key: &PublicKey) -> Result<()> {
        if self.ver != 1 {
            return Err(SpaceError::invalid("commit", format!("ver {}", self.ver)));
        }
        if self.rev != rev {
            return Err(SpaceError::invalid(
                "commit",
                format!("rev {} is not {rev}", self.rev),
            ));
        }
        let ctx = context(space, author, &self.rev, &self.ikm)?;
        let mut m = e2_hmac(&self.ikm, &ctx);
        m.update(&self.hash);
        // Constant-time comparison (hmac's `verify_slice`).
        m.verify_slice(&self.mac)
            .map_err(|_| SpaceError::invalid("commit", "MAC does not verify"))?;
        key.verify(&ctx, &self.sig)
            .map_err(|e| SpaceError::invalid("commit", format!("signature: {e}")))
    }

    /// The data-model value (bytes fields as bytes).
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("ver", Value::Int(self.ver));
        m.insert("hash", Value::Bytes(self.hash.to_vec()));
        m.insert("ikm", Value::Bytes(self.ikm.to_vec()));
        m.insert("sig", Value::Bytes(self.sig.to_vec()));
        m.insert("mac", Value::Bytes(self.mac.to_vec()));
        m.insert("rev", Value::Text(self.rev.clone()));
        Value::Map(m)
    }

    /// DRISL bytes (the CAR's first block).
    pub fn to_cbor(&self) -> Vec<u8> {
        repo::cbor::to_vec(&self.to_value())
    }

    /// Decodes DRISL bytes.
    pub fn from_cbor(bytes: &[u8]) -> Result<SignedCommit> {
        let bad = |r: &str| SpaceError::invalid("signed commit", r.to_owned());
        let v = repo::cbor::decode_owned(bytes).map_err(|e| bad(&e.to_string()))?;
        let fixed = |k: &str| -> Result<Vec<u8>> {
            match v.get(k) {
                Some(Value::Bytes(b)) => Ok(b.clone()),
                _ => Err(bad(&format!("no bytes field {k}"))),
            }
        };
        let arr = |b: Vec<u8>, k: &str| -> Result<[u8; 32]> {
            b.try_into()
                .map_err(|_| bad(&format!("{k} is not 32 bytes")))
        };
        Ok(SignedCommit {
            ver: match v.get("ver") {
                Some(Value::Int(i)) => *i,
                _ => return Err(bad("no ver")),
            },
            hash: arr(fixed("hash")?, "hash")?,
            ikm: arr(fixed("ikm")?, "ikm")?,
            sig: fixed("sig")?
                .try_into()
                .map_err(|_| bad("sig is not 64 bytes"))?,
            mac: arr(fixed("mac")?, "mac")?,
            rev: v
                .get("rev")
                .and_then(Value::as_text)
                .ok_or_else(|| bad("no rev"))?
                .to_owned(),
        })
    }
}

/// An E4 commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Commit {
    /// The writer repo's DID.
    pub repo: String,
    /// The space-ref.
    pub space: String,
    /// The repo's rev.
    pub rev: String,
    /// The LtHash digest.
    pub data: [u8; 32],
}

impl Commit {
    /// The commit of `state`.
    pub fn of(space: &str, repo: &str, state: &RepoState) -> Commit {
        Commit {
            repo: repo.to_owned(),
            space: space.to_owned(),
            rev: state.rev.clone(),
            data: state.hash.digest(),
        }
    }

    /// The data-model value `{ver: 1, repo, space, rev, data}`.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("ver", Value::Int(1));
        m.insert("repo", Value::Text(self.repo.clone()));
        m.insert("space", Value::Text(self.space.clone()));
        m.insert("rev", Value::Text(self.rev.clone()));
        m.insert("data", Value::Bytes(self.data.to_vec()));
        Value::Map(m)
    }

    /// DRISL bytes (what the E4 MAC covers).
    pub fn to_cbor(&self) -> Vec<u8> {
        repo::cbor::to_vec(&self.to_value())
    }
}
