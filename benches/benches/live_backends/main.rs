//! `--bench live_backends` (`docs/design/gateway.md`): dispatch lines executed by
//! `crates/gateway` on live PostgreSQL, MariaDB and Redis, and on an
//! in-process S3 emulator, each `ours` row beside `raw` (the client alone,
//! the same statement and cells).
//!
//! Runs only with `BENCH_LIVE=1`; otherwise it prints one line and
//! registers nothing. A backend that cannot be reached has its groups
//! skipped with the reason, or fails the run under `BENCH_REQUIRE_LIVE=1`.
//! Each backend gets this run's own database (`atbench_live_<pid>`), key
//! prefix or bucket, seeded with the first 10,000 datagen store records
//! and dropped at the end; reads and updates draw ids uniformly (seeded).
//! The server versions go into the run context. The appview's PostgreSQL
//! and Redis rows (`appview_*.rs`, `docs/design/appview.md`) have databases and
//! prefixes of their own.

use benches::target::{BenchTarget, Budget};

mod appview_live;
mod appview_pg;
mod appview_redis;
mod live;
mod mysql;
mod ours;
mod postgres;
mod redis_kv;
mod s3_objects;
mod sql_workload;

fn main() {
    if std::env::var("BENCH_LIVE").as_deref() != Ok("1") {
        eprintln!(
            "atbench: live_backends: skipped (set BENCH_LIVE=1 to run it against PostgreSQL, MariaDB, Redis and the S3 emulator)"
        );
        return;
    }
    let mut target = BenchTarget::new(
        "live_backends",
        Budget {
            full_min: 6.0,
            quick_min: 3.0,
        },
    );
    let rt = live::runtime();
    let data = live::Dataset::new();
    let mut context =
        serde_json::json!({"rows": live::ROWS, "pool_size": gateway::PoolConfig::default().size});
    // A backend's setup (databases, seeds, the appview tiers) runs only
    // when the command line's filters can select one of its groups.
    let wanted = |target: &BenchTarget, groups: &[&str]| groups.iter().any(|g| target.may_run(g));
    if wanted(&target, &postgres::GROUPS) {
        postgres::run(&mut target, &rt, &data, &mut context);
    }
    if wanted(&target, &mysql::GROUPS) {
        mysql::run(&mut target, &rt, &data, &mut context);
    }
    if wanted(&target, &redis_kv::GROUPS) {
        redis_kv::run(&mut target, &rt, &data, &mut context);
    }
    if wanted(&target, &s3_objects::GROUPS) {
        s3_objects::run(&mut target, &rt, &mut context);
    }
    let appview_groups = appview_live::groups();
    let appview_groups: Vec<&str> = appview_groups.iter().map(String::as_str).collect();
    if wanted(&target, &appview_groups) {
        appview_live::run(&mut target, &rt, &mut context);
    }
    benches::sidecar::context("live_backends", context);
    target.finish();
}
