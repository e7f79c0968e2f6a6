//! The Prefect venv for the tests that run Prefect's own client
//! (`prefect_client.rs`, `prefect_tasks.rs`): its python, or the test
//! skips with the reason (install it with `python3 scripts/prefect_venv.py`);
//! under `BENCH_REQUIRE_LIVE=1` (CI) a missing venv fails the test instead.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The venv's python, or why it is not there.
fn venv_python() -> Result<PathBuf, String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let status = Command::new("python3")
        .arg(root.join("scripts/prefect_venv.py"))
        .arg("--check")
        .output()
        .map_err(|e| format!("python3 not runnable: {e}"))?;
    if !status.status.success() {
        return Err(format!(
            "the Prefect venv is not installed (python3 scripts/prefect_venv.py): {}",
            String::from_utf8_lossy(&status.stderr).trim()
        ));
    }
    Ok(PathBuf::from(
        String::from_utf8_lossy(&status.stdout).trim(),
    ))
}

/// The venv's python; `None` (the reason printed) when `test` skips.
pub fn python_or_skip(test: &str) -> Option<PathBuf> {
    match venv_python() {
        Ok(p) => Some(p),
        Err(reason) => {
            if std::env::var("BENCH_REQUIRE_LIVE").is_ok_and(|v| v == "1") {
                panic!("BENCH_REQUIRE_LIVE=1: {reason}");
            }
            eprintln!("skipped {test}: {reason}");
            None
        }
    }
}

/// `python` running `tests/prefect/<script>` as a Prefect user's process
/// against `api_url`: its Prefect home under `dir`, analytics off, and no
/// API key of this machine's environment.
pub fn client_command(python: &Path, script: &str, api_url: &str, dir: &Path) -> Command {
    let mut command = Command::new(python);
    command
        .arg(
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("tests/prefect")
                .join(script),
        )
        .env("PREFECT_API_URL", api_url)
        .env("PREFECT_HOME", dir.join("prefect-home"))
        .env("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
        .env_remove("PREFECT_API_KEY");
    command
}

/// Runs `command`, a script that prints its summary as JSON on its last
/// line of stdout (printed here): the summary and the script's stderr;
/// panics if the script failed.
pub fn run_script(command: &mut Command) -> (serde_json::Value, String) {
    let out = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "the script failed: {stderr}");
    let summary = serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap();
    (summary, stderr)
}
