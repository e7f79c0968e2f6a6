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
use http::{start, stop_checked};

#[test]
fn prefects_own_client_drives_the_appview_unchanged() {
    let Some(python) = prefect_venv::python_or_skip("prefect_client") else {
        return;
    };
    let (dir, app, server) = start(1, RestConfig::default());
    let (summary, stderr) = prefect_venv::run_script(
        prefect_venv::client_command(&python, "client.py", &server.api_url(), dir.path())
            .env("PREFECT_LOGGING_LEVEL", "WARNING"),
    );
    eprintln!("{stderr}");
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
    drop(index);
    stop_checked(&app, server);
}
