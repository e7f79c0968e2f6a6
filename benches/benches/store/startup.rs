//! `store.startup`: `Store::open` of a fresh file, of an empty store and of
//! a 10k-event history whose revision backfill (2,000 rows) runs on every
//! open; the history fixture's startup report is checked once, untimed.

use std::cell::Cell;
use std::path::Path;
use std::time::{Duration, Instant};

use benches::target::BenchTarget;
use store::bench_internals;
use store::{Config, Store};

/// Registers the startup group.
pub fn run(target: &mut BenchTarget, dir: &Path) {
    let empty = dir.join("startup-empty.sqlite");
    drop(Store::open(&empty, Config::default()).expect("open"));
    let history = dir.join("startup-history.sqlite");
    let t = Instant::now();
    bench_internals::build_history_fixture(&history, 10_000, 60_000, 4096, 10_000, 4096, 2_000)
        .expect("history fixture");
    eprintln!("store: history fixture built in {:.1?}", t.elapsed());
    {
        let s = Store::open(&history, Config::default()).expect("open");
        let r = s.startup_report();
        assert_eq!((r.next_seq, r.backfilled), (10_001, 2_000), "{r:?}");
        eprintln!("store: startup history-10k report: {r:?}");
    }
    let mut g = target.group("store.startup");
    g.criterion().sample_size(10);
    let n = Cell::new(0u64);
    g.bench("ours", "fresh", |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                n.set(n.get() + 1);
                let path = dir.join(format!("startup-fresh-{}.sqlite", n.get()));
                let t = Instant::now();
                let s = Store::open(&path, Config::default()).expect("open");
                timed += t.elapsed();
                debug_assert_eq!(s.startup_report().next_seq, 1);
                drop(s);
                for suffix in ["", "-wal", "-shm"] {
                    let mut p = path.clone().into_os_string();
                    p.push(suffix);
                    let _ = std::fs::remove_file(p);
                }
            }
            timed
        })
    });
    g.bench("ours", "empty", |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                let t = Instant::now();
                let s = Store::open(&empty, Config::default()).expect("open");
                timed += t.elapsed();
                drop(s);
            }
            timed
        })
    });
    g.bench("ours", "history-10k", |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                let reset = bench_internals::reset_unversioned(&history).expect("reset");
                debug_assert_eq!(reset, 2_000);
                let t = Instant::now();
                let s = Store::open(&history, Config::default()).expect("open");
                timed += t.elapsed();
                debug_assert_eq!(s.startup_report().backfilled, 2_000);
                drop(s);
            }
            timed
        })
    });
    g.finish();
}
