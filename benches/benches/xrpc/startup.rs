//! `xrpc.startup/ours/<lane>`: startup readiness as the PDS benchmark notes
//! this workspace follows measure it: from launching the release `atpds`
//! binary as a subprocess to the first 200 answer of `/xrpc/_health`.
//!
//! How one sample is timed: the clock starts just before `spawn`; the
//! client then connects in a tight loop (a refused connect means the
//! listener is not bound yet) and sends one `GET /xrpc/_health` on the
//! first connection that opens; the server binds before it opens its
//! store but accepts only once it is ready, so the answer comes at the
//! first moment it can serve. The clock stops when the 200's body has
//! been read. The process is then stopped with SIGTERM and reaped, and the
//! lane's files are reset, outside the timing.
//!
//! Lanes (each on its own directory):
//! - `fresh`: no store file (removed before every sample): schema
//!   creation, secret and account files created;
//! - `empty`: the store `fresh` left, restarted;
//! - `history-10k`: the store fixture of `store.startup/ours/history-10k`
//!   (`HistoryShape::HISTORY_10K`, built once through the store's API:
//!   10 accounts, 10,000 commits, some 250 MB), copied once and started
//!   once untimed (which runs its one-off revision backfill), then
//!   restarted: a server with that history restarting (copying 250 MB
//!   before every sample would make the lane minutes long);
//! - `snapshot-history-10k`: the same fixture given as `--snapshot FILE`:
//!   atpds copies it with SQLite's backup API (the fixture opened
//!   read-only) before it starts, inside the timing.
//!
//! - `process-floor/no-store` (probe): `startup_floor`
//!   (`benches/src/bin/startup_floor.rs`), a standard-library process that
//!   binds and answers every request with a fixed 200, launched and timed
//!   by the same loop: process creation, the dynamic loader, one bind and
//!   one loopback exchange, the floor under every lane on this machine.
//!
//! Besides Criterion's row, each lane's samples (min/median/max of every
//! sample this process took, the stage timings atpds printed, the binary's
//! SHA-256, the platform) are printed and written to
//! `<target>/atbench/startup/<lane>.json`.
//!
//! The binary is `target/release/atpds`, built beforehand with `cargo
//! build --release -p xrpc --bin atpds` (a bench cannot run cargo: `cargo
//! bench` holds the build directory's lock while benches run). Missing, the
//! group is skipped with that line, and so it is when the binary is older
//! than a source file of `crates/{xrpc, store, repo, codec}` (stale code);
//! under `BENCH_REQUIRE_LIVE=1` either is a failure.
//! Under `--test` the group is skipped: it would build the 10k-commit
//! fixture, which a smoke run must not.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use benches::target::BenchTarget;
use sha2::{Digest, Sha256};
use store::bench_internals::{self, HistoryShape};

/// One lane: its tier and how its directory is prepared before a sample.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Lane {
    Fresh,
    Empty,
    History,
    Snapshot,
}

impl Lane {
    fn tier(self) -> &'static str {
        match self {
            Lane::Fresh => "fresh",
            Lane::Empty => "empty",
            Lane::History => "history-10k",
            Lane::Snapshot => "snapshot-history-10k",
        }
    }
}

/// The files of a store (`DB`, its WAL and shm, account and secret files).
fn store_files(db: &Path) -> Vec<PathBuf> {
    [
        "",
        "-wal",
        "-shm",
        ".accounts",
        ".accounts-wal",
        ".accounts-shm",
        ".secret",
    ]
    .iter()
    .map(|s| {
        let mut p = db.as_os_str().to_owned();
        p.push(s);
        PathBuf::from(p)
    })
    .collect()
}

fn remove_store(db: &Path) {
    for f in store_files(db) {
        let _ = std::fs::remove_file(f);
    }
}

/// Copies every file of store `src` that exists to `dst`'s names.
fn copy_store(src: &Path, dst: &Path) {
    remove_store(dst);
    for (from, to) in store_files(src).into_iter().zip(store_files(dst)) {
        if from.exists() {
            std::fs::copy(&from, &to)
                .unwrap_or_else(|e| panic!("copy {} -> {}: {e}", from.display(), to.display()));
        }
    }
}

/// A free loopback port (the OS's choice; released before atpds binds it).
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().expect("its address").port()
}

/// The workspace root (where `cargo build` runs and `target/` lives).
fn workspace() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// The newest modification time of the files under `dir` (recursively).
fn newest(dir: &Path) -> Option<std::time::SystemTime> {
    let mut newest = None;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(meta) = e.metadata() else { continue };
            if meta.is_dir() {
                stack.push(e.path());
            } else if let Ok(t) = meta.modified() {
                newest = newest.max(Some(t));
            }
        }
    }
    newest
}

/// The release `atpds`, built beforehand (`cargo build --release -p xrpc
/// --bin atpds`: a bench cannot run cargo itself, as `cargo bench` holds
/// the build directory's lock while its benches run). `Err` when it is
/// missing, or older than a source file of the crates it is built from
/// (a stale binary would measure other code).
fn release_atpds() -> Result<PathBuf, String> {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target"));
    let bin = target.join("release").join("atpds");
    let built = std::fs::metadata(&bin)
        .and_then(|m| m.modified())
        .map_err(|_| {
            format!(
                "{} is missing: run `cargo build --release -p xrpc --bin atpds` first",
                bin.display()
            )
        })?;
    for krate in ["xrpc", "store", "repo", "codec"] {
        let src = workspace().join("crates").join(krate);
        if newest(&src).is_some_and(|t| t > built) {
            return Err(format!(
                "{} is older than crates/{krate} (it would measure other code): rebuild it with `cargo build --release -p xrpc --bin atpds`",
                bin.display()
            ));
        }
    }
    Ok(bin)
}

fn sha256_hex(path: &Path) -> String {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `x86_64 linux, <CPU model>, <n> cores`.
fn platform() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!(
        "{} {}, {cpu}, {cores} cores",
        std::env::consts::ARCH,
        std::env::consts::OS
    )
}

/// Launches `cmd` (told to listen on `addr`) and times it from spawn to
/// the first 200 of `/xrpc/_health`, read whole; the child comes back
/// running, to be stopped by dropping the guard.
fn launch(mut cmd: Command, addr: SocketAddr) -> (Duration, Stop) {
    let started = Instant::now();
    let child = cmd.spawn().expect("spawn the server");
    let guard = Stop(child);
    let deadline = started + Duration::from_secs(20);
    let mut stream = loop {
        match TcpStream::connect(addr) {
            Ok(s) => break s,
            Err(_) if Instant::now() < deadline => std::hint::spin_loop(),
            Err(e) => panic!("the server did not listen on {addr} within 20 s: {e}"),
        }
    };
    stream.set_nodelay(true).expect("TCP_NODELAY");
    stream
        .write_all(b"GET /xrpc/_health HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n")
        .expect("send the health request");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).expect("read the answer");
    let elapsed = started.elapsed();
    let text = String::from_utf8_lossy(&answer);
    assert!(
        text.starts_with("HTTP/1.1 200"),
        "the first health answer was not 200: {text}"
    );
    (elapsed, guard)
}

/// One sample: launch to the first 200 of `/xrpc/_health`; then the
/// startup line atpds printed, and the process stopped.
fn one_start(bin: &Path, db: &Path, snapshot: Option<&Path>) -> (Duration, String) {
    let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let mut cmd = Command::new(bin);
    cmd.arg("--db")
        .arg(db)
        .args(["--listen", &addr.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    if let Some(s) = snapshot {
        cmd.arg("--snapshot").arg(s);
    }
    let (elapsed, mut guard) = launch(cmd, addr);
    // The two lines atpds printed before serving are in the pipe already.
    let out = guard.0.stdout.take().expect("stdout");
    let mut lines = BufReader::new(out).lines();
    let listening = lines.next().and_then(Result::ok).unwrap_or_default();
    let report = lines.next().and_then(Result::ok).unwrap_or_default();
    assert!(
        listening.starts_with("atpds listening on ") && report.contains("storage_ms="),
        "unexpected startup lines: {listening:?} / {report:?}"
    );
    drop(guard);
    (elapsed, report)
}

/// One sample of the floor: `startup_floor` (benches/src/bin) launched to
/// its first 200, by the same loop.
fn floor_start() -> Duration {
    let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_startup_floor"));
    cmd.args(["--listen", &addr.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    launch(cmd, addr).0
}

/// A child stopped with SIGTERM (its own id) and reaped when dropped; a
/// graceful stop lets the store close its files before the next sample.
struct Stop(Child);

impl Drop for Stop {
    fn drop(&mut self) {
        if let Ok(pid) = i32::try_from(self.0.id()) {
            // SAFETY: kill(2) on our own child's pid, which is not reaped yet.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match self.0.try_wait() {
                Ok(Some(_)) => return,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(1))
                }
                _ => break,
            }
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The stage figures of a startup line (`key_ms=value` pairs).
fn stages(report: &str) -> Vec<(String, f64)> {
    report
        .split_whitespace()
        .filter_map(|w| w.split_once("_ms="))
        .filter_map(|(k, v)| v.parse().ok().map(|v| (format!("{k}_ms"), v)))
        .collect()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Registers `xrpc.startup`.
pub fn run(target: &mut BenchTarget, dir: &Path) {
    if benches::config::is_smoke() {
        target.skip_group(
            "xrpc.startup",
            "a --test run (it needs the release atpds and builds the 10k-commit history fixture)",
        );
        return;
    }
    let bin = match release_atpds() {
        Ok(b) => b,
        Err(e) => {
            assert!(
                std::env::var("BENCH_REQUIRE_LIVE").as_deref() != Ok("1"),
                "xrpc.startup: BENCH_REQUIRE_LIVE=1 and {e}"
            );
            target.skip_group("xrpc.startup", &e);
            return;
        }
    };
    let sha = sha256_hex(&bin);
    let platform = platform();
    eprintln!(
        "atbench: xrpc.startup: {} sha256 {sha}; {platform}",
        bin.display()
    );

    let fixture = dir.join("startup-history.sqlite");
    let t = Instant::now();
    let fx = bench_internals::build_history_fixture(&fixture, &HistoryShape::HISTORY_10K)
        .expect("history fixture");
    eprintln!(
        "atbench: xrpc.startup: history fixture built in {:.1?} ({} #commit events, {} unversioned node rows)",
        t.elapsed(),
        fx.commit_events,
        fx.unversioned
    );

    let mut g = target.group("xrpc.startup");
    g.criterion()
        .sampling_mode(criterion::SamplingMode::Flat)
        .sample_size(10);
    g.throughput(criterion::Throughput::Elements(1));
    // The floor under every lane (benches/src/bin/startup_floor.rs: bind,
    // one fixed 200, no runtime, no store), timed by the same loop.
    let mut floor: Vec<f64> = Vec::new();
    g.bench("process-floor", "no-store", |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                let t = floor_start();
                timed += t;
                floor.push(t.as_secs_f64() * 1e3);
            }
            timed
        })
    });
    if !floor.is_empty() {
        let mut sorted = floor.clone();
        let med = median(&mut sorted);
        let (min, max) = (sorted[0], sorted[sorted.len() - 1]);
        eprintln!(
            "atbench: xrpc.startup/process-floor/no-store: {} samples, launch to first 200 min {min:.2} ms, median {med:.2} ms, max {max:.2} ms",
            floor.len()
        );
        benches::sidecar::write(
            "startup",
            "process-floor",
            &serde_json::json!({
                "id": "xrpc.startup/process-floor/no-store",
                "samples_ms": floor,
                "min_ms": min,
                "median_ms": med,
                "max_ms": max,
                "platform": platform,
            }),
        );
    }
    for lane in [Lane::Fresh, Lane::Empty, Lane::History, Lane::Snapshot] {
        let db = dir.join(format!("startup-{}.sqlite", lane.tier()));
        remove_store(&db);
        match lane {
            // A store as `fresh` leaves it: created once, then restarted.
            Lane::Empty => drop(one_start(&bin, &db, None)),
            Lane::History => {
                copy_store(&fixture, &db);
                drop(one_start(&bin, &db, None));
            }
            Lane::Fresh | Lane::Snapshot => {}
        }
        let mut samples: Vec<f64> = Vec::new();
        let mut reports: Vec<String> = Vec::new();
        g.bench("ours", lane.tier(), |b| {
            b.iter_custom(|iters| {
                let mut timed = Duration::ZERO;
                for _ in 0..iters {
                    if matches!(lane, Lane::Fresh | Lane::Snapshot) {
                        remove_store(&db);
                    }
                    let snapshot = (lane == Lane::Snapshot).then_some(fixture.as_path());
                    let (t, report) = one_start(&bin, &db, snapshot);
                    timed += t;
                    samples.push(t.as_secs_f64() * 1e3);
                    reports.push(report);
                }
                timed
            })
        });
        if samples.is_empty() {
            continue; // filtered out
        }
        // Every start saw the store it should: the history lanes' last
        // report names the fixture's accounts and next seq.
        let last = reports.last().cloned().unwrap_or_default();
        match lane {
            Lane::History | Lane::Snapshot => {
                let seq = format!("next seq {}", fx.stats.last_seq + 1);
                assert!(last.contains(&seq), "{}: {last} (want {seq})", lane.tier());
            }
            Lane::Empty => assert!(last.contains("next seq 1"), "empty: {last}"),
            Lane::Fresh => assert!(last.contains("from v0"), "fresh: {last}"),
        }
        let mut sorted = samples.clone();
        let med = median(&mut sorted);
        let (min, max) = (sorted[0], sorted[sorted.len() - 1]);
        let mut stage_medians = serde_json::Map::new();
        let names: Vec<String> = stages(&last).into_iter().map(|(k, _)| k).collect();
        for name in &names {
            let mut v: Vec<f64> = reports
                .iter()
                .filter_map(|r| {
                    stages(r)
                        .into_iter()
                        .find(|(k, _)| k == name)
                        .map(|(_, v)| v)
                })
                .collect();
            stage_medians.insert(name.clone(), serde_json::json!(median(&mut v)));
        }
        eprintln!(
            "atbench: xrpc.startup/ours/{}: {} samples, launch to first 200 min {min:.2} ms, median {med:.2} ms, max {max:.2} ms; stage medians {}",
            lane.tier(),
            samples.len(),
            serde_json::Value::Object(stage_medians.clone())
        );
        benches::sidecar::write(
            "startup",
            lane.tier(),
            &serde_json::json!({
                "id": format!("xrpc.startup/ours/{}", lane.tier()),
                "samples_ms": samples,
                "min_ms": min,
                "median_ms": med,
                "max_ms": max,
                "stage_medians_ms": stage_medians,
                "last_report": last,
                "binary": bin.display().to_string(),
                "binary_sha256": sha,
                "platform": platform,
            }),
        );
        remove_store(&db);
    }
    g.finish();
}
