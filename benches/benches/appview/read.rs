//! `appview.<pattern>/{index,sqlite}/{300,100k}`: one read per iteration,
//! the page decoded; point lookups cycle through 1,024 seeded run ids.
//! `point_lookup` and `completed_50` also run under the concurrent-callers
//! runner at 1 and 10 callers on the 10^5 tier (implementations
//! `index.callers-N`, `sqlite.callers-N`: adjacent rows with percentiles).

use std::hint::black_box;

use appview::{Pattern, ReadBackend};
use benches::callers::bench_callers;
use benches::target::BenchTarget;
use criterion::Throughput;

use crate::fixtures::{CALLERS, Fixtures, Tier};
use benches::appview::group;

fn rows(g: &mut benches::Group<'_>, tier: &Tier, pattern: Pattern) {
    g.bench("index", tier.name, |b| {
        let mut i = 0usize;
        b.iter(|| {
            i += 1;
            let page = tier.index.query(&tier.query(pattern, i)).expect("index");
            debug_assert!(page.rows() > 0);
            black_box(page)
        })
    });
    let sql = tier.sqlite[0].lock().expect("lock");
    g.bench("sqlite", tier.name, |b| {
        let mut i = 0usize;
        b.iter(|| {
            i += 1;
            let page = sql.query(&tier.query(pattern, i)).expect("sqlite");
            debug_assert!(page.rows() > 0);
            black_box(page)
        })
    });
}

fn concurrent(g: &mut benches::Group<'_>, tier: &Tier, pattern: Pattern) {
    for callers in [1, CALLERS] {
        let id = format!("callers-{callers}");
        bench_callers(g, &format!("index.{id}"), tier.name, callers, |c| {
            move |i: u64| {
                let q = tier.query(pattern, c * 97 + i as usize);
                black_box(tier.index.query(&q).expect("index"));
            }
        });
        bench_callers(g, &format!("sqlite.{id}"), tier.name, callers, |c| {
            let sql = tier.sqlite[c].lock().expect("lock");
            move |i: u64| {
                let q = tier.query(pattern, c * 97 + i as usize);
                black_box(sql.query(&q).expect("sqlite"));
            }
        });
    }
}

pub fn run(target: &mut BenchTarget, fx: &Fixtures) {
    for pattern in Pattern::ALL {
        let mut g = group(target, pattern);
        g.throughput(Throughput::Elements(1));
        rows(&mut g, &fx.small, pattern);
        rows(&mut g, &fx.large, pattern);
        if matches!(pattern, Pattern::PointLookup | Pattern::Completed50) {
            concurrent(&mut g, &fx.large, pattern);
        }
        g.finish();
    }
}
