//! `json.parse` (adjacent probe): which JSON parser the dispatch path
//! should use. Each parser turns the same sample lines (8000 SQL, 4000
//! REST, 4000 object) into its own owned DOM: `serde_json::Value`,
//! `simd_json::OwnedValue`, `sonic_rs::Value`. simd-json parses in place,
//! so it gets a copy of the lines made outside the timing; every parser's
//! DOMs are returned and dropped outside the timing. Outside the timing,
//! every parser's DOM of every line is checked to have the same top-level
//! keys as serde_json's.

use std::hint::black_box;

use benches::config::Preset;
use benches::target::BenchTarget;
use criterion::{BatchSize, Throughput};
use datagen::hotpath::Sample;
use serde_json::Value;

/// The top-level keys of a serializable DOM, through serde_json.
fn keys<T: serde::Serialize>(dom: &T) -> Vec<String> {
    match serde_json::to_value(dom) {
        Ok(Value::Object(map)) => map.keys().cloned().collect(),
        other => panic!("DOM is not an object: {other:?}"),
    }
}

/// Registers `json.parse`.
pub fn run(target: &mut BenchTarget, sample: &Sample) {
    let preset = target.preset();
    let mut group = target.group("json.parse");
    super::convert::tune_batch(&mut group, preset);
    if preset == Preset::Full {
        group.criterion().sample_size(10);
    }
    for (tier, lines) in [
        ("sql", &sample.sql),
        ("rest", &sample.rest),
        ("object", &sample.object),
    ] {
        let bytes: u64 = lines.iter().map(|l| l.len() as u64).sum();
        group.throughput(Throughput::Bytes(bytes));
        let expected: Vec<Vec<String>> = lines
            .iter()
            .map(|l| keys(&serde_json::from_str::<Value>(l).expect("sample line is JSON")))
            .collect();

        group.bench("serde_json", tier, |b| {
            b.iter_batched(
                || (),
                |()| {
                    let out: Vec<Value> = black_box(lines)
                        .iter()
                        .map(|l| serde_json::from_str(l).unwrap_or(Value::Null))
                        .collect();
                    out
                },
                BatchSize::PerIteration,
            )
        });

        let copies: Vec<Vec<u8>> = lines.iter().map(|l| l.clone().into_bytes()).collect();
        let simd_dom: Vec<_> = copies
            .iter()
            .map(|l| {
                simd_json::to_owned_value(&mut l.clone()).expect("simd-json parses the sample")
            })
            .collect();
        for (dom, want) in simd_dom.iter().zip(&expected) {
            assert_eq!(&keys(dom), want, "simd-json disagrees with serde_json");
        }
        group.bench("simd-json", tier, |b| {
            b.iter_batched(
                || copies.clone(),
                |mut input| {
                    let out: Vec<_> = black_box(&mut input)
                        .iter_mut()
                        .map(|l| simd_json::to_owned_value(l).ok())
                        .collect();
                    (input, out)
                },
                BatchSize::PerIteration,
            )
        });

        let sonic_dom: Vec<sonic_rs::Value> = lines
            .iter()
            .map(|l| sonic_rs::from_str(l).expect("sonic-rs parses the sample"))
            .collect();
        for (dom, want) in sonic_dom.iter().zip(&expected) {
            assert_eq!(&keys(dom), want, "sonic-rs disagrees with serde_json");
        }
        group.bench("sonic-rs", tier, |b| {
            b.iter_batched(
                || (),
                |()| {
                    let out: Vec<Option<sonic_rs::Value>> = black_box(lines)
                        .iter()
                        .map(|l| sonic_rs::from_str(l).ok())
                        .collect();
                    out
                },
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}
