//! A second client stack, unchanged, against `atpds`: `@atcute/client`
//! with `@atcute/car` (and `@atcute/repo`, `@atcute/cid`, `@atcute/cbor`,
//! `@atcute/crypto`, the lexicons of `@atcute/atproto` and
//! `@atcute/bluesky`).
//!
//! The test installs `tests/atcute-client/` from its lock file on first use
//! (`npm ci`), starts a fresh `atpds` and runs `client.mjs`: a new user's
//! session (create an account, log in, refresh; a post with an image whose
//! `uploadBlob` sends `Content-Type: */*`, and one with no type; records
//! created, read, updated with `swapRecord`, listed page by page, deleted;
//! `getRepo` read with `@atcute/car`, every block's CID recomputed from its
//! bytes and the records walked with `@atcute/repo`; `sync.getLatestCommit`
//! and `sync.getRecord` verified as inclusion proofs against the signing
//! key of the DID document; app passwords; and the typed errors an atcute
//! user switches on). Outputs are checked against atcute's lexicon schemas
//! where it has them (`Client.call`). The script's exit code and summary
//! line decide the test.
//!
//! Without node (or npm) the test skips with the reason, unless
//! `BENCH_REQUIRE_LIVE=1` (CI), where it fails.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "support/node.rs"]
mod node;
use node::{Guard, ensure_installed, first_line, node_version, require_live};

#[test]
fn the_atcute_client_stack_works_against_atpds() {
    if let Err(reason) = node_version() {
        assert!(!require_live(), "BENCH_REQUIRE_LIVE=1 and {reason}");
        eprintln!("skipped: {reason}");
        return;
    }
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/atcute-client"));
    if let Err(reason) = ensure_installed(&dir, "atcute-client") {
        // node is here, so a failed install is a failure, not a skip.
        panic!("{reason}");
    }

    let data = tempfile::tempdir().expect("temp dir");
    let mut pds = Command::new(env!("CARGO_BIN_EXE_atpds"))
        .arg("--db")
        .arg(data.path().join("pds.sqlite"))
        .args(["--listen", "127.0.0.1:0"])
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

    let started = Instant::now();
    let out = Command::new("node")
        .arg("client.mjs")
        .current_dir(&dir)
        .env("PDS_URL", &pds_url)
        .stdin(Stdio::null())
        .output()
        .expect("run client.mjs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!(
        "{stdout}{}\natcute-client: ran in {:.1?}",
        String::from_utf8_lossy(&out.stderr),
        started.elapsed()
    );
    drop(pds);

    let (passed, failed) = node::summary(&stdout, "atcute-client")
        .unwrap_or_else(|| panic!("client.mjs printed no summary line ({})", out.status));
    assert_eq!(failed, 0, "client.mjs: {passed} passed, {failed} failed");
    assert!(out.status.success(), "client.mjs exited {}", out.status);
    // Every part of the session ran (a run cut short passes fewer checks).
    assert!(passed >= 90, "client.mjs passed only {passed} checks");
}
