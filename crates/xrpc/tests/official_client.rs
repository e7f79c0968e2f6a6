//! The official atproto TypeScript client, unchanged, against `atpds`.
//!
//! The test installs `tests/official-client/` from its lock file on first
//! use (`npm ci`: `@atproto/api`, `@atproto/xrpc`, `@atproto/sync`,
//! `@atproto/repo`, `@atproto/identity`, `@did-plc/server`), starts a local
//! PLC directory (`plc.mjs`: `@did-plc/server` on its in-memory database),
//! a fresh `atpds` registering its accounts there (`--plc-url`), and runs
//! `client.mjs` against both: accounts, login, every kind of write, the
//! refusals, reads, a blob, `getRepo` through `verifyRepoCar`, and every
//! `#commit` through `@atproto/sync`'s `Firehose`. The script's exit code
//! and its summary line decide the test.
//!
//! Without node (or npm) the test skips with the reason, unless
//! `BENCH_REQUIRE_LIVE=1` (CI), where it fails.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "support/node.rs"]
mod node;
use node::{Guard, ensure_installed, first_line, node_version, require_live};

fn client_dir() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/official-client"
    ))
}

#[test]
fn the_official_typescript_client_works_against_atpds() {
    if let Err(reason) = node_version() {
        assert!(!require_live(), "BENCH_REQUIRE_LIVE=1 and {reason}");
        eprintln!("skipped: {reason}");
        return;
    }
    let dir = client_dir();
    if let Err(reason) = ensure_installed(&dir, "official-client") {
        // node is here, so a failed install is a failure, not a skip.
        panic!("{reason}");
    }

    // The PLC directory, on a port of its own.
    let mut plc = Command::new("node")
        .arg("plc.mjs")
        .current_dir(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start plc.mjs");
    let plc_out = plc.stdout.take().expect("plc stdout");
    let plc = Guard(plc);
    let plc_url = first_line(plc_out, "plc listening on ", Duration::from_secs(30))
        .trim_start_matches("plc listening on ")
        .to_owned();

    // A fresh atpds, registering its accounts at that directory.
    let data = tempfile::tempdir().expect("temp dir");
    let mut pds = Command::new(env!("CARGO_BIN_EXE_atpds"))
        .arg("--db")
        .arg(data.path().join("pds.sqlite"))
        .args(["--listen", "127.0.0.1:0", "--plc-url", &plc_url])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start atpds");
    let pds_out = pds.stdout.take().expect("atpds stdout");
    let pds = Guard(pds);
    let pds_url = first_line(pds_out, "atpds listening on ", Duration::from_secs(30))
        .trim_start_matches("atpds listening on ")
        .to_owned();
    eprintln!("official-client: atpds {pds_url}, PLC {plc_url}");

    let started = Instant::now();
    let out = Command::new("node")
        .arg("client.mjs")
        .current_dir(&dir)
        .env("PDS_URL", &pds_url)
        .env("PLC_URL", &plc_url)
        .stdin(Stdio::null())
        .output()
        .expect("run client.mjs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!(
        "{stdout}{}\nofficial-client: ran in {:.1?}",
        String::from_utf8_lossy(&out.stderr),
        started.elapsed()
    );
    drop(pds);
    drop(plc);

    let (passed, failed) = node::summary(&stdout, "official-client")
        .unwrap_or_else(|| panic!("client.mjs printed no summary line ({})", out.status));
    let summary = format!("{passed} passed, {failed} failed");
    assert_eq!(failed, 0, "client.mjs: {summary}");
    assert!(out.status.success(), "client.mjs exited {}", out.status);
    // Every part of the script ran (a run cut short passes fewer checks).
    assert!(
        passed >= 200,
        "client.mjs passed only {passed} checks: {summary}"
    );
}
