//! Readers: `segment.open` (checked / unchecked, open + close),
//! `segment.read_block` (one sealed block) and `segment.bloom_load` (one
//! per-block bloom). Files are written and sealed once, in setup.

use std::hint::black_box;
use std::path::{Path, PathBuf};

use benches::target::BenchTarget;
use criterion::Throughput;
use datagen::segment::{SegEvent, distinct_did_events, ingest_events};
use segment::{BlockBuf, Segment, Writer, WriterOptions};

use crate::refs;

/// Registers the reader groups.
pub fn run(target: &mut BenchTarget, dir: &Path) {
    open(target, dir);
    read_block(target, dir);
    bloom_load(target, dir);
}

/// Writes and seals `events` in blocks of `per_block`.
fn sealed(dir: &Path, name: &str, events: &[SegEvent], per_block: usize) -> PathBuf {
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path);
    let mut w = Writer::create(
        &path,
        WriterOptions {
            block_events: per_block,
            sync: false,
        },
    )
    .expect("create");
    for e in &refs(events) {
        w.append_live(e).expect("append");
    }
    w.seal().expect("seal");
    path
}

fn open(target: &mut BenchTarget, dir: &Path) {
    let events = ingest_events(1024);
    let path = sealed(dir, "open-1024x4.jss", &events, 256);
    let mut group = target.group("segment.open");
    type Open = fn(&Path) -> segment::Result<Segment>;
    let opens: [(&str, Open); 2] = [
        ("checked", |p| Segment::open(p)),
        ("unchecked", |p| Segment::open_unchecked(p)),
    ];
    for (name, open) in opens {
        let seg = open(&path).expect("opens");
        assert_eq!(seg.header().event_count, 1024);
        assert_eq!(seg.block_count(), 4);
        assert_eq!(seg.events().expect("events").len(), 1024, "{name}");
        group.bench(name, "1024x4blocks", |b| {
            b.iter(|| {
                let seg = open(black_box(&path)).expect("opens");
                debug_assert_eq!(seg.block_count(), 4);
                seg.header().event_count
            })
        });
    }
    group.finish();
}

fn read_block(target: &mut BenchTarget, dir: &Path) {
    let events = ingest_events(4096);
    let path = sealed(dir, "read-4096.jss", &events, 4096);
    let seg = Segment::open(&path).expect("opens");
    assert_eq!(seg.block_count(), 1);
    let expected = refs(&events);
    let mut group = target.group("segment.read_block");
    group.throughput(Throughput::Elements(4096));
    let mut buf = BlockBuf::new().expect("buffers");
    group.bench("ours", "4096", |b| {
        b.iter(|| {
            let evs = seg.read_block(black_box(0), &mut buf).expect("block reads");
            debug_assert_eq!(evs.len(), 4096);
            evs.len()
        })
    });
    assert_eq!(seg.read_block(0, &mut buf).expect("block reads"), expected);
    group.finish();
}

fn bloom_load(target: &mut BenchTarget, dir: &Path) {
    const PER_BLOCK: usize = 256;
    let events = distinct_did_events(16 * PER_BLOCK);
    let path = sealed(dir, "bloom-16blocks.jss", &events, PER_BLOCK);
    let seg = Segment::open(&path).expect("opens");
    assert_eq!(seg.block_count(), 16);
    let mut group = target.group("segment.bloom_load");
    let mut i = 0usize;
    group.bench("ours", "16blocks", |b| {
        b.iter(|| {
            let bloom = seg.block_bloom(black_box(i % 16)).expect("bloom loads");
            i = i.wrapping_add(1);
            bloom.num_blocks()
        })
    });
    for (k, block) in events.chunks(PER_BLOCK).enumerate() {
        let bloom = seg.block_bloom(k).expect("bloom loads");
        assert!(
            block.iter().all(|e| bloom.contains(e.did.as_bytes())),
            "block {k}"
        );
        assert_eq!(bloom.count(), PER_BLOCK as u64);
    }
    group.finish();
}
