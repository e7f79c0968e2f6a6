//! Log lines against the appview's REST server.
//!
//! A Prefect user's logging, unchanged: `tests/prefect/user_logs.py` runs
//! in the venv that `scripts/prefect_venv.py` installs (prefect 3.9.1) with
//! `PREFECT_API_URL` at a server this test starts in process:
//! `get_run_logger()` at INFO, WARNING and ERROR in a flow and its tasks,
//! `print` under `log_prints=True`, a second flow run, then `prefect
//! flow-run logs ID` (and `--tail`) and `prefect flow-run inspect ID`.
//! Afterwards this test reads back through `POST /api/logs/filter` that
//! every line the client handed its log worker is there once, with its
//! flow run, task run, level and logger name, and no line of another run;
//! and that the CLI printed them. Without the venv it skips with the
//! reason; under `BENCH_REQUIRE_LIVE=1` (CI) it fails instead.
//!
//! Without the venv: a batch is refused whole (a bad line, too many
//! lines, too many bytes) and the filter's parts, sorts and pages hold.

#[path = "support/prefect.rs"]
mod prefect_venv;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use appview::AppView;
use appview::rest::{RestConfig, RunningRest, spawn};
use serde_json::{Value, json};

fn call(server: &RunningRest, method: &str, path: &str, text: &str) -> (u16, Value) {
    let mut s = TcpStream::connect(server.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{text}",
        text.len()
    )
    .unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    let status = out[9..12].parse().unwrap();
    let body = out.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

fn start(config: RestConfig) -> (tempfile::TempDir, Arc<AppView>, RunningRest) {
    let dir = tempfile::tempdir().unwrap();
    let app =
        Arc::new(AppView::open(&dir.path().join("appview"), store::Config::default()).unwrap());
    let server = spawn(
        app.clone(),
        RestConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            workers: 2,
            ..config
        },
    )
    .unwrap();
    (dir, app, server)
}

/// Every line of `filter` (`logs` part), paged by 200 as the CLI pages.
fn all_lines(server: &RunningRest, filter: &Value, sort: &str) -> Vec<Value> {
    let mut out = Vec::new();
    loop {
        let body = json!({"logs": filter, "sort": sort, "offset": out.len(), "limit": 200});
        let (status, page) = call(server, "POST", "/api/logs/filter", &body.to_string());
        assert_eq!(status, 200, "{page}");
        let page = page.as_array().unwrap().clone();
        let n = page.len();
        out.extend(page);
        if n < 200 {
            return out;
        }
    }
}

/// What identifies a line (its id and times are the server's).
fn key(l: &Value) -> (String, i64, String, String, String) {
    let text = |k: &str| l[k].as_str().unwrap_or("null").to_owned();
    (
        text("message"),
        l["level"].as_i64().unwrap(),
        text("name"),
        text("flow_run_id"),
        text("task_run_id"),
    )
}

#[test]
fn a_users_log_lines_are_all_kept_and_the_cli_reads_them() {
    let Some(python) = prefect_venv::python_or_skip("prefect_logs") else {
        return;
    };
    let (dir, _app, server) = start(RestConfig::default());
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/prefect/user_logs.py");
    let out = Command::new(python)
        .arg(script)
        .current_dir(dir.path())
        .env("PREFECT_API_URL", server.api_url())
        .env("PREFECT_HOME", dir.path().join("prefect-home"))
        .env("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
        .env("COLUMNS", "200")
        .env_remove("PREFECT_API_KEY")
        .env_remove("PREFECT_LOGGING_LEVEL")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the script failed: {stderr}");
    assert!(
        !stderr.contains("Error logging to API") && !stderr.contains("Unable to connect to"),
        "the client lost lines or events: {stderr}"
    );
    let summary: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap();
    assert_eq!(summary["state"], "COMPLETED");
    let run = summary["flow_run_id"].as_str().unwrap();
    let other = summary["other_run_id"].as_str().unwrap();

    // Every line the client reported, once, with its run, task run and
    // level; none of the other run's in this run's read.
    let reported = summary["reported"].as_array().unwrap();
    let mut want: BTreeMap<_, usize> = BTreeMap::new();
    for l in reported.iter().filter(|l| l["flow_run_id"] == run) {
        *want.entry(key(l)).or_default() += 1;
    }
    let lines = all_lines(
        &server,
        &json!({"flow_run_id": {"any_": [run]}}),
        "TIMESTAMP_ASC",
    );
    let mut got: BTreeMap<_, usize> = BTreeMap::new();
    for l in &lines {
        *got.entry(key(l)).or_default() += 1;
    }
    println!(
        "log lines reported for the run {} / found {}",
        want.values().sum::<usize>(),
        got.values().sum::<usize>()
    );
    assert_eq!(got, want, "every reported line of the run, and no other");
    assert!(
        lines
            .windows(2)
            .all(|w| w[0]["timestamp"].as_str() <= w[1]["timestamp"].as_str())
    );
    let has = |msg: &str, level: i64, task: bool| {
        lines.iter().any(|l| {
            l["message"] == msg && l["level"] == level && l["task_run_id"].is_string() == task
        })
    };
    assert!(has("flow says info", 20, false));
    assert!(has("flow says warning", 30, false));
    assert!(has("flow says error: total 3", 40, false));
    assert!(has("flow prints", 20, false), "log_prints in the flow");
    for n in [1, 2] {
        assert!(has(&format!("task {n} says info"), 20, true));
        assert!(has(&format!("task {n} says warning"), 30, true));
        assert!(has(&format!("task {n} says error"), 40, true));
        assert!(has(&format!("task {n} prints"), 20, true), "log_prints");
    }
    // The task lines name task runs of this flow run.
    let (_, trs) = call(
        &server,
        "POST",
        "/api/task_runs/filter",
        &json!({"flow_runs": {"id": {"any_": [run]}}}).to_string(),
    );
    let task_ids: Vec<&str> = trs
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["id"].as_str())
        .collect();
    assert_eq!(task_ids.len(), 2, "{trs}");
    let task_lines = all_lines(
        &server,
        &json!({"task_run_id": {"any_": task_ids}}),
        "TIMESTAMP_ASC",
    );
    assert_eq!(
        task_lines.len(),
        lines
            .iter()
            .filter(|l| l["task_run_id"].is_string())
            .count()
    );
    let errors = all_lines(
        &server,
        &json!({"flow_run_id": {"any_": [run]}, "level": {"ge_": 40}, "task_run_id": {"is_null_": true}}),
        "TIMESTAMP_DESC",
    );
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["message"], "flow says error: total 3");
    let others = all_lines(
        &server,
        &json!({"flow_run_id": {"any_": [other]}}),
        "TIMESTAMP_ASC",
    );
    assert!(
        others
            .iter()
            .any(|l| l["message"] == "the other run's line")
    );

    // The CLI printed every line of the run, and the tail the last three.
    let cli = &summary["logs"];
    assert_eq!(cli["rc"], 0, "prefect flow-run logs: {}", cli["err"]);
    let printed = cli["out"].as_str().unwrap();
    for l in &lines {
        let first = l["message"].as_str().unwrap().lines().next().unwrap_or("");
        assert!(printed.contains(first), "{first:?} not printed");
    }
    assert!(!printed.contains("the other run's line"));
    let tail = &summary["tail"];
    assert_eq!(tail["rc"], 0, "--tail: {}", tail["err"]);
    let last = lines.last().unwrap()["message"].as_str().unwrap();
    assert!(tail["out"].as_str().unwrap().contains(last));
    let inspect = &summary["inspect"];
    println!("prefect flow-run inspect: rc {}", inspect["rc"]);
    assert_eq!(
        inspect["rc"], 0,
        "prefect flow-run inspect: {}",
        inspect["err"]
    );
    assert!(inspect["out"].as_str().unwrap().contains(run));
    server.shutdown();
}

fn line(i: usize, run: &str, task: Option<&str>, level: i64) -> Value {
    json!({"name": "prefect.flow_runs", "level": level, "message": format!("line {i}"),
        "timestamp": format!("2026-12-07T10:00:{:02}.000000Z", i % 60),
        "flow_run_id": run, "task_run_id": task})
}

#[test]
fn batches_are_refused_whole_and_the_filter_pages_and_sorts() {
    let (_dir, app, server) = start(RestConfig {
        max_log_batch_bytes: 512 * 1024,
        ..RestConfig::default()
    });
    let run = "b8932a69-6bc4-460d-9f8d-38c4a202fec1";
    let task = "c8932a69-6bc4-460d-9f8d-38c4a202fec2";
    // A bad line refuses the batch: nothing written.
    let bad = json!([line(0, run, None, 20), {"name": "n", "level": "x", "message": "m",
        "timestamp": "2026-12-07T10:00:00Z"}]);
    let (status, body) = call(&server, "POST", "/api/logs/", &bad.to_string());
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        body["exception_detail"][0]["loc"],
        json!(["body", 1, "level"])
    );
    let (status, body) = call(
        &server,
        "POST",
        "/api/logs/",
        &json!([{"name": "n", "level": 20, "message": "m",
        "timestamp": "2026-12-07T10:00:00Z", "worker_id": task}])
        .to_string(),
    );
    assert_eq!(status, 422, "Prefect's server refuses worker_id: {body}");
    // Too many lines (a list of nulls: few bytes), too many bytes.
    let many = format!("[{}null]", "null,".repeat(50_000));
    let (status, body) = call(&server, "POST", "/api/logs/", &many);
    assert_eq!(
        (status, &body["exception_detail"][0]["type"]),
        (422, &json!("too_long"))
    );
    // A declared body over the bound: 413 before it is read.
    let mut s = TcpStream::connect(server.addr()).unwrap();
    write!(
        s,
        "POST /api/logs/ HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
        600 * 1024
    )
    .unwrap();
    let mut head = String::new();
    let _ = s.read_to_string(&mut head);
    assert!(head.starts_with("HTTP/1.1 413"), "{head}");
    assert_eq!(app.logs().count().unwrap(), 0);

    // 250 lines: 201 `null` once written.
    let batch: Vec<Value> = (0..250)
        .map(|i| {
            line(
                i,
                run,
                (i % 5 == 0).then_some(task),
                10 * (1 + i as i64 % 5),
            )
        })
        .collect();
    let (status, body) = call(
        &server,
        "POST",
        "/api/logs/",
        &Value::from(batch).to_string(),
    );
    assert_eq!((status, body), (201, Value::Null));
    assert_eq!(app.logs().count().unwrap(), 250);
    let all = all_lines(
        &server,
        &json!({"flow_run_id": {"any_": [run]}}),
        "TIMESTAMP_ASC",
    );
    assert_eq!(all.len(), 250, "paged by 200");
    let desc = all_lines(
        &server,
        &json!({"flow_run_id": {"any_": [run]}}),
        "TIMESTAMP_DESC",
    );
    let rev: Vec<Value> = all.iter().rev().cloned().collect();
    assert_eq!(desc, rev, "descending is ascending reversed, ties included");
    let fields: Vec<&str> = all[0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for k in [
        "id",
        "created",
        "updated",
        "name",
        "level",
        "message",
        "timestamp",
        "flow_run_id",
        "task_run_id",
    ] {
        assert!(fields.contains(&k), "{k} in {fields:?}");
    }
    let tasks = all_lines(
        &server,
        &json!({"task_run_id": {"any_": [task]}}),
        "TIMESTAMP_ASC",
    );
    assert_eq!(tasks.len(), 50);
    let window = all_lines(
        &server,
        &json!({"timestamp": {"after_": "2026-12-07T10:00:10Z", "before_": "2026-12-07T10:00:19Z"},
            "level": {"ge_": 20, "le_": 30}}),
        "TIMESTAMP_ASC",
    );
    // Seconds 10..=19 hold lines i % 60 in that range: 250 lines cover
    // them 4 or 5 times; levels 20 and 30 are two residues of five.
    let expected = (0..250)
        .filter(|i| (10..20).contains(&(i % 60)) && matches!(i % 5, 1 | 2))
        .count();
    assert_eq!(window.len(), expected);
    let (status, body) = call(&server, "POST", "/api/logs/filter", r#"{"limit": 201}"#);
    assert_eq!(status, 422, "{body}");
    assert!(body["detail"].as_str().unwrap().contains("Invalid limit"));
    let (status, _) = call(
        &server,
        "POST",
        "/api/logs/filter",
        r#"{"logs": {"text": {"query": "error"}}}"#,
    );
    assert_eq!(status, 422, "text search is refused, not ignored");
    server.shutdown();
}
