//! `--bench appview` (`spec/appview.md`): the read patterns on the index
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

use std::path::PathBuf;

use benches::target::{BenchTarget, Budget};

mod fixtures;
mod groups;
mod index_ops;
mod lookups;
mod read;
mod write;

/// The directory the databases go to (created; removed on drop).
fn bench_dir() -> tempfile::TempDir {
    let base = std::env::var_os("BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| benches::sidecar::atbench_dir().join("appview-tmp"));
    std::fs::create_dir_all(&base)
        .unwrap_or_else(|e| panic!("cannot create bench dir {}: {e}", base.display()));
    tempfile::Builder::new()
        .prefix("appview-")
        .tempdir_in(&base)
        .unwrap_or_else(|e| panic!("cannot create a temp dir in {}: {e}", base.display()))
}

fn main() {
    let mut target = BenchTarget::new(
        "appview",
        Budget {
            full_min: 4.0,
            quick_min: 1.5,
        },
    );
    let dir = bench_dir();
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
    target.finish();
}
