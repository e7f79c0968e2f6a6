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

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

use appview::AppView;
use appview::rest::{RestConfig, spawn};

#[test]
fn prefects_own_client_drives_the_appview_unchanged() {
    let Some(python) = prefect_venv::python_or_skip("prefect_client") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let app =
        Arc::new(AppView::open(&dir.path().join("appview"), store::Config::default()).unwrap());
    let server = spawn(
        app.clone(),
        RestConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            workers: 1,
            ..RestConfig::default()
        },
    )
    .unwrap();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/prefect/client.py");
    let out = Command::new(python)
        .arg(script)
        .env("PREFECT_API_URL", server.api_url())
        .env("PREFECT_HOME", dir.path().join("prefect-home"))
        .env("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
        .env("PREFECT_LOGGING_LEVEL", "WARNING")
        .env_remove("PREFECT_API_KEY")
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
