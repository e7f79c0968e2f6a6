//! The reference implementations measured in the same invocation as ours:
//! `BENCH_PEERS=1 cargo bench --features bench-internals --bench <store|repo>`
//! runs our rows, then the peer of that area (`peers/<folder>/probe.js` under
//! node) through the same units of work, and leaves one JSON result per peer
//! id in `<target>/atbench/peers/`, which `scripts/bench_snapshot.py` merges
//! beside Criterion's rows (spec: `docs/design/peers.md`).
//!
//! What this module owns:
//! - whether peers run at all, and the one line that says why not
//!   ([`skip_reason`]): no `BENCH_PEERS=1`, a Criterion `--test`/`--list`
//!   run, no usable node;
//! - the install on first use ([`ensure_installed`]: `npm ci` from the
//!   folder's lock file, with a progress line; its output goes to
//!   `<target>/atbench/peers-install-<folder>.log`);
//! - handing the probe its inputs ([`Inputs`]: a manifest and binary files
//!   under `<target>/atbench/peer-inputs/<folder>/`, built by
//!   [`repo_inputs`] and [`store_inputs`] from the same seeds and builders
//!   as our rows, with our outputs beside them so the probe can check that
//!   the peer computed the same bytes and CIDs);
//! - running the probe ([`run_probe`]) and checking what it wrote.
//!
//! The probe measures and verifies; a verification failure is its non-zero
//! exit and no result. A peer that cannot be installed or run is skipped
//! with its reason: our rows stand without it.

pub mod repo_inputs;
pub mod store_inputs;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::config::Preset;
use crate::sidecar;

/// One peer: its folder under `peers/` and the implementation name its ids
/// carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer {
    /// Folder under `peers/` (package.json, lock file, probe.js).
    pub folder: &'static str,
    /// The implementation part of its ids (`<group>/<implementation>/<tier>`).
    pub implementation: &'static str,
}

/// The official PDS's storage layer (`@atproto/pds`), beside `--bench store`.
pub const OFFICIAL_PDS: Peer = Peer {
    folder: "official-pds",
    implementation: "official-pds",
};

/// The official data-model library (`@atproto/repo`), beside `--bench repo`.
pub const ATPROTO_REPO: Peer = Peer {
    folder: "atproto-repo",
    implementation: "atproto-repo-js",
};

/// How long and how large a probe run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The committed figures: three runs per id.
    Full,
    /// `BENCH_QUICK=1`: one shorter run per id.
    Quick,
    /// A few seconds in all, small inputs: proves the probe works (the test).
    Smoke,
}

impl Mode {
    /// The mode of a bench run with `preset`.
    pub fn of(preset: Preset) -> Mode {
        match preset {
            Preset::Full => Mode::Full,
            Preset::Quick => Mode::Quick,
        }
    }

    /// The name the probe takes (`--mode`).
    pub fn name(self) -> &'static str {
        match self {
            Mode::Full => "full",
            Mode::Quick => "quick",
            Mode::Smoke => "smoke",
        }
    }
}

/// `peers/` at the workspace root.
pub fn peers_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../peers"))
}

/// The node version (`v20.20.2`), or why node cannot be used.
pub fn node_version() -> Result<String, String> {
    let out = Command::new("node")
        .arg("--version")
        .output()
        .map_err(|e| format!("node not found ({e})"))?;
    if !out.status.success() {
        return Err(format!("`node --version` failed ({})", out.status));
    }
    let version = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let major: u32 = version
        .trim_start_matches('v')
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .ok_or_else(|| format!("unreadable node version {version:?}"))?;
    if major < 18 {
        return Err(format!(
            "node {version} is older than 18, which the peers need"
        ));
    }
    Ok(version)
}

/// Why the peers do not run in this bench invocation, or `None` when they do.
pub fn skip_reason() -> Option<String> {
    if std::env::var("BENCH_PEERS").as_deref() != Ok("1") {
        return Some("BENCH_PEERS=1 is not set".into());
    }
    if crate::config::is_smoke() || crate::config::is_listing() {
        return Some(
            "a Criterion --test/--list run (the probes' smoke test is benches/tests/peers.rs)"
                .into(),
        );
    }
    node_version().err()
}

/// Why the Python peers (the Prefect server of `appview.rest_*`) do not
/// run in this bench invocation, or `None` when they do: the same
/// conditions as [`skip_reason`] without node (they need the venv of
/// `scripts/prefect_venv.py` instead, checked by their caller).
pub fn python_skip_reason() -> Option<String> {
    if std::env::var("BENCH_PEERS").as_deref() != Ok("1") {
        return Some("BENCH_PEERS=1 is not set".into());
    }
    if crate::config::is_smoke() || crate::config::is_listing() {
        return Some("a Criterion --test/--list run".into());
    }
    None
}

/// Installs the peer's packages from its lock file when they are missing or
/// older than the lock file (`npm ci`), printing one progress line.
///
/// Installs of one folder are serialised by an exclusive lock on
/// `<target>/atbench/peers-install-<folder>.lock` (held across threads and
/// processes: two tests that start the same peer at once would otherwise run
/// two `npm ci` in one `node_modules`, and one of them fails). The second
/// caller waits, then finds the install done.
pub fn ensure_installed(peer: Peer) -> Result<(), String> {
    let dir = peers_dir().join(peer.folder);
    let lock = dir.join("package-lock.json");
    let installed = dir.join("node_modules").join(".package-lock.json");
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let lock_time = modified(&lock).ok_or_else(|| format!("{} is missing", lock.display()))?;
    let up_to_date = || modified(&installed).is_some_and(|t| t >= lock_time);
    if up_to_date() {
        return Ok(());
    }
    std::fs::create_dir_all(sidecar::atbench_dir()).map_err(|e| e.to_string())?;
    let guard_path = sidecar::atbench_dir().join(format!("peers-install-{}.lock", peer.folder));
    let guard = std::fs::File::create(&guard_path)
        .map_err(|e| format!("cannot write {}: {e}", guard_path.display()))?;
    guard
        .lock()
        .map_err(|e| format!("cannot lock {}: {e}", guard_path.display()))?;
    if up_to_date() {
        return Ok(());
    }
    let log_path = sidecar::atbench_dir().join(format!("peers-install-{}.log", peer.folder));
    let log = std::fs::File::create(&log_path)
        .map_err(|e| format!("cannot write {}: {e}", log_path.display()))?;
    let log_err = log.try_clone().map_err(|e| e.to_string())?;
    eprintln!(
        "atbench: peers: installing {} with `npm ci` (first use; native modules such as \
         better-sqlite3 build from source when no prebuilt binary can be fetched, a minute or two; \
         log: {})",
        peer.folder,
        log_path.display()
    );
    let started = Instant::now();
    let status = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund"])
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .status()
        .map_err(|e| format!("npm not found ({e})"))?;
    if !status.success() {
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(5).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(format!(
            "`npm ci` in peers/{} failed ({status}): {}",
            peer.folder,
            tail.join(" / ")
        ));
    }
    eprintln!(
        "atbench: peers: {} installed in {:.0?}",
        peer.folder,
        started.elapsed()
    );
    Ok(())
}

/// The inputs of one probe run: a manifest (`inputs.json`) and binary files
/// beside it, in a directory of their own.
pub struct Inputs {
    dir: PathBuf,
    manifest: serde_json::Map<String, serde_json::Value>,
}

impl Inputs {
    /// Empty inputs in `dir` (created, emptied first).
    pub fn new(dir: PathBuf) -> std::io::Result<Inputs> {
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        std::fs::create_dir_all(&dir)?;
        Ok(Inputs {
            dir,
            manifest: serde_json::Map::new(),
        })
    }

    /// Writes `bytes` as file `name` beside the manifest; returns the name
    /// for the manifest to refer to.
    pub fn file(&mut self, name: &str, bytes: &[u8]) -> std::io::Result<String> {
        std::fs::write(self.dir.join(name), bytes)?;
        Ok(name.to_owned())
    }

    /// Sets manifest entry `key`.
    pub fn set(&mut self, key: &str, value: serde_json::Value) {
        self.manifest.insert(key.to_owned(), value);
    }

    /// Writes the manifest; returns the directory.
    pub fn finish(self) -> std::io::Result<PathBuf> {
        let text = serde_json::to_vec_pretty(&serde_json::Value::Object(self.manifest))
            .map_err(std::io::Error::other)?;
        std::fs::write(self.dir.join("inputs.json"), text)?;
        Ok(self.dir)
    }
}

/// Fields every peer result carries (the snapshot script reads them).
const RESULT_FIELDS: &[&str] = &[
    "id",
    "peer",
    "versions",
    "node",
    "callers",
    "ops",
    "runs",
    "ops_per_sec",
    "p50_ns",
    "p95_ns",
    "p99_ns",
    "throughput",
    "verified",
];

/// Checks one result file the probe wrote: every field present, the id
/// that of `peer`, its verification passed.
pub fn check_result(peer: Peer, value: &serde_json::Value) -> Result<String, String> {
    let missing: Vec<&str> = RESULT_FIELDS
        .iter()
        .copied()
        .filter(|f| value.get(f).is_none())
        .collect();
    let id = value["id"].as_str().unwrap_or("?").to_owned();
    if !missing.is_empty() {
        return Err(format!("{id}: missing {}", missing.join(", ")));
    }
    let implementation = id.split('/').nth(1).unwrap_or("");
    let base = implementation.split('.').next().unwrap_or("");
    if base != peer.implementation {
        return Err(format!("{id}: not an id of {}", peer.implementation));
    }
    crate::registry::check_implementation(implementation).map_err(|e| format!("{id}: {e}"))?;
    if value["verified"] != serde_json::Value::Bool(true) {
        return Err(format!("{id}: not verified"));
    }
    let rate = value["ops_per_sec"].as_f64().unwrap_or(0.0);
    if rate.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
        return Err(format!("{id}: ops_per_sec {rate} is not a rate"));
    }
    Ok(id)
}

/// Runs `peer`'s probe over `inputs` (a directory [`Inputs::finish`]
/// returned), writing its results to `out`; `groups` narrows it to those
/// groups (empty: all). Returns the ids written, each checked.
pub fn run_probe(
    peer: Peer,
    inputs: &Path,
    out: &Path,
    mode: Mode,
    groups: &[String],
) -> Result<Vec<String>, String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    // Results of an earlier run of this peer would pass for this one's.
    for entry in std::fs::read_dir(out).map_err(|e| e.to_string())?.flatten() {
        let path = entry.path();
        let stale = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .is_some_and(|v| v["peer"] == peer.implementation);
        if stale {
            std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }
    let script = peers_dir().join(peer.folder).join("probe.js");
    let output = Command::new("node")
        .arg(&script)
        .arg("--inputs")
        .arg(inputs)
        .arg("--out")
        .arg(out)
        .args(["--mode", mode.name()])
        .args(["--groups", &groups.join(",")])
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot start node {}: {e}", script.display()))?;
    if !output.status.success() {
        return Err(format!(
            "probe {} failed ({})",
            script.display(),
            output.status
        ));
    }
    let listed: Vec<String> = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("probe {} printed no id list: {e}", script.display()))?;
    let mut ids = Vec::with_capacity(listed.len());
    for id in listed {
        let path = out.join(format!("{}.json", sidecar::file_stem(&id)));
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let value: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        let checked = check_result(peer, &value)?;
        if checked != id {
            return Err(format!(
                "{}: holds {checked}, listed as {id}",
                path.display()
            ));
        }
        ids.push(id);
    }
    Ok(ids)
}

/// What a bench target calls after its own groups: runs `peer` unless
/// [`skip_reason`] says why not, with inputs from `build` (given the
/// directory to fill and the mode), for the `groups` this run measured.
/// Prints one line either way; never fails the bench run.
pub fn run_after_ours(
    peer: Peer,
    preset: Preset,
    groups: &[String],
    build: impl FnOnce(PathBuf, Mode) -> std::io::Result<PathBuf>,
) {
    if let Some(reason) = skip_reason() {
        eprintln!("atbench: peers: {} skipped: {reason}", peer.implementation);
        return;
    }
    let mode = Mode::of(preset);
    let result = ensure_installed(peer).and_then(|()| {
        let dir = sidecar::atbench_dir().join("peer-inputs").join(peer.folder);
        let inputs = build(dir, mode).map_err(|e| format!("cannot write the inputs: {e}"))?;
        eprintln!(
            "atbench: peers: running {} ({} mode; one progress line per id)",
            peer.implementation,
            mode.name()
        );
        run_probe(
            peer,
            &inputs,
            &sidecar::atbench_dir().join("peers"),
            mode,
            groups,
        )
    });
    match result {
        Ok(ids) => eprintln!(
            "atbench: peers: {} wrote {} results to {}",
            peer.implementation,
            ids.len(),
            sidecar::atbench_dir().join("peers").display()
        ),
        Err(reason) => eprintln!("atbench: peers: {} skipped: {reason}", peer.implementation),
    }
}

#[cfg(test)]
mod tests {
    use super::{ATPROTO_REPO, OFFICIAL_PDS, check_result};
    use serde_json::json;

    fn result(id: &str) -> serde_json::Value {
        json!({
            "id": id, "peer": "official-pds", "versions": {}, "node": "v20", "callers": 1,
            "ops": 10, "runs": [], "ops_per_sec": 100.0, "p50_ns": 1, "p95_ns": 2, "p99_ns": 3,
            "throughput": {"kind": "elements", "per_iteration": 1}, "verified": true,
        })
    }

    #[test]
    fn a_result_is_checked_for_its_fields_its_peer_and_its_verification() {
        let id = "store.list_records/official-pds.callers-1/limit-50";
        assert_eq!(check_result(OFFICIAL_PDS, &result(id)).as_deref(), Ok(id));
        assert!(check_result(ATPROTO_REPO, &result(id)).is_err());
        let mut unverified = result(id);
        unverified["verified"] = json!(false);
        assert!(check_result(OFFICIAL_PDS, &unverified).is_err());
        let mut incomplete = result(id);
        incomplete.as_object_mut().map(|o| o.remove("p99_ns"));
        assert!(check_result(OFFICIAL_PDS, &incomplete).is_err());
        let mut rateless = result(id);
        rateless["ops_per_sec"] = json!(0.0);
        assert!(check_result(OFFICIAL_PDS, &rateless).is_err());
        let bad_grammar = result("store.get_record/official-pds+x/callers-1");
        assert!(check_result(OFFICIAL_PDS, &bad_grammar).is_err());
    }
}
