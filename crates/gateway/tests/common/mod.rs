//! Shared by the live tests: reaching a backend or skipping (failing under
//! `BENCH_REQUIRE_LIVE=1`), a database / key prefix of each test's own,
//! and the tokio runtime the tests run on.
#![allow(dead_code)]

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use gateway::{Executor, Outcome, PoolConfig};

/// A name no other test (or run) uses: `atbench_gw_<pid>_<n>_<tag>`.
pub fn unique(tag: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "atbench_gw_{}_{}_{tag}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Whether a missing backend must fail the test (CI sets it).
pub fn require_live() -> bool {
    std::env::var("BENCH_REQUIRE_LIVE").is_ok_and(|v| v == "1")
}

/// Prints why the test is skipped, or panics under `BENCH_REQUIRE_LIVE=1`.
pub fn skip(backend: &str, reason: &str) {
    assert!(
        !require_live(),
        "{backend} is required (BENCH_REQUIRE_LIVE=1) but unreachable: {reason}"
    );
    eprintln!(
        "skipping: {backend} unreachable: {reason} (set BENCH_REQUIRE_LIVE=1 to fail instead)"
    );
}

/// `url` with its database (path) replaced by `db`.
pub fn with_database(url: &str, db: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (before_query, query) = rest
        .split_once('?')
        .map_or((rest, None), |(a, q)| (a, Some(q)));
    let host = before_query.split('/').next().unwrap_or(before_query);
    let mut out = format!("{scheme}://{host}/{db}");
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

/// Small pools and short timeouts, so faults show quickly.
pub fn pool(size: usize) -> PoolConfig {
    PoolConfig {
        size,
        connect_timeout: Duration::from_secs(3),
        statement_timeout: Duration::from_secs(10),
    }
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// Runs a line that must succeed.
pub async fn ok<E: Executor>(e: &E, line: &str) -> Outcome {
    match e.run_line(line).await {
        Ok(o) => o,
        Err(err) => panic!("{line}: {err}"),
    }
}

/// The JSON records of a line that must return rows.
pub async fn records<E: Executor>(e: &E, line: &str) -> Vec<serde_json::Value> {
    match ok(e, line).await {
        Outcome::Rows(set) => set
            .records
            .iter()
            .map(|r| serde_json::from_str(r).expect("record is JSON"))
            .collect(),
        other => panic!("{line}: expected rows, got {other:?}"),
    }
}

/// A SQL line from a statement and its params.
pub fn sql(statement: &str, params: serde_json::Value) -> String {
    serde_json::json!({"sql": statement, "params": params}).to_string()
}
