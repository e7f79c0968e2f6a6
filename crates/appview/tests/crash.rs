//! SIGKILL of `appview serve` during 8 concurrent flows, and a restart:
//! nothing acknowledged is lost. Eight client threads each run flows as
//! Prefect's client reports them: a flow run created and moved through
//! RUNNING to COMPLETED over REST, and between those, task runs reported
//! as `prefect.task-run.*` events on one `/api/events/in` socket per
//! thread (auth handshake, then event messages), each batch confirmed as
//! the client confirms it: a ping after the events, answered by a pong;
//! and each task's log lines as a `POST /api/logs/` batch, as Prefect's
//! log worker sends them. An answer (a 201, a pong) is an
//! acknowledgement; the server process is killed with SIGKILL while they
//! run, restarted on the same directory, and every acknowledged flow run,
//! state, task-run event and log line must be there (the counts are
//! printed), with the index equal to its rebuild.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use appview::Uuid;
use appview::rest::time;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::{Message, client::client};

const THREADS: usize = 8;

fn start(dir: &Path) -> (Child, SocketAddr) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_appview"))
        .args(["serve", "--db"])
        .arg(dir)
        .args(["--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .rsplit("http://")
        .next()
        .and_then(|a| a.strip_suffix("/api"))
        .unwrap()
        .parse()
        .unwrap();
    (child, addr)
}

fn call(addr: SocketAddr, method: &str, path: &str, body: &Value) -> std::io::Result<(u16, Value)> {
    let text = body.to_string();
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(20)))?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{text}",
        text.len()
    )?;
    let mut out = String::new();
    s.read_to_string(&mut out)?;
    let status = out
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other("no status"))?;
    let body = out.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    Ok((status, serde_json::from_str(body).unwrap_or(Value::Null)))
}

fn uuid(thread: usize, n: u64) -> String {
    // Version 4 and variant bits set; unique per (thread, n).
    let v =
        (0x5ee0_0000_0000_4000_8000_0000_0000_0000u128) | ((thread as u128) << 80) | u128::from(n);
    Uuid(v).to_string()
}

/// What one thread saw acknowledged.
#[derive(Default)]
struct Acked {
    /// (flow run id, the last state type acknowledged).
    runs: Vec<(String, &'static str)>,
    /// (task run id, event id) of every event a pong confirmed.
    events: Vec<(String, String)>,
    /// (flow run id, message) of every log line a 201 confirmed.
    logs: Vec<(String, String)>,
}

fn event(id: &str, run: &str, flow_run: &str, ty: &str, name: &str) -> Value {
    let now = time::format(time::now_us());
    json!({
        "id": id, "occurred": now, "event": format!("prefect.task-run.{name}"),
        "resource": {"prefect.resource.id": format!("prefect.task-run.{run}"),
            "prefect.resource.name": "t"},
        "related": [{"prefect.resource.id": format!("prefect.flow-run.{flow_run}"),
            "prefect.resource.role": "flow-run"}],
        "payload": {"validated_state": {"type": ty, "name": name, "message": "", "state_details": {}},
            "task_run": {"name": format!("t-{run}"), "task_key": "t", "dynamic_key": run,
                "expected_start_time": now, "tags": [], "empirical_policy": {"retries": 0}}},
    })
}

/// Flows until the server goes away.
fn client_thread(addr: SocketAddr, flow: String, t: usize, stop: Arc<AtomicBool>) -> Acked {
    let mut acked = Acked::default();
    let mut n = 0u64;
    let Ok(stream) = TcpStream::connect(addr) else {
        return acked;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(20)));
    let Ok((mut ws, _)) = client(format!("ws://{addr}/api/events/in"), stream) else {
        return acked;
    };
    if ws
        .send(Message::Text(
            json!({"type": "auth", "token": null}).to_string().into(),
        ))
        .is_err()
    {
        return acked;
    }
    match ws.read() {
        Ok(Message::Text(t)) if t.contains("auth_success") => {}
        other => panic!("auth: {other:?}"),
    }
    while !stop.load(Ordering::Relaxed) {
        let Ok((201, run)) = call(addr, "POST", "/api/flow_runs/", &json!({"flow_id": flow}))
        else {
            return acked;
        };
        let run_id = run["id"].as_str().unwrap().to_owned();
        acked.runs.push((run_id.clone(), "PENDING"));
        let set = |ty: &str| {
            call(
                addr,
                "POST",
                &format!("/api/flow_runs/{run_id}/set_state"),
                &json!({"state": {"type": ty}}),
            )
        };
        if !matches!(set("RUNNING"), Ok((201, _))) {
            return acked;
        }
        acked.runs.last_mut().unwrap().1 = "RUNNING";
        for _ in 0..3 {
            n += 1;
            let task = uuid(t, n << 8);
            let mut batch = Vec::new();
            for (k, (ty, name)) in [
                ("PENDING", "Pending"),
                ("RUNNING", "Running"),
                ("COMPLETED", "Completed"),
            ]
            .into_iter()
            .enumerate()
            {
                let id = uuid(t, (n << 8) | (k as u64 + 1));
                let e = event(&id, &task, &run_id, ty, name);
                if ws.send(Message::Text(e.to_string().into())).is_err() {
                    return acked;
                }
                batch.push((task.clone(), id));
            }
            // The client's checkpoint: a ping after the events.
            if ws
                .send(Message::Ping(Vec::from(*b"checkpoint").into()))
                .is_err()
            {
                return acked;
            }
            loop {
                match ws.read() {
                    Ok(Message::Pong(_)) => break,
                    Ok(_) => continue,
                    Err(_) => return acked,
                }
            }
            acked.events.extend(batch);
            let lines: Vec<(String, Value)> = (0..4)
                .map(|k| {
                    let message = format!("{task} line {k}");
                    let line = json!({"name": "prefect.task_runs", "level": 20 + 10 * (k % 2),
                        "message": message, "timestamp": time::format(time::now_us()),
                        "flow_run_id": run_id, "task_run_id": task});
                    (message, line)
                })
                .collect();
            let body = Value::Array(lines.iter().map(|(_, l)| l.clone()).collect());
            if !matches!(call(addr, "POST", "/api/logs/", &body), Ok((201, _))) {
                return acked;
            }
            acked
                .logs
                .extend(lines.into_iter().map(|(m, _)| (run_id.clone(), m)));
        }
        if !matches!(set("COMPLETED"), Ok((201, _))) {
            return acked;
        }
        acked.runs.last_mut().unwrap().1 = "COMPLETED";
    }
    acked
}

fn order(t: &str) -> usize {
    ["PENDING", "RUNNING", "COMPLETED"]
        .iter()
        .position(|x| *x == t)
        .unwrap_or(usize::MAX)
}

#[test]
fn sigkill_during_concurrent_flows_loses_nothing_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("appview");
    let (mut server, addr) = start(&db);
    let (status, flow) = call(addr, "POST", "/api/flows/", &json!({"name": "crash"})).unwrap();
    assert_eq!(status, 201);
    let flow = flow["id"].as_str().unwrap().to_owned();
    let stop = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let (flow, stop) = (flow.clone(), stop.clone());
            std::thread::spawn(move || client_thread(addr, flow, t, stop))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(2500));
    // std's Child::kill is SIGKILL on Unix.
    server.kill().unwrap();
    server.wait().unwrap();
    stop.store(true, Ordering::Relaxed);
    let acked: Vec<Acked> = threads.into_iter().map(|t| t.join().unwrap()).collect();

    let (mut server, addr) = start(&db);
    let (mut runs, mut runs_found, mut events, mut events_found) = (0, 0, 0, 0);
    let (mut logs, mut logs_found) = (0, 0);
    for a in &acked {
        let mut by_run: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
        for (run, message) in &a.logs {
            by_run.entry(run).or_default().push(message);
        }
        for (run, messages) in by_run {
            let (status, page) = call(
                addr,
                "POST",
                "/api/logs/filter",
                &json!({"logs": {"flow_run_id": {"any_": [run]}}, "limit": 200}),
            )
            .unwrap();
            assert_eq!(status, 200, "{page}");
            let got: Vec<&str> = page
                .as_array()
                .map(|a| a.iter().filter_map(|l| l["message"].as_str()).collect())
                .unwrap_or_default();
            logs += messages.len();
            logs_found += messages.iter().filter(|m| got.contains(m)).count();
        }
        for (id, last) in &a.runs {
            runs += 1;
            let (status, run) =
                call(addr, "GET", &format!("/api/flow_runs/{id}"), &Value::Null).unwrap();
            if status == 200 && order(run["state_type"].as_str().unwrap_or("")) >= order(last) {
                runs_found += 1;
            }
        }
        let mut by_task: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
        for (task, id) in &a.events {
            by_task.entry(task).or_default().push(id);
        }
        for (task, ids) in by_task {
            let (_, page) = call(
                addr,
                "POST",
                "/api/events/filter",
                &json!({"filter": {"resource": {"id": [format!("prefect.task-run.{task}")]}}}),
            )
            .unwrap();
            let got: Vec<&str> = page["events"]
                .as_array()
                .map(|a| a.iter().filter_map(|e| e["id"].as_str()).collect())
                .unwrap_or_default();
            events += ids.len();
            events_found += ids.iter().filter(|i| got.contains(i)).count();
        }
    }
    println!(
        "acknowledged flow runs {runs}, found {runs_found}; acknowledged task-run events {events}, found {events_found}; acknowledged log lines {logs}, found {logs_found}"
    );
    server.kill().unwrap();
    server.wait().unwrap();
    assert!(
        runs > THREADS,
        "the flows ran before the kill ({runs} runs)"
    );
    assert!(events > 0, "events were confirmed before the kill");
    assert_eq!(runs_found, runs, "every acknowledged flow run and state");
    assert_eq!(events_found, events, "every acknowledged task-run event");
    assert!(logs > 0, "log lines were acknowledged before the kill");
    assert_eq!(logs_found, logs, "every acknowledged log line");
    // The repository reopened: its index equals a rebuild.
    let app = appview::AppView::open_existing(&db).unwrap();
    assert_eq!(*app.index(), app.rebuild_index().unwrap());
}
