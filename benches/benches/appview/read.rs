//! `appview.<pattern>/{index,sqlite}/{300,100k}`: one read per iteration,
//! the page decoded; point lookups cycle through 1,024 seeded run ids.
//! `point_lookup` and `completed_50` also run under the concurrent-callers
//! runner at 1 and 10 callers on the 10^5 tier (implementations
//! `index.callers-N`, `sqlite.callers-N`: adjacent rows with percentiles).
//! Beside each `sqlite` row, its floor probe `python-sqlite3`: the same
//! statement with the same parameters on the same file through Python's
//! `sqlite3` module (`benches::floor::PythonSqlite`).

use std::hint::black_box;

use appview::{Pattern, Query, ReadBackend};
use benches::appview::{LOOKUPS, group};
use benches::callers::bench_callers;
use benches::floor::{self, PythonSqlite};
use benches::target::BenchTarget;
use criterion::Throughput;
use serde_json::{Value, json};

use crate::fixtures::{CALLERS, Fixtures, Tier};

/// `count_completed`'s statement in the baseline (`appview`'s SQLite
/// baseline writes it inline; the PostgreSQL baseline has the same text).
const COUNT_COMPLETED: &str = "SELECT count(*) FROM flow_run WHERE state_type = 'COMPLETED'";

/// The statement the SQLite baseline runs for `pattern`, and the
/// parameter sets its rows cycle through (one query each).
fn statement(tier: &Tier, pattern: Pattern) -> (&'static str, Vec<(Query, Value)>) {
    let q = tier.query(pattern, 0);
    match q {
        Query::PointLookup(_) => {
            let sets = (0..LOOKUPS)
                .map(|i| {
                    let q = tier.query(pattern, i);
                    let id = match &q {
                        Query::PointLookup(id) => id.to_string(),
                        _ => String::new(),
                    };
                    (q, json!([id]))
                })
                .collect();
            (appview::baseline_sql::point_lookup_sql(), sets)
        }
        Query::CountCompleted => (COUNT_COMPLETED, vec![(q, json!([]))]),
        Query::FlowList => (appview::baseline_sql::flow_list_sql(), vec![(q, json!([]))]),
        Query::Completed1h { now } => {
            let (a, b) = appview::window(now);
            let sql = appview::baseline_sql::list_sql(&q).unwrap_or_default();
            (sql, vec![(q, json!([a, b]))])
        }
        _ => (
            appview::baseline_sql::list_sql(&q).unwrap_or_default(),
            vec![(q, json!([]))],
        ),
    }
}

/// `appview.<pattern>/python-sqlite3/<tier>`: the floor probe of the
/// `sqlite` row. Checked before it is timed: each parameter set returns as
/// many rows as the index's page of that query has.
fn probe(g: &mut benches::Group<'_>, tier: &Tier, pattern: Pattern) {
    let id = g.id("python-sqlite3", tier.name);
    let (sql, sets) = statement(tier, pattern);
    let params: Vec<&Value> = sets.iter().map(|(_, p)| p).collect();
    let mut python = match PythonSqlite::start(&tier.path, sql, &json!(params)) {
        Ok(p) => p,
        Err(e) => return floor::skip(&id, &e),
    };
    let want: Vec<u64> = sets
        .iter()
        .map(|(q, _)| tier.index.query(q).expect("index").rows() as u64)
        .collect();
    assert_eq!(
        python.rows, want,
        "{id}: python's rows differ from the index's pages"
    );
    g.bench("python-sqlite3", tier.name, |b| {
        b.iter_custom(|iters| python.run(iters))
    });
}

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
    drop(sql);
    probe(g, tier, pattern);
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
