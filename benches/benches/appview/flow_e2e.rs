//! `appview.flow_e2e/<server>/flows-{1,4}`: a Prefect user's flow end to
//! end, run by Prefect's own client (prefect 3.9.1 from the venv of
//! `scripts/prefect_venv.py`), against the appview's Prefect-compatible
//! server (`appview`: `appview::rest` in this process on its own runtime)
//! and, under `BENCH_PEERS=1`, the Prefect server itself on SQLite and on
//! PostgreSQL (`prefect-sqlite`, `prefect-postgres`: `prefect server start`
//! with its default services, since its task run recorder is what turns the
//! client's task-run events into task runs; a fresh database each).
//!
//! Unit of work: one iteration is C concurrent flow runs completed (C = 1
//! or 4; throughput = flows). A flow run is `flow_e2e.py`'s flow: 10
//! sequential `@task` calls, each logging 5 lines with `get_run_logger()`,
//! then the client's log and event workers drained, as a script does at
//! exit: every log batch and event has been acknowledged by the server.
//! What a server does after acknowledging (Prefect's task run recorder
//! consumes the events in batches) is not in the timing; it is waited for
//! in the check.
//!
//! Concurrency: C long-lived driver processes, each one Python process
//! running one flow per command, as a user running four flows at once runs
//! them (four scripts, or a worker's four flow-run subprocesses): each has
//! its own client, log worker and event WebSocket. Threads of one process
//! would share one client and one event loop, which is not how flows run
//! concurrently in production.
//!
//! Excluded: Python's start-up and `import prefect` (the drivers start
//! before the timing), the servers' start-up and migrations, and the check.
//! After each server's rows every flow run the drivers reported is read
//! back through the REST API: COMPLETED, with its 10 task runs COMPLETED
//! and its 50 log lines, each with its task run.
//!
//! `--test` (the CI smoke): the appview row only, each once (the Prefect
//! servers' start-ups would take minutes); without the venv the rows skip
//! with the reason, under `BENCH_REQUIRE_LIVE=1` they fail.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use benches::prefect::{Http, PrefectDb, PrefectServer};
use benches::target::BenchTarget;
use criterion::{SamplingMode, Throughput};
use serde_json::{Value, json};

const GROUP: &str = "appview.flow_e2e";
/// The flow's tasks and each task's log lines (as `flow_e2e.py` has them).
const TASKS: usize = 10;
const LINES: usize = 5;
const CONCURRENCY: [usize; 2] = [1, 4];
const SERVERS: [&str; 3] = ["appview", "prefect-sqlite", "prefect-postgres"];

/// One Python process running the flow on command.
struct Driver {
    child: Child,
    stdin: ChildStdin,
    answers: BufReader<ChildStdout>,
}

impl Driver {
    fn start(python: &Path, api: &str, home: &Path) -> Result<Driver, String> {
        std::fs::create_dir_all(home).map_err(|e| e.to_string())?;
        let log = std::fs::File::create(home.join("driver.log")).map_err(|e| e.to_string())?;
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/appview/flow_e2e.py");
        let mut child = Command::new(python)
            .arg(script)
            .env("PREFECT_API_URL", api)
            .env("PREFECT_HOME", home)
            .env("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("{}: {e}", python.display()))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let answers = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        Ok(Driver {
            child,
            stdin,
            answers,
        })
    }

    fn send(&mut self) {
        self.stdin
            .write_all(b"run\n")
            .and_then(|()| self.stdin.flush())
            .expect("driver stdin");
    }

    /// The flow run's id and final state type.
    fn answer(&mut self) -> (String, String) {
        let mut line = String::new();
        let n = self.answers.read_line(&mut line).expect("driver answer");
        assert!(n > 0, "a flow_e2e driver exited (see its driver.log)");
        let v: Value = serde_json::from_str(&line).expect("driver answer JSON");
        let id = v["id"].as_str().expect("flow run id").to_owned();
        (id, v["type"].as_str().unwrap_or_default().to_owned())
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.stdin.write_all(b"quit\n");
        let _ = self.stdin.flush();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One round: a flow on each driver at once, until all have answered.
fn round(drivers: &mut [Driver], done: &mut Vec<(String, String)>) {
    for d in drivers.iter_mut() {
        d.send();
    }
    for d in drivers.iter_mut() {
        done.push(d.answer());
    }
}

/// Reads `id` back until it is whole or `deadline` passes; the reason
/// when it is not.
fn complete(http: &mut Http, id: &str) -> Result<(), String> {
    let (st, body) = http
        .request("GET", &format!("/api/flow_runs/{id}"), b"")
        .map_err(|e| e.to_string())?;
    let run: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if st != 200 || run["state_type"] != "COMPLETED" {
        return Err(format!("flow run {id}: {st} {run}"));
    }
    let body = json!({"flow_runs": {"id": {"any_": [id]}}, "limit": 200});
    let (st, body) = http
        .post("/api/task_runs/filter", &body)
        .map_err(|e| e.to_string())?;
    let tasks: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let tasks = tasks.as_array().cloned().unwrap_or_default();
    let done = tasks
        .iter()
        .filter(|t| t["state_type"] == "COMPLETED")
        .count();
    if st != 200 || tasks.len() != TASKS || done != TASKS {
        return Err(format!(
            "flow run {id}: {st}, {} task runs, {done} COMPLETED",
            tasks.len()
        ));
    }
    let body = json!({"logs": {"flow_run_id": {"any_": [id]}}, "limit": 200});
    let (st, body) = http
        .post("/api/logs/filter", &body)
        .map_err(|e| e.to_string())?;
    let logs: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let mut lines: Vec<String> = logs
        .as_array()
        .into_iter()
        .flatten()
        .filter(|l| l["task_run_id"].is_string())
        .filter_map(|l| l["message"].as_str())
        .filter(|m| m.starts_with("step "))
        .map(str::to_owned)
        .collect();
    lines.sort();
    lines.dedup();
    let want: Vec<String> = {
        let mut w: Vec<String> = (0..TASKS)
            .flat_map(|i| (0..LINES).map(move |j| format!("step {i} line {j}")))
            .collect();
        w.sort();
        w
    };
    if st != 200 || lines != want {
        return Err(format!(
            "flow run {id}: {st}, {} of {} log lines",
            lines.len(),
            want.len()
        ));
    }
    Ok(())
}

/// Outside the timing: every reported run ended COMPLETED, and reads back
/// whole (waiting up to a minute for a server's asynchronous recording).
fn check(server: &str, addr: std::net::SocketAddr, done: &[(String, String)]) {
    let mut http = Http::connect(addr).expect("connect");
    for (id, state) in done {
        assert_eq!(state, "COMPLETED", "{GROUP}/{server}: flow run {id}");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match complete(&mut http, id) {
                Ok(()) => break,
                Err(e) if Instant::now() > deadline => panic!("{GROUP}/{server}: {e}"),
                Err(_) => std::thread::sleep(Duration::from_millis(200)),
            }
        }
    }
    eprintln!(
        "atbench: {GROUP}/{server}: {} flow runs read back COMPLETED with {TASKS} task runs and {} log lines each",
        done.len(),
        TASKS * LINES
    );
}

fn bench_server(
    target: &mut BenchTarget,
    python: &Path,
    server: &str,
    addr: std::net::SocketAddr,
    dir: &Path,
) {
    let api = format!("http://{addr}/api");
    let most = if target.is_smoke() { 1 } else { CONCURRENCY[1] };
    let mut drivers: Vec<Driver> = (0..most)
        .map(|k| Driver::start(python, &api, &dir.join(format!("e2e-client-{server}-{k}"))))
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{GROUP}/{server}: {e}"));
    let mut done = Vec::new();
    // Warm: each driver's first flow (the flow registered, connections open).
    round(&mut drivers, &mut done);
    // Spelled out, not GROUP: the units registry test reads the literal.
    let mut g = target.group("appview.flow_e2e");
    g.criterion()
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat);
    g.timed(Duration::from_secs(2), Duration::from_secs(10));
    for c in CONCURRENCY {
        if c > drivers.len() {
            eprintln!("atbench: {GROUP}/{server}/flows-{c}: skipped: a --test run");
            continue;
        }
        g.throughput(Throughput::Elements(c as u64));
        g.bench(server, &format!("flows-{c}"), |b| {
            b.iter(|| round(&mut drivers[..c], &mut done))
        });
    }
    g.finish();
    drop(drivers);
    check(server, addr, &done);
}

fn skip(target: &mut BenchTarget, server: &str, reason: &str) {
    assert!(
        !benches::floor::required(),
        "BENCH_REQUIRE_LIVE=1: {GROUP}/{server} cannot run: {reason}"
    );
    target.skip_rows(GROUP, server, reason);
}

pub fn run(target: &mut BenchTarget, dir: &Path) {
    if !target.may_run(GROUP) {
        return;
    }
    let python: PathBuf = match benches::prefect::venv_python() {
        Ok(p) => p,
        Err(reason) => {
            for server in SERVERS {
                skip(target, server, &reason);
            }
            target.skip_group(GROUP, &reason);
            return;
        }
    };
    let app = appview::AppView::open(&dir.join("e2e-appview"), store::Config::default())
        .expect("open appview");
    let ours = crate::rest::start_ours(app);
    bench_server(target, &python, "appview", ours.addr(), dir);
    drop(ours);
    let peers = match benches::peers::python_skip_reason() {
        Some(reason) => Err(reason),
        None => Ok(()),
    };
    for db in [PrefectDb::Sqlite, PrefectDb::Postgres] {
        let server = db.implementation();
        if let Err(reason) = &peers {
            // Not under BENCH_PEERS=1, or a --test run: not a failure.
            target.skip_rows(GROUP, server, reason);
            continue;
        }
        match PrefectServer::start_with_services(&python, db, &dir.join("prefect-e2e")) {
            Ok(p) => {
                eprintln!("atbench: {GROUP}/{server}: started in {:.1} s", p.startup_s);
                let addr = p.addr();
                bench_server(target, &python, server, addr, dir);
                drop(p);
            }
            Err(e) => skip(target, server, &e),
        }
    }
}
