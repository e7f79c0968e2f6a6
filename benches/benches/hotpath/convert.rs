//! The convert crate's groups: JSON <-> protobuf conversions, dispatch-line
//! parsing, inline payloads, BLOB cells, `merge_context` and record sets.
//!
//! Inputs come from datagen's bounded sample (seed 20260602: the first 8000
//! records, 8000 SQL, 4000 object, 4000 REST lines) and are built before
//! any timing. One iteration of a whole-batch group converts the whole
//! batch; the tier names the batch (`8k`, `4k`). Every timed closure runs
//! under `iter_batched` with the same shape: the input is handed in from
//! outside the timing (a fresh clone when the routine consumes it — the
//! clone path gets the same fresh clone and hands it back untouched), and
//! the outputs are returned so their drop is not timed either. What is
//! timed is the conversion itself, including, for a consuming routine, the
//! freeing of the input it consumed. Results are checked outside the timed
//! closures: clone and move outputs equal, round trips equal, counts and
//! checksums as expected. The warm-input `convert.json_to_struct` rows
//! (tier `<n>.warm`) time slices of the batch themselves (`iter_custom`,
//! see [`warm_slices`]), each slice's clone and every output's drop still
//! outside the timing.
//!
//! Throughput is the bytes of the input lines, except
//! `codec.object_bytes_from_json` / `codec.base64_cell` (decoded payload
//! bytes), `convert.merge_context` (1 element = one merge) and
//! `convert.rows_to_record_set` (elements = rows).

use std::hint::black_box;
use std::time::{Duration, Instant};

use ::convert::prost_types::Struct;
use ::convert::{InlinePayload, RecordSetMode};
use benches::config::Preset;
use benches::registry::count_tier;
use benches::target::{BenchTarget, Group};
use criterion::{BatchSize, SamplingMode, Throughput};
use datagen::hotpath::Sample;
use serde_json::{Map, Value};

use benches::convert_inputs::{merge_inputs, record_table};

/// Records per slice in the warm-input `convert.json_to_struct` rows: about
/// 1.5 MB of parsed input, which stays in cache from its cloning to its
/// conversion.
const WARM_SLICE: usize = 256;

/// Sampling for a group whose iteration converts a whole batch (ms each):
/// flat sampling, few samples, so the full preset stays within budget.
pub fn tune_batch(group: &mut Group<'_>, preset: Preset) {
    let c = group.criterion();
    c.sampling_mode(SamplingMode::Flat);
    match preset {
        Preset::Full => {
            c.sample_size(15)
                .warm_up_time(Duration::from_millis(400))
                .measurement_time(Duration::from_millis(1800));
        }
        Preset::Quick => {
            c.sample_size(10)
                .warm_up_time(Duration::from_millis(100))
                .measurement_time(Duration::from_millis(300));
        }
    }
}

/// Benchmarks `convert` over every item of `items`: one iteration converts
/// the whole batch; the outputs are collected and dropped outside the timing.
fn bench_batch<T, R>(
    group: &mut Group<'_>,
    implementation: &str,
    tier: &str,
    items: &[T],
    convert: impl Fn(&T) -> R,
) {
    group.bench(implementation, tier, |b| {
        b.iter_batched(
            || (),
            |()| black_box(items).iter().map(&convert).collect::<Vec<R>>(),
            BatchSize::PerIteration,
        );
    });
}

fn bytes_of(lines: &[String]) -> u64 {
    lines.iter().map(|l| l.len() as u64).sum()
}

fn object_of(line: &str) -> Map<String, Value> {
    match serde_json::from_str(line) {
        Ok(Value::Object(map)) => map,
        other => panic!("sample record is not an object: {other:?}"),
    }
}

/// Registers the convert groups.
pub fn run(target: &mut BenchTarget, sample: &Sample) {
    let preset = target.preset();
    let records: Vec<Map<String, Value>> = sample.records.iter().map(|l| object_of(l)).collect();
    let record_bytes = bytes_of(&sample.records);
    let tier = count_tier(records.len());
    struct_to_json(target, preset, &records, record_bytes, &tier);
    json_to_struct(target, preset, &records, record_bytes, &tier);
    json_to_prost_value(target, preset, &records, record_bytes, &tier);
    parse_sql(target, preset, &sample.sql);
    parse_object(target, preset, &sample.object);
    parse_rest(target, preset, &sample.rest);
    let payloads: Vec<InlinePayload> = sample
        .object
        .iter()
        .filter_map(|l| ::convert::parse_object_dispatch(l).ok()?.payload)
        .collect();
    assert_eq!(
        payloads.len(),
        sample.object.len(),
        "every object line has a payload"
    );
    let decoded = object_bytes(target, preset, &payloads);
    base64_cell(target, preset, &decoded);
    merge_context(target, preset);
    rows_to_record_set(target, preset, &records);
}

fn struct_to_json(
    target: &mut BenchTarget,
    preset: Preset,
    records: &[Map<String, Value>],
    bytes: u64,
    tier: &str,
) {
    let structs: Vec<Struct> = records.iter().map(::convert::json_to_struct).collect();
    let mut group = target.group("convert.struct_to_json");
    tune_batch(&mut group, preset);
    group.throughput(Throughput::Bytes(bytes));
    let last: Vec<_> = structs.iter().map(::convert::struct_to_json).collect();
    bench_batch(
        &mut group,
        "ours",
        tier,
        &structs,
        ::convert::struct_to_json,
    );
    group.finish();
    // Verified outside the timing: the read gives back the parsed records.
    assert_eq!(last.len(), records.len());
    for (json, record) in last.iter().zip(records) {
        assert_eq!(
            json.as_object(),
            Some(record),
            "struct_to_json does not round-trip"
        );
    }
}

fn json_to_struct(
    target: &mut BenchTarget,
    preset: Preset,
    records: &[Map<String, Value>],
    bytes: u64,
    tier: &str,
) {
    let input: Vec<Map<String, Value>> = records.to_vec();
    // Both rows call the batch entry points (`json_to_structs`,
    // `json_into_structs`); the move one looks ahead (convert::batch).
    let mut group = target.group("convert.json_to_struct");
    tune_batch(&mut group, preset);
    group.throughput(Throughput::Bytes(bytes));
    let cloned = ::convert::json_to_structs(&input);
    let moved = ::convert::json_into_structs(input.clone());
    group.bench("clone", tier, |b| {
        // Same shape as `move`: a fresh clone of the input comes in from
        // outside the timing; `clone` borrows it and hands it back, so its
        // drop is not timed.
        b.iter_batched(
            || input.clone(),
            |maps| {
                let out = ::convert::json_to_structs(black_box(&maps));
                (maps, out)
            },
            BatchSize::PerIteration,
        );
    });
    group.bench("move", tier, |b| {
        b.iter_batched(
            || input.clone(),
            |maps| ::convert::json_into_structs(black_box(maps)),
            BatchSize::PerIteration,
        );
    });
    // The same conversions with warm input (tier `<n>.warm`): each slice of
    // WARM_SLICE records is cloned (untimed) right before it is converted
    // (timed), as a gateway converts the rows it has just parsed; the
    // iteration's time is the sum of the slices' conversions. With the
    // whole batch cloned up front (the rows above) the ~48 MB input is out
    // of cache when it is read, and reading it costs both paths the same.
    let warm = format!("{tier}.warm");
    group.bench("clone", &warm, |b| {
        // Hands the slice back with its output, so its drop is not timed.
        warm_slices(b, &input, &cloned, |maps| {
            let out = ::convert::json_to_structs(&maps);
            (out, maps)
        })
    });
    group.bench("move", &warm, |b| {
        warm_slices(b, &input, &cloned, |maps| {
            (::convert::json_into_structs(maps), ())
        })
    });
    group.finish();
    assert_eq!(cloned.len(), records.len());
    assert!(
        cloned == moved,
        "json_to_struct clone and move outputs differ"
    );
    let per_record: Vec<Struct> = records.iter().map(::convert::json_to_struct).collect();
    assert!(
        cloned == per_record,
        "the batch conversion differs from the per-record one"
    );
}

/// Times `convert` over the input in slices of [`WARM_SLICE`] records,
/// each cloned (untimed) right before its conversion; what `convert`
/// returns (the Structs, and anything else to drop) is dropped after the
/// iteration, outside the timing. The first iteration's Structs are
/// checked against `expected` (untimed).
fn warm_slices<K>(
    b: &mut criterion::Bencher<'_>,
    input: &[Map<String, Value>],
    expected: &[Struct],
    convert: impl Fn(Vec<Map<String, Value>>) -> (Vec<Struct>, K),
) {
    let mut verified = false;
    b.iter_custom(|iters| {
        let mut total = Duration::ZERO;
        for _ in 0..iters {
            let mut kept = Vec::with_capacity(input.len().div_ceil(WARM_SLICE));
            for slice in input.chunks(WARM_SLICE) {
                let maps = slice.to_vec();
                let start = Instant::now();
                let k = convert(black_box(maps));
                total += start.elapsed();
                kept.push(k);
            }
            if !verified {
                assert!(
                    kept.iter().flat_map(|(out, _)| out).eq(expected),
                    "json_to_struct warm-slice output differs from the whole-batch conversion"
                );
                verified = true;
            }
            drop(black_box(kept));
        }
        total
    });
}

fn json_to_prost_value(
    target: &mut BenchTarget,
    preset: Preset,
    records: &[Map<String, Value>],
    bytes: u64,
    tier: &str,
) {
    let values: Vec<Value> = records.iter().cloned().map(Value::Object).collect();
    let mut group = target.group("convert.json_to_prost_value");
    tune_batch(&mut group, preset);
    group.throughput(Throughput::Bytes(bytes));
    let last: Vec<_> = values.iter().map(::convert::json_to_prost_value).collect();
    bench_batch(
        &mut group,
        "ours",
        tier,
        &values,
        ::convert::json_to_prost_value,
    );
    group.finish();
    for (v, json) in last.iter().zip(&values) {
        assert_eq!(
            &::convert::prost_value_to_json(v),
            json,
            "json_to_prost_value does not round-trip"
        );
    }
}

fn parse_sql(target: &mut BenchTarget, preset: Preset, lines: &[String]) {
    let mut group = target.group("convert.parse_sql_dispatch");
    tune_batch(&mut group, preset);
    group.throughput(Throughput::Bytes(bytes_of(lines)));
    let parsed: Vec<_> = lines
        .iter()
        .map(|l| ::convert::parse_sql_dispatch(l))
        .collect();
    bench_batch(&mut group, "ours", &count_tier(lines.len()), lines, |l| {
        ::convert::parse_sql_dispatch(l)
    });
    group.finish();
    let params: usize = parsed
        .iter()
        .map(|r| {
            r.as_ref()
                .map(|d| d.params.len())
                .expect("every sample SQL line parses")
        })
        .sum();
    let expected: usize = lines
        .iter()
        .map(|l| {
            let map = object_of(l);
            match map.get("params").or(map.get("parameters")) {
                Some(Value::Array(p)) => p.len(),
                _ => 0,
            }
        })
        .sum();
    assert_eq!(params, expected, "parse_sql_dispatch lost parameters");
}

fn parse_object(target: &mut BenchTarget, preset: Preset, lines: &[String]) {
    let mut group = target.group("convert.parse_object_dispatch");
    tune_batch(&mut group, preset);
    group.throughput(Throughput::Bytes(bytes_of(lines)));
    let parsed: Vec<_> = lines
        .iter()
        .map(|l| ::convert::parse_object_dispatch(l))
        .collect();
    let tier = count_tier(lines.len());
    // Baseline: the serde visitor alone (the reference the scanner falls
    // back to; what `ours` was before the scanner).
    let visited: Vec<_> = lines
        .iter()
        .map(|l| ::convert::bench_internals::parse_object_dispatch_visitor(l).ok())
        .collect();
    bench_batch(&mut group, "visitor", &tier, lines, |l| {
        ::convert::bench_internals::parse_object_dispatch_visitor(l)
    });
    // Ours: the single-pass scanner (serde visitor only for declined lines).
    bench_batch(&mut group, "ours", &tier, lines, |l| {
        ::convert::parse_object_dispatch(l)
    });
    group.finish();
    assert!(
        parsed
            .iter()
            .map(|r| r.as_ref().ok())
            .eq(visited.iter().map(Option::as_ref)),
        "parse_object_dispatch and the visitor disagree"
    );
    for (r, line) in parsed.iter().zip(lines) {
        let d = r.as_ref().expect("every sample object line parses");
        let map = object_of(line);
        let bucket = map
            .get("bucket")
            .or(map.get("container"))
            .and_then(Value::as_str);
        assert_eq!(bucket, Some(d.bucket.as_str()));
        let payload = d.payload.as_ref().map(|p| p.data.as_str());
        assert_eq!(
            payload,
            map.get(d.payload.as_ref().map_or("", |p| p.field))
                .and_then(Value::as_str)
        );
    }
}

fn parse_rest(target: &mut BenchTarget, preset: Preset, lines: &[String]) {
    let mut group = target.group("convert.parse_rest_dispatch");
    tune_batch(&mut group, preset);
    group.throughput(Throughput::Bytes(bytes_of(lines)));
    let tier = count_tier(lines.len());
    let cloned: Vec<_> = lines
        .iter()
        .map(|l| ::convert::bench_internals::parse_rest_dispatch_clone_body(l).ok())
        .collect();
    let moved_dom: Vec<_> = lines
        .iter()
        .map(|l| ::convert::parse_rest_dispatch_value(l).ok())
        .collect();
    let moved_raw: Vec<_> = lines
        .iter()
        .map(|l| ::convert::parse_rest_dispatch(l).ok())
        .collect();
    // Baseline, the reference's shape: DOM of the line, body deep-cloned.
    bench_batch(&mut group, "clone-body", &tier, lines, |l| {
        ::convert::bench_internals::parse_rest_dispatch_clone_body(l)
    });
    // Ours, body as a DOM: one pass, the body Value built in place and moved.
    bench_batch(&mut group, "move-body.dom", &tier, lines, |l| {
        ::convert::parse_rest_dispatch_value(l)
    });
    // Ours: one pass, the body validated and moved as its JSON text.
    bench_batch(&mut group, "move-body", &tier, lines, |l| {
        ::convert::parse_rest_dispatch(l)
    });
    group.finish();
    assert!(
        cloned.iter().all(Option::is_some),
        "a sample REST line fails to parse"
    );
    assert!(
        cloned == moved_dom,
        "clone-body and move-body.dom requests differ"
    );
    for (raw, dom) in moved_raw.iter().zip(&moved_dom) {
        let (Some(raw), Some(dom)) = (raw, dom) else {
            panic!("move-body and move-body.dom disagree on a line");
        };
        assert_eq!((raw.method, &raw.path), (dom.method, &dom.path));
        assert_eq!(
            raw.body_value().ok().as_ref(),
            Some(&dom.body),
            "move-body body differs"
        );
    }
}

fn object_bytes(
    target: &mut BenchTarget,
    preset: Preset,
    payloads: &[InlinePayload],
) -> Vec<Vec<u8>> {
    let decoded: Vec<Vec<u8>> = payloads
        .iter()
        .map(|p| ::convert::object_bytes_from_json(p).expect("sample payload decodes"))
        .collect();
    let total: usize = decoded.iter().map(Vec::len).sum();
    let checksum = decoded
        .iter()
        .fold(0u32, |acc, d| acc ^ codec::crc32::checksum(d));
    let mut group = target.group("codec.object_bytes_from_json");
    tune_batch(&mut group, preset);
    group.throughput(Throughput::Bytes(total as u64));
    let last: Vec<_> = payloads
        .iter()
        .map(::convert::object_bytes_from_json)
        .collect();
    bench_batch(
        &mut group,
        "ours",
        &count_tier(payloads.len()),
        payloads,
        ::convert::object_bytes_from_json,
    );
    group.finish();
    let again = last
        .iter()
        .map(|r| r.as_ref().map(|d| codec::crc32::checksum(d)).unwrap_or(0))
        .fold(0, |a, c| a ^ c);
    assert_eq!(again, checksum, "object_bytes_from_json drifted");
    decoded
}

fn base64_cell(target: &mut BenchTarget, preset: Preset, payloads: &[Vec<u8>]) {
    let total: usize = payloads.iter().map(Vec::len).sum();
    let mut group = target.group("codec.base64_cell");
    tune_batch(&mut group, preset);
    group.throughput(Throughput::Bytes(total as u64));
    let last: Vec<_> = payloads.iter().map(|p| ::convert::base64_cell(p)).collect();
    bench_batch(
        &mut group,
        "ours",
        &count_tier(payloads.len()),
        payloads,
        |p| ::convert::base64_cell(p),
    );
    group.finish();
    for (cell, bytes) in last.iter().zip(payloads) {
        assert_eq!(
            ::convert::base64_cell_bytes(cell).as_deref(),
            Some(&bytes[..]),
            "base64_cell does not decode back"
        );
    }
}

fn merge_context(target: &mut BenchTarget, preset: Preset) {
    let (wire, auth) = merge_inputs();
    let expected = ::convert::merge_context(wire.clone(), &auth);
    assert_eq!(&*expected.tenant, "tenant-007");
    assert_eq!(expected.user, "alice@example.org");
    assert_eq!(expected.routing_policy, "nearest-healthy");
    let mut group = target.group("convert.merge_context");
    if preset == Preset::Quick {
        group
            .criterion()
            .measurement_time(Duration::from_millis(300));
    }
    group.throughput(Throughput::Elements(1));
    let last = Some(::convert::merge_context(wire.clone(), &auth));
    group.bench("ours", "", |b| {
        b.iter_batched(
            || wire.clone(),
            |w| ::convert::merge_context(black_box(w), black_box(&auth)),
            BatchSize::SmallInput,
        );
    });
    group.finish();
    assert_eq!(last, Some(expected), "merge_context drifted");
}

fn rows_to_record_set(target: &mut BenchTarget, preset: Preset, records: &[Map<String, Value>]) {
    let shapes = [(100usize, 8usize), (1000, 32)];
    let tables: Vec<_> = shapes
        .iter()
        .map(|&(r, c)| record_table(records, r, c))
        .collect();
    let mut group = target.group("convert.rows_to_record_set");
    tune_batch(&mut group, preset);
    for (&(rows, cols), (columns, table)) in shapes.iter().zip(&tables) {
        assert_eq!(table.len(), rows);
        group.throughput(Throughput::Elements(rows as u64));
        let tier = format!("{rows}x{cols}");
        let mut outputs = Vec::new();
        for (name, mode) in [
            ("json-only", RecordSetMode::JsonOnly),
            ("json-and-rows", RecordSetMode::JsonAndRows),
        ] {
            group.bench(name, &tier, |b| {
                b.iter_batched(
                    || (),
                    |()| ::convert::rows_to_record_set(black_box(columns), black_box(table), mode),
                    BatchSize::SmallInput,
                );
            });
            let set =
                ::convert::rows_to_record_set(columns, table, mode).expect("sample rows convert");
            assert_eq!(set.records.len(), rows);
            outputs.push(set);
        }
        // Both modes write the same records; json-and-rows has one row of
        // `cols` values per record, and every record parses with its keys.
        assert_eq!(outputs[0].records, outputs[1].records);
        assert!(outputs[1].rows.iter().all(|r| r.values.len() == cols));
        for record in &outputs[0].records {
            let v: Value = serde_json::from_str(record).expect("a record is JSON");
            assert_eq!(v.as_object().map(Map::len), Some(cols));
        }
    }
    group.finish();
}
