//! What every live backend's benchmarks share: the runtime the clients run
//! on, the seeded dataset, sampled ids, and what to do with a backend that
//! cannot be reached.

use benches::inputs::Sampler;
use benches::target::BenchTarget;

/// Rows seeded into each backend.
pub const ROWS: usize = 10_000;
/// Pre-built lines per benchmark (each op takes the next, round robin).
pub const LINES: usize = 4_096;
/// Seed of the id draws.
pub const ID_SEED: u64 = 0x6c69_7665;

/// The seeded table's rows: the first [`ROWS`] datagen store records,
/// `id` = `<collection>/<rkey>`, `payload` = the record's JSON.
pub struct Dataset {
    /// `(id, payload)` in generation order.
    pub rows: Vec<(String, serde_json::Value)>,
    /// The ids sorted (range scans start from one of them).
    pub sorted_ids: Vec<String>,
}

impl Dataset {
    pub fn new() -> Dataset {
        let rows: Vec<(String, serde_json::Value)> = datagen::store::records(0, ROWS)
            .into_iter()
            .map(|r| (format!("{}/{}", r.collection, r.rkey), r.value))
            .collect();
        let mut sorted_ids: Vec<String> = rows.iter().map(|(id, _)| id.clone()).collect();
        sorted_ids.sort();
        sorted_ids.dedup();
        assert_eq!(sorted_ids.len(), ROWS, "datagen ids are unique");
        Dataset { rows, sorted_ids }
    }

    /// [`LINES`] row indices drawn uniformly (seeded).
    pub fn draws(&self, stream: u64) -> Vec<usize> {
        let mut s = Sampler(ID_SEED ^ stream | 1);
        (0..LINES).map(|_| s.next(self.rows.len())).collect()
    }

    /// [`LINES`] scan starts: indices into `sorted_ids` with `rows` ids at
    /// or after each.
    pub fn scan_starts(&self, rows: usize, stream: u64) -> Vec<usize> {
        let mut s = Sampler(ID_SEED ^ stream | 1);
        (0..LINES)
            .map(|_| s.next(self.sorted_ids.len() - rows + 1))
            .collect()
    }

    /// The payload written by update op `k`: a fresh value per line.
    pub fn update_payload(k: usize) -> serde_json::Value {
        serde_json::json!({"$type": "app.atbench.update", "n": k, "text": format!("updated {k}")})
    }
}

/// The runtime every client runs on (two workers: this machine's cores).
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("live-client")
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// Whether a missing backend must fail the run (`BENCH_REQUIRE_LIVE=1`).
pub fn require_live() -> bool {
    std::env::var("BENCH_REQUIRE_LIVE").is_ok_and(|v| v == "1")
}

/// A backend that could not be set up: an error under
/// `BENCH_REQUIRE_LIVE=1`, else its groups are skipped with the reason.
pub fn unavailable(target: &mut BenchTarget, backend: &str, groups: &[&str], reason: &str) {
    assert!(
        !require_live(),
        "live_backends: {backend} is required (BENCH_REQUIRE_LIVE=1) but unavailable: {reason}"
    );
    for g in groups {
        target.skip_group(g, &format!("{backend} unavailable: {reason}"));
    }
}

/// A backend that could not be set up, whose groups other backends share:
/// an error under `BENCH_REQUIRE_LIVE=1`, else its `implementation` rows
/// of each group are skipped with the reason (the others still run).
pub fn unavailable_rows(
    target: &mut BenchTarget,
    implementation: &str,
    groups: &[&str],
    reason: &str,
) {
    unavailable(target, implementation, &[], reason);
    for g in groups {
        target.skip_rows(
            g,
            implementation,
            &format!("{implementation} unavailable: {reason}"),
        );
    }
}

/// Name of this run's database / prefix / bucket.
pub fn run_name() -> String {
    format!("atbench_live_{}", std::process::id())
}

/// A SQL line.
pub fn sql_line(statement: &str, params: serde_json::Value) -> String {
    serde_json::json!({"sql": statement, "params": params}).to_string()
}
