//! `appview.rest_<pattern>/<server>.callers-{1,10}/300` and
//! `appview.rest_health/...`: the read patterns end to end through REST,
//! on the appview's Prefect-compatible server (`appview`: `appview::rest`
//! in this process on its own runtime) and, under `BENCH_PEERS=1`, on the
//! Prefect server itself (`prefect-sqlite`, `prefect-postgres`: prefect
//! 3.9.1 from the venv of `scripts/prefect_venv.py`, one process each).
//!
//! One seeded workload (seed 1337, 300 runs) goes through REST to every
//! server, the writes in the same order, sequentially on one keep-alive
//! connection; its wall time is each server's seed write rate (printed
//! and recorded in the run context). Every read is sent by the same Rust
//! client (`benches::prefect::Http`, one keep-alive connection per
//! caller) and timed by the concurrent-callers runner (p50/p95 per
//! request, 1 and 10 callers). Before anything is timed, every pattern's
//! page is checked equal across the servers (`check`): what both servers
//! decide, since each assigns its own ids and stamps its own times.

use std::collections::HashMap;
use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use appview::rest::{RestConfig, RunningRest};
use appview::{AppView, Pattern};
use benches::callers::bench_callers;
use benches::inputs::Sampler;
use benches::prefect::{Http, PrefectDb, PrefectServer, venv_python};
use benches::target::BenchTarget;
use datagen::appview::{Op, Workload};
use serde_json::{Value, json};

use crate::fixtures::{CALLERS, Fixtures};

/// Run ids a point lookup cycles through.
const LOOKUPS: usize = 1024;

/// What keeps a server running.
enum Running {
    Ours(#[allow(dead_code)] RunningRest),
    Prefect(#[allow(dead_code)] PrefectServer),
}

/// One server, seeded.
struct Server {
    implementation: &'static str,
    addr: std::net::SocketAddr,
    /// Workload run id -> the server's run id.
    runs: HashMap<String, String>,
    /// The server's flow id -> the flow's name.
    flow_names: HashMap<String, String>,
    _running: Running,
}

/// Sends the workload's writes in order; returns the server's ids and the
/// seconds the writes took.
fn seed(
    addr: std::net::SocketAddr,
    workload: &Workload,
) -> (HashMap<String, String>, HashMap<String, String>, f64) {
    let mut c = Http::connect(addr).expect("connect");
    let mut flows = HashMap::new();
    let mut flow_names = HashMap::new();
    let mut runs = HashMap::new();
    let id_of = |status: u16, body: &[u8], what: &str| -> String {
        let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        assert_eq!(status, 201, "{what}: {v}");
        v["id"].as_str().expect("id").to_owned()
    };
    let t = Instant::now();
    for op in &workload.ops {
        match op {
            Op::Flow(f) => {
                let (st, body) = c
                    .post("/api/flows/", &json!({"name": f.name, "tags": f.tags}))
                    .expect("flow");
                let id = id_of(st, &body, "create flow");
                flow_names.insert(id.clone(), f.name.clone());
                flows.insert(f.id.clone(), id);
            }
            Op::Run(r) => {
                let params: serde_json::Map<String, Value> = r
                    .parameters
                    .iter()
                    .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
                    .collect();
                let body = json!({"flow_id": flows[&r.flow_id], "name": r.name, "tags": r.tags, "parameters": params, "state": {"type": "PENDING"}});
                let (st, body) = c.post("/api/flow_runs/", &body).expect("run");
                runs.insert(r.id.clone(), id_of(st, &body, "create run"));
            }
            Op::State(s) => {
                let message = if s.message.is_empty() {
                    Value::Null
                } else {
                    Value::from(s.message.as_str())
                };
                let body = json!({"state": {"type": s.state_type, "name": s.name, "message": message}, "force": false});
                let (st, body) = c
                    .post(
                        &format!("/api/flow_runs/{}/set_state", runs[&s.run_id]),
                        &body,
                    )
                    .expect("state");
                let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                assert_eq!(
                    (st, v["status"].as_str()),
                    (201, Some("ACCEPT")),
                    "set_state: {v}"
                );
            }
        }
    }
    (runs, flow_names, t.elapsed().as_secs_f64())
}

/// A request of a pattern: method, path, body.
struct Req {
    method: &'static str,
    path: String,
    body: Vec<u8>,
}

fn filter(body: Value) -> Req {
    Req {
        method: "POST",
        path: "/api/flow_runs/filter".into(),
        body: body.to_string().into_bytes(),
    }
}

fn states(types: &[&str]) -> Value {
    json!({"state": {"type": {"any_": types}}})
}

/// The requests of `pattern` on `server` (one, or one per sampled run for
/// a point lookup), the window ending at `now`.
fn requests(pattern: Pattern, server: &Server, sample: &[String], now: i64) -> Vec<Req> {
    match pattern {
        Pattern::PointLookup => sample
            .iter()
            .map(|w| Req {
                method: "GET",
                path: format!("/api/flow_runs/{}", server.runs[w]),
                body: Vec::new(),
            })
            .collect(),
        Pattern::ActiveByState => vec![filter(
            json!({"flow_runs": states(&["RUNNING", "PENDING"]), "sort": "ID_DESC", "limit": appview::ACTIVE_LIMIT}),
        )],
        Pattern::Completed50 => vec![filter(
            json!({"flow_runs": states(&["COMPLETED"]), "sort": "START_TIME_DESC", "limit": appview::COMPLETED_LIMIT}),
        )],
        Pattern::Paginated => vec![filter(
            json!({"sort": "EXPECTED_START_TIME_DESC", "offset": appview::PAGE_OFFSET, "limit": appview::PAGE_LIMIT}),
        )],
        Pattern::CountCompleted => vec![Req {
            method: "POST",
            path: "/api/flow_runs/count".into(),
            body: json!({"flow_runs": states(&["COMPLETED"])})
                .to_string()
                .into_bytes(),
        }],
        Pattern::FlowList => vec![Req {
            method: "POST",
            path: "/api/flows/filter".into(),
            body: json!({"sort": "NAME_ASC", "limit": appview::FLOW_LIMIT})
                .to_string()
                .into_bytes(),
        }],
        Pattern::Completed1h => {
            let (from, to) = appview::window(now);
            let t = |us| appview::rest::time::format(us);
            vec![filter(
                json!({"flow_runs": {"end_time": {"after_": t(from), "before_": t(to)}}, "sort": "END_TIME_DESC", "limit": appview::WINDOW_LIMIT}),
            )]
        }
    }
}

/// What both servers decide of a page: per run its name, flow name, state
/// type and name, run count, tags, parameters, and whether it started and
/// ended (in the page's order); per flow its name and tags; a count.
fn decided(server: &Server, pattern: Pattern, body: &[u8]) -> Value {
    let v: Value = serde_json::from_slice(body).expect("json page");
    let run = |r: &Value| {
        json!([
            r["name"],
            server
                .flow_names
                .get(r["flow_id"].as_str().unwrap_or_default()),
            r["state_type"],
            r["state_name"],
            r["run_count"],
            r["tags"],
            r["parameters"],
            r["start_time"].is_string(),
            r["end_time"].is_string(),
            r["state"]["type"],
            r["state"]["name"]
        ])
    };
    match pattern {
        Pattern::PointLookup => run(&v),
        Pattern::CountCompleted => v,
        Pattern::FlowList => Value::Array(
            v.as_array()
                .expect("flows")
                .iter()
                .map(|f| json!([f["name"], f["tags"]]))
                .collect(),
        ),
        Pattern::ActiveByState => {
            // Ids are each server's own: the order (id descending) is
            // checked on each server, the rows compared by name.
            let rows = v.as_array().expect("runs");
            let ids: Vec<&str> = rows
                .iter()
                .map(|r| r["id"].as_str().unwrap_or_default())
                .collect();
            assert!(
                ids.windows(2).all(|w| w[0] > w[1]),
                "{}: active_by_state not id descending",
                server.implementation
            );
            let mut out: Vec<Value> = rows.iter().map(run).collect();
            out.sort_by_key(|r| r[0].as_str().unwrap_or_default().to_owned());
            Value::Array(out)
        }
        _ => Value::Array(v.as_array().expect("runs").iter().map(run).collect()),
    }
}

/// Outside the timing: every request's page is the same on every server.
fn check(servers: &[Server], sample: &[String], now: i64) {
    for pattern in Pattern::ALL {
        let mut reference: Option<Vec<Value>> = None;
        for s in servers {
            let mut c = Http::connect(s.addr).expect("connect");
            let pages: Vec<Value> = requests(pattern, s, sample, now)
                .iter()
                .map(|r| {
                    let (st, body) = c.request(r.method, &r.path, &r.body).expect("read");
                    assert_eq!(
                        st,
                        200,
                        "{} {}: {}",
                        s.implementation,
                        pattern.name(),
                        String::from_utf8_lossy(&body)
                    );
                    decided(s, pattern, &body)
                })
                .collect();
            assert!(
                pages
                    .iter()
                    .all(|p| p.as_array().is_none_or(|a| !a.is_empty())),
                "{}: empty page",
                pattern.name()
            );
            match &reference {
                None => reference = Some(pages),
                Some(want) => assert!(
                    *want == pages,
                    "appview.rest_{}: {} differs from {}",
                    pattern.name(),
                    s.implementation,
                    servers[0].implementation
                ),
            }
        }
    }
}

/// Whether the Prefect peers run, or why not (under `BENCH_REQUIRE_LIVE=1`
/// with `BENCH_PEERS=1` a peer that cannot run fails the bench).
fn peer_python() -> Result<std::path::PathBuf, String> {
    if let Some(reason) = benches::peers::python_skip_reason() {
        return Err(reason);
    }
    let python = venv_python();
    if let Err(reason) = &python {
        assert!(
            !benches::floor::required(),
            "BENCH_REQUIRE_LIVE=1 and BENCH_PEERS=1: the Prefect peer cannot run: {reason}"
        );
    }
    python
}

/// One tier's servers: ours over `app`, and the Prefect servers when
/// `python` is given, each seeded by `load` (which returns the server's
/// run ids and flow names).
struct TierServers {
    name: &'static str,
    servers: Vec<Server>,
    sample: Vec<String>,
    now: i64,
}

pub(crate) fn start_ours(app: AppView) -> RunningRest {
    appview::rest::spawn(
        Arc::new(app),
        RestConfig {
            listen: "127.0.0.1:0".parse().expect("addr"),
            ..RestConfig::default()
        },
    )
    .expect("start the REST server")
}

fn sample_of(runs: &HashMap<String, String>) -> Vec<String> {
    let mut s = Sampler(0x6170_7076);
    let mut ids: Vec<&String> = runs.keys().collect();
    ids.sort();
    (0..LOOKUPS)
        .map(|_| ids[s.next(ids.len())].clone())
        .collect()
}

/// 300: the workload through REST, the same writes in the same order to
/// every server, each timed (the seed write rate).
fn tier_300(
    fx: &Fixtures,
    dir: &Path,
    python: Option<&Path>,
    context: &mut serde_json::Map<String, Value>,
) -> TierServers {
    let workload = &fx.small.workload;
    let app = AppView::open(&dir.join("rest-300"), store::Config::default()).expect("open appview");
    let ours = start_ours(app);
    let mut servers = Vec::new();
    let mut add = |implementation: &'static str, addr, running: Running, startup: Option<f64>| {
        let (runs, flow_names, secs) = seed(addr, workload);
        let rate = workload.ops.len() as f64 / secs;
        eprintln!(
            "atbench: appview.rest seed 300: {implementation}: {} writes in {secs:.2} s, {rate:.0} writes/s",
            workload.ops.len()
        );
        context.insert(
            format!("{implementation}/300"),
            json!({"seed_writes": workload.ops.len(), "seed_s": secs, "seed_writes_per_s": rate, "startup_s": startup}),
        );
        servers.push(Server {
            implementation,
            addr,
            runs,
            flow_names,
            _running: running,
        });
    };
    add("appview", ours.addr(), Running::Ours(ours), None);
    if let Some(python) = python {
        for db in [PrefectDb::Sqlite, PrefectDb::Postgres] {
            let p = PrefectServer::start(python, db, &dir.join("prefect-300"))
                .unwrap_or_else(|e| panic!("{e}"));
            let (addr, startup) = (p.addr(), p.startup_s);
            add(
                db.implementation(),
                addr,
                Running::Prefect(p),
                Some(startup),
            );
        }
    }
    let sample = sample_of(&servers[0].runs);
    TierServers {
        name: "300",
        servers,
        sample,
        now: appview::rest::time::now_us(),
    }
}

/// 10^5: bulk loaded, ours through `Index::apply_record` (the fixture's
/// index), Prefect's through its own tables in SQL ([`benches::prefect::bulk_sql`]);
/// the same ids on every server.
fn tier_100k(
    fx: &Fixtures,
    dir: &Path,
    python: Option<&Path>,
    context: &mut serde_json::Map<String, Value>,
) -> TierServers {
    let index = fx
        .large
        .index
        .0
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let runs: HashMap<String, String> = index
        .runs()
        .map(|r| (r.id.to_string(), r.id.to_string()))
        .collect();
    let flow_names: HashMap<String, String> = index
        .flows()
        .map(|f| (f.id.to_string(), f.name.clone()))
        .collect();
    let mut servers = Vec::new();
    if let Some(python) = python {
        for db in [PrefectDb::Sqlite, PrefectDb::Postgres] {
            let p = PrefectServer::start(python, db, &dir.join("prefect-100k"))
                .unwrap_or_else(|e| panic!("{e}"));
            let t = Instant::now();
            p.load_sql(python, &benches::prefect::bulk_sql(&index, db, 500))
                .unwrap_or_else(|e| panic!("{e}"));
            let secs = t.elapsed().as_secs_f64();
            eprintln!(
                "atbench: appview.rest 100k: {} bulk loaded in {secs:.1} s",
                db.implementation()
            );
            context.insert(
                format!("{}/100k", db.implementation()),
                json!({"bulk_load_s": secs, "startup_s": p.startup_s}),
            );
            servers.push(Server {
                implementation: db.implementation(),
                addr: p.addr(),
                runs: runs.clone(),
                flow_names: flow_names.clone(),
                _running: Running::Prefect(p),
            });
        }
    }
    let ours =
        start_ours(AppView::read_fixture(&dir.join("rest-100k"), index).expect("open appview"));
    servers.insert(
        0,
        Server {
            implementation: "appview",
            addr: ours.addr(),
            runs,
            flow_names,
            _running: Running::Ours(ours),
        },
    );
    let sample = sample_of(&servers[0].runs);
    TierServers {
        name: "100k",
        servers,
        sample,
        now: fx.large.workload.now_us,
    }
}

pub fn run(target: &mut BenchTarget, fx: &Fixtures, dir: &Path) {
    let python = match peer_python() {
        Ok(p) => Some(p),
        Err(reason) => {
            for group in Pattern::ALL
                .iter()
                .map(|p| format!("appview.rest_{}", p.name()))
                .chain(["appview.rest_health".to_owned()])
            {
                // The rows' implementations, as `bench_callers` names them.
                for db in [PrefectDb::Sqlite, PrefectDb::Postgres] {
                    for callers in [1, CALLERS] {
                        let rows = format!("{}.callers-{callers}", db.implementation());
                        target.skip_rows(&group, &rows, &reason);
                    }
                }
            }
            None
        }
    };
    let mut context = serde_json::Map::new();
    let tiers = [
        tier_300(fx, dir, python.as_deref(), &mut context),
        tier_100k(fx, dir, python.as_deref(), &mut context),
    ];
    benches::sidecar::context("appview.rest", Value::Object(context));
    for t in &tiers {
        check(&t.servers, &t.sample, t.now);
    }
    for pattern in Pattern::ALL {
        let mut g = target.group(&format!("appview.rest_{}", pattern.name()));
        for t in &tiers {
            for server in &t.servers {
                let reqs = requests(pattern, server, &t.sample, t.now);
                for callers in [1, CALLERS] {
                    bench_callers(
                        &mut g,
                        &format!("{}.callers-{callers}", server.implementation),
                        t.name,
                        callers,
                        |c| {
                            let mut http = Http::connect(server.addr).expect("connect");
                            let reqs = &reqs;
                            move |i: u64| {
                                let r = &reqs[(c * 97 + i as usize) % reqs.len()];
                                let (st, body) =
                                    http.request(r.method, &r.path, &r.body).expect("read");
                                debug_assert_eq!(st, 200);
                                black_box(body);
                            }
                        },
                    );
                }
            }
        }
        g.finish();
    }
    let mut g = target.group("appview.rest_health");
    for server in &tiers[0].servers {
        for callers in [1, CALLERS] {
            bench_callers(
                &mut g,
                &format!("{}.callers-{callers}", server.implementation),
                "300",
                callers,
                |_| {
                    let mut http = Http::connect(server.addr).expect("connect");
                    move |_| {
                        let (st, body) = http.request("GET", "/api/health", b"").expect("health");
                        debug_assert_eq!(st, 200);
                        black_box(body);
                    }
                },
            );
        }
    }
    g.finish();
}
