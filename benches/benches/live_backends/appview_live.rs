//! The appview rows of the live target: `appview.<pattern>/{postgres,redis}/{300,100k}`
//! and `appview.seed_write/postgres/300` (`docs/design/appview.md`). Both tiers
//! are the seeded workloads bulk loaded into an index (the reference
//! every page is checked against, outside the timing); each backend
//! (`benches::appview::LiveAppview`: PostgreSQL with Prefect's schema and
//! indexes in a database of its own, Redis sets and sorted sets under a
//! key prefix of its own, both dropped at the end) is loaded, checked,
//! benchmarked and torn down by the same loop.

use std::hint::black_box;

use appview::Pattern;
use benches::appview::{LiveAppview, Tier, group};
use benches::target::BenchTarget;
use tokio::runtime::Runtime;

use crate::appview_pg::Pg;
use crate::appview_redis::Redis;

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
    if benches::config::is_smoke() {
        eprintln!("atbench: appview live rows: the 100k tier is not loaded under --test");
        return vec![Tier::new("300", 300)];
    }
    vec![Tier::new("300", 300), Tier::new("100k", 100_000)]
}

/// Sets a backend up and checks every tier's pages against the index.
fn open<B: LiveAppview + 'static>(
    rt: &Runtime,
    tiers: &[Tier],
    context: &mut serde_json::Value,
) -> Result<Box<dyn LiveAppview>, String> {
    let backend = B::setup(rt, tiers, context)?;
    for (i, tier) in tiers.iter().enumerate() {
        tier.check(backend.name(), |q| backend.read(rt, i, q));
    }
    Ok(Box::new(backend))
}

/// Runs the appview rows of every backend: each group opened once, each
/// backend's rows of both tiers in it.
pub fn run(target: &mut BenchTarget, rt: &Runtime, context: &mut serde_json::Value) {
    let tiers = tiers();
    let groups = groups();
    let groups: Vec<&str> = groups.iter().map(String::as_str).collect();
    let patterns = &groups[..Pattern::ALL.len()];
    let opened = [
        ("postgres", open::<Pg>(rt, &tiers, context)),
        ("redis", open::<Redis>(rt, &tiers, context)),
    ];
    if opened.iter().all(|(_, b)| b.is_err()) {
        let reasons: Vec<String> = opened
            .iter()
            .filter_map(|(name, b)| b.as_ref().err().map(|e| format!("{name} ({e})")))
            .collect();
        let reason = format!("no backend is reachable: {}", reasons.join(", "));
        crate::live::unavailable(target, "postgres and redis (appview)", &groups, &reason);
        return;
    }
    // A backend down: its rows of the shared pattern groups are skipped
    // (recorded per backend, here and in the run context), the others run.
    let mut backends: Vec<Box<dyn LiveAppview>> = Vec::new();
    for (name, backend) in opened {
        match backend {
            Ok(b) => backends.push(b),
            Err(e) => {
                eprintln!("atbench: appview {name} rows skipped: {e}");
                crate::live::unavailable_rows(target, name, patterns, &e);
                context["appview_skipped"][name] = serde_json::json!(e);
            }
        }
    }
    for pattern in Pattern::ALL {
        let mut g = group(target, pattern);
        g.throughput(criterion::Throughput::Elements(1));
        for (t, tier) in tiers.iter().enumerate() {
            for backend in &backends {
                let backend = backend.as_ref();
                g.bench(backend.name(), tier.name, |b| {
                    let mut i = 0usize;
                    b.iter(|| {
                        i += 1;
                        black_box(backend.read(rt, t, &tier.query(pattern, i)))
                    })
                });
            }
        }
        g.finish();
    }
    let mut g = target.group("appview.seed_write");
    // Every backend gets its turn (no short circuit).
    let wrote = backends
        .iter()
        .map(|b| b.seed_write(&mut g, rt, &tiers[0]))
        .collect::<Vec<bool>>()
        .contains(&true);
    g.finish();
    if !wrote {
        target.skip_group(
            "appview.seed_write",
            "no backend with a write row is reachable",
        );
    }
    for backend in backends {
        backend.teardown(rt);
    }
}
