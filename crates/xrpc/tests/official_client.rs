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

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn require_live() -> bool {
    std::env::var("BENCH_REQUIRE_LIVE").as_deref() == Ok("1")
}

fn client_dir() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/official-client"
    ))
}

/// Node's version when it is usable (18 or later), or why not.
fn node_version() -> Result<String, String> {
    let out = Command::new("node")
        .arg("--version")
        .output()
        .map_err(|e| format!("node not found ({e})"))?;
    if !out.status.success() {
        return Err(format!("`node --version` failed ({})", out.status));
    }
    let version = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let major: Option<u32> = version
        .trim_start_matches('v')
        .split('.')
        .next()
        .and_then(|m| m.parse().ok());
    match major {
        Some(m) if m >= 18 => Ok(version),
        _ => Err(format!("node {version} is older than 18")),
    }
}

/// `npm ci` when node_modules is missing or older than the lock file.
fn ensure_installed(dir: &Path) -> Result<(), String> {
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let lock = modified(&dir.join("package-lock.json")).ok_or("package-lock.json is missing")?;
    let installed = dir.join("node_modules").join(".package-lock.json");
    if modified(&installed).is_some_and(|t| t >= lock) {
        return Ok(());
    }
    eprintln!("official-client: installing with `npm ci` (first use)");
    let out = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund"])
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("npm not found ({e})"))?;
    if !out.status.success() {
        return Err(format!(
            "`npm ci` in {} failed ({}): {}",
            dir.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}

/// A child process killed (by its own id) when dropped.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The first stdout line of `child` that starts with `prefix`, within
/// `timeout`; the rest of stdout keeps draining on the reader thread.
fn first_line(stdout: ChildStdout, prefix: &'static str, timeout: Duration) -> String {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut sent = false;
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if !sent && line.starts_with(prefix) {
                let _ = tx.send(line);
                sent = true;
            }
        }
    });
    rx.recv_timeout(timeout)
        .unwrap_or_else(|_| panic!("no line starting with {prefix:?} within {timeout:?}"))
}

#[test]
fn the_official_typescript_client_works_against_atpds() {
    if let Err(reason) = node_version() {
        assert!(!require_live(), "BENCH_REQUIRE_LIVE=1 and {reason}");
        eprintln!("skipped: {reason}");
        return;
    }
    let dir = client_dir();
    if let Err(reason) = ensure_installed(&dir) {
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

    let summary = stdout
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("official-client: "))
        .filter(|l| l.ends_with(" failed"))
        .unwrap_or_else(|| panic!("client.mjs printed no summary line ({})", out.status));
    let counts: Vec<u64> = summary
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    let [passed, failed] = counts[..] else {
        panic!("unreadable summary {summary:?}")
    };
    assert_eq!(failed, 0, "client.mjs: {summary}");
    assert!(out.status.success(), "client.mjs exited {}", out.status);
    // Every part of the script ran (a run cut short passes fewer checks).
    assert!(
        passed >= 200,
        "client.mjs passed only {passed} checks: {summary}"
    );
}
