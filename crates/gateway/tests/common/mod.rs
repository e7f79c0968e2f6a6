//! Shared by the live tests: reaching a backend or skipping (failing under
//! `BENCH_REQUIRE_LIVE=1`), a database / key prefix of each test's own,
//! and the tokio runtime the tests run on.
#![allow(dead_code)]

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::time::Duration;

use gateway::{Executor, GatewayError, Outcome, PoolConfig};

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

/// Lines the kill tests run, and the tasks that run them.
pub const KILL_LINES: usize = 100_000;
pub const KILL_TASKS: usize = 16;

/// Runs [`KILL_LINES`] lines (`line(i)`, each answer checked by
/// `check(i, outcome)`) from [`KILL_TASKS`] tasks through `e`, and calls
/// `kill` (which returns how many connections it killed) when a third and
/// when two thirds of the lines are done. Every line must end done or
/// failed with a lost-connection or unreachable error; anything else
/// panics. Returns (connections killed, lines failed).
pub async fn lines_through_kills<E, K, Fut>(
    e: Arc<E>,
    line: fn(usize) -> String,
    check: fn(usize, Outcome),
    mut kill: K,
) -> (usize, usize)
where
    E: Executor + 'static,
    K: FnMut() -> Fut,
    Fut: Future<Output = usize>,
{
    let next = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..KILL_TASKS {
        let (e, next, done) = (Arc::clone(&e), Arc::clone(&next), Arc::clone(&done));
        tasks.push(tokio::spawn(async move {
            let mut lost = 0usize;
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= KILL_LINES {
                    return lost;
                }
                match e.run_line(&line(i)).await {
                    Ok(outcome) => check(i, outcome),
                    Err(GatewayError::ConnectionLost { .. } | GatewayError::Unreachable { .. }) => {
                        lost += 1
                    }
                    Err(other) => panic!("line {i}: untyped fault {other:?}"),
                }
                done.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    let mut killed = 0usize;
    for at in [KILL_LINES / 3, 2 * KILL_LINES / 3] {
        while done.load(Ordering::Relaxed) < at {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        killed += kill().await;
    }
    let mut lost = 0;
    for t in tasks {
        lost += t.await.expect("task");
    }
    assert_eq!(done.load(Ordering::Relaxed), KILL_LINES);
    assert!(killed >= 1, "nothing was killed");
    (killed, lost)
}
