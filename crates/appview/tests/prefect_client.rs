//! Prefect's own Python client, unchanged, against the appview's REST
//! server: `tests/prefect/client.py` runs in the venv that
//! `scripts/prefect_venv.py` installs (prefect 3.9.1, pinned in
//! `peers/prefect/requirements.lock`, under `target/prefect/venv`) with
//! `PREFECT_API_URL` at a server this test starts in process. It creates
//! flows and runs, walks states through a lifecycle, has transitions
//! refused, reads, filters, counts and lists; then this test checks that
//! every accepted write is in the index, as commits of the repository.
//!
//! Without the venv it skips with the reason (install it with
//! `python3 scripts/prefect_venv.py`); under `BENCH_REQUIRE_LIVE=1` (CI)
//! it fails instead.

#[path = "support/prefect.rs"]
mod prefect_venv;

#[path = "support/http.rs"]
mod http;

use appview::rest::RestConfig;
use http::start;

#[test]
fn prefects_own_client_drives_the_appview_unchanged() {
    let Some(python) = prefect_venv::python_or_skip("prefect_client") else {
        return;
    };
    let (dir, app, server) = start(1, RestConfig::default());
    let out = prefect_venv::client_command(&python, "client.py", &server.api_url(), dir.path())
        .env("PREFECT_LOGGING_LEVEL", "WARNING")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success(),
        "the client script failed: {}",
        out.status
    );
    let summary: serde_json::Value =
        serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap();
    let index = app.index();
    assert_eq!(
        index.flow_count() as u64,
        summary["flows"].as_u64().unwrap()
    );
    assert_eq!(index.run_count() as u64, summary["runs"].as_u64().unwrap());
    assert_eq!(
        index.state_count() as u64,
        summary["states"].as_u64().unwrap()
    );
    assert_eq!(
        index.count_in(appview::StateType::Completed) as u64,
        summary["completed"].as_u64().unwrap()
    );
    assert_eq!(
        *index,
        app.rebuild_index().unwrap(),
        "the index is the repository's"
    );
    drop(index);
    server.shutdown();
}
