//! Writers: `segment.append_live` (per-event appends, inline flush with
//! fsync), `segment.append_backfill` (batches of 1024, inline or pooled
//! compression) and `segment.seal`. Only the appends (and, for backfill,
//! draining the blocks in flight) are timed; file rotation is not. Each
//! bench seals and reopens (checked) what it wrote afterwards.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use benches::target::BenchTarget;
use criterion::{SamplingMode, Throughput};
use datagen::segment::{SegEvent, ingest_event, seal_events};
use segment::{Backfill, EventRef, Kind, Segment, Writer, WriterOptions};

use crate::refs;

const BLOCK: usize = 4096;
/// Blocks a file takes before the bench starts a new one (untimed).
const ROTATE_BLOCKS: u32 = 64;

/// Registers the writer groups.
pub fn run(target: &mut BenchTarget, dir: &Path) {
    append_live(target, dir);
    append_backfill(target, dir);
    seal(target, dir);
}

/// Names files `<stem>-<n>.jss` in `dir`.
struct Files {
    dir: PathBuf,
    stem: &'static str,
    n: usize,
}

impl Files {
    fn next(&mut self) -> PathBuf {
        self.n += 1;
        self.dir.join(format!("{}-{}.jss", self.stem, self.n))
    }
}

/// Seals `writer` and checks the file holds `appended` events, the last
/// of which is ingest event `last_seq - 1`.
fn verify_ingest_file(writer: Writer, appended: u64, last_seq: u64, what: &str) {
    let sealed = writer.seal().expect("seal");
    let seg = Segment::open(&sealed.path).expect("sealed file opens checked");
    assert_eq!(
        seg.header().event_count as u64,
        appended,
        "{what}: event count"
    );
    if appended > 0 {
        assert_eq!(seg.header().max_seq, last_seq, "{what}: last seq");
        let last = seg.block_count() - 1;
        let events = seg.decode_block(last).expect("last block decodes");
        let expected = ingest_event(last_seq - 1);
        let got = events.last().expect("non-empty block");
        assert_eq!(got.payload, expected.payload, "{what}: payload");
        assert_eq!(got.did, expected.did, "{what}: did");
    }
    let _ = std::fs::remove_file(&sealed.path);
}

/// The writer state a bench carries across iterations.
struct Stream {
    files: Files,
    opts: WriterOptions,
    writer: Option<Writer>,
    next_seq: u64,
    in_file: u64,
}

/// Ingest event `seq - 1` borrowing the shared template's strings.
fn event(t: &SegEvent, seq: u64) -> EventRef<'_> {
    EventRef {
        seq,
        witnessed_at: datagen::segment::BASE_TIME_US + seq as i64 - 1,
        indexed_at: t.indexed_at,
        kind: Kind::Create,
        did: &t.did,
        collection: &t.collection,
        rkey: &t.rkey,
        rev: &t.rev,
        payload: &t.payload,
    }
}

impl Stream {
    fn new(dir: &Path, stem: &'static str, opts: WriterOptions) -> Self {
        let mut files = Files {
            dir: dir.to_owned(),
            stem,
            n: 0,
        };
        let writer = Writer::create(files.next(), opts).expect("create segment");
        Stream {
            files,
            opts,
            writer: Some(writer),
            next_seq: 1,
            in_file: 0,
        }
    }

    /// Starts a new file when the current one is big (call untimed).
    fn maybe_rotate(&mut self, what: &str) {
        let big = self
            .writer
            .as_ref()
            .is_some_and(|w| w.block_count() >= ROTATE_BLOCKS);
        if big {
            self.finish(what);
            self.writer =
                Some(Writer::create(self.files.next(), self.opts).expect("create segment"));
        }
    }

    fn finish(&mut self, what: &str) {
        if let Some(w) = self.writer.take() {
            verify_ingest_file(w, self.in_file, self.next_seq - 1, what);
            self.in_file = 0;
        }
    }
}

fn append_live(target: &mut BenchTarget, dir: &Path) {
    let template = ingest_event(0);
    let mut group = target.group("segment.append_live");
    group
        .criterion()
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10);
    group.throughput(Throughput::Elements(BLOCK as u64));
    let mut s = Stream::new(
        dir,
        "live",
        WriterOptions {
            block_events: BLOCK,
            sync: true,
        },
    );
    group.bench("ours.fsync", "4096", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                s.maybe_rotate("append_live");
                let first = s.next_seq;
                let events: Vec<EventRef<'_>> = (first..first + BLOCK as u64)
                    .map(|q| event(&template, q))
                    .collect();
                let w = s.writer.as_mut().expect("writer");
                let start = Instant::now();
                for e in &events {
                    w.append_live(black_box(e)).expect("append");
                }
                total += start.elapsed();
                debug_assert_eq!(w.pending_len(), 0);
                s.next_seq += BLOCK as u64;
                s.in_file += BLOCK as u64;
            }
            total
        })
    });
    s.finish("append_live");
    group.finish();
}

fn append_backfill(target: &mut BenchTarget, dir: &Path) {
    const BATCH: usize = 1024;
    let template = ingest_event(0);
    let mut group = target.group("segment.append_backfill");
    group.throughput(Throughput::Elements(BATCH as u64));
    for (name, workers) in [("ours.sync", 0usize), ("ours.async4", 4)] {
        let mut s = Stream::new(
            dir,
            "backfill",
            WriterOptions {
                block_events: BLOCK,
                sync: false,
            },
        );
        let mut backfill =
            Some(Backfill::new(s.writer.take().expect("writer"), workers).expect("backfill"));
        group.bench(name, "1024", |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                let mut batches = Vec::with_capacity(iters as usize);
                for _ in 0..iters {
                    let first = s.next_seq;
                    batches.push(
                        (first..first + BATCH as u64)
                            .map(|q| event(&template, q))
                            .collect::<Vec<_>>(),
                    );
                    s.next_seq += BATCH as u64;
                }
                let bf = backfill.as_mut().expect("backfill");
                let start = Instant::now();
                for batch in &batches {
                    bf.append_batch(black_box(batch)).expect("append batch");
                }
                // Blocks still compressing belong to these batches.
                if workers > 0 {
                    bf.drain().expect("drain");
                }
                total += start.elapsed();
                s.in_file += (iters as usize * BATCH) as u64;
                if bf.writer().block_count() >= ROTATE_BLOCKS {
                    let w = backfill.take().expect("backfill").finish().expect("finish");
                    s.writer = Some(w);
                    s.finish("append_backfill");
                    let w = Writer::create(s.files.next(), s.opts).expect("create segment");
                    backfill = Some(Backfill::new(w, workers).expect("backfill"));
                }
                total
            })
        });
        if let Some(bf) = backfill.take() {
            s.writer = Some(bf.finish().expect("finish"));
        }
        s.finish("append_backfill");
    }
    group.finish();
}

fn seal(target: &mut BenchTarget, dir: &Path) {
    let mut group = target.group("segment.seal");
    group
        .criterion()
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10);
    let events = seal_events(BLOCK);
    let events = refs(&events);
    group.throughput(Throughput::Elements(events.len() as u64));
    let mut files = Files {
        dir: dir.to_owned(),
        stem: "seal",
        n: 0,
    };
    let mut last: Option<PathBuf> = None;
    group.bench("ours", "4096x26dids", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                if let Some(p) = last.take() {
                    let _ = std::fs::remove_file(p);
                }
                let path = files.next();
                let start = Instant::now();
                let mut w = Writer::create(&path, WriterOptions::default()).expect("create");
                for e in &events {
                    w.append(black_box(e)).expect("append");
                }
                w.flush().expect("flush");
                let sealed = w.seal().expect("seal");
                total += start.elapsed();
                debug_assert_eq!(sealed.header.event_count, 4096);
                last = Some(path);
            }
            total
        })
    });
    let path = match last {
        Some(p) => p,
        None => {
            // Filtered out: seal once, untimed, so the checks still run.
            let path = files.next();
            let mut w = Writer::create(&path, WriterOptions::default()).expect("create");
            for e in &events {
                w.append(e).expect("append");
            }
            w.seal().expect("seal");
            path
        }
    };
    let seg = Segment::open(&path).expect("sealed file opens checked");
    assert_eq!(seg.header().unique_did_count, 26);
    let got = seg.events().expect("events");
    assert_eq!(got.len(), events.len());
    assert!(
        got.iter().zip(&events).all(|(g, e)| g.as_ref() == *e),
        "seal round trip"
    );
    assert_eq!(
        seg.find_did("did:plc:a").expect("lookup").len(),
        4096 / 26 + 1
    );
    let _ = std::fs::remove_file(path);
    group.finish();
}
