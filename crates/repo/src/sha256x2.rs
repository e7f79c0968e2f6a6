//! SHA-256 of two independent messages at once, for checking many block
//! hashes (a CAR slice's blocks against their CIDs).
//!
//! Why: with the x86 SHA extensions one message is bound by the latency of
//! `sha256rnds2` (each pair of rounds waits for the previous), while the
//! unit can start a new one before that latency has passed. Interleaving
//! the rounds of two messages fills those slots, so two digests cost little
//! more than one (`repo.frame_verify/car-only`, whose block hashes go
//! through here, shows it). Where the extensions are missing (or on other
//! architectures), [`digest_pair`] is simply two `sha2` digests.
//!
//! [`digest_pair_logged`] also hands out the intermediate state after each
//! whole 64-byte block of input, and [`digest_resume`] finishes a digest
//! from such a state: a node re-encoded after an edit shares its leading
//! bytes with the stored node it came from, so only the blocks from the
//! first changed one on are hashed again (see `firehose::verify`).
//!
//! The results are plain SHA-256 (FIPS 180-4), held to the `sha2` crate by
//! the tests below over every length from 0 to 300 bytes, unequal pairs
//! and every resume point included.

use sha2::{Digest, Sha256};

/// SHA-256 of `a` and of `b`.
#[inline]
pub(crate) fn digest_pair(a: &[u8], b: &[u8]) -> ([u8; 32], [u8; 32]) {
    #[cfg(target_arch = "x86_64")]
    if ni::available() {
        // SAFETY: `available()` returned true.
        return unsafe { ni::digest_pair::<false>(a, b, &mut |_, _, _| {}) };
    }
    (Sha256::digest(a).into(), Sha256::digest(b).into())
}

/// [`digest_pair`] that also calls `log(lane, k, state)` with the state
/// after the `k+1`-th whole 64-byte block of `a` (lane 0) or `b` (lane 1),
/// for every whole block of input (not the padding).
#[inline]
pub(crate) fn digest_pair_logged(
    a: &[u8],
    b: &[u8],
    log: &mut impl FnMut(usize, usize, &State),
) -> ([u8; 32], [u8; 32]) {
    #[cfg(target_arch = "x86_64")]
    if ni::available() {
        // SAFETY: `available()` returned true.
        return unsafe { ni::digest_pair::<true>(a, b, log) };
    }
    (soft::digest(a, 0, log), soft::digest(b, 1, log))
}

/// SHA-256 of one message (the `sha2` crate's own dispatch).
#[inline]
pub(crate) fn digest(a: &[u8]) -> [u8; 32] {
    Sha256::digest(a).into()
}

/// [`digest`] that also logs the state after each whole block, as
/// [`digest_pair_logged`] does (always lane 0).
pub(crate) fn digest_logged(a: &[u8], log: &mut impl FnMut(usize, usize, &State)) -> [u8; 32] {
    soft::digest(a, 0, log)
}

/// The SHA-256 state words `a..h` between blocks.
pub(crate) type State = [u32; 8];

/// The SHA-256 of a message whose first `done` bytes (a multiple of 64)
/// left the hash in `state`, and whose remaining bytes are `rest`.
pub(crate) fn digest_resume(state: &State, done: u64, rest: &[u8]) -> [u8; 32] {
    let blocks = Blocks::with_prefix(rest, done);
    let mut s = *state;
    #[cfg(target_arch = "x86_64")]
    if ni::available() {
        // SAFETY: `available()` returned true: the CPU has every feature
        // `compress_one` is compiled for.
        unsafe { ni::compress_one(&mut s, &blocks) };
        return bytes(&s);
    }
    soft::resume(&mut s, &blocks);
    bytes(&s)
}

/// The state words as the digest's bytes (big-endian).
fn bytes(s: &State) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (o, w) in out.chunks_exact_mut(4).zip(s) {
        o.copy_from_slice(&w.to_be_bytes());
    }
    out
}

/// The initial state.
const H0: State = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// One message through `sha2::compress256` block by block (the path
/// without the SHA extensions, and for single logged messages).
mod soft {
    use super::{Blocks, H0, State, bytes};
    use sha2::digest::generic_array::GenericArray;

    #[inline]
    pub(super) fn block(s: &mut State, b: &[u8; 64]) {
        sha2::compress256(s, std::slice::from_ref(GenericArray::from_slice(b)));
    }

    /// Every block of `blocks` into `s`.
    pub(super) fn resume(s: &mut State, blocks: &Blocks<'_>) {
        for i in 0..blocks.count {
            block(s, blocks.block(i));
        }
    }

    pub(super) fn digest(
        data: &[u8],
        lane: usize,
        log: &mut impl FnMut(usize, usize, &State),
    ) -> [u8; 32] {
        let blocks = Blocks::new(data);
        let mut s = H0;
        for i in 0..blocks.count {
            block(&mut s, blocks.block(i));
            if i < blocks.full {
                log(lane, i, &s);
            }
        }
        bytes(&s)
    }
}

/// A message as SHA-256 blocks: the whole 64-byte blocks of the input,
/// then one or two blocks of tail, padding and bit length.
struct Blocks<'a> {
    data: &'a [u8],
    tail: [u8; 128],
    /// Whole blocks taken from `data`.
    full: usize,
    /// All blocks, padding included.
    count: usize,
}

impl<'a> Blocks<'a> {
    fn new(data: &'a [u8]) -> Self {
        Blocks::with_prefix(data, 0)
    }

    /// The blocks of `data` as the end of a message that began with
    /// `prefix` bytes already hashed (a multiple of 64).
    fn with_prefix(data: &'a [u8], prefix: u64) -> Self {
        let full = data.len() / 64;
        let rest = &data[full * 64..];
        let mut tail = [0u8; 128];
        tail[..rest.len()].copy_from_slice(rest);
        tail[rest.len()] = 0x80;
        // The 0x80 byte and the 8-byte length must fit after the rest.
        let tail_blocks = if rest.len() + 9 <= 64 { 1 } else { 2 };
        let end = tail_blocks * 64;
        let bits = (data.len() as u64).wrapping_add(prefix).wrapping_mul(8);
        tail[end - 8..end].copy_from_slice(&bits.to_be_bytes());
        Blocks {
            data,
            tail,
            full,
            count: full + tail_blocks,
        }
    }

    #[inline]
    fn block(&self, i: usize) -> &[u8; 64] {
        let b = if i < self.full {
            &self.data[i * 64..i * 64 + 64]
        } else {
            let t = (i - self.full) * 64;
            &self.tail[t..t + 64]
        };
        // Both ranges are exactly 64 bytes long.
        b.try_into().unwrap_or(&[0; 64])
    }
}

#[cfg(target_arch = "x86_64")]
mod ni {
    use std::arch::x86_64::*;

    use super::{Blocks, H0, State, bytes};

    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
    ];

    /// Whether the CPU has the SHA extensions and the SSE levels used here
    /// (std caches the detection).
    #[inline]
    pub(super) fn available() -> bool {
        std::is_x86_feature_detected!("sha")
            && std::is_x86_feature_detected!("sse2")
            && std::is_x86_feature_detected!("ssse3")
            && std::is_x86_feature_detected!("sse4.1")
    }

    /// Both digests; with `LOG`, `log` gets each whole block's state.
    ///
    /// # Safety
    ///
    /// [`available`] must have returned true.
    pub(super) unsafe fn digest_pair<const LOG: bool>(
        a: &[u8],
        b: &[u8],
        log: &mut impl FnMut(usize, usize, &State),
    ) -> ([u8; 32], [u8; 32]) {
        let (ba, bb) = (Blocks::new(a), Blocks::new(b));
        let (mut sa, mut sb) = (H0, H0);
        // SAFETY: the caller checked `available()`, so the CPU has every
        // feature `compress` is compiled for (the only requirement of
        // calling a `#[target_feature]` function).
        unsafe { compress::<LOG>(&mut sa, &mut sb, &ba, &bb, log) };
        (bytes(&sa), bytes(&sb))
    }

    /// Every block of `blocks` into `s`, one stream.
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    pub(super) fn compress_one(s: &mut State, blocks: &Blocks<'_>) {
        let (mut s0, mut s1) = load_state(s);
        for i in 0..blocks.count {
            one(&mut s0, &mut s1, blocks.block(i));
        }
        store_state(s0, s1, s);
    }

    /// The state words `a..h` as the two registers the instructions use:
    /// (ABEF, CDGH), highest lane first.
    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    fn load_state(s: &[u32; 8]) -> (__m128i, __m128i) {
        let dcba = _mm_set_epi32(s[3] as i32, s[2] as i32, s[1] as i32, s[0] as i32);
        let hgfe = _mm_set_epi32(s[7] as i32, s[6] as i32, s[5] as i32, s[4] as i32);
        let cdab = _mm_shuffle_epi32(dcba, 0xB1);
        let efgh = _mm_shuffle_epi32(hgfe, 0x1B);
        let abef = _mm_alignr_epi8(cdab, efgh, 8);
        let cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);
        (abef, cdgh)
    }

    /// The inverse of [`load_state`].
    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    fn store_state(abef: __m128i, cdgh: __m128i, s: &mut [u32; 8]) {
        let feba = _mm_shuffle_epi32(abef, 0x1B);
        let dchg = _mm_shuffle_epi32(cdgh, 0xB1);
        let dcba = _mm_blend_epi16(feba, dchg, 0xF0);
        let hgfe = _mm_alignr_epi8(dchg, feba, 8);
        let lanes = |v: __m128i| {
            [
                _mm_extract_epi32(v, 0) as u32,
                _mm_extract_epi32(v, 1) as u32,
                _mm_extract_epi32(v, 2) as u32,
                _mm_extract_epi32(v, 3) as u32,
            ]
        };
        s[..4].copy_from_slice(&lanes(dcba));
        s[4..].copy_from_slice(&lanes(hgfe));
    }

    /// Four big-endian message words of a block.
    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    fn words(block: &[u8; 64], i: usize) -> __m128i {
        let mut w = [0u8; 16];
        w.copy_from_slice(&block[i * 16..i * 16 + 16]);
        let v = _mm_set_epi64x(
            i64::from_le_bytes([w[8], w[9], w[10], w[11], w[12], w[13], w[14], w[15]]),
            i64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]),
        );
        // Byte-swap each 32-bit word.
        let swap = _mm_set_epi64x(0x0c0d0e0f_08090a0b, 0x04050607_00010203);
        _mm_shuffle_epi8(v, swap)
    }

    /// A block's sixteen message words, four to a register.
    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    fn message(block: &[u8; 64]) -> [__m128i; 4] {
        [
            words(block, 0),
            words(block, 1),
            words(block, 2),
            words(block, 3),
        ]
    }

    /// The next four schedule words from the previous sixteen
    /// (`w4` oldest).
    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    fn schedule(w4: __m128i, w3: __m128i, w2: __m128i, w1: __m128i) -> __m128i {
        let t = _mm_add_epi32(_mm_sha256msg1_epu32(w4, w3), _mm_alignr_epi8(w1, w2, 4));
        _mm_sha256msg2_epu32(t, w1)
    }

    /// Four rounds with message words `w` and round constants from `g*4`.
    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    fn rounds(abef: &mut __m128i, cdgh: &mut __m128i, w: __m128i, k: __m128i) {
        let m = _mm_add_epi32(w, k);
        *cdgh = _mm_sha256rnds2_epu32(*cdgh, *abef, m);
        let m = _mm_shuffle_epi32(m, 0x0E);
        *abef = _mm_sha256rnds2_epu32(*abef, *cdgh, m);
    }

    /// Round constants `4g..4g+4`.
    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    fn k(g: usize) -> __m128i {
        let k = &K[g * 4..g * 4 + 4];
        _mm_set_epi32(k[3] as i32, k[2] as i32, k[1] as i32, k[0] as i32)
    }

    /// The sixteen groups of four rounds, unrolled with the message words
    /// in four rotating registers per state (`$w0` the group's own words,
    /// scheduled from the previous sixteen from group 4 on).
    macro_rules! all_groups {
        ($group:ident) => {
            $group!(0; 0 1 2 3);
            $group!(1; 1 2 3 0);
            $group!(2; 2 3 0 1);
            $group!(3; 3 0 1 2);
            $group!(4; 0 1 2 3);
            $group!(5; 1 2 3 0);
            $group!(6; 2 3 0 1);
            $group!(7; 3 0 1 2);
            $group!(8; 0 1 2 3);
            $group!(9; 1 2 3 0);
            $group!(10; 2 3 0 1);
            $group!(11; 3 0 1 2);
            $group!(12; 0 1 2 3);
            $group!(13; 1 2 3 0);
            $group!(14; 2 3 0 1);
            $group!(15; 3 0 1 2);
        };
    }

    /// One block into one state (the tail of the longer message).
    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    fn one(abef: &mut __m128i, cdgh: &mut __m128i, block: &[u8; 64]) {
        let (s0, s1) = (*abef, *cdgh);
        let mut w = message(block);
        macro_rules! group {
            ($g:literal; $i0:literal $i1:literal $i2:literal $i3:literal) => {
                if $g >= 4 {
                    w[$i0] = schedule(w[$i0], w[$i1], w[$i2], w[$i3]);
                }
                rounds(abef, cdgh, w[$i0], k($g));
            };
        }
        all_groups!(group);
        *abef = _mm_add_epi32(*abef, s0);
        *cdgh = _mm_add_epi32(*cdgh, s1);
    }

    /// One block into each of two states, rounds interleaved.
    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    fn two(
        a: (&mut __m128i, &mut __m128i),
        b: (&mut __m128i, &mut __m128i),
        block_a: &[u8; 64],
        block_b: &[u8; 64],
    ) {
        let (a0, a1, b0, b1) = (*a.0, *a.1, *b.0, *b.1);
        let mut wa = message(block_a);
        let mut wb = message(block_b);
        macro_rules! group {
            ($g:literal; $i0:literal $i1:literal $i2:literal $i3:literal) => {
                if $g >= 4 {
                    wa[$i0] = schedule(wa[$i0], wa[$i1], wa[$i2], wa[$i3]);
                    wb[$i0] = schedule(wb[$i0], wb[$i1], wb[$i2], wb[$i3]);
                }
                let kg = k($g);
                rounds(&mut *a.0, &mut *a.1, wa[$i0], kg);
                rounds(&mut *b.0, &mut *b.1, wb[$i0], kg);
            };
        }
        all_groups!(group);
        *a.0 = _mm_add_epi32(*a.0, a0);
        *a.1 = _mm_add_epi32(*a.1, a1);
        *b.0 = _mm_add_epi32(*b.0, b0);
        *b.1 = _mm_add_epi32(*b.1, b1);
    }

    /// Runs every block of `ba` into `sa` and of `bb` into `sb`: pairs
    /// while both have blocks, then the longer one alone. With `LOG`, the
    /// state after each whole input block goes to `log`.
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    fn compress<const LOG: bool>(
        sa: &mut State,
        sb: &mut State,
        ba: &Blocks<'_>,
        bb: &Blocks<'_>,
        log: &mut impl FnMut(usize, usize, &State),
    ) {
        let (mut a0, mut a1) = load_state(sa);
        let (mut b0, mut b1) = load_state(sb);
        let mut note = |lane: usize, i: usize, full: usize, s0: __m128i, s1: __m128i| {
            if LOG && i < full {
                let mut s = [0; 8];
                store_state(s0, s1, &mut s);
                log(lane, i, &s);
            }
        };
        let both = ba.count.min(bb.count);
        for i in 0..both {
            two(
                (&mut a0, &mut a1),
                (&mut b0, &mut b1),
                ba.block(i),
                bb.block(i),
            );
            note(0, i, ba.full, a0, a1);
            note(1, i, bb.full, b0, b1);
        }
        for i in both..ba.count {
            one(&mut a0, &mut a1, ba.block(i));
            note(0, i, ba.full, a0, a1);
        }
        for i in both..bb.count {
            one(&mut b0, &mut b1, bb.block(i));
            note(1, i, bb.full, b0, b1);
        }
        store_state(a0, a1, sa);
        store_state(b0, b1, sb);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(len: usize, seed: u8) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect()
    }

    /// Every length through five blocks (each padding case), paired with
    /// lengths shorter, equal and longer: the same digests as `sha2`.
    #[test]
    fn pairs_match_sha2() {
        for la in 0..300 {
            let a = msg(la, 1);
            for lb in [0, 1, 55, 56, 63, 64, 119, 120, 128, la, la / 2, 299] {
                let b = msg(lb, 7);
                let (da, db) = digest_pair(&a, &b);
                assert_eq!(da, digest(&a), "a len {la} (b {lb})");
                assert_eq!(db, digest(&b), "b len {lb} (a {la})");
            }
        }
        let big = msg(100_000, 3);
        let (x, y) = digest_pair_logged(&big, &big[1..], &mut |_, _, _| {});
        assert_eq!(x, digest(&big));
        assert_eq!(y, digest(&big[1..]));
        let (x, y) = digest_pair(&big, &big[1..]);
        assert_eq!(x, digest(&big));
        assert_eq!(y, digest(&big[1..]));
    }
}

#[cfg(test)]
mod resume_tests {
    use super::*;

    /// The logged states, resumed from at every whole block with any
    /// tail, give the digest of the whole message; both lanes, both
    /// paths (paired and single).
    #[test]
    fn resume_from_every_logged_state() {
        for (la, lb) in [(0, 0), (64, 200), (300, 65), (128, 128), (1000, 10)] {
            let a: Vec<u8> = (0..la).map(|i| (i * 13 + 1) as u8).collect();
            let b: Vec<u8> = (0..lb).map(|i| (i * 7 + 5) as u8).collect();
            let mut states: [Vec<State>; 2] = [vec![H0; la / 64], vec![H0; lb / 64]];
            let (da, db) = digest_pair_logged(&a, &b, &mut |lane, k, s| states[lane][k] = *s);
            assert_eq!((da, db), (digest(&a), digest(&b)));
            let mut single = vec![H0; la / 64];
            assert_eq!(digest_logged(&a, &mut |_, k, s| single[k] = *s), da);
            assert_eq!(single, states[0]);
            // The path for CPUs without the SHA extensions, run directly.
            let mut soft_states = vec![H0; lb / 64];
            assert_eq!(soft::digest(&b, 1, &mut |_, k, s| soft_states[k] = *s), db);
            assert_eq!(soft_states, states[1]);
            for (msg, st) in [(&a, &states[0]), (&b, &states[1])] {
                for (k, s) in st.iter().enumerate() {
                    let done = (k + 1) * 64;
                    for tail in [0usize, 1, 55, 56, 64, 130] {
                        let mut m = msg[..done].to_vec();
                        m.extend((0..tail).map(|i| i as u8));
                        assert_eq!(
                            digest_resume(s, done as u64, &m[done..]),
                            digest(&m),
                            "len {} resumed at {done} with {tail} more",
                            msg.len()
                        );
                        let mut soft_s = *s;
                        soft::resume(&mut soft_s, &Blocks::with_prefix(&m[done..], done as u64));
                        assert_eq!(bytes(&soft_s), digest(&m));
                    }
                }
            }
        }
    }
}
