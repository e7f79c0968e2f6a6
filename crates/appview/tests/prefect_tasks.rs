//! A Prefect user's flows and tasks, unchanged, against the appview's REST
//! server: `tests/prefect/user_flows.py` runs in the venv that
//! `scripts/prefect_venv.py` installs (prefect 3.9.1) with
//! `PREFECT_API_URL` at a server this test starts in process: `@task`
//! calls in sequence, `.submit()`, `.map()`, a retry that fails once, a
//! task that fails, a flow that raises (FAILED), a subflow,
//! `flow.with_options`, then `prefect task-run ls` and `prefect task-run
//! inspect ID`. Afterwards this test reads back through the REST API that
//! every flow run's final state, every task run and every task-run state
//! the client reported is there (the subflow's tracking task run, which
//! the client creates with `POST /task_runs/`, is the one state not sent
//! as an event), and that the index equals one rebuilt from the
//! repository.
//!
//! Without the venv it skips with the reason; under `BENCH_REQUIRE_LIVE=1`
//! (CI) it fails instead.

#[path = "support/http.rs"]
mod http;
#[path = "support/prefect.rs"]
mod prefect_venv;
// Flows with parameters of every JSON type and the flow CLI, in this
// binary so the two Python processes run side by side.
#[path = "support/user_params.rs"]
mod user_params;

use std::collections::{BTreeMap, BTreeSet};

use appview::rest::RestConfig;
use http::{call, get, start, stop_checked};
use serde_json::{Value, json};

#[test]
fn a_users_flows_and_tasks_run_unchanged_and_every_reported_state_is_kept() {
    let Some(python) = prefect_venv::python_or_skip("prefect_tasks") else {
        return;
    };
    let (dir, app, server) = start(2, RestConfig::default());
    let (summary, stderr) = prefect_venv::run_script(
        prefect_venv::client_command(&python, "user_flows.py", &server.api_url(), dir.path())
            .current_dir(dir.path())
            .env("PREFECT_LOGGING_LEVEL", "WARNING")
            .env("COLUMNS", "200"),
    );
    assert!(
        !stderr.contains("Unable to connect to") && !stderr.contains("failed to process item"),
        "the client lost events: {stderr}"
    );
    assert_eq!(summary["ls_rc"], 0, "prefect task-run ls");
    assert_eq!(summary["inspect_rc"], 0, "prefect task-run inspect");
    let inspected = summary["inspected"].as_str().unwrap();
    assert!(summary["inspect_out"].as_str().unwrap().contains(inspected));

    // Every flow run in the state the client saw it end in.
    let runs = summary["runs"].as_object().unwrap();
    let expected_final = [
        ("sequential", "COMPLETED"),
        ("submit_and_map", "COMPLETED"),
        ("retry", "COMPLETED"),
        ("failing_task", "COMPLETED"),
        ("raises", "FAILED"),
        ("parent", "COMPLETED"),
        ("renamed", "COMPLETED"),
    ];
    let mut task_runs_of: BTreeMap<String, usize> = BTreeMap::new();
    for (name, state) in expected_final {
        let id = runs[name]["flow_run_id"].as_str().unwrap();
        assert_eq!(runs[name]["state"], state, "{name}: the client's view");
        let (status, run) = get(&server, &format!("/api/flow_runs/{id}"));
        assert_eq!(status, 200, "{name}");
        assert_eq!(run["state_type"], state, "{name}: the server's");
        let (_, trs) = call(
            &server,
            "POST",
            "/api/task_runs/filter",
            &json!({"flow_runs": {"id": {"any_": [id]}}}),
        );
        task_runs_of.insert(name.into(), trs.as_array().unwrap().len());
        for tr in trs.as_array().unwrap() {
            assert_eq!(tr["flow_run_id"], id);
        }
    }
    println!("task runs per flow run: {task_runs_of:?}");
    assert_eq!(task_runs_of["sequential"], 3);
    assert_eq!(task_runs_of["submit_and_map"], 4);
    assert_eq!(task_runs_of["renamed"], 3);
    assert_eq!(task_runs_of["parent"], 1, "the subflow's tracking task run");
    // It follows its subflow's states, as on Prefect's server.
    let parent = runs["parent"]["flow_run_id"].as_str().unwrap();
    let (_, tracking) = call(
        &server,
        "POST",
        "/api/task_runs/filter",
        &json!({"flow_runs": {"id": {"any_": [parent]}}}),
    );
    assert_eq!(tracking[0]["state_type"], "COMPLETED", "{tracking}");

    // Every state the client reported, and each task run's last one
    // current.
    let reported = summary["reported"].as_array().unwrap();
    let (status, count) = call(&server, "POST", "/api/task_runs/count", &Value::Null);
    assert_eq!(status, 200);
    let mut last: BTreeMap<&str, (&str, &str)> = BTreeMap::new();
    for e in reported {
        let tr = e["task_run"].as_str().unwrap();
        let at = e["occurred"].as_str().unwrap();
        let ty = e["type"].as_str().unwrap();
        if last.get(tr).is_none_or(|(t, _)| *t <= at) {
            last.insert(tr, (at, ty));
        }
    }
    // The tracking task run is the one not reported as events.
    assert_eq!(count.as_u64().unwrap() as usize, last.len() + 1);
    assert!(!last.contains_key(tracking[0]["id"].as_str().unwrap()));
    for (tr, (_, ty)) in &last {
        let (status, run) = get(&server, &format!("/api/task_runs/{tr}"));
        assert_eq!(status, 200, "{tr}");
        assert_eq!(run["state_type"], *ty, "{tr}");
        assert_eq!(run["state"]["type"], *ty, "{tr}");
    }
    let mut recorded = BTreeSet::new();
    for tr in last.keys() {
        let (_, page) = call(
            &server,
            "POST",
            "/api/events/filter",
            &json!({"filter": {"resource": {"id": [format!("prefect.task-run.{tr}")]}}, "limit": 200}),
        );
        for e in page["events"].as_array().unwrap() {
            recorded.insert(e["id"].as_str().unwrap().to_owned());
        }
    }
    let reported_ids: BTreeSet<String> = reported
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    println!(
        "task-run states reported {} / found {}",
        reported_ids.len(),
        reported_ids.intersection(&recorded).count()
    );
    assert_eq!(reported_ids, recorded, "every reported state, and no other");
    let retry = reported.iter().filter(|e| e["name"] == "Retrying").count();
    assert_eq!(retry, 1, "the retry that fails once");
    assert!(
        reported.iter().any(|e| e["type"] == "FAILED"),
        "the failing task"
    );

    stop_checked(&app, server);
}
