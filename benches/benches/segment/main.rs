//! `--bench segment`: the event archive (crates/segment) in the shapes of
//! upstream Jetstream V2's benchmarks — block codecs, the live and backfill
//! writers, seal, checked/unchecked opens, sealed block reads, blooms, the v1 wire
//! encoding, cold replay and delete compaction.
//!
//! Files go to `BENCH_DIR` when set, else to a temp dir under
//! `target/atbench/segment-tmp/`; they are removed when the target ends.

use benches::target::{BenchTarget, Budget};

mod compact;
mod format;
mod read;
mod replay;
mod wire;
mod write;

/// Borrowed segment events over generated ones.
pub use benches::inputs::segment_refs as refs;

fn main() {
    let mut target = BenchTarget::new(
        "segment",
        Budget {
            full_min: 3.5,
            quick_min: 1.0,
        },
    );
    let dir = benches::sidecar::scratch_dir("segment");
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
