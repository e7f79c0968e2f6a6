//! `--bench segment`: the event archive (crates/segment) in the shapes of
//! upstream Jetstream V2's benchmarks — block codecs, the live and backfill
//! writers, seal, checked/unchecked opens, sealed block reads, blooms, the v1 wire
//! encoding, cold replay and delete compaction.
//!
//! Files go to `BENCH_DIR` when set, else to a temp dir under
//! `target/atbench/segment-tmp/`; they are removed when the target ends.

use std::path::PathBuf;

use benches::target::{BenchTarget, Budget};

mod compact;
mod format;
mod read;
mod replay;
mod wire;
mod write;

/// Borrowed segment events over generated ones.
pub use benches::inputs::segment_refs as refs;

/// The directory benchmark files go to (created; removed on drop).
pub fn bench_dir() -> tempfile::TempDir {
    let base = std::env::var_os("BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| benches::sidecar::atbench_dir().join("segment-tmp"));
    std::fs::create_dir_all(&base)
        .unwrap_or_else(|e| panic!("cannot create bench dir {}: {e}", base.display()));
    tempfile::Builder::new()
        .prefix("segment-")
        .tempdir_in(&base)
        .unwrap_or_else(|e| panic!("cannot create a temp dir in {}: {e}", base.display()))
}

fn main() {
    let mut target = BenchTarget::new(
        "segment",
        Budget {
            full_min: 3.5,
            quick_min: 1.0,
        },
    );
    let dir = bench_dir();
    benches::sidecar::context(
        "segment",
        serde_json::json!({ "segment_dir": dir.path().display().to_string() }),
    );
    format::run(&mut target);
    write::run(&mut target, dir.path());
    read::run(&mut target, dir.path());
    wire::run(&mut target);
    replay::run(&mut target, dir.path());
    compact::run(&mut target, dir.path());
    target.finish();
}
