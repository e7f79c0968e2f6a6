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
//! `scripts/bench_snapshot.py` records their medians in the machine
//! fingerprint (a baseline must be within 10 % on every shared kernel) and
//! divides "Δ vs calibration" by the kernel a group names in `units.toml`.

use std::hint::black_box;
use std::sync::OnceLock;
use std::time::Duration;

use criterion::Throughput;
use sha2::{Digest, Sha256};

use crate::config::Preset;
use crate::target::{BenchTarget, Group};

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
fn table() -> &'static [u32] {
    static TABLE: OnceLock<Vec<u32>> = OnceLock::new();
    TABLE.get_or_init(|| walk_table(WALK_BYTES / 4))
}

/// The kernels' shorter times and `throughput` on an opened group (the
/// kernels together must stay a small part of a target's run).
fn tune(group: &mut Group<'_>, preset: Preset, throughput: Throughput) {
    let (warm_up, measurement) = match preset {
        Preset::Full => (Duration::from_millis(500), Duration::from_millis(2000)),
        Preset::Quick => (Duration::from_millis(100), Duration::from_millis(400)),
    };
    group
        .criterion()
        .warm_up_time(warm_up)
        .measurement_time(measurement);
    group.throughput(throughput);
}

/// Registers and runs every calibration kernel.
pub fn run(target: &mut BenchTarget) {
    let preset = target.preset();
    let data = input();

    let expected = mix(&data);
    assert_eq!(
        mix(&data),
        expected,
        "calibration loop is not deterministic"
    );
    let mut group = target.group("calibrate.cpu");
    group.throughput(Throughput::Bytes(LEN as u64));
    group.bench("fixed", "1MiB", |b| {
        b.iter(|| {
            let h = mix(black_box(&data));
            debug_assert_eq!(h, expected);
            h
        })
    });
    group.finish();

    let next = table();
    let end = walk(next, 0, HOPS);
    // A cycle through every slot: the walk never lands back on 0 early.
    assert_ne!(end, 0, "the walk table is not one cycle");
    let mut group = target.group("calibrate.memory_latency");
    tune(&mut group, preset, Throughput::Elements(HOPS as u64));
    group.bench("walk", "256MiB", |b| {
        b.iter(|| {
            let at = walk(black_box(next), black_box(0), HOPS);
            debug_assert_eq!(at, end);
            at
        })
    });
    group.finish();

    let source: Vec<u8> = data.iter().copied().cycle().take(COPY_BYTES).collect();
    let mut destination = vec![0u8; COPY_BYTES];
    // Verified here, outside the timing: a filtered run may skip the bench.
    destination.copy_from_slice(&source);
    assert!(destination == source, "the streaming copy lost bytes");
    let mut group = target.group("calibrate.copy");
    tune(&mut group, preset, Throughput::Bytes(COPY_BYTES as u64));
    group.criterion().sample_size(10);
    group.bench("stream", "64MiB", |b| {
        b.iter(|| {
            destination.copy_from_slice(black_box(&source));
            black_box(destination.as_ptr());
        })
    });
    group.finish();
    drop(source);
    drop(destination);

    let digest = Sha256::digest(&data);
    // Checked outside the timing against the same bytes fed in pieces.
    let mut pieces = Sha256::new();
    for chunk in data.chunks(4096) {
        pieces.update(chunk);
    }
    assert_eq!(pieces.finalize(), digest, "sha2 disagrees with itself");
    let mut group = target.group("calibrate.sha256");
    tune(&mut group, preset, Throughput::Bytes(LEN as u64));
    group.bench("sha2", "1MiB", |b| {
        b.iter(|| {
            let got = Sha256::digest(black_box(&data));
            debug_assert_eq!(got, digest);
            got
        })
    });
    group.finish();
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
