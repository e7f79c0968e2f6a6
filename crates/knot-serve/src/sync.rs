//! Keeping the mirror up to date from the ref records. A check first
//! asks the account's latest commit (`sync.getLatestCommit`, one
//! request): while it is the one asked before the last listing, nothing
//! was written and the check ends there, whatever the ref count. When it
//! moved, the refs are listed (`listRecords`, a page per 100 refs) and
//! compared with the CIDs seen last time; only when a record changed,
//! appeared or went away does a fetch run. The commit is asked before
//! the listing, so a write between the two is seen by the next check.
//!
//! The fetch is knot's own ([`knot::fetch`]: only the packs the
//! mirror lacks, each part checked against its CID, streamed into `git
//! index-pack`), run in a child process (`knot-serve --fetch-once`) with
//! `GIT_DIR` set to the mirror. knot's git subprocesses take the
//! repository from the environment, and a server with running threads
//! cannot change its own environment safely; the child can have it set
//! from birth.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use knot::Remote;

use crate::error::{Result, ServeError};

/// What one check did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SyncOutcome {
    /// Whether any ref record differed from the last check.
    pub changed: bool,
    /// Refs the remote lists.
    pub refs: usize,
}

/// The mirror's link to its remote.
pub struct Syncer {
    remote: Remote,
    url: String,
    mirror: PathBuf,
    helper: PathBuf,
    /// Ref name → record CID, as of the last successful fetch.
    seen: Option<BTreeMap<String, String>>,
    /// The account's commit asked before the listing `seen` matched.
    seen_commit: Option<String>,
}

/// Creates a bare repository at `dir` unless one is there.
pub fn init_mirror(dir: &Path) -> Result<()> {
    if dir.join("objects").is_dir() && dir.join("HEAD").is_file() {
        return Ok(());
    }
    std::fs::create_dir_all(dir)?;
    let st = std::process::Command::new("git")
        .args(["init", "--bare", "-q"])
        .arg(dir)
        .env_remove("GIT_DIR")
        .stdin(Stdio::null())
        .status()?;
    if !st.success() {
        return Err(ServeError::Sync(format!(
            "git init --bare {} failed ({st})",
            dir.display()
        )));
    }
    Ok(())
}

impl Syncer {
    /// `url` is a knot remote (`at://…` or `at+http://…`); `helper` the
    /// `knot-serve` executable that runs fetches.
    pub async fn open(url: &str, mirror: &Path, helper: &Path) -> Result<Syncer> {
        let url = url.strip_prefix("at::").unwrap_or(url).to_owned();
        let remote = Remote::open(&url, None).await?;
        Ok(Syncer {
            remote,
            url,
            mirror: mirror.to_owned(),
            helper: helper.to_owned(),
            seen: None,
            seen_commit: None,
        })
    }

    /// One check; fetches when something changed.
    pub async fn check(&mut self) -> Result<SyncOutcome> {
        let latest = self.remote.latest_commit_or_none().await;
        if let (Some(l), Some(seen), Some(refs)) = (&latest, &self.seen_commit, &self.seen)
            && l == seen
        {
            return Ok(SyncOutcome {
                changed: false,
                refs: refs.len(),
            });
        }
        let refs = self.remote.read_refs().await?;
        let now: BTreeMap<String, String> = refs
            .iter()
            .map(|(k, v)| (k.clone(), v.cid.clone()))
            .collect();
        let n = now.len();
        if self.seen.as_ref() == Some(&now) {
            // Another record of the account moved the commit.
            self.seen_commit = latest;
            return Ok(SyncOutcome {
                changed: false,
                refs: n,
            });
        }
        let out = tokio::process::Command::new(&self.helper)
            .arg("--fetch-once")
            .arg("--mirror")
            .arg(&self.mirror)
            .arg("--remote")
            .arg(&self.url)
            .env("GIT_DIR", &self.mirror)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .output()
            .await?;
        if !out.status.success() {
            return Err(ServeError::Sync(format!(
                "fetch failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        self.seen = Some(now);
        self.seen_commit = latest;
        Ok(SyncOutcome {
            changed: true,
            refs: n,
        })
    }
}

fn git(args: &[&str], input: Option<&str>) -> Result<()> {
    use std::io::Write;
    let mut c = std::process::Command::new("git")
        .args(args)
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    if let (Some(i), Some(mut s)) = (input, c.stdin.take()) {
        s.write_all(i.as_bytes())?;
    }
    let o = c.wait_with_output()?;
    if !o.status.success() {
        return Err(ServeError::Sync(format!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        )));
    }
    Ok(())
}

/// The child's side: with `GIT_DIR` naming the mirror, fetches every ref
/// the remote lists, then moves the mirror's refs (and HEAD) to match in
/// one `update-ref --stdin` transaction.
pub async fn fetch_once(url: &str, mirror: &Path) -> Result<knot::FetchStats> {
    if std::env::var_os("GIT_DIR").as_deref() != Some(mirror.as_os_str()) {
        return Err(ServeError::Sync(
            "--fetch-once runs with GIT_DIR set to the mirror".into(),
        ));
    }
    let url = url.strip_prefix("at::").unwrap_or(url);
    let mut remote = Remote::open(url, None).await?;
    let refs = remote.read_refs().await?;
    let head = remote.read_repo().await?.head;
    let wants: Vec<(String, String)> = refs
        .values()
        .map(|r| (r.record.target.clone(), r.record.name.clone()))
        .collect();
    let stats = knot::fetch(&mut remote, &wants, 4, false).await?;
    let mut tx = String::from("start\n");
    for (oid, name) in &wants {
        tx.push_str(&format!("update {name} {oid}\n"));
    }
    // Refs the remote no longer lists.
    let local = std::process::Command::new("git")
        .args(["for-each-ref", "--format=%(refname)"])
        .stdin(Stdio::null())
        .output()?;
    for name in String::from_utf8_lossy(&local.stdout).lines() {
        if !refs.contains_key(name) {
            tx.push_str(&format!("delete {name}\n"));
        }
    }
    tx.push_str("prepare\ncommit\n");
    git(&["update-ref", "--stdin"], Some(&tx))?;
    if let Some(h) = head.filter(|h| refs.contains_key(h)) {
        git(&["symbolic-ref", "HEAD", &h], None)?;
    }
    Ok(stats)
}
