//! The calibration kernels: small fixed workloads that run with every bench
//! target and move only when the machine does. Each spans one thing the
//! other rows depend on, and each is its own id:
//!
//! - `calibrate.cpu/fixed/1MiB`: integer ALU, a multiply-xor dependency
//!   chain over 1 MiB (the original kernel; its id is kept for history);
//! - `calibrate.memory_latency/walk/256MiB`: a dependent pointer chase over
//!   one random cycle through 256 MiB, larger than the last-level cache of
//!   the machines we run on, so each hop is a cache (and TLB) miss;
//! - `calibrate.copy/stream/64MiB`: a streaming copy of 64 MiB (memory
//!   bandwidth);
//! - `calibrate.sha256/sha2/1MiB`: SHA-256 through `sha2` (SHA-NI where the
//!   CPU has it), the hashing the repo and store rows lean on.
//!
//! This module holds the kernels and their data; `BenchTarget::finish`
//! opens the `calibrate.*` groups and runs them.
//!
//! `scripts/bench_snapshot.py` records their medians in the machine
//! fingerprint (a baseline must be within 10 % on every shared kernel) and
//! divides "Δ vs calibration" by the kernel a group names in `units.toml`.

use std::sync::OnceLock;
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::config::Preset;

/// Size of the buffer the integer loop mixes and SHA-256 hashes.
pub const LEN: usize = 1 << 20;
/// Bytes of the pointer-chase table (u32 slots).
pub const WALK_BYTES: usize = 256 << 20;
/// Dependent loads per iteration of the walk.
pub const HOPS: usize = 1 << 14;
/// Bytes copied per iteration of the streaming copy.
pub const COPY_BYTES: usize = 64 << 20;

fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// A fixed buffer: a xorshift stream from a constant seed.
pub fn input() -> Vec<u8> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    (0..LEN).map(|_| xorshift(&mut state) as u8).collect()
}

/// The loop: multiply-xor mixing of every 8-byte word, a dependency chain
/// the compiler cannot vectorise away.
pub fn mix(data: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for word in data.chunks_exact(8) {
        let mut w = [0u8; 8];
        w.copy_from_slice(word);
        h = (h ^ u64::from_le_bytes(w)).wrapping_mul(0x0100_0000_01b3);
        h ^= h >> 29;
    }
    h
}

/// One random cycle through every slot (Sattolo's shuffle): following
/// `next[i]` from any slot visits all slots before it returns.
pub fn walk_table(slots: usize) -> Vec<u32> {
    let mut next: Vec<u32> = (0..slots as u32).collect();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for i in (1..slots).rev() {
        let j = (xorshift(&mut state) % i as u64) as usize;
        next.swap(i, j);
    }
    next
}

/// `hops` dependent loads from `start`; returns where the walk ends.
pub fn walk(next: &[u32], start: u32, hops: usize) -> u32 {
    let mut at = start;
    for _ in 0..hops {
        at = next[at as usize];
    }
    at
}

/// The walk table, built once per process (it takes a moment at 256 MiB).
pub fn table() -> &'static [u32] {
    static TABLE: OnceLock<Vec<u32>> = OnceLock::new();
    TABLE.get_or_init(|| walk_table(WALK_BYTES / 4))
}

/// The streaming copy's source: [`input`] repeated to [`COPY_BYTES`].
pub fn copy_source(data: &[u8]) -> Vec<u8> {
    data.iter().copied().cycle().take(COPY_BYTES).collect()
}

/// SHA-256 of `data` through `sha2`.
pub fn sha256(data: &[u8]) -> [u8; 32] {
    Sha256::digest(data).into()
}

/// SHA-256 of `data` fed in 4 KiB pieces (the check of [`sha256`]).
pub fn sha256_in_pieces(data: &[u8]) -> [u8; 32] {
    let mut pieces = Sha256::new();
    for chunk in data.chunks(4096) {
        pieces.update(chunk);
    }
    pieces.finalize().into()
}

/// Warm-up and measurement times of the memory, copy and sha kernels
/// under `preset` (shorter than the rows': the kernels together must stay
/// a small part of a target's run).
pub fn times(preset: Preset) -> (Duration, Duration) {
    match preset {
        Preset::Full => (Duration::from_millis(500), Duration::from_millis(2000)),
        Preset::Quick => (Duration::from_millis(100), Duration::from_millis(400)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_walk_is_one_cycle_through_every_slot() {
        let next = walk_table(1000);
        assert_eq!(walk(&next, 0, 1000), 0);
        assert!((1..1000).all(|hops| walk(&next, 0, hops) != 0));
    }

    #[test]
    fn the_mix_is_fixed() {
        assert_eq!(mix(&input()), mix(&input()));
    }
}
