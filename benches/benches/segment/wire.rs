//! `segment.wire_encode`: one archived event to a Jetstream v1 line, CID
//! included. The event is the golden like line of the vendored corpus,
//! re-encoded as DAG-CBOR; the output is checked against that line.

use std::hint::black_box;

use benches::target::BenchTarget;
use criterion::Throughput;
use segment::wire::{decode_v1, encode_v1};

const GOLDEN: &str = include_str!("../../../crates/segment/tests/corpus/golden_v1.jsonl");

/// Registers the wire group.
pub fn run(target: &mut BenchTarget) {
    let line = GOLDEN
        .lines()
        .find(|l| l.contains("\"collection\":\"app.bsky.feed.like\""))
        .expect("golden like line");
    let event = decode_v1(line, 1).expect("golden like decodes");
    let expected: serde_json::Value = serde_json::from_str(line).expect("json");
    let mut group = target.group("segment.wire_encode");
    group.throughput(Throughput::Elements(1));
    let mut out = String::new();
    let ev = event.as_ref();
    group.bench("v1", "like", |b| {
        b.iter(|| {
            out.clear();
            let sent = encode_v1(black_box(&ev), &mut out).expect("encodes");
            debug_assert!(sent);
        })
    });
    out.clear();
    assert!(encode_v1(&ev, &mut out).expect("encodes"));
    let got: serde_json::Value = serde_json::from_str(&out).expect("our line is JSON");
    assert_eq!(got, expected, "wire_encode/v1/like");
    group.finish();
}
