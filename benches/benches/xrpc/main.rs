//! `--bench xrpc`: the store served over HTTP and WebSocket (`crates/xrpc`,
//! `docs/design/xrpc.md`), driven by a load generator inside this process.
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
//! - `xrpc.route` (`routes.rs`, `routes/more.rs`): 22 routes at 50
//!   connections, the 4 large ones at 10, on accounts and records seeded
//!   from `datagen::store` (`seed.rs`);
//! - `xrpc.write`: createRecord at 1, 10 and 50 connections, one account
//!   each, a fresh body per request;
//! - `xrpc.mix` (`mix.rs`): the 100-account traffic mix at 10 and 50
//!   connections, per-route percentiles under it, its proxied `app.bsky`
//!   reads answered by the appview stand-in
//!   (`benches::appview_standin`, started with the route fixture; both
//!   servers name it as their appview);
//! - `xrpc.firehose` (`firehose.rs`): fan-out to 1/10/100 consumers at a
//!   fixed commit rate, and a slow consumer among 10;
//! - `xrpc.websocket_churn` (`churn.rs`): cohorts of subscribers up to the
//!   connection limit, opened and closed;
//! - `xrpc.startup` (`startup.rs`): the release `atpds` binary launched as
//!   a subprocess until its first healthy answer, four lanes;
//! - `space.*` (`spaces/`): the permissioned-data slice, each operation in
//!   process (the `space` library) and over HTTP on a server of its own,
//!   beside the public repo's equivalent (`BENCH_QUICK=1 cargo bench
//!   --features bench-internals --bench xrpc -- space.`; the dot keeps
//!   the other groups' fixtures unbuilt).
//!
//! Under `BENCH_PEERS=1` (not in `--test` runs) the official PDS runs as a
//! whole server too (`peer.rs`, `benches::official_pds`), seeded alike, and
//! `xrpc.route` / `xrpc.write` measure it after ours (rows
//! `<route>.official-pds/cN`), and `xrpc.mix` too (`official-pds/cN`).
//!
//! Also printed (not a Criterion id): the CPU time of one password hash
//! with the server's scrypt parameters, the bound of `createSession`.

use std::time::Instant;

use benches::target::{BenchTarget, Budget};

mod churn;
mod client;
mod firehose;
mod mix;
mod peer;
mod routes;
mod seed;
mod spaces;
mod startup;

/// CPU time of one scrypt hash at the server's default cost (N = 2^log_n,
/// r = 8, p = 1, 64 bytes: `crates/xrpc/src/password.rs`), printed beside
/// `xrpc.route/create_session`, which does one per request.
fn kdf_cpu() {
    let log_n = xrpc::ServerConfig::new("unused").scrypt_log_n;
    let params = scrypt::Params::new(log_n, 8, 1, 64).expect("scrypt parameters");
    let mut out = [0u8; 64];
    let rounds = 3u32;
    let wall = Instant::now();
    let cpu = benches::callers::process_cpu();
    for i in 0..rounds {
        scrypt::scrypt(b"atbench xrpc bench", &i.to_le_bytes(), &params, &mut out).expect("scrypt");
        std::hint::black_box(&out);
    }
    let cpu = benches::callers::process_cpu().saturating_sub(cpu);
    eprintln!(
        "atbench: xrpc: one scrypt password hash (N = 2^{log_n}, r = 8, p = 1): {:.1} ms CPU, {:.1} ms wall; two cores bound createSession near {:.0}/s",
        cpu.as_secs_f64() * 1e3 / f64::from(rounds),
        wall.elapsed().as_secs_f64() * 1e3 / f64::from(rounds),
        2.0 * f64::from(rounds) / cpu.as_secs_f64().max(1e-9)
    );
}

fn main() {
    let mut target = BenchTarget::new(
        "xrpc",
        Budget {
            full_min: 5.5,
            quick_min: 2.5,
        },
    );
    let dir = benches::sidecar::scratch_dir("xrpc");
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
    // Fixtures are built only for groups the command line's filters can
    // select (seeding, consumers and cohorts take seconds).
    let (route, write, mix) = (
        target.may_run("xrpc.route"),
        target.may_run("xrpc.write"),
        target.may_run("xrpc.mix"),
    );
    if route || write || mix {
        kdf_cpu();
        let standin = benches::appview_standin::AppviewStandin::start()
            .unwrap_or_else(|e| panic!("the appview stand-in did not start: {e}"));
        let appview = standin.appview();
        eprintln!(
            "atbench: xrpc: appview stand-in {} ({}), both servers' appview",
            appview.url, appview.did
        );
        let fixture = seed::build(dir.path(), &appview);
        let official = peer::official_seed(&appview);
        let peers: Vec<(&str, &seed::Seed)> =
            official.iter().map(|s| (peer::OFFICIAL_PDS, s)).collect();
        if route {
            routes::run_routes(&mut target, &fixture, &peers);
        }
        if write {
            routes::run_writes(&mut target, &fixture, &peers);
        }
        if mix {
            // The mix's 100 accounts join the route fixture's server (and
            // the official PDS's), seeded after the route rows ran.
            let ours = mix::build(fixture.addr, &standin);
            let theirs: Vec<(&str, mix::MixSeed)> = peers
                .iter()
                .map(|(p, s)| (*p, mix::build(s.addr, &standin)))
                .collect();
            let mut servers = vec![("ours", &ours)];
            servers.extend(theirs.iter().map(|(p, s)| (*p, s)));
            mix::run(&mut target, &servers, &standin);
        }
    }
    if target.may_run("xrpc.firehose") {
        firehose::run(&mut target, dir.path());
    }
    if target.may_run("xrpc.websocket_churn") {
        churn::run(&mut target, dir.path());
    }
    if target.may_run("xrpc.startup") {
        startup::run(&mut target, dir.path());
    }
    if spaces::may_run(&target) {
        spaces::run(&mut target, dir.path());
    }
    target.finish();
}
