//! `--bench appview` (`docs/design/appview.md`): the read patterns on the index
//! fed by commits against the SQLite baseline (Prefect's schema and
//! indexes), at 300 runs and 10^5 runs; the seeded write stream as signed
//! commits against plain SQL transactions, with the atproto tax's
//! breakdown; one commit into the index; and the ordered set against the
//! standard library's B-tree.
//!
//! Fixtures (`fixtures.rs`), built once under `BENCH_DIR` (default a temp
//! dir under `target/atbench/appview-tmp`): the 300-run tier through the
//! real write path (every write a signed commit, the index fed by the
//! store's `#commit` events, the baseline one transaction per write); the
//! 10^5-run tier by bulk loading the same generated records (see the
//! `appview` crate's docs and `units.toml`). Before anything is timed,
//! every pattern's page is checked equal on both backends at both tiers,
//! and the live index equal to one rebuilt from the repository.
//!
//! `logs.rs`: how the appview keeps Prefect's log lines, a SQLite table
//! beside the store against records in its repository.
//!
//! `rest.rs`: the same patterns end to end through REST on the appview's
//! Prefect-compatible server and, under `BENCH_PEERS=1`, on the Prefect
//! server itself (SQLite and PostgreSQL; a few more minutes for its
//! startups, seeding and bulk loads).
//!
//! `flow_e2e.rs`: a Prefect user's flow (10 tasks, 5 log lines each) run by
//! Prefect's own client against the appview's server and, under
//! `BENCH_PEERS=1`, the Prefect server on SQLite and PostgreSQL. It needs no
//! fixture: filtered to `appview.flow_e2e`, the fixtures are not built.

use benches::target::{BenchTarget, Budget};

mod fixtures;
mod flow_e2e;
mod index_ops;
mod logs;
mod read;
mod rest;
mod write;

fn main() {
    let mut target = BenchTarget::new(
        "appview",
        Budget {
            full_min: 5.0,
            quick_min: 2.0,
        },
    );
    let dir = benches::sidecar::scratch_dir("appview");
    flow_e2e::run(&mut target, dir.path());
    // Before the fixtures: the log rows need none of them.
    if target.may_run("appview.logs_write") || target.may_run("appview.logs_read") {
        logs::run(&mut target, dir.path());
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let filters = benches::target::filters(&args);
    if !filters.is_empty() && filters.iter().all(|f| f.starts_with("appview.flow_e2e")) {
        target.finish();
        return;
    }
    let fx = fixtures::build(dir.path());
    benches::sidecar::context(
        "appview",
        serde_json::json!({
            "dir": dir.path().display().to_string(),
            "sqlite_pragmas": appview::PRAGMAS,
            "store_pragmas": store::bench_internals::pragmas(false),
            "seed": datagen::appview::APPVIEW_SEED,
            "tiers": {"300": fx.small.workload.ops.len(), "100k": fx.large.workload.ops.len()},
        }),
    );
    read::run(&mut target, &fx);
    write::run(&mut target, &fx, dir.path());
    index_ops::run(&mut target, &fx);
    rest::run(&mut target, &fx, dir.path());
    target.finish();
}
