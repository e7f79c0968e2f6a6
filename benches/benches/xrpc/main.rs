//! `--bench xrpc`: the store served over HTTP and WebSocket (`crates/xrpc`,
//! `spec/xrpc.md`), driven by a load generator inside this process.
//!
//! The server runs in this process (`xrpc::spawn`: its own tokio runtime,
//! two worker threads and a blocking pool for the store); the load
//! generator is one OS thread per connection with hyper's HTTP/1.1 client
//! on keep-alive loopback connections, through the concurrent-callers
//! runner (ops/s, p50/p95/p99, CPU/op of the whole process). Server and
//! load generator share the machine's cores, so the CPU/op counts both.
//!
//! Groups, in run order, each on a server with a fresh store under
//! `BENCH_DIR` (default a temp dir under `target/atbench/xrpc-tmp`):
//! - `xrpc.route` (`routes.rs`): 13 routes at 50 connections, the 4 large
//!   ones at 10, on accounts and records seeded from `datagen::store`
//!   (`seed.rs`);
//! - `xrpc.write`: createRecord at 1, 10 and 50 connections, one account
//!   each, a fresh body per request;
//! - `xrpc.firehose` (`firehose.rs`): fan-out to 1/10/100 consumers at a
//!   fixed commit rate, and a slow consumer among 10;
//! - `xrpc.websocket_churn` (`churn.rs`): cohorts of subscribers up to the
//!   connection limit, opened and closed.
//!
//! Also printed (not a Criterion id): the CPU time of one password hash
//! with the server's scrypt parameters, the bound of `createSession`.

use std::path::PathBuf;
use std::time::Instant;

use benches::target::{BenchTarget, Budget};

mod churn;
mod client;
mod firehose;
mod routes;
mod seed;

fn bench_dir() -> tempfile::TempDir {
    let base = std::env::var_os("BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| benches::sidecar::atbench_dir().join("xrpc-tmp"));
    std::fs::create_dir_all(&base)
        .unwrap_or_else(|e| panic!("cannot create bench dir {}: {e}", base.display()));
    tempfile::Builder::new()
        .prefix("xrpc-")
        .tempdir_in(&base)
        .unwrap_or_else(|e| panic!("cannot create a temp dir in {}: {e}", base.display()))
}

/// CPU time of one scrypt hash at the server's default cost (N = 2^log_n,
/// r = 8, p = 1, 64 bytes: `crates/xrpc/src/password.rs`), printed beside
/// `xrpc.route/create_session`, which does one per request.
fn kdf_cpu() {
    let log_n = xrpc::ServerConfig::new("unused").scrypt_log_n;
    let params = scrypt::Params::new(log_n, 8, 1, 64).expect("scrypt parameters");
    let mut out = [0u8; 64];
    let rounds = 3u32;
    let wall = Instant::now();
    let cpu = cpu_now();
    for i in 0..rounds {
        scrypt::scrypt(b"atbench xrpc bench", &i.to_le_bytes(), &params, &mut out).expect("scrypt");
        std::hint::black_box(&out);
    }
    let cpu = cpu_now().saturating_sub(cpu);
    eprintln!(
        "atbench: xrpc: one scrypt password hash (N = 2^{log_n}, r = 8, p = 1): {:.1} ms CPU, {:.1} ms wall; two cores bound createSession near {:.0}/s",
        cpu.as_secs_f64() * 1e3 / f64::from(rounds),
        wall.elapsed().as_secs_f64() * 1e3 / f64::from(rounds),
        2.0 * f64::from(rounds) / cpu.as_secs_f64().max(1e-9)
    );
}

/// The process's CPU time so far (zero where there is no such clock).
fn cpu_now() -> std::time::Duration {
    benches::callers::process_cpu_time().unwrap_or_default()
}

/// Whether a Criterion filter on the command line can select a benchmark
/// of `group`, so that the fixtures of groups filtered out are not built
/// (seeding, consumers, cohorts take seconds). A filter is a regex matched
/// anywhere in the id: each `|` alternative is read up to its first regex
/// character; one that names no `xrpc.` group (`health`, `.*`) keeps
/// every group.
fn wanted(group: &str) -> bool {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let filters = benches::target::filters(&args);
    if filters.is_empty() {
        return true;
    }
    filters.iter().flat_map(|f| f.split('|')).any(|alt| {
        let literal: String = alt
            .chars()
            .take_while(|c| !"*+?()[]{}^$\\".contains(*c))
            .collect();
        let literal = literal.trim_end_matches('.');
        let names_xrpc_group = literal.starts_with("xrpc.") && literal.len() > "xrpc.".len();
        let foreign = !literal.is_empty()
            && !literal.starts_with("xrpc")
            && !"xrpc".starts_with(literal)
            && literal.contains('.');
        if foreign {
            return false;
        }
        !names_xrpc_group || literal.starts_with(group) || group.starts_with(literal)
    })
}

fn main() {
    let mut target = BenchTarget::new(
        "xrpc",
        Budget {
            full_min: 4.0,
            quick_min: 1.5,
        },
    );
    let dir = bench_dir();
    benches::sidecar::context(
        "xrpc",
        serde_json::json!({
            "store_dir": dir.path().display().to_string(),
            "seed": datagen::SEED,
            "reader_records": seed::READER_RECORDS,
            "firehose_rate": firehose::RATE,
            "load_generator": "in process: one thread and one keep-alive hyper HTTP/1.1 connection per caller, loopback; shares the cores with the server",
        }),
    );
    if wanted("xrpc.route") || wanted("xrpc.write") {
        kdf_cpu();
        let fixture = seed::build(dir.path());
        if wanted("xrpc.route") {
            routes::run_routes(&mut target, &fixture);
        }
        if wanted("xrpc.write") {
            routes::run_writes(&mut target, &fixture);
        }
    }
    if wanted("xrpc.firehose") {
        firehose::run(&mut target, dir.path());
    }
    if wanted("xrpc.websocket_churn") {
        churn::run(&mut target, dir.path());
    }
    target.finish();
}
