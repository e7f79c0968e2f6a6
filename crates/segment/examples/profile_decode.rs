//! A fixed decode_block loop for callgrind (the `segment.decode_block`
//! shapes): `cargo build --release -p segment --features bench-internals
//! --example profile_decode`, then
//! `valgrind --tool=callgrind target/release/examples/profile_decode [random|zero|identical|mix] [iters] [columns|zstd]`
//! (`columns`: the body decode alone; `zstd`: the frame decompression alone,
//! checksum included, to split `segment.decode_block` into its two parts).

use datagen::segment::{BenchPayload, SegEvent, bench_events};
use segment::bench_internals::{decode_columns, decode_columns_into, encode_columns};
use segment::{Compressor, Decompressor, EventRef, Kind};

fn refs(events: &[SegEvent]) -> Vec<EventRef<'_>> {
    events
        .iter()
        .map(|e| EventRef {
            seq: e.seq,
            witnessed_at: e.witnessed_at,
            indexed_at: e.indexed_at,
            kind: Kind::from_u8(e.kind).unwrap_or(Kind::Create),
            did: &e.did,
            collection: &e.collection,
            rkey: &e.rkey,
            rev: &e.rev,
            payload: &e.payload,
        })
        .collect()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let shape = args.next().unwrap_or_else(|| "random".into());
    let iters: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(50);
    let events = match shape.as_str() {
        "zero" => bench_events(4096, BenchPayload::Empty),
        "identical" => bench_events(4096, BenchPayload::Identical),
        "mix" => datagen::segment_mix::realistic_mix(4096),
        _ => bench_events(4096, BenchPayload::Random),
    };
    let events = refs(&events);
    let mut body = Vec::new();
    encode_columns(&events, &mut body).expect("valid events");
    let mut frame = Vec::new();
    Compressor::new()
        .expect("zstd")
        .compress_append(&body, &mut frame)
        .expect("compresses");
    let mut zd = Decompressor::new().expect("zstd");
    let mode = args.next();
    if mode.as_deref() == Some("columns") {
        // The body decode alone (`segment.decode_columns`), reused vector.
        zd.decompress_into(&frame, None, &mut body)
            .expect("frame decodes");
        let mut out = Vec::new();
        let start = std::time::Instant::now();
        for _ in 0..iters {
            decode_columns_into(std::hint::black_box(&body), &mut out).expect("body decodes");
        }
        let per = start.elapsed().as_secs_f64() / iters as f64;
        assert_eq!(out, events);
        println!(
            "{shape} columns: {:.2} us/block, {:.2} M rows/s",
            per * 1e6,
            events.len() as f64 / per / 1e6
        );
        return;
    }
    if mode.as_deref() == Some("zstd") {
        // The zstd half of `segment.decode_block` alone (checksum verified).
        let start = std::time::Instant::now();
        for _ in 0..iters {
            zd.decompress_into(std::hint::black_box(&frame), None, &mut body)
                .expect("frame decodes");
        }
        let per = start.elapsed().as_secs_f64() / iters as f64;
        println!(
            "{shape} zstd: {:.2} us/block, {:.2} M rows/s",
            per * 1e6,
            events.len() as f64 / per / 1e6
        );
        return;
    }
    let mut total = 0usize;
    let start = std::time::Instant::now();
    for _ in 0..iters {
        zd.decompress_into(std::hint::black_box(&frame), None, &mut body)
            .expect("frame decodes");
        // As `segment.decode_block` times it: a new vector of borrowed events.
        let out = decode_columns(&body).expect("body decodes");
        total += std::hint::black_box(out).len();
    }
    let per = start.elapsed().as_secs_f64() / iters as f64;
    assert_eq!(decode_columns(&body).expect("body decodes"), events);
    println!(
        "{shape}: {total} events decoded, frame {} bytes, body {} bytes, {:.1} us/block, {:.2} M rows/s",
        frame.len(),
        body.len(),
        per * 1e6,
        events.len() as f64 / per / 1e6
    );
}
