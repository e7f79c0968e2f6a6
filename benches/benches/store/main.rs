//! `--bench store`: the SQLite record store (`crates/store`).
//!
//! Fixtures are seeded from `datagen::store` (posts, likes, follows,
//! reposts, a profile per account) and built once per run under
//! `BENCH_DIR` (default a temp dir under `target/atbench/store-tmp`):
//! - `sizes.sqlite`: three accounts holding 1k, 10k and 100k records,
//!   written through `apply_writes` (200 per commit) — the real write path;
//! - `writes-nosync.sqlite` / `writes-fsync.sqlite`: 100 accounts each (one
//!   per caller), the first seeded with 3,000 commits for catch-up;
//! - `index-only.sqlite`, `blobs.sqlite`, the startup files.
//!
//! PRAGMAs come from `store::bench_internals::pragmas` (the store's one
//! list; the writer's overrides in `WRITER_PRAGMAS`) and are recorded in
//! the run context. Results are checked outside the timing: MST == index
//! and commits verifying after the write groups, lookups against the CIDs
//! of the seeded records, page sizes, CAR round trips, startup reports.

use benches::target::{BenchTarget, Budget};
use store::bench_internals;

mod blob;
mod fixtures;
mod read;
mod startup;
mod sync;
mod write;

fn main() {
    let mut target = BenchTarget::new(
        "store",
        Budget {
            full_min: 5.0,
            quick_min: 2.0,
        },
    );
    let dir = benches::sidecar::scratch_dir("store");
    benches::sidecar::context(
        "store",
        serde_json::json!({
            "store_dir": dir.path().display().to_string(),
            "pragmas": bench_internals::pragmas(false),
            "pragmas_fsync": bench_internals::pragmas(true),
            "pragmas_writer": bench_internals::WRITER_PRAGMAS,
            "seed": datagen::SEED,
        }),
    );
    let fx = fixtures::build(dir.path());
    write::run(&mut target, &fx);
    read::run(&mut target, &fx);
    blob::run(&mut target, dir.path());
    sync::run(&mut target, &fx);
    startup::run(&mut target, dir.path());
    // `BENCH_PEERS=1`: the official PDS's storage layer through the same
    // units of work.
    benches::peers::run_after_ours(
        benches::peers::OFFICIAL_PDS,
        target.preset(),
        &target.seen_groups(),
        benches::peers::store_inputs::build,
    );
    target.finish();
}
