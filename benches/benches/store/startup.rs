//! `store.startup`: `Store::open` of a fresh file, of an empty store and of
//! a 10k-commit history whose revision backfill (one account's 2,000-odd
//! MST node rows) runs on every open; the history fixture is written
//! through the store's API (`bench_internals::build_history_fixture`, a
//! hundredth of it under `--test`) and its startup report is checked once,
//! untimed.

use std::cell::Cell;
use std::path::Path;
use std::time::{Duration, Instant};

use benches::target::BenchTarget;
use store::bench_internals::{self, HistoryShape};
use store::{Config, Store};

/// Registers the startup group.
pub fn run(target: &mut BenchTarget, dir: &Path) {
    let empty = dir.join("startup-empty.sqlite");
    drop(Store::open(&empty, Config::default()).expect("open"));
    let history = dir.join("startup-history.sqlite");
    let shape = if benches::config::is_smoke() {
        HistoryShape::SMOKE
    } else {
        HistoryShape::HISTORY_10K
    };
    let t = Instant::now();
    let fx = bench_internals::build_history_fixture(&history, &shape).expect("history fixture");
    eprintln!(
        "store: history fixture built in {:.1?}: {shape:?}; {:?}; {} #commit events, {} B of body on average; {} unversioned node rows",
        t.elapsed(),
        fx.stats,
        fx.commit_events,
        fx.commit_event_bytes / fx.commit_events.max(1),
        fx.unversioned
    );
    assert!(fx.unversioned > 0, "the fixture has unversioned rows");
    {
        let s = Store::open(&history, Config::default()).expect("open");
        let r = s.startup_report();
        assert_eq!(
            (r.next_seq, r.backfilled),
            (fx.stats.last_seq + 1, fx.unversioned),
            "{r:?}"
        );
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
                let reset = bench_internals::reset_unversioned(&history, &fx.unversioned_did)
                    .expect("reset");
                debug_assert_eq!(reset, fx.unversioned);
                let t = Instant::now();
                let s = Store::open(&history, Config::default()).expect("open");
                timed += t.elapsed();
                debug_assert_eq!(s.startup_report().backfilled, fx.unversioned);
                drop(s);
            }
            timed
        })
    });
    g.finish();
}
