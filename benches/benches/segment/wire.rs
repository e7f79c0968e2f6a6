//! `segment.wire_encode`: one archived event to a Jetstream v1 or v2 line,
//! CID included. The event is the golden like line of the vendored corpus,
//! re-encoded as DAG-CBOR; the v1 output is checked against that line, the
//! v2 output against it (minus `seq`, `cursor`, `record_cbor`) and by
//! decoding it back to the event.

use std::hint::black_box;

use benches::target::BenchTarget;
use criterion::Throughput;
use segment::wire::{decode_v1, decode_v2, encode_v1, encode_v2};

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

    group.bench("v2", "like", |b| {
        b.iter(|| {
            out.clear();
            let sent = encode_v2(black_box(&ev), &mut out).expect("encodes");
            debug_assert!(sent);
        })
    });
    out.clear();
    assert!(encode_v2(&ev, &mut out).expect("encodes"));
    assert_eq!(
        decode_v2(&out).expect("our v2 line decodes"),
        event,
        "wire_encode/v2/like"
    );
    let mut got: serde_json::Value = serde_json::from_str(&out).expect("our line is JSON");
    let o = got.as_object_mut().expect("object");
    assert_eq!(o.remove("seq"), Some(1.into()));
    assert_eq!(o.remove("cursor"), Some(1.into()));
    let b64 = o["commit"]
        .as_object_mut()
        .and_then(|c| c.remove("record_cbor"))
        .expect("record_cbor");
    assert_eq!(
        b64.as_str().map(str::len),
        Some(event.payload.len().div_ceil(3) * 4)
    );
    assert_eq!(got, expected, "wire_encode/v2/like");
    group.finish();
}
