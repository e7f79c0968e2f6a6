//! segment: one sealed block of 4096 realistic events (the
//! `segment.decode_block/ours/4096-mix` input) decompressed and decoded
//! into borrowed events; 1,000 bloom lookups, alternating present and
//! absent DIDs, in the bloom of 4096 DIDs `segment.bloom_contains` uses.
//! zstd (libzstd, C) is counted with the rest; blooms hash with XXH3 at a
//! fixed seed.

use std::hint::black_box;

use datagen::segment_mix::realistic_mix;
use gungraun::{library_benchmark, library_benchmark_group};
use segment::bench_internals::{decode_columns, encode_columns};
use segment::{Bloom, Compressor, Decompressor};

const EVENTS: usize = 4096;

/// The sealed block's zstd frame, a decompressor and a body buffer with
/// room for the block.
fn sealed_block(n: usize) -> (Vec<u8>, Decompressor, Vec<u8>) {
    let events = realistic_mix(n);
    let refs = benches::inputs::segment_refs(&events);
    let mut body = Vec::new();
    encode_columns(&refs, &mut body).expect("valid events");
    let mut frame = Vec::new();
    Compressor::new()
        .expect("zstd context")
        .compress_append(&body, &mut frame)
        .expect("compresses");
    let capacity = body.len();
    body.clear();
    (
        frame,
        Decompressor::new().expect("zstd context"),
        Vec::with_capacity(capacity),
    )
}

fn check_block((decoded, body): (usize, Vec<u8>)) {
    let events = realistic_mix(EVENTS);
    assert_eq!(decoded, events.len(), "one event per input event");
    let want = benches::inputs::segment_refs(&events);
    assert_eq!(
        decode_columns(&body).expect("body decodes"),
        want,
        "round trip"
    );
}

#[library_benchmark]
#[bench::ours__4096_mix(args = (EVENTS), setup = sealed_block, teardown = check_block)]
fn decode_block((frame, mut zd, mut body): (Vec<u8>, Decompressor, Vec<u8>)) -> (usize, Vec<u8>) {
    zd.decompress_into(black_box(&frame), None, &mut body)
        .expect("frame decodes");
    let decoded = decode_columns(&body).expect("body decodes").len();
    (decoded, body)
}

/// A bloom of `n` DIDs and 1,000 queries, every other one present.
fn bloom_queries(n: usize) -> (Bloom, Vec<String>) {
    let mut bloom = Bloom::with_capacity(n as u64);
    for i in 0..n {
        bloom.insert(format!("did:plc:{i:024}").as_bytes());
    }
    let queries = (0..1000)
        .map(|q| match q % 2 {
            0 => format!("did:plc:{:024}", q * 3),
            _ => format!("did:web:absent-{q}"),
        })
        .collect();
    (bloom, queries)
}

fn check_hits((hits, _bloom, _queries): (usize, Bloom, Vec<String>)) {
    // 500 present; the absent half may add a few false positives (the
    // bloom's rate is near 1 %).
    assert!((500..=520).contains(&hits), "{hits} hits of 1000");
}

#[library_benchmark]
#[bench::ours__1000(args = (EVENTS), setup = bloom_queries, teardown = check_hits)]
fn bloom_contains((bloom, queries): (Bloom, Vec<String>)) -> (usize, Bloom, Vec<String>) {
    let hits = black_box(&queries)
        .iter()
        .filter(|q| bloom.contains(q.as_bytes()))
        .count();
    (hits, bloom, queries)
}

library_benchmark_group!(
    name = segment_group;
    benchmarks = decode_block, bloom_contains
);
