//! `segment.compact_deletes`: delete compaction of 8 sealed segments of 512
//! events (every 10th event deletes the record created 5 events earlier),
//! rewriting the affected segments with temp file, fsync and rename. Fresh
//! copies of the originals are made before each iteration, untimed.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use benches::target::BenchTarget;
use criterion::{SamplingMode, Throughput};
use datagen::segment::compaction_events;
use segment::{Segment, Writer, WriterOptions};

use crate::refs;

const SEGMENTS: usize = 8;
const PER: usize = 512;

/// Registers the compaction group.
pub fn run(target: &mut BenchTarget, dir: &Path) {
    let events = compaction_events(SEGMENTS * PER);
    let originals: Vec<PathBuf> = refs(&events)
        .chunks(PER)
        .enumerate()
        .map(|(i, chunk)| {
            let path = dir.join(format!("compact-orig-{i}.jss"));
            let _ = std::fs::remove_file(&path);
            let opts = WriterOptions {
                block_events: 128,
                sync: false,
            };
            let mut w = Writer::create(&path, opts).expect("create");
            for e in chunk {
                w.append_live(e).expect("append");
            }
            w.seal().expect("seal");
            path
        })
        .collect();
    let work: Vec<PathBuf> = (0..SEGMENTS)
        .map(|i| dir.join(format!("compact-work-{i}.jss")))
        .collect();
    let reset = || {
        for (o, w) in originals.iter().zip(&work) {
            std::fs::copy(o, w).expect("copy segment");
        }
    };
    let mut group = target.group("segment.compact_deletes");
    group
        .criterion()
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10);
    group.throughput(Throughput::Elements((SEGMENTS * PER) as u64));
    let mut last = None;
    group.bench("ours", "8x512", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                reset();
                let start = Instant::now();
                let stats = segment::compact::compact_deletes(&work).expect("compaction");
                total += start.elapsed();
                last = Some(stats);
            }
            total
        })
    });
    let stats = match last {
        Some(s) => s,
        None => {
            reset();
            segment::compact::compact_deletes(&work).expect("compaction")
        }
    };
    let n = (SEGMENTS * PER) as u64;
    assert_eq!(stats.dropped, n / 10, "compact_deletes: dropped");
    assert_eq!(stats.kept, n - n / 10, "compact_deletes: kept");
    let kept: u64 = work
        .iter()
        .map(|p| {
            Segment::open(p)
                .expect("compacted segment opens checked")
                .header()
                .event_count as u64
        })
        .sum();
    assert_eq!(kept, n - n / 10, "compact_deletes: events on disk");
    for p in originals.iter().chain(&work) {
        let _ = std::fs::remove_file(p);
    }
    group.finish();
}
