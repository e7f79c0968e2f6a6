//! Allocation profile of the convert hot paths over the datagen bench
//! sample (seed 20260602), with dhat as the global allocator.
//!
//! ```text
//! cargo run --release --features bench-internals --example dhat_hotpath
//! ```
//!
//! (from the workspace root; `-p benches` may be added). Prints, per
//! conversion over its whole batch: allocator blocks, bytes, peak live
//! bytes above the start, and allocations per item; the clone-vs-move block
//! deltas; the read+write+parse+decode pass per record for the reference
//! pipeline and ours; and the allocations of one `merge_context`. Writes
//! `dhat-heap.json` (view it with dhat's viewer) in the current directory.
//!
//! Counting: every `alloc`, `alloc_zeroed` and `realloc` call is one block
//! (a `realloc` may move, so it counts as an allocation), as dhat counts
//! them. The counters wrap dhat's allocator, so they can be read and reset
//! per phase; dhat's own totals for the whole run are printed at the end.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use benches::convert_inputs::{merge_inputs, record_table};
use convert::prost_types::Struct;
use convert::prost_types::value::Kind;
use serde_json::{Map, Value};

/// dhat's allocator with resettable counters around it.
struct Counting;

static BLOCKS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);
static LIVE: AtomicU64 = AtomicU64::new(0);
static PEAK: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// Set while dhat's allocator runs: dhat allocates for its own
    /// bookkeeping through the global allocator, and those blocks are not
    /// the program's.
    static INSIDE: Cell<bool> = const { Cell::new(false) };
}

/// Runs one forwarded allocator call; `true` when it is the program's own
/// (not dhat's bookkeeping nested inside another call).
fn outermost<T>(call: impl FnOnce() -> T) -> (T, bool) {
    let outer = INSIDE.with(|inside| !inside.replace(true));
    let result = call();
    if outer {
        INSIDE.with(|inside| inside.set(false));
    }
    (result, outer)
}

fn grew(size: usize) {
    BLOCKS.fetch_add(1, Relaxed);
    BYTES.fetch_add(size as u64, Relaxed);
    let live = LIVE.fetch_add(size as u64, Relaxed) + size as u64;
    PEAK.fetch_max(live, Relaxed);
}

// SAFETY: every call is forwarded unchanged to dhat's allocator; the
// wrapper only updates atomic counters.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let (p, own) = outermost(|| unsafe { dhat::Alloc.alloc(layout) });
        if own && !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let (p, own) = outermost(|| unsafe { dhat::Alloc.alloc_zeroed(layout) });
        if own && !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        let ((), own) = outermost(|| unsafe { dhat::Alloc.dealloc(ptr, layout) });
        if own {
            LIVE.fetch_sub(layout.size() as u64, Relaxed);
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let (p, own) = outermost(|| unsafe { dhat::Alloc.realloc(ptr, layout, new_size) });
        if own && !p.is_null() {
            LIVE.fetch_sub(layout.size() as u64, Relaxed);
            grew(new_size);
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// What one phase allocated.
#[derive(Clone, Copy)]
struct Phase {
    blocks: u64,
    bytes: u64,
    peak: u64,
}

/// Runs `f`, keeps its output alive until the counters are read (so the
/// peak includes it), then drops it.
fn measure<T>(f: impl FnOnce() -> T) -> Phase {
    let (b0, y0, live0) = (
        BLOCKS.load(Relaxed),
        BYTES.load(Relaxed),
        LIVE.load(Relaxed),
    );
    PEAK.store(live0, Relaxed);
    let out = black_box(f());
    let phase = Phase {
        blocks: BLOCKS.load(Relaxed) - b0,
        bytes: BYTES.load(Relaxed) - y0,
        peak: PEAK.load(Relaxed).saturating_sub(live0),
    };
    drop(out);
    phase
}

fn row(name: &str, items: usize, p: Phase) {
    println!(
        "{name:<44} {items:>6} {:>10} {:>13} {:>12} {:>9.2}",
        p.blocks,
        p.bytes,
        p.peak,
        p.blocks as f64 / items as f64
    );
}

fn object_of(line: &str) -> Map<String, Value> {
    match serde_json::from_str(line) {
        Ok(Value::Object(map)) => map,
        other => panic!("sample record is not an object: {other:?}"),
    }
}

fn main() {
    let _profiler = dhat::Profiler::new_heap();
    let sample = datagen::hotpath::load_sample();
    let records: Vec<Map<String, Value>> = sample.records.iter().map(|l| object_of(l)).collect();
    let values: Vec<Value> = records.iter().cloned().map(Value::Object).collect();
    let structs: Vec<Struct> = records.iter().map(convert::json_to_struct).collect();
    let payloads: Vec<convert::InlinePayload> = sample
        .object
        .iter()
        .filter_map(|l| convert::parse_object_dispatch(l).ok()?.payload)
        .collect();
    let decoded: Vec<Vec<u8>> = payloads
        .iter()
        .filter_map(|p| convert::object_bytes_from_json(p).ok())
        .collect();
    let n = records.len();

    println!(
        "atbench dhat_hotpath: datagen sample ({} source)",
        sample.source.as_str()
    );
    println!(
        "{:<44} {:>6} {:>10} {:>13} {:>12} {:>9}",
        "conversion (whole batch)", "items", "blocks", "bytes", "peak bytes", "allocs/item"
    );
    row(
        "convert.struct_to_json",
        n,
        measure(|| {
            structs
                .iter()
                .map(convert::struct_to_json)
                .collect::<Vec<_>>()
        }),
    );
    let clone = measure(|| {
        records
            .iter()
            .map(convert::json_to_struct)
            .collect::<Vec<_>>()
    });
    row("convert.json_to_struct/clone", n, clone);
    let input = records.clone();
    let moved = measure(|| {
        input
            .into_iter()
            .map(convert::json_into_struct)
            .collect::<Vec<_>>()
    });
    row("convert.json_to_struct/move", n, moved);
    row(
        "convert.json_to_prost_value",
        n,
        measure(|| {
            values
                .iter()
                .map(convert::json_to_prost_value)
                .collect::<Vec<_>>()
        }),
    );
    row(
        "convert.parse_sql_dispatch",
        sample.sql.len(),
        measure(|| {
            sample
                .sql
                .iter()
                .map(|l| convert::parse_sql_dispatch(l))
                .collect::<Vec<_>>()
        }),
    );
    row(
        "convert.parse_object_dispatch",
        sample.object.len(),
        measure(|| {
            sample
                .object
                .iter()
                .map(|l| convert::parse_object_dispatch(l))
                .collect::<Vec<_>>()
        }),
    );
    let rest_clone = measure(|| {
        sample
            .rest
            .iter()
            .map(|l| convert::bench_internals::parse_rest_dispatch_clone_body(l))
            .collect::<Vec<_>>()
    });
    row(
        "convert.parse_rest_dispatch/clone-body",
        sample.rest.len(),
        rest_clone,
    );
    let rest_dom = measure(|| {
        sample
            .rest
            .iter()
            .map(|l| convert::parse_rest_dispatch_value(l))
            .collect::<Vec<_>>()
    });
    row(
        "convert.parse_rest_dispatch/move-body.dom",
        sample.rest.len(),
        rest_dom,
    );
    let rest_move = measure(|| {
        sample
            .rest
            .iter()
            .map(|l| convert::parse_rest_dispatch(l))
            .collect::<Vec<_>>()
    });
    row(
        "convert.parse_rest_dispatch/move-body",
        sample.rest.len(),
        rest_move,
    );
    row(
        "codec.object_bytes_from_json",
        payloads.len(),
        measure(|| {
            payloads
                .iter()
                .map(convert::object_bytes_from_json)
                .collect::<Vec<_>>()
        }),
    );
    row(
        "codec.base64_cell",
        decoded.len(),
        measure(|| {
            decoded
                .iter()
                .map(|d| convert::base64_cell(d))
                .collect::<Vec<_>>()
        }),
    );
    let (columns, table) = record_table(&records, 1000, 32);
    for (name, mode) in [
        (
            "convert.rows_to_record_set/json-only/1000x32",
            convert::RecordSetMode::JsonOnly,
        ),
        (
            "convert.rows_to_record_set/json-and-rows/1000x32",
            convert::RecordSetMode::JsonAndRows,
        ),
    ] {
        row(
            name,
            table.len(),
            measure(|| convert::rows_to_record_set(&columns, &table, mode)),
        );
    }
    println!();
    println!(
        "clone vs move blocks: json_to_struct {} - {} = {} fewer with move ({:.2} vs {:.2} per record); \
         parse_rest_dispatch clone-body {} - move-body.dom {} = {} fewer ({:.2} vs {:.2} per line; move-body {:.2})",
        clone.blocks,
        moved.blocks,
        clone.blocks as i64 - moved.blocks as i64,
        clone.blocks as f64 / n as f64,
        moved.blocks as f64 / n as f64,
        rest_clone.blocks,
        rest_dom.blocks,
        rest_clone.blocks as i64 - rest_dom.blocks as i64,
        rest_clone.blocks as f64 / sample.rest.len() as f64,
        rest_dom.blocks as f64 / sample.rest.len() as f64,
        rest_move.blocks as f64 / sample.rest.len() as f64,
    );

    println!();
    println!(
        "read+write+parse+decode pass, per record line (8000): parse the line, write it as a Struct, read it back as JSON, decode its payload_b64"
    );
    let reference = measure(|| {
        let mut sink = 0usize;
        for line in &sample.records {
            let dom: Value = serde_json::from_str(line).unwrap_or(Value::Null);
            let row = dom
                .as_object()
                .map(convert::json_to_struct)
                .unwrap_or_default();
            let back = convert::struct_to_json(&row);
            let b64 = back
                .get("payload_b64")
                .and_then(Value::as_str)
                .unwrap_or("");
            sink += codec::base64::decode(b64.as_bytes())
                .map(|d| d.len())
                .unwrap_or(0);
        }
        sink
    });
    pass_row(
        "reference shape: from_str DOM, json_to_struct (clone), struct_to_json, decode",
        n,
        reference,
    );
    let fresh = measure(|| {
        let mut sink = 0usize;
        for line in &sample.records {
            let row = convert::struct_from_json_str(line).unwrap_or_default();
            let mut text = Vec::with_capacity(line.len() + 64);
            convert::write_struct_json(&row, &mut text);
            let bytes = payload_of(&row)
                .and_then(|b64| codec::base64::decode(b64.as_bytes()).ok())
                .unwrap_or_default();
            sink += text.len() + bytes.len();
        }
        sink
    });
    pass_row(
        "ours, owned per record: text->Struct, Struct->JSON text, decode",
        n,
        fresh,
    );
    let streaming = measure(|| {
        let (mut row, mut text, mut bytes) = (Struct::default(), Vec::new(), Vec::new());
        let mut sink = 0usize;
        for line in &sample.records {
            if convert::struct_from_json_str_into(line, &mut row).is_err() {
                continue;
            }
            text.clear();
            convert::write_struct_json(&row, &mut text);
            bytes.clear();
            if let Some(b64) = payload_of(&row) {
                let _ = codec::base64::decode_into(b64.as_bytes(), &mut bytes);
            }
            sink += text.len() + bytes.len();
        }
        sink
    });
    pass_row(
        "ours, streaming (per-worker Struct and buffers reused)",
        n,
        streaming,
    );
    // What a fresh Struct of a record holds by itself: the floor of any
    // owned-per-record decode.
    let owned = measure(|| {
        sample
            .records
            .iter()
            .map(|l| convert::struct_from_json_str(l).unwrap_or_default())
            .collect::<Vec<_>>()
    });
    let held = structs.iter().fold(Held::default(), |h, s| h.add_struct(s));
    verdicts(n, reference, fresh, streaming, owned, held);

    println!();
    let (wire, auth) = merge_inputs();
    const MERGES: usize = 1000;
    let wires: Vec<convert::Context> = (0..MERGES).map(|_| wire.clone()).collect();
    let merge = measure(|| {
        wires
            .into_iter()
            .map(|w| convert::merge_context(w, &auth))
            .collect::<Vec<_>>()
    });
    println!(
        "convert.merge_context: {:.2} allocations per merge (target <= 3; {} blocks over {MERGES} merges, the result vector's 1 included)",
        (merge.blocks.saturating_sub(1)) as f64 / MERGES as f64,
        merge.blocks
    );

    let stats = dhat::HeapStats::get();
    println!();
    println!(
        "dhat, whole run (setup included): {} blocks, {} bytes total, {} bytes peak; profile written to dhat-heap.json",
        stats.total_blocks, stats.total_bytes, stats.max_bytes
    );
}

fn pass_row(name: &str, n: usize, p: Phase) {
    println!(
        "  {name:<80} {:>9} blocks {:>12} bytes {:>10} peak  {:>6.2} allocs/record",
        p.blocks,
        p.bytes,
        p.peak,
        p.blocks as f64 / n as f64
    );
}

/// Heap blocks a `Struct` owns, by kind.
#[derive(Default, Clone, Copy)]
struct Held {
    keys: u64,
    strings: u64,
    lists: u64,
}

impl Held {
    fn add_struct(mut self, s: &Struct) -> Held {
        for (key, v) in &s.fields {
            self.keys += u64::from(key.capacity() > 0);
            self = self.add_value(v);
        }
        self
    }

    fn add_value(mut self, v: &convert::prost_types::Value) -> Held {
        match &v.kind {
            Some(Kind::StringValue(s)) => self.strings += u64::from(s.capacity() > 0),
            Some(Kind::ListValue(l)) => {
                self.lists += u64::from(l.values.capacity() > 0);
                self = l.values.iter().fold(self, Held::add_value);
            }
            Some(Kind::StructValue(s)) => self = self.add_struct(s),
            _ => {}
        }
        self
    }
}

/// Which pass shape meets the <= 40 allocations-per-record target, and why.
fn verdicts(n: usize, reference: Phase, fresh: Phase, streaming: Phase, owned: Phase, h: Held) {
    let per = |p: Phase| p.blocks as f64 / n as f64;
    let verdict = |p: Phase| if per(p) <= 40.0 { "MEETS" } else { "misses" };
    let (keys, strings, lists) = (
        h.keys as f64 / n as f64,
        h.strings as f64 / n as f64,
        h.lists as f64 / n as f64,
    );
    println!();
    println!("target <= 40 allocations per record (read+write+parse+decode pass):");
    println!(
        "  ours, streaming          {:>6.1}  {}  <- the gateway's shape: a worker turns each row of a stream into one reused Struct and one reused output buffer, forwards it and moves on, so it holds no row past its response",
        per(streaming),
        verdict(streaming)
    );
    println!(
        "  ours, owned per record   {:>6.1}  {}  (keeps every row as its own Struct)",
        per(fresh),
        verdict(fresh)
    );
    println!(
        "  reference shape          {:>6.1}  {}",
        per(reference),
        verdict(reference)
    );
    println!(
        "  why the owned shape cannot meet it: a fresh prost Struct of a sample record owns {:.1} heap blocks by itself \
         ({keys:.1} key Strings + {strings:.1} string values + {lists:.1} list buffers + {:.1} B-tree nodes and list growth, the remainder), \
         and the pass adds the output text and the decoded payload: ~{:.1} is the floor for one owned prost Struct per record",
        per(owned),
        per(owned) - keys - strings - lists,
        per(owned) + 2.0
    );
}

fn payload_of(row: &Struct) -> Option<&str> {
    match row.fields.get("payload_b64").and_then(|v| v.kind.as_ref()) {
        Some(Kind::StringValue(s)) => Some(s),
        _ => None,
    }
}
