//! Block codecs and bloom membership: `segment.encode_columns`,
//! `segment.decode_columns`, `segment.encode_block`, `segment.decode_block`,
//! `segment.bloom_contains`. Inputs are built once; every result is checked
//! against the input outside the timed closure.

use std::hint::black_box;

use benches::target::BenchTarget;
use criterion::Throughput;
use datagen::segment::{BenchPayload, bench_events};
use datagen::segment_mix::realistic_mix;
use segment::bench_internals::{decode_columns, decode_columns_into, encode_columns};
use segment::{Bloom, Compressor, Decompressor, EventRef};

use crate::refs;

/// Registers the codec and bloom groups.
pub fn run(target: &mut BenchTarget) {
    columns(target);
    blocks(target);
    bloom_contains(target);
}

fn columns(target: &mut BenchTarget) {
    let inputs: Vec<_> = [256, 4096]
        .into_iter()
        .map(|n| bench_events(n, BenchPayload::Random))
        .collect();

    let mut group = target.group("segment.encode_columns");
    for events in &inputs {
        let events = refs(events);
        let tier = format!("{}-random", events.len());
        group.throughput(Throughput::Elements(events.len() as u64));
        let mut body = Vec::new();
        // Once untimed, so the check below holds when a filter skips the bench.
        encode_columns(&events, &mut body).expect("valid events");
        group.bench("ours", &tier, |b| {
            b.iter(|| {
                encode_columns(black_box(&events), &mut body).expect("valid events");
                debug_assert!(!body.is_empty());
            })
        });
        assert_eq!(
            decode_columns(&body).expect("decodes"),
            events,
            "encode_columns/{tier}"
        );
    }
    group.finish();

    let mut group = target.group("segment.decode_columns");
    for events in &inputs {
        let events = refs(events);
        let tier = format!("{}-random", events.len());
        let mut body = Vec::new();
        encode_columns(&events, &mut body).expect("valid events");
        group.throughput(Throughput::Elements(events.len() as u64));
        let mut out: Vec<EventRef<'_>> = Vec::new();
        decode_columns_into(&body, &mut out).expect("decodes");
        group.bench("ours", &tier, |b| {
            b.iter(|| {
                decode_columns_into(black_box(&body), &mut out).expect("decodes");
                debug_assert_eq!(out.len(), events.len());
            })
        });
        assert_eq!(out, events, "decode_columns/{tier}");
    }
    group.finish();
}

fn blocks(target: &mut BenchTarget) {
    let shapes = [
        (256, BenchPayload::Random),
        (4096, BenchPayload::Random),
        (4096, BenchPayload::Empty),
        (4096, BenchPayload::Identical),
    ];
    let mut inputs: Vec<_> = shapes
        .iter()
        .map(|&(n, p)| (format!("{n}-{}", p.name()), bench_events(n, p)))
        .collect();
    // The realistic mix (likes, posts, reposts, follows, deletes, identity
    // and account events; real DAG-CBOR records).
    inputs.push(("4096-mix".to_owned(), realistic_mix(4096)));
    let mut zc = Compressor::new().expect("zstd context");
    let mut zd = Decompressor::new().expect("zstd context");

    let mut frames = Vec::new();
    let mut group = target.group("segment.encode_block");
    for (tier, events) in &inputs {
        let events = refs(events);
        group.throughput(Throughput::Elements(events.len() as u64));
        let mut body = Vec::new();
        let mut frame = Vec::new();
        encode_columns(&events, &mut body).expect("valid events");
        zc.compress_append(&body, &mut frame).expect("compresses");
        group.bench("ours", tier, |b| {
            b.iter(|| {
                encode_columns(black_box(&events), &mut body).expect("valid events");
                frame.clear();
                zc.compress_append(&body, &mut frame).expect("compresses");
            })
        });
        let mut check = Vec::new();
        zd.decompress_into(&frame, None, &mut check)
            .expect("frame decodes");
        assert_eq!(
            decode_columns(&check).expect("body decodes"),
            events,
            "encode_block/{tier}"
        );
        frames.push(frame);
    }
    group.finish();

    let mut group = target.group("segment.decode_block");
    for ((tier, events), frame) in inputs.iter().zip(&frames) {
        let events = refs(events);
        group.throughput(Throughput::Elements(events.len() as u64));
        let mut body = Vec::new();
        zd.decompress_into(frame, None, &mut body)
            .expect("frame decodes");
        group.bench("ours", tier, |b| {
            b.iter(|| {
                zd.decompress_into(black_box(frame), None, &mut body)
                    .expect("frame decodes");
                let decoded = decode_columns(&body).expect("body decodes");
                debug_assert_eq!(decoded.len(), events.len());
                black_box(decoded.len())
            })
        });
        assert_eq!(
            decode_columns(&body).expect("body decodes"),
            events,
            "decode_block/{tier}"
        );
        // The floor of `ours`: libzstd's decompression of the same frame
        // (content checksum verified) into the same reused buffer, without
        // the column decode.
        group.bench("zstd-only", tier, |b| {
            b.iter(|| {
                zd.decompress_into(black_box(frame), None, &mut body)
                    .expect("frame decodes");
                body.len()
            })
        });
        assert_eq!(
            decode_columns(&body).expect("body decodes").len(),
            events.len(),
            "decode_block/zstd-only/{tier}"
        );
    }
    group.finish();
}

fn bloom_contains(target: &mut BenchTarget) {
    let mut group = target.group("segment.bloom_contains");
    for n in [26usize, 4096] {
        let present: Vec<String> = (0..n).map(|i| format!("did:plc:{i:024}")).collect();
        let absent: Vec<String> = (0..n).map(|i| format!("did:web:absent-{i}")).collect();
        let mut bloom = Bloom::with_capacity(n as u64);
        for d in &present {
            bloom.insert(d.as_bytes());
        }
        // Alternate present and absent queries.
        let queries: Vec<&str> = present
            .iter()
            .zip(&absent)
            .flat_map(|(p, a)| [p.as_str(), a.as_str()])
            .collect();
        let expected_hits = present.len()
            + absent
                .iter()
                .filter(|a| bloom.contains(a.as_bytes()))
                .count();
        let mut i = 0usize;
        let mut hits = 0usize;
        group.bench("ours", &n.to_string(), |b| {
            b.iter(|| {
                let q = queries[i % queries.len()];
                i = i.wrapping_add(1);
                let hit = bloom.contains(black_box(q.as_bytes()));
                hits += hit as usize;
                hit
            })
        });
        assert!(
            present.iter().all(|d| bloom.contains(d.as_bytes())),
            "false negative"
        );
        let false_pos = expected_hits - present.len();
        assert!(
            false_pos * 100 <= absent.len().max(100),
            "bloom_contains/{n}: {false_pos} false positives"
        );
        black_box(hits);
    }
    group.finish();
}
