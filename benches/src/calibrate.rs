//! `calibrate.cpu/fixed/1MiB`: a fixed, dependency-free CPU loop. Its median
//! moves only when the machine does, so the snapshot divides every other
//! delta by its delta to separate "slower machine" from "slower code".

use std::hint::black_box;

use criterion::Throughput;

use crate::target::BenchTarget;

/// Size of the buffer the loop mixes.
pub const LEN: usize = 1 << 20;

/// A fixed buffer: a xorshift stream from a constant seed.
pub fn input() -> Vec<u8> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    (0..LEN)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
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

/// Registers and runs the calibration group.
pub fn run(target: &mut BenchTarget) {
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
}
