//! Shared by the tests that drive atpds with a Node client stack
//! (`official_client.rs`, `atcute_client.rs`): node's version check, the
//! `npm ci` of a client folder from its lock file, a child process killed
//! on drop, and the first line a child prints with a given prefix.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// `BENCH_REQUIRE_LIVE=1` (CI): a missing node fails instead of skipping.
pub fn require_live() -> bool {
    std::env::var("BENCH_REQUIRE_LIVE").as_deref() == Ok("1")
}

/// Node's version when it is usable (18 or later), or why not.
pub fn node_version() -> Result<String, String> {
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

/// `npm ci` in `dir` when its node_modules is missing or older than the
/// lock file; `label` names the folder in what is printed.
pub fn ensure_installed(dir: &Path, label: &str) -> Result<(), String> {
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let lock = modified(&dir.join("package-lock.json")).ok_or("package-lock.json is missing")?;
    let installed = dir.join("node_modules").join(".package-lock.json");
    if modified(&installed).is_some_and(|t| t >= lock) {
        return Ok(());
    }
    eprintln!("{label}: installing with `npm ci` (first use)");
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
pub struct Guard(pub Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The first stdout line of `child` that starts with `prefix`, within
/// `timeout`; the rest of stdout keeps draining on the reader thread.
pub fn first_line(stdout: ChildStdout, prefix: &'static str, timeout: Duration) -> String {
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

/// The `<passed> passed, <failed> failed` counts of a script's last
/// `<prefix>: ...` line.
pub fn summary(stdout: &str, prefix: &str) -> Option<(u64, u64)> {
    let line = stdout
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix(prefix)?.strip_prefix(": "))
        .filter(|l| l.ends_with(" failed"))?;
    let counts: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    match counts[..] {
        [passed, failed] => Some((passed, failed)),
        _ => None,
    }
}
