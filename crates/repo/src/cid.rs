//! Content identifiers: CIDv1 with a sha2-256 digest and the `dag-cbor`
//! (0x71) or `raw` (0x55) codec, the only kinds atproto's data model allows.
//!
//! Binary form: `0x01 codec 0x12 0x20 digest[32]` (36 bytes). String form:
//! `b` + lowercase unpadded RFC 4648 base32 (59 characters).
//!
//! Choices where the spec is silent:
//! - [`Cid`] stores only the codec and the digest (33 bytes, `Copy`); every
//!   other CID (v0, other hashes, other codecs, other multibases) is rejected
//!   by the parsers with a typed [`CidError`] rather than carried opaquely.
//! - Ordering is (codec, digest), which is stable but carries no meaning.
//! - Base32 decoding is strict: lowercase only, no padding, canonical
//!   trailing bits.

use std::fmt;
use std::hash::{BuildHasher, Hash, Hasher};
use std::str::FromStr;
use std::sync::LazyLock;

use sha2::{Digest, Sha256};

use crate::varint;

/// Multicodec of the content a CID points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum Codec {
    /// `raw` (0x55): opaque bytes (blobs).
    Raw = 0x55,
    /// `dag-cbor` (0x71): DAG-CBOR data (records, MST nodes, commits).
    DagCbor = 0x71,
}

/// Why bytes or text are not a CID this crate accepts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CidError {
    /// Empty input.
    #[error("empty CID")]
    Empty,
    /// The string does not start with the `b` (base32 lower) multibase prefix.
    #[error("unsupported multibase prefix {0:?} (only 'b', base32 lower, is accepted)")]
    UnsupportedMultibase(char),
    /// A CIDv0 (`Qm...` or bytes starting 0x12 0x20).
    #[error("CIDv0 is not supported")]
    V0,
    /// Not valid base32 at the given character position (0 is the prefix).
    #[error("invalid base32 at character {0}")]
    InvalidBase32(usize),
    /// The string is longer than any CID we could accept.
    #[error("CID string too long ({0} characters)")]
    TooLong(usize),
    /// A CID version other than 1.
    #[error("unsupported CID version {0}")]
    UnsupportedVersion(u64),
    /// A codec other than dag-cbor or raw.
    #[error("unsupported CID codec 0x{0:x}")]
    UnsupportedCodec(u64),
    /// A multihash other than sha2-256.
    #[error("unsupported multihash 0x{0:x}")]
    UnsupportedHash(u64),
    /// A sha2-256 multihash whose length is not 32.
    #[error("bad sha2-256 digest length {0}")]
    BadDigestLength(u64),
    /// The bytes end before the CID does.
    #[error("CID truncated")]
    Truncated,
    /// A bad varint in the CID prefix.
    #[error("bad varint in CID: {0}")]
    Varint(#[from] varint::VarintError),
    /// Bytes left after a complete CID.
    #[error("{0} trailing bytes after CID")]
    TrailingBytes(usize),
}

/// A CIDv1, sha2-256, codec dag-cbor or raw. 33 bytes, `Copy`, hashable.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cid {
    codec: Codec,
    digest: [u8; 32],
}

/// Lowercase, unpadded RFC 4648 base32.
static BASE32_LOWER: LazyLock<data_encoding::Encoding> = LazyLock::new(|| {
    let mut spec = data_encoding::Specification::new();
    spec.symbols.push_str("abcdefghijklmnopqrstuvwxyz234567");
    // A constant specification: cannot fail for any input.
    spec.encoding()
        .expect("constant base32 specification is valid")
});

/// Longest CID string we try to decode (far above the 59 of ours).
const MAX_STR_LEN: usize = 160;

impl Cid {
    /// Length of the binary form.
    pub const BYTE_LEN: usize = 36;
    /// Length of the string form (`b` + 58 base32 characters).
    pub const STR_LEN: usize = 59;

    /// A CID from its parts.
    #[inline]
    pub const fn new(codec: Codec, digest: [u8; 32]) -> Self {
        Cid { codec, digest }
    }

    /// The dag-cbor CID of `block` (sha2-256 of the bytes).
    #[inline]
    pub fn for_dag_cbor(block: &[u8]) -> Self {
        Cid::new(Codec::DagCbor, Sha256::digest(block).into())
    }

    /// The raw CID of `data` (sha2-256 of the bytes).
    #[inline]
    pub fn for_raw(data: &[u8]) -> Self {
        Cid::new(Codec::Raw, Sha256::digest(data).into())
    }

    /// The codec.
    #[inline]
    pub fn codec(&self) -> Codec {
        self.codec
    }

    /// The sha2-256 digest.
    #[inline]
    pub fn digest(&self) -> &[u8; 32] {
        &self.digest
    }

    /// True when `data` hashes to this CID's digest.
    #[inline]
    pub fn matches(&self, data: &[u8]) -> bool {
        let d: [u8; 32] = Sha256::digest(data).into();
        d == self.digest
    }

    /// The 36-byte binary form.
    #[inline]
    pub fn to_bytes(&self) -> [u8; 36] {
        let mut out = [0u8; 36];
        out[0] = 0x01;
        out[1] = self.codec as u8;
        out[2] = 0x12;
        out[3] = 0x20;
        out[4..].copy_from_slice(&self.digest);
        out
    }

    /// Parses exactly one CID occupying all of `bytes`.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, CidError> {
        let (cid, used) = Cid::read_prefix(bytes)?;
        if used != bytes.len() {
            return Err(CidError::TrailingBytes(bytes.len() - used));
        }
        Ok(cid)
    }

    /// Parses a CID at the front of `bytes` (as in a CAR section); returns it
    /// and the number of bytes it took.
    #[inline]
    pub fn read_prefix(bytes: &[u8]) -> Result<(Self, usize), CidError> {
        // Fast path for the common exact prefix.
        if bytes.len() >= 36
            && bytes[0] == 0x01
            && (bytes[1] == 0x71 || bytes[1] == 0x55)
            && bytes[2] == 0x12
            && bytes[3] == 0x20
        {
            let codec = if bytes[1] == 0x71 {
                Codec::DagCbor
            } else {
                Codec::Raw
            };
            let mut digest = [0u8; 32];
            digest.copy_from_slice(&bytes[4..36]);
            return Ok((Cid { codec, digest }, 36));
        }
        Cid::read_prefix_slow(bytes)
    }

    fn read_prefix_slow(bytes: &[u8]) -> Result<(Self, usize), CidError> {
        if bytes.is_empty() {
            return Err(CidError::Empty);
        }
        if bytes.len() >= 2 && bytes[0] == 0x12 && bytes[1] == 0x20 {
            return Err(CidError::V0);
        }
        let mut pos = 0;
        let (version, n) = varint::read(&bytes[pos..])?;
        pos += n;
        if version != 1 {
            return Err(CidError::UnsupportedVersion(version));
        }
        let (codec, n) = varint::read(&bytes[pos..])?;
        pos += n;
        let codec = match codec {
            0x71 => Codec::DagCbor,
            0x55 => Codec::Raw,
            other => return Err(CidError::UnsupportedCodec(other)),
        };
        let (hash, n) = varint::read(&bytes[pos..])?;
        pos += n;
        if hash != 0x12 {
            return Err(CidError::UnsupportedHash(hash));
        }
        let (len, n) = varint::read(&bytes[pos..])?;
        pos += n;
        if len != 32 {
            return Err(CidError::BadDigestLength(len));
        }
        let digest: [u8; 32] = bytes
            .get(pos..pos + 32)
            .and_then(|s| s.try_into().ok())
            .ok_or(CidError::Truncated)?;
        Ok((Cid { codec, digest }, pos + 32))
    }

    /// The string form, written into a fixed buffer (no allocation).
    #[inline]
    pub fn encode_str(&self) -> [u8; Cid::STR_LEN] {
        let mut out = [0u8; Cid::STR_LEN];
        out[0] = b'b';
        BASE32_LOWER.encode_mut(&self.to_bytes(), &mut out[1..]);
        out
    }

    /// Appends the string form to `out`.
    #[inline]
    pub fn push_str(&self, out: &mut String) {
        let buf = self.encode_str();
        // The buffer holds only ASCII base32 symbols.
        out.push_str(std::str::from_utf8(&buf).unwrap_or_default());
    }

    /// Parses the string form (`b` + base32 lower).
    pub fn parse_str(s: &str) -> Result<Self, CidError> {
        let bytes = s.as_bytes();
        let Some(&first) = bytes.first() else {
            return Err(CidError::Empty);
        };
        if first != b'b' {
            if s.starts_with("Qm") {
                return Err(CidError::V0);
            }
            let c = s.chars().next().unwrap_or('\0');
            return Err(CidError::UnsupportedMultibase(c));
        }
        let body = &bytes[1..];
        if body.len() > MAX_STR_LEN {
            return Err(CidError::TooLong(bytes.len()));
        }
        let len = BASE32_LOWER
            .decode_len(body.len())
            .map_err(|e| CidError::InvalidBase32(e.position + 1))?;
        let mut buf = [0u8; MAX_STR_LEN];
        let out = &mut buf[..len];
        let n = BASE32_LOWER
            .decode_mut(body, out)
            .map_err(|e| CidError::InvalidBase32(e.error.position + 1))?;
        Cid::from_bytes(&out[..n])
    }
}

impl Hash for Cid {
    /// Hashes 16 of the digest's bytes and the codec (the digest is already
    /// uniform; equal CIDs hash equally).
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        let mut a = [0u8; 8];
        let mut b = [0u8; 8];
        a.copy_from_slice(&self.digest[..8]);
        b.copy_from_slice(&self.digest[8..16]);
        state.write_u64(u64::from_le_bytes(a));
        state.write_u64(u64::from_le_bytes(b) ^ self.codec as u64);
    }
}

/// A fast keyed hasher for maps keyed by [`Cid`]: CID digests are already
/// uniformly distributed, so two multiply-folds with a per-process random
/// key replace SipHash (the key keeps ground, partially colliding digests
/// from landing in one bucket predictably).
#[derive(Debug, Clone, Copy)]
pub struct CidBuildHasher {
    k0: u64,
    k1: u64,
}

impl Default for CidBuildHasher {
    /// Constant keys: the `fixed-hash-keys` feature, for instruction
    /// counts that repeat (see Cargo.toml).
    #[cfg(feature = "fixed-hash-keys")]
    fn default() -> Self {
        CidBuildHasher {
            k0: 0x243f_6a88_85a3_08d3,
            k1: 0x1319_8a2e_0370_7344,
        }
    }

    /// Per-process random keys.
    #[cfg(not(feature = "fixed-hash-keys"))]
    fn default() -> Self {
        static KEYS: LazyLock<(u64, u64)> = LazyLock::new(|| {
            let s = std::collections::hash_map::RandomState::new();
            (s.hash_one(0x5eed_u64), s.hash_one(0xc1d_u64))
        });
        CidBuildHasher {
            k0: KEYS.0,
            k1: KEYS.1,
        }
    }
}

impl BuildHasher for CidBuildHasher {
    type Hasher = CidHasher;
    #[inline]
    fn build_hasher(&self) -> CidHasher {
        CidHasher {
            state: self.k0,
            k1: self.k1,
        }
    }
}

/// The hasher of [`CidBuildHasher`].
#[derive(Debug, Clone)]
pub struct CidHasher {
    state: u64,
    k1: u64,
}

#[inline]
fn fold_mul(a: u64, b: u64) -> u64 {
    let p = u128::from(a).wrapping_mul(u128::from(b));
    (p as u64) ^ ((p >> 64) as u64)
}

impl Hasher for CidHasher {
    #[inline]
    fn write_u64(&mut self, x: u64) {
        self.state = fold_mul(self.state ^ x, 0x9e37_79b9_7f4a_7c15);
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(b));
        }
    }

    #[inline]
    fn finish(&self) -> u64 {
        fold_mul(self.state, self.k1 | 1)
    }
}

/// A `HashMap` keyed by CID with the fast hasher.
pub type CidMap<V> = std::collections::HashMap<Cid, V, CidBuildHasher>;

impl fmt::Display for Cid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let buf = self.encode_str();
        f.write_str(std::str::from_utf8(&buf).map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for Cid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Cid({self})")
    }
}

impl FromStr for Cid {
    type Err = CidError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Cid::parse_str(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EMPTY_NODE: &str = "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm";

    #[test]
    fn string_round_trip() {
        let cid: Cid = EMPTY_NODE.parse().unwrap();
        assert_eq!(cid.codec(), Codec::DagCbor);
        assert_eq!(cid.to_string(), EMPTY_NODE);
        assert_eq!(Cid::from_bytes(&cid.to_bytes()).unwrap(), cid);
        // The empty MST node is {"e": [], "l": null}.
        assert_eq!(
            Cid::for_dag_cbor(&[0xa2, 0x61, b'e', 0x80, 0x61, b'l', 0xf6]),
            cid
        );
    }

    #[test]
    fn rejects() {
        assert_eq!(Cid::parse_str(""), Err(CidError::Empty));
        assert_eq!(
            Cid::parse_str("QmbWqxBEKC3P8tqsKc98xmWNzrzDtRLMiMPL8wBuTGsMnR"),
            Err(CidError::V0)
        );
        assert!(matches!(
            Cid::parse_str("zdj7WWeQ43G6JJvLWQWZpyHuAMq6uYWRjkBXFad11vE2LHhQ7"),
            Err(CidError::UnsupportedMultibase('z'))
        ));
        // dag-pb
        assert_eq!(
            Cid::parse_str("bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi"),
            Err(CidError::UnsupportedCodec(0x70))
        );
        assert!(matches!(
            Cid::parse_str(&EMPTY_NODE.to_uppercase()),
            Err(CidError::UnsupportedMultibase('B'))
        ));
        assert!(matches!(
            Cid::parse_str("bAfyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm"),
            Err(CidError::InvalidBase32(1))
        ));
        assert!(Cid::parse_str(&EMPTY_NODE[..50]).is_err());
    }
}
