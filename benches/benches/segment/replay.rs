//! `segment.cold_replay`: every consumer reads the same 4096 fan-out events
//! (64 DIDs, DAG-CBOR posts) from cursor 1 in batches of 512, through a
//! fresh (cold) archive: unchecked opens of 2 sealed segments of 4 blocks,
//! one shared block cache with single-flight decoding, each event's v1
//! line (and, for `v1-zstd`, its frame compressed with the prepared v1
//! dictionary) computed once and shared. Consumers are threads; the archive
//! open is timed. Bytes each consumer received are checked after timing.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use benches::target::BenchTarget;
use criterion::{SamplingMode, Throughput};
use datagen::segment::fanout_events;
use segment::replay::{Archive, DEFAULT_CACHE_BYTES, V1Dictionary};
use segment::{Writer, WriterOptions};

use crate::refs;

const EVENTS: usize = 4096;
const DICT: &[u8] = include_bytes!("../../../crates/segment/tests/corpus/legacy_subscribe.zdict");

/// What one consumer received: events and bytes.
fn consume(archive: &Archive, dict: Option<&V1Dictionary>) -> (usize, usize) {
    let mut cursor = 1;
    let (mut events, mut bytes) = (0, 0);
    loop {
        let mut batch = Vec::new();
        let next = archive.read_batch(cursor, &mut batch).expect("batch");
        if batch.is_empty() {
            return (events, bytes);
        }
        for s in &batch {
            match dict {
                None => {
                    bytes += s
                        .range
                        .clone()
                        .map(|i| s.block.line(i).len())
                        .sum::<usize>()
                }
                Some(d) => {
                    let frames = s.block.zstd_frames(d).expect("zstd frames");
                    bytes += frames[s.range.clone()].iter().map(Vec::len).sum::<usize>();
                }
            }
            events += s.range.len();
        }
        cursor = next;
    }
}

fn write(dir: &Path) -> Vec<PathBuf> {
    let events = fanout_events(EVENTS);
    refs(&events)
        .chunks(EVENTS / 2)
        .enumerate()
        .map(|(i, chunk)| {
            let path = dir.join(format!("replay-{i}.jss"));
            let _ = std::fs::remove_file(&path);
            let opts = WriterOptions {
                block_events: EVENTS / 8,
                sync: false,
            };
            let mut w = Writer::create(&path, opts).expect("create");
            for e in chunk {
                w.append_live(e).expect("append");
            }
            w.seal().expect("seal");
            path
        })
        .collect()
}

/// Registers the cold replay group.
pub fn run(target: &mut BenchTarget, dir: &Path) {
    let paths = write(dir);
    let dict = Arc::new(V1Dictionary::new(DICT));
    let mut group = target.group("segment.cold_replay");
    group
        .criterion()
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10);
    for (name, zstd) in [("v1", false), ("v1-zstd", true)] {
        let reference = {
            let archive = Archive::open(&paths, DEFAULT_CACHE_BYTES).expect("archive");
            consume(&archive, zstd.then_some(&*dict))
        };
        assert_eq!(reference.0, EVENTS, "cold_replay/{name}: events");
        for consumers in [1usize, 10] {
            group.throughput(Throughput::Elements((EVENTS * consumers) as u64));
            let mut received = Vec::new();
            group.bench(name, &format!("consumers-{consumers}"), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let start = Instant::now();
                        let archive =
                            Arc::new(Archive::open(&paths, DEFAULT_CACHE_BYTES).expect("archive"));
                        let handles: Vec<_> = (0..consumers)
                            .map(|_| {
                                let a = Arc::clone(&archive);
                                let d = Arc::clone(&dict);
                                std::thread::spawn(move || consume(&a, zstd.then_some(&*d)))
                            })
                            .collect();
                        received = handles
                            .into_iter()
                            .map(|h| h.join().expect("consumer"))
                            .collect();
                        total += start.elapsed();
                    }
                    total
                })
            });
            assert!(
                received.iter().all(|r| *r == reference),
                "cold_replay/{name}/consumers-{consumers}: a consumer received other bytes"
            );
        }
    }
    group.finish();
}
