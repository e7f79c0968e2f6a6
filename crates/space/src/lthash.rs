//! LtHash: the order-independent set hash of a writer repo's records (E2,
//! unchanged in E4).
//!
//! State: 1024 little-endian u16 lanes (2,048 bytes), all zero for the empty
//! set. An element is the UTF-8 string `"{collection}/{rkey}/{cid}"` (the
//! CID in its base32 `b…` string form); it expands to 2,048 bytes with the
//! BLAKE3 XOF, read as 1024 LE u16 lanes. Add and remove are lane-wise
//! wrapping add and sub mod 2^16. The digest is SHA-256 of the 2,048-byte
//! state.

use repo::Cid;
use sha2::{Digest, Sha256};

/// Bytes of the state.
pub const STATE_BYTES: usize = 2048;
/// u16 lanes of the state.
pub const LANES: usize = 1024;

/// One element's 1024-lane expansion, computed once and added or removed.
#[derive(Clone)]
pub struct Expansion([u16; LANES]);

impl Expansion {
    /// The expansion of `collection/rkey/cid`.
    pub fn of(collection: &str, rkey: &str, cid: &Cid) -> Expansion {
        let mut elem = String::with_capacity(collection.len() + rkey.len() + 2 + Cid::STR_LEN);
        elem.push_str(collection);
        elem.push('/');
        elem.push_str(rkey);
        elem.push('/');
        cid.push_str(&mut elem);
        Expansion::of_element(elem.as_bytes())
    }

    /// The expansion of an element given as its bytes.
    pub fn of_element(elem: &[u8]) -> Expansion {
        let mut bytes = [0u8; STATE_BYTES];
        let mut h = blake3::Hasher::new();
        h.update(elem);
        h.finalize_xof().fill(&mut bytes);
        let mut lanes = [0u16; LANES];
        for (lane, pair) in lanes.iter_mut().zip(bytes.chunks_exact(2)) {
            *lane = u16::from_le_bytes([pair[0], pair[1]]);
        }
        Expansion(lanes)
    }
}

/// The LtHash state.
#[derive(Clone, PartialEq, Eq)]
pub struct LtHash([u16; LANES]);

impl Default for LtHash {
    fn default() -> Self {
        LtHash([0; LANES])
    }
}

impl std::fmt::Debug for LtHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "LtHash({})",
            data_encoding::HEXLOWER.encode(&self.digest())
        )
    }
}

impl LtHash {
    /// The empty set.
    pub fn new() -> LtHash {
        LtHash::default()
    }

    /// The state read back from its 2,048 stored bytes; `None` if the
    /// length is not 2,048.
    pub fn from_bytes(bytes: &[u8]) -> Option<LtHash> {
        if bytes.len() != STATE_BYTES {
            return None;
        }
        let mut lanes = [0u16; LANES];
        for (lane, pair) in lanes.iter_mut().zip(bytes.chunks_exact(2)) {
            *lane = u16::from_le_bytes([pair[0], pair[1]]);
        }
        Some(LtHash(lanes))
    }

    /// The 2,048 state bytes (LE lanes).
    pub fn to_bytes(&self) -> [u8; STATE_BYTES] {
        let mut out = [0u8; STATE_BYTES];
        for (pair, lane) in out.chunks_exact_mut(2).zip(self.0.iter()) {
            pair.copy_from_slice(&lane.to_le_bytes());
        }
        out
    }

    /// Adds an expanded element.
    pub fn add(&mut self, e: &Expansion) {
        for (a, b) in self.0.iter_mut().zip(e.0.iter()) {
            *a = a.wrapping_add(*b);
        }
    }

    /// Removes an expanded element.
    pub fn remove(&mut self, e: &Expansion) {
        for (a, b) in self.0.iter_mut().zip(e.0.iter()) {
            *a = a.wrapping_sub(*b);
        }
    }

    /// Applies one op: removes `(collection, rkey, prev)` if `prev` is set,
    /// then adds `(collection, rkey, cid)` if `cid` is set.
    pub fn apply_op(
        &mut self,
        collection: &str,
        rkey: &str,
        cid: Option<&Cid>,
        prev: Option<&Cid>,
    ) {
        if let Some(p) = prev {
            self.remove(&Expansion::of(collection, rkey, p));
        }
        if let Some(c) = cid {
            self.add(&Expansion::of(collection, rkey, c));
        }
    }

    /// SHA-256 of the 2,048-byte state.
    pub fn digest(&self) -> [u8; 32] {
        Sha256::digest(self.to_bytes()).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        data_encoding::HEXLOWER.encode(b)
    }

    #[test]
    fn empty_digest_is_sha256_of_zeros() {
        // sha256 of 2048 zero bytes.
        assert_eq!(
            hex(&LtHash::new().digest()),
            hex(&Sha256::digest([0u8; STATE_BYTES]))
        );
    }

    #[test]
    fn expansion_is_blake3_xof_le_lanes() {
        // The first lanes are the first XOF bytes, little-endian; the XOF's
        // first 32 bytes are BLAKE3's ordinary hash.
        let e = Expansion::of_element(b"app.bsky.feed.post/3k/bafy");
        let h = blake3::hash(b"app.bsky.feed.post/3k/bafy");
        let b = h.as_bytes();
        assert_eq!(e.0[0], u16::from_le_bytes([b[0], b[1]]));
        assert_eq!(e.0[15], u16::from_le_bytes([b[30], b[31]]));
    }

    #[test]
    fn add_remove_and_order_independence() {
        let c1 = Cid::for_dag_cbor(b"\xa0");
        let c2 = Cid::for_dag_cbor(b"\xa1\x61a\x01");
        let mut a = LtHash::new();
        a.apply_op("c.o.l", "1", Some(&c1), None);
        a.apply_op("c.o.l", "2", Some(&c2), None);
        let mut b = LtHash::new();
        b.apply_op("c.o.l", "2", Some(&c2), None);
        b.apply_op("c.o.l", "1", Some(&c1), None);
        assert_eq!(a, b);
        b.apply_op("c.o.l", "2", None, Some(&c2));
        b.apply_op("c.o.l", "1", None, Some(&c1));
        assert_eq!(b, LtHash::new());
        assert_eq!(LtHash::from_bytes(&a.to_bytes()), Some(a));
    }
}
