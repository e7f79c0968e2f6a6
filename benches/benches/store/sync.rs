//! The sync endpoints: `store.export_repo` (a CAR of the 1k and 10k
//! accounts into a counting sink; the CAR is verified once, untimed) and
//! `store.sync_catchup` (1,000 events after a cursor, 1 or 10 consumers).

use std::hint::black_box;
use std::io::Write;

use benches::callers::bench_callers;
use benches::registry::count_tier;
use benches::target::BenchTarget;
use criterion::Throughput;
use repo::firehose::Frame;

use crate::fixtures::{Fixtures, Sampler};

/// Registers the export group, then the catch-up group.
pub fn run(target: &mut BenchTarget, fx: &Fixtures) {
    export(target, fx);
    catchup(target, fx);
}

/// A sink that counts bytes (the export's destination).
struct Counting(u64);

impl Write for Counting {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn export(target: &mut BenchTarget, fx: &Fixtures) {
    let mut g = target.group("store.export_repo");
    for (n, acc) in fx.sized.iter().filter(|(n, _)| *n <= 10_000) {
        let mut car = Vec::new();
        let info = fx
            .sizes
            .export_repo(&acc.did, None, &mut car)
            .expect("export");
        let mut r = repo::car::CarReader::new(&car[..])
            .expect("car")
            .verify(true);
        assert_eq!(
            r.roots(),
            &[fx.sizes
                .repo_root(&acc.did)
                .expect("root")
                .expect("root")
                .commit]
        );
        let mut blocks = 0;
        while r.next_block().expect("block").is_some() {
            blocks += 1;
        }
        assert_eq!(blocks, info.blocks);
        g.throughput(Throughput::Bytes(info.bytes));
        g.bench("ours", &count_tier(*n), |b| {
            b.iter(|| {
                let mut sink = Counting(0);
                let i = fx
                    .sizes
                    .export_repo(&acc.did, None, &mut sink)
                    .expect("export");
                debug_assert_eq!(sink.0, info.bytes);
                black_box(i)
            })
        });
    }
    g.finish();
}

fn catchup(target: &mut BenchTarget, fx: &Fixtures) {
    let store = &fx.nosync;
    let last = store.stats().expect("stats").last_seq;
    assert!(
        last > 1_000,
        "catch-up needs more than 1000 events, have {last}"
    );
    let batch = store.events_after(last - 1_000, 1_000).expect("events");
    assert_eq!(batch.len(), 1_000);
    for ev in batch.iter().take(50) {
        Frame::decode(&ev.frame).expect("frame decodes");
    }
    let mut g = target.group("store.sync_catchup");
    for consumers in [1usize, 10] {
        bench_callers(
            &mut g,
            "ours",
            &format!("consumers-{consumers}"),
            consumers,
            |c| {
                let mut s = Sampler(c as u64 + 5);
                let store = store.clone();
                let starts: Vec<i64> = (0..64)
                    .map(|_| s.next((last - 1_000) as usize) as i64)
                    .collect();
                move |i: u64| {
                    let events = store
                        .events_after(starts[i as usize % starts.len()], 1_000)
                        .expect("events");
                    debug_assert_eq!(events.len(), 1_000);
                    black_box(events);
                }
            },
        );
    }
    g.finish();
}
