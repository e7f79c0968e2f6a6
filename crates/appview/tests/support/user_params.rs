//! A Prefect user's flows with parameters of every JSON type, unchanged,
//! against the appview's REST server (a module of `prefect_tasks`, so it
//! shares that test binary and runs beside its test): the venv's python
//! runs `tests/prefect/user_params.py` with `PREFECT_API_URL` at a server
//! started here. Flows take int, float, bool, list, dict, str and None
//! parameters, some by their defaults; one runs through
//! `flow.with_options`, one raises and must end FAILED; then `prefect flow
//! ls`, `prefect flow-run ls` and `prefect flow-run inspect ID`. The script
//! checks each run's parameters come back byte-equal to what Prefect's
//! server answers for what the client sent; this test reads every run back
//! through the REST API (its state, its parameters equal to those sent)
//! and checks the index equals one rebuilt from the repository.

use appview::rest::RestConfig;
use serde_json::json;

use super::http::{get, start, stop_checked};

#[test]
fn a_users_flows_with_parameters_of_every_type_run_unchanged_and_read_back_as_sent() {
    let Some(python) = super::prefect_venv::python_or_skip("user_params") else {
        return;
    };
    let (dir, app, server) = start(2, RestConfig::default());
    let started = std::time::Instant::now();
    let (summary, _) = super::prefect_venv::run_script(
        super::prefect_venv::client_command(
            &python,
            "user_params.py",
            &server.api_url(),
            dir.path(),
        )
        .current_dir(dir.path())
        .env("PREFECT_LOGGING_LEVEL", "WARNING")
        .env("COLUMNS", "200"),
    );
    println!("user_params.py: {:.1} s", started.elapsed().as_secs_f64());

    let runs = summary["runs"].as_object().unwrap();
    let expected = [
        ("typed", "params-typed", "COMPLETED"),
        ("defaults", "params-defaults", "COMPLETED"),
        ("renamed", "params-renamed", "COMPLETED"),
        ("raises", "params-raises", "FAILED"),
    ];
    for (name, flow, state) in expected {
        let r = &runs[name];
        assert_eq!(r["state"], state, "{name}: the client's view");
        assert_eq!(
            r["byte_equal"], true,
            "{name}: parameters as Prefect writes them"
        );
        let id = r["flow_run_id"].as_str().unwrap();
        let (status, run) = get(&server, &format!("/api/flow_runs/{id}"));
        assert_eq!(status, 200, "{name}");
        assert_eq!(run["state_type"], state, "{name}: the server's");
        assert_eq!(run["parameters"], r["sent"], "{name}: the parameters sent");
        let (_, f) = get(
            &server,
            &format!("/api/flows/{}", run["flow_id"].as_str().unwrap()),
        );
        assert_eq!(f["name"], flow, "{name}");
    }
    assert_eq!(
        runs["defaults"]["sent"],
        json!({"n": 3, "x": 0.5, "ok": false, "items": [1, 2, 3], "cfg": {"region": "eu", "retries": 2}})
    );
    assert_eq!(
        runs["typed"]["sent"]["note"], "d\u{e9}faut",
        "a default beside given values"
    );

    // The CLI, as typed.
    let (flow_ls, run_ls, inspect) = (
        &summary["flow_ls"],
        &summary["flow_run_ls"],
        &summary["inspect"],
    );
    assert_eq!(flow_ls[0], 0, "prefect flow ls: {flow_ls}");
    for (_, flow, _) in expected {
        assert!(flow_ls[1].as_str().unwrap().contains(flow), "{flow_ls}");
    }
    assert_eq!(run_ls[0], 0, "prefect flow-run ls: {run_ls}");
    for (name, _, _) in expected {
        let id = runs[name]["flow_run_id"].as_str().unwrap();
        assert!(run_ls[1].as_str().unwrap().contains(id), "{name}: {run_ls}");
    }
    assert_eq!(inspect[0], 0, "prefect flow-run inspect: {inspect}");
    let text = inspect[1].as_str().unwrap();
    assert!(
        text.contains(runs["typed"]["flow_run_id"].as_str().unwrap()) && text.contains("'n': 7"),
        "{text}"
    );

    stop_checked(&app, server);
}
