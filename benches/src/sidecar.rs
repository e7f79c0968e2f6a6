//! Files the harness writes beside Criterion's output, under
//! `<target dir>/atbench/`, for `scripts/bench_snapshot.py` to merge:
//! `latency/<id>.json` (percentiles of concurrent runs) and
//! `context/<name>.json` (facts about the run: data source, backends,
//! storage PRAGMAs). It also owns each target's scratch directory
//! ([`scratch_dir`]), where the databases and files a target builds go.

use std::path::PathBuf;

/// `<target dir>/atbench`: `CARGO_TARGET_DIR` when set, else the workspace's
/// `target/` (the same place Criterion writes `criterion/`).
pub fn atbench_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../target")));
    target.join("atbench")
}

/// File name for a benchmark id: `/` becomes `__`.
pub fn file_stem(id: &str) -> String {
    id.replace('/', "__")
}

/// Writes `value` as `<atbench>/<kind>/<stem>.json`. A failure to write is
/// reported on stderr, not fatal: the measurement itself still stands.
pub fn write(kind: &str, stem: &str, value: &serde_json::Value) {
    let dir = atbench_dir().join(kind);
    let path = dir.join(format!("{stem}.json"));
    let result = std::fs::create_dir_all(&dir).and_then(|()| {
        let text = serde_json::to_string_pretty(value).map_err(std::io::Error::other)?;
        std::fs::write(&path, text)
    });
    if let Err(err) = result {
        eprintln!("atbench: could not write {}: {err}", path.display());
    }
}

/// Records a fact about this run (merged into the snapshot's `context`).
pub fn context(name: &str, value: serde_json::Value) {
    write("context", name, &value);
}

/// A fresh scratch directory for target `target`'s files, removed on drop:
/// a temp dir named `<target>-…` under `BENCH_DIR` when set, else under
/// `<atbench>/<target>-tmp` (same disk as the build, not a tmpfs).
///
/// # Panics
/// When the directory cannot be created: a target without its files
/// measures nothing.
pub fn scratch_dir(target: &str) -> tempfile::TempDir {
    let base = std::env::var_os("BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| atbench_dir().join(format!("{target}-tmp")));
    std::fs::create_dir_all(&base)
        .unwrap_or_else(|e| panic!("cannot create bench dir {}: {e}", base.display()));
    tempfile::Builder::new()
        .prefix(&format!("{target}-"))
        .tempdir_in(&base)
        .unwrap_or_else(|e| panic!("cannot create a temp dir in {}: {e}", base.display()))
}
