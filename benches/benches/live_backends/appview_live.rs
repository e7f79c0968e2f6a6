//! The appview rows of the live target: `appview.<pattern>/{postgres,redis}/{300,100k}`
//! and `appview.seed_write/postgres/300` (`spec/appview.md`). Both tiers
//! are the seeded workloads bulk loaded into an index (the reference
//! every page is checked against, outside the timing); PostgreSQL gets
//! Prefect's schema and indexes in a database of its own, Redis sets and
//! sorted sets under a key prefix of its own, both dropped at the end.

use appview::{Index, Mutation, Page, Pattern, Query, bulk};
use benches::target::BenchTarget;

use crate::appview_groups::group;
use crate::appview_lookups::Lookups;

/// One tier.
pub struct Tier {
    pub name: &'static str,
    pub index: Index,
    pub mutations: Vec<Mutation>,
    pub lookups: Lookups,
}

impl Tier {
    fn new(name: &'static str, runs: usize) -> Tier {
        let workload = datagen::appview::workload(runs);
        let (index, mutations) = bulk::load(&workload).expect("plan the workload");
        let lookups = Lookups::new(&index, workload.now_us);
        Tier {
            name,
            index,
            mutations,
            lookups,
        }
    }

    /// The query of `pattern` for iteration `i`.
    pub fn query(&self, pattern: Pattern, i: usize) -> Query {
        self.lookups.query(pattern, i)
    }

    /// Outside the timing: `backend`'s page of every query the rows send
    /// equals the index's.
    pub fn check(&self, backend: &str, read: impl FnMut(&Query) -> Page) {
        self.lookups.check(
            &format!("{backend} tier {}", self.name),
            |q| self.index.read(q),
            read,
        );
    }
}

/// Every appview group the live target runs: the seven pattern groups
/// (postgres and redis rows, named by `Pattern::name`), then seed_write
/// (postgres only).
pub fn groups() -> Vec<String> {
    Pattern::ALL
        .iter()
        .map(|p| format!("appview.{}", p.name()))
        .chain(["appview.seed_write".to_owned()])
        .collect()
}

/// The tiers: 300 and 10^5 runs; under `--test` (CI's smoke run of every
/// bench) only 300, since loading 10^5 runs into two servers takes longer
/// than the whole smoke run of a target should (the 10^5 pages are
/// checked against the index whenever the rows run).
pub fn tiers() -> Vec<Tier> {
    if std::env::args().any(|a| a == "--test") {
        eprintln!("atbench: appview live rows: the 100k tier is not loaded under --test");
        return vec![Tier::new("300", 300)];
    }
    vec![Tier::new("300", 300), Tier::new("100k", 100_000)]
}

/// Runs the appview rows of both backends: each group opened once, the
/// PostgreSQL rows then the Redis rows of both tiers.
pub fn run(
    target: &mut BenchTarget,
    rt: &tokio::runtime::Runtime,
    context: &mut serde_json::Value,
) {
    let tiers = tiers();
    let groups = groups();
    let groups: Vec<&str> = groups.iter().map(String::as_str).collect();
    let patterns = &groups[..Pattern::ALL.len()];
    let pg = crate::appview_pg::setup(rt, &tiers, context);
    let redis = crate::appview_redis::setup(rt, &tiers, context);
    if let (Err(pg_e), Err(redis_e)) = (&pg, &redis) {
        let reason = format!("neither postgres ({pg_e}) nor redis ({redis_e}) is reachable");
        crate::live::unavailable(target, "postgres and redis (appview)", &groups, &reason);
        return;
    }
    // One backend down: its rows of the shared pattern groups are skipped
    // (recorded per backend, here and in the run context), the other's run.
    let pg = pg
        .inspect_err(|e| {
            crate::live::unavailable_rows(target, "postgres", patterns, e);
            context["appview_skipped"]["postgres"] = serde_json::json!(e);
        })
        .ok();
    let redis = redis
        .inspect_err(|e| {
            crate::live::unavailable_rows(target, "redis", patterns, e);
            context["appview_skipped"]["redis"] = serde_json::json!(e);
        })
        .ok();
    for pattern in Pattern::ALL {
        let mut g = group(target, pattern);
        g.throughput(criterion::Throughput::Elements(1));
        for tier in &tiers {
            if let Some(pg) = &pg {
                crate::appview_pg::bench(&mut g, rt, pg, tier, pattern);
            }
            if let Some(r) = &redis {
                crate::appview_redis::bench(&mut g, rt, r, tier, pattern);
            }
        }
        g.finish();
    }
    match pg {
        Some(pg) => {
            crate::appview_pg::seed_write(target, rt, &pg, &tiers[0]);
            crate::appview_pg::teardown(rt, pg);
        }
        // The group's only live row is postgres's.
        None => target.skip_group("appview.seed_write", "postgres is not reachable"),
    }
    if let Some(r) = redis {
        crate::appview_redis::teardown(rt, r);
    }
}
