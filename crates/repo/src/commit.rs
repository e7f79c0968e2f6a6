//! Repo commits, version 3: `{did, version: 3, data, rev, prev}` signed as a
//! whole (`sig` over SHA-256 of the unsigned map's DAG-CBOR).
//!
//! Choices where the spec is silent:
//! - decoding is strict: exactly the six fields (`prev` may be null),
//!   `version` must be 3, `did` and `rev` must pass their syntax checks,
//!   `sig` is carried as given and judged by [`CommitRef::verify`];
//! - the unsigned bytes are re-encoded from the decoded fields (identical to
//!   the signed input minus `sig`, since decoding accepted only canonical
//!   bytes and no unknown fields).

use sha2::{Digest, Sha256};

use crate::cbor::{DecodeError, Encoder, Reader};
use crate::cid::Cid;
use crate::crypto::{K256Backend, Keypair, PublicKey, SignatureError};
use crate::syntax::{SyntaxError, Tid, validate_did, validate_tid};

/// Why a commit block was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommitError {
    /// Not strict DAG-CBOR, or a field of the wrong type.
    #[error("commit: {0}")]
    Cbor(#[from] DecodeError),
    /// A required field is absent.
    #[error("commit: missing field {0:?}")]
    Missing(&'static str),
    /// A field v3 commits do not have.
    #[error("commit: unknown field {0:?}")]
    Unknown(String),
    /// `version` other than 3.
    #[error("commit: unsupported version {0}")]
    Version(i64),
    /// Bad `did` or `rev` syntax.
    #[error("commit: {0}")]
    Syntax(#[from] SyntaxError),
    /// The signature was rejected.
    #[error("commit: {0}")]
    Signature(#[from] SignatureError),
}

/// The fields of a commit before signing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsignedCommit {
    /// The repo's DID.
    pub did: String,
    /// MST root.
    pub data: Cid,
    /// Revision (a TID, strictly increasing per repo).
    pub rev: Tid,
    /// Previous commit (usually null in v3).
    pub prev: Option<Cid>,
}

/// A signed commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedCommit {
    /// The signed fields.
    pub unsigned: UnsignedCommit,
    /// 64-byte compact low-S signature.
    pub sig: [u8; 64],
}

/// A decoded commit block, borrowing from its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitRef<'a> {
    /// The repo's DID.
    pub did: &'a str,
    /// Always 3.
    pub version: i64,
    /// MST root.
    pub data: Cid,
    /// Revision TID.
    pub rev: &'a str,
    /// Previous commit.
    pub prev: Option<Cid>,
    /// Signature bytes as found (not yet checked).
    pub sig: &'a [u8],
}

fn encode_fields(
    out: &mut Vec<u8>,
    did: &str,
    rev: &str,
    sig: Option<&[u8]>,
    data: &Cid,
    prev: Option<&Cid>,
) {
    let mut e = Encoder::new(out);
    e.map(if sig.is_some() { 6 } else { 5 });
    // Canonical order: did, rev, sig, data, prev, version.
    e.text("did");
    e.text(did);
    e.text("rev");
    e.text(rev);
    if let Some(sig) = sig {
        e.text("sig");
        e.bytes(sig);
    }
    e.text("data");
    e.link(data);
    e.text("prev");
    e.link_or_null(prev);
    e.text("version");
    e.int(3);
}

impl UnsignedCommit {
    /// A v3 commit with `prev: null`.
    pub fn new(did: impl Into<String>, data: Cid, rev: Tid) -> Self {
        UnsignedCommit {
            did: did.into(),
            data,
            rev,
            prev: None,
        }
    }

    /// The DAG-CBOR bytes that are signed.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(128);
        let rev = self.rev.to_string();
        encode_fields(
            &mut out,
            &self.did,
            &rev,
            None,
            &self.data,
            self.prev.as_ref(),
        );
        out
    }

    /// Signs with `key` (secp256k1 on the default backend).
    pub fn sign(self, key: &Keypair) -> SignedCommit {
        self.sign_with(key, K256Backend::DEFAULT)
    }

    /// [`sign`](Self::sign) on a chosen secp256k1 backend (ignored for
    /// P-256); every backend produces the same signature.
    pub fn sign_with(self, key: &Keypair, backend: K256Backend) -> SignedCommit {
        let sig = key.sign_digest_with(backend, &Sha256::digest(self.to_bytes()).into());
        SignedCommit {
            unsigned: self,
            sig,
        }
    }
}

impl SignedCommit {
    /// The commit block's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(200);
        let u = &self.unsigned;
        let rev = u.rev.to_string();
        encode_fields(
            &mut out,
            &u.did,
            &rev,
            Some(&self.sig),
            &u.data,
            u.prev.as_ref(),
        );
        out
    }

    /// The block and its CID.
    pub fn to_block(&self) -> (Cid, Vec<u8>) {
        let bytes = self.to_bytes();
        (Cid::for_dag_cbor(&bytes), bytes)
    }
}

impl<'a> CommitRef<'a> {
    /// Decodes a commit block strictly.
    pub fn decode(bytes: &'a [u8]) -> Result<Self, CommitError> {
        let mut r = Reader::new(bytes);
        let n = r.read_map_len()?;
        let (mut did, mut version, mut data, mut rev, mut prev, mut sig) =
            (None, None, None, None, None, None);
        let mut last = None;
        for _ in 0..n {
            match r.read_key(&mut last)? {
                "did" => did = Some(r.read_text()?),
                "rev" => rev = Some(r.read_text()?),
                "sig" => sig = Some(r.read_bytes()?),
                "data" => data = Some(r.read_link()?),
                "prev" => prev = Some(r.read_link_or_null()?),
                "version" => version = Some(r.read_int()?),
                other => return Err(CommitError::Unknown(other.to_owned())),
            }
        }
        r.finish()?;
        let version = version.ok_or(CommitError::Missing("version"))?;
        if version != 3 {
            return Err(CommitError::Version(version));
        }
        let c = CommitRef {
            did: did.ok_or(CommitError::Missing("did"))?,
            version,
            data: data.ok_or(CommitError::Missing("data"))?,
            rev: rev.ok_or(CommitError::Missing("rev"))?,
            prev: prev.ok_or(CommitError::Missing("prev"))?,
            sig: sig.ok_or(CommitError::Missing("sig"))?,
        };
        validate_did(c.did)?;
        validate_tid(c.rev)?;
        Ok(c)
    }

    /// Appends the unsigned commit's bytes (what `sig` signs) to `out`.
    pub fn write_unsigned(&self, out: &mut Vec<u8>) {
        encode_fields(
            out,
            self.did,
            self.rev,
            None,
            &self.data,
            self.prev.as_ref(),
        );
    }

    /// SHA-256 of the unsigned commit: the digest `sig` signs.
    pub fn signing_digest(&self) -> [u8; 32] {
        let mut buf = Vec::with_capacity(160);
        self.write_unsigned(&mut buf);
        Sha256::digest(&buf).into()
    }

    /// Checks the signature against `key`.
    pub fn verify(&self, key: &PublicKey) -> Result<(), CommitError> {
        key.verify_digest(&self.signing_digest(), self.sig)?;
        Ok(())
    }

    /// The revision as a [`Tid`] (validated on decode).
    pub fn rev_tid(&self) -> Result<Tid, SyntaxError> {
        Tid::parse(self.rev)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::Algorithm;

    #[test]
    fn sign_decode_verify() {
        let key = Keypair::from_bytes(Algorithm::K256, &[3u8; 32]).unwrap();
        let data = Cid::for_dag_cbor(b"x");
        let rev = Tid::from_parts(1_700_000_000_000_000, 1);
        let signed = UnsignedCommit::new("did:plc:abc", data, rev).sign(&key);
        let bytes = signed.to_bytes();
        let c = CommitRef::decode(&bytes).unwrap();
        assert_eq!(c.did, "did:plc:abc");
        assert_eq!(c.data, data);
        c.verify(&key.public_key()).unwrap();
        let other = Keypair::from_bytes(Algorithm::K256, &[4u8; 32]).unwrap();
        assert!(c.verify(&other.public_key()).is_err());
        let mut unsigned = Vec::new();
        c.write_unsigned(&mut unsigned);
        assert_eq!(unsigned, signed.unsigned.to_bytes());
    }
}
