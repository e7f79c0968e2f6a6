//! Blocked one-hashing Bloom filter over 512-bit blocks, keyed by DID.
//!
//! One XXH3-128 hash per key: its high half picks the block, the low half
//! folds into `h32`, and probe `i` sets bit `h32 mod p_i` of partition `i`
//! (the block's 512 bits cut into `k` partitions of co-prime-ish sizes).

use crc::{CRC_32_ISCSI, Crc};
use xxhash_rust::xxh3::xxh3_128;

use crate::error::{Error, Result};

/// Serialization version.
pub const VERSION: u8 = 1;
/// Fewest probes.
pub const MIN_K: u32 = 3;
/// Most probes.
pub const MAX_K: u32 = 15;
/// Bytes before the blocks: version, k, num_blocks, count.
const HEAD: usize = 1 + 4 + 8 + 8;
/// Bytes of one block.
pub const BLOCK_BYTES: usize = 64;
/// The false-positive rate blooms are sized for.
pub const TARGET_FPR: f64 = 0.001;
/// Ratio of a blocked filter's bits to a classic filter's for the same
/// false-positive rate, calibrated so sizing reproduces the upstream
/// writer's observed sizes (4096 keys -> 131 blocks at 0.1 %).
const BLOCKED_OVERHEAD: f64 = 1.135;

const CASTAGNOLI: Crc<u32> = Crc::<u32>::new(&CRC_32_ISCSI);

/// Partition sizes for k = 3..=15 (each row sums to 512).
const PARTITIONS: [&[u32]; 13] = [
    &[167, 173, 172],
    &[109, 127, 137, 139],
    &[97, 101, 103, 109, 102],
    &[61, 79, 83, 89, 97, 103],
    &[61, 67, 71, 79, 83, 89, 62],
    &[37, 47, 53, 61, 67, 71, 79, 97],
    &[41, 43, 47, 53, 59, 67, 71, 73, 58],
    &[31, 37, 41, 43, 47, 53, 59, 61, 67, 73],
    &[29, 31, 37, 41, 43, 44, 47, 53, 59, 61, 67],
    &[17, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 71],
    &[17, 19, 23, 29, 31, 37, 41, 43, 47, 52, 53, 59, 61],
    &[11, 13, 17, 19, 23, 29, 31, 37, 41, 47, 53, 59, 61, 71],
    &[11, 13, 17, 19, 23, 28, 29, 31, 37, 41, 43, 47, 53, 59, 61],
];

/// Tests (or sets) the probes of one block with the partition sizes as
/// literals, so every `h32 % p` compiles to a multiply by a constant
/// instead of a division.
macro_rules! probe {
    (test $block:ident, $h:ident, $off:expr; ) => { true };
    (test $block:ident, $h:ident, $off:expr; $p:literal $(, $rest:literal)*) => {{
        let bit = $off + $h % $p;
        ($block[(bit / 64) as usize] >> (bit % 64)) & 1 == 1
            && probe!(test $block, $h, $off + $p; $($rest),*)
    }};
    (set $block:ident, $h:ident, $off:expr; ) => { () };
    (set $block:ident, $h:ident, $off:expr; $p:literal $(, $rest:literal)*) => {{
        let bit = $off + $h % $p;
        $block[(bit / 64) as usize] |= 1u64 << (bit % 64);
        probe!(set $block, $h, $off + $p; $($rest),*)
    }};
}

/// Dispatches on k to the literal partition lists (mirrors [`PARTITIONS`]).
macro_rules! by_k {
    ($mode:ident, $k:expr, $block:ident, $h:ident) => {
        match $k {
            3 => probe!($mode $block, $h, 0u32; 167, 173, 172),
            4 => probe!($mode $block, $h, 0u32; 109, 127, 137, 139),
            5 => probe!($mode $block, $h, 0u32; 97, 101, 103, 109, 102),
            6 => probe!($mode $block, $h, 0u32; 61, 79, 83, 89, 97, 103),
            7 => probe!($mode $block, $h, 0u32; 61, 67, 71, 79, 83, 89, 62),
            8 => probe!($mode $block, $h, 0u32; 37, 47, 53, 61, 67, 71, 79, 97),
            9 => probe!($mode $block, $h, 0u32; 41, 43, 47, 53, 59, 67, 71, 73, 58),
            10 => probe!($mode $block, $h, 0u32; 31, 37, 41, 43, 47, 53, 59, 61, 67, 73),
            11 => probe!($mode $block, $h, 0u32; 29, 31, 37, 41, 43, 44, 47, 53, 59, 61, 67),
            12 => probe!($mode $block, $h, 0u32; 17, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 71),
            13 => probe!($mode $block, $h, 0u32; 17, 19, 23, 29, 31, 37, 41, 43, 47, 52, 53, 59, 61),
            14 => probe!($mode $block, $h, 0u32; 11, 13, 17, 19, 23, 29, 31, 37, 41, 47, 53, 59, 61, 71),
            _ => probe!($mode $block, $h, 0u32; 11, 13, 17, 19, 23, 28, 29, 31, 37, 41, 43, 47, 53, 59, 61),
        }
    };
}

/// The partition sizes for `k` probes (`k` in 3..=15).
pub fn partitions(k: u32) -> Option<&'static [u32]> {
    if (MIN_K..=MAX_K).contains(&k) {
        Some(PARTITIONS[(k - MIN_K) as usize])
    } else {
        None
    }
}

/// The (k, num_blocks) for `capacity` keys at [`TARGET_FPR`].
///
/// A classic filter needs `m = n ln(1/p) / ln²2` bits; the blocked layout
/// pays [`BLOCKED_OVERHEAD`] on top. `k` is the classic optimum
/// `ln 2 · m / n` with `m` at least one block, floored and clamped to 3..=15.
pub fn sizing(capacity: u64) -> (u32, u64) {
    let n = capacity.max(1) as f64;
    let ln2 = std::f64::consts::LN_2;
    let classic_bits = n * (1.0 / TARGET_FPR).ln() / (ln2 * ln2);
    let blocks = ((classic_bits * BLOCKED_OVERHEAD) / 512.0).ceil().max(1.0) as u64;
    let k = (ln2 * classic_bits.max(512.0) / n).floor() as u32;
    (k.clamp(MIN_K, MAX_K), blocks)
}

/// The serialized size of a filter of `num_blocks` blocks.
pub fn serialized_size(num_blocks: u64) -> u64 {
    HEAD as u64 + BLOCK_BYTES as u64 * num_blocks + 4
}

/// The hash of a key, computed once and usable against any filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyHash(pub u128);

impl KeyHash {
    /// XXH3-128 (seed 0) of `key`.
    pub fn of(key: &[u8]) -> Self {
        KeyHash(xxh3_128(key))
    }

    fn block(self, num_blocks: u64) -> usize {
        let hi = (self.0 >> 64) as u64;
        ((hi as u128 * num_blocks as u128) >> 64) as usize
    }

    fn h32(self) -> u32 {
        let lo = self.0 as u64;
        (lo as u32) ^ ((lo >> 32) as u32)
    }
}

/// An in-memory filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bloom {
    k: u32,
    count: u64,
    words: Vec<u64>,
}

impl Bloom {
    /// An empty filter sized for `capacity` keys at 0.1 %.
    pub fn with_capacity(capacity: u64) -> Self {
        let (k, blocks) = sizing(capacity);
        Bloom::with_shape(k, blocks)
    }

    /// An empty filter of `num_blocks` blocks and `k` probes (k clamped to 3..=15,
    /// at least one block).
    pub fn with_shape(k: u32, num_blocks: u64) -> Self {
        let blocks = num_blocks.max(1) as usize;
        Bloom {
            k: k.clamp(MIN_K, MAX_K),
            count: 0,
            words: vec![0; blocks * 8],
        }
    }

    /// Probes per key.
    pub fn k(&self) -> u32 {
        self.k
    }

    /// Blocks of 512 bits.
    pub fn num_blocks(&self) -> u64 {
        (self.words.len() / 8) as u64
    }

    /// Keys added.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Serialized size in bytes.
    pub fn serialized_size(&self) -> u64 {
        serialized_size(self.num_blocks())
    }

    /// Adds a key.
    pub fn insert(&mut self, key: &[u8]) {
        self.insert_hash(KeyHash::of(key));
    }

    /// Adds a key by its hash.
    pub fn insert_hash(&mut self, h: KeyHash) {
        let base = h.block(self.num_blocks()) * 8;
        let h32 = h.h32();
        let k = self.k;
        if let Some(block) = self.words.get_mut(base..base + 8) {
            by_k!(set, k, block, h32);
        }
        self.count += 1;
    }

    /// Whether the key may have been added (false: certainly not).
    pub fn contains(&self, key: &[u8]) -> bool {
        self.contains_hash(KeyHash::of(key))
    }

    /// [`Bloom::contains`] by hash.
    pub fn contains_hash(&self, h: KeyHash) -> bool {
        let base = h.block(self.num_blocks()) * 8;
        let Some(block) = self.words.get(base..base + 8) else {
            return false;
        };
        let h32 = h.h32();
        by_k!(test, self.k, block, h32)
    }

    /// Appends the serialized filter to `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.push(VERSION);
        out.extend_from_slice(&self.k.to_le_bytes());
        out.extend_from_slice(&self.num_blocks().to_le_bytes());
        out.extend_from_slice(&self.count.to_le_bytes());
        for w in &self.words {
            out.extend_from_slice(&w.to_le_bytes());
        }
        let crc = CASTAGNOLI.checksum(&out[start..]);
        out.extend_from_slice(&crc.to_le_bytes());
    }

    /// The serialized filter.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.serialized_size() as usize);
        self.write_to(&mut out);
        out
    }

    /// Decodes a serialized filter: `bytes` must be exactly one filter.
    pub fn decode(bytes: &[u8]) -> Result<Bloom> {
        if bytes.len() < HEAD + 4 {
            return Err(Error::Bloom("shorter than its header"));
        }
        if bytes[0] != VERSION {
            return Err(Error::Bloom("unknown version"));
        }
        let k = u32::from_le_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]);
        if partitions(k).is_none() {
            return Err(Error::Bloom("k outside 3..=15"));
        }
        let mut b8 = [0u8; 8];
        b8.copy_from_slice(&bytes[5..13]);
        let num_blocks = u64::from_le_bytes(b8);
        b8.copy_from_slice(&bytes[13..21]);
        let count = u64::from_le_bytes(b8);
        if num_blocks == 0 {
            return Err(Error::Bloom("no blocks"));
        }
        let expected = num_blocks
            .checked_mul(BLOCK_BYTES as u64)
            .and_then(|v| v.checked_add((HEAD + 4) as u64));
        if expected != Some(bytes.len() as u64) {
            return Err(Error::Bloom("length does not match num_blocks"));
        }
        let body = bytes.len() - 4;
        let stored = u32::from_le_bytes([
            bytes[body],
            bytes[body + 1],
            bytes[body + 2],
            bytes[body + 3],
        ]);
        if CASTAGNOLI.checksum(&bytes[..body]) != stored {
            return Err(Error::Bloom("CRC32C mismatch"));
        }
        let words = bytes[HEAD..body]
            .chunks_exact(8)
            .map(|c| {
                let mut w = [0u8; 8];
                w.copy_from_slice(c);
                u64::from_le_bytes(w)
            })
            .collect();
        Ok(Bloom { k, count, words })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_sum_to_512() {
        for k in MIN_K..=MAX_K {
            let p = partitions(k).unwrap();
            assert_eq!(p.len(), k as usize);
            assert_eq!(p.iter().sum::<u32>(), 512, "k={k}");
        }
        assert!(partitions(2).is_none());
        assert!(partitions(16).is_none());
    }

    /// The loop over [`PARTITIONS`] the macros unroll.
    fn reference_bits(k: u32, h32: u32) -> Vec<u32> {
        let mut offset = 0;
        partitions(k)
            .unwrap()
            .iter()
            .map(|&p| {
                let bit = offset + h32 % p;
                offset += p;
                bit
            })
            .collect()
    }

    #[test]
    fn unrolled_probes_match_the_partition_table() {
        for k in MIN_K..=MAX_K {
            for h32 in [0u32, 1, 12345, 0xdead_beef, u32::MAX] {
                let mut b = Bloom::with_shape(k, 1);
                b.insert_hash(KeyHash(h32 as u128));
                let mut want = vec![0u64; 8];
                for bit in reference_bits(k, h32) {
                    want[(bit / 64) as usize] |= 1 << (bit % 64);
                }
                assert_eq!(b.words, want, "k={k} h32={h32:#x}");
                assert!(b.contains_hash(KeyHash(h32 as u128)));
            }
        }
    }

    #[test]
    fn the_block_bloom_limit_is_the_size_for_a_full_block() {
        let most = serialized_size(sizing(crate::MAX_BLOCK_EVENTS as u64).1);
        assert_eq!(most, crate::format::MAX_BLOCK_BLOOM_BYTES);
    }

    #[test]
    fn sizing_reproduces_observed_sizes() {
        for n in 0..=3 {
            assert_eq!(sizing(n), (15, 1), "capacity {n}");
            assert_eq!(Bloom::with_capacity(n).serialized_size(), 89);
        }
        assert_eq!(sizing(4096), (9, 131));
        assert_eq!(Bloom::with_capacity(4096).serialized_size(), 8409);
    }

    #[test]
    fn no_false_negatives_and_low_fpr() {
        let mut b = Bloom::with_capacity(4096);
        for i in 0..4096 {
            b.insert(format!("did:plc:{i:024}").as_bytes());
        }
        for i in 0..4096 {
            assert!(b.contains(format!("did:plc:{i:024}").as_bytes()));
        }
        let fp = (0..100_000)
            .filter(|i| b.contains(format!("did:web:{i}").as_bytes()))
            .count();
        assert!(fp < 300, "{fp} false positives in 100k");
        let back = Bloom::decode(&b.to_bytes()).unwrap();
        assert_eq!(back, b);
    }

    #[test]
    fn decode_rejects_damage() {
        let mut b = Bloom::with_capacity(10);
        b.insert(b"did:plc:a");
        let bytes = b.to_bytes();
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x10;
            assert!(Bloom::decode(&bad).is_err(), "flip at {i}");
        }
        assert!(Bloom::decode(&bytes[..bytes.len() - 1]).is_err());
        assert!(Bloom::decode(&[]).is_err());
    }
}
