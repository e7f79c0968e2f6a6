//! The gateway's scratch repository: one bare repository it owns, holding
//! the objects of every repository it serves (what the PDS holds, mirrored
//! by `sync.rs`, and what writers sent). Every git call names it with
//! `--git-dir`, so the gateway never depends on the process's `GIT_DIR`.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use bytes::Bytes;
use tokio::io::AsyncWriteExt;

use crate::error::{KnotError, Result};

fn gerr(cmd: &str, why: impl Into<String>) -> KnotError {
    KnotError::Git {
        cmd: cmd.to_owned(),
        why: why.into(),
    }
}

/// What one git call printed.
pub struct Out {
    /// Exit code (`None`: killed by a signal).
    pub code: Option<i32>,
    /// stdout.
    pub stdout: String,
    /// stdout, the bytes as git wrote them.
    pub raw: Vec<u8>,
    /// stderr, first 2,000 bytes.
    pub stderr: String,
}

/// The scratch repository.
#[derive(Debug, Clone)]
pub struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    /// Opens (creating when absent) the bare repository at `dir`.
    pub async fn open(dir: &Path) -> Result<Scratch> {
        let s = Scratch {
            dir: dir.to_owned(),
        };
        if !dir.join("objects").is_dir() {
            std::fs::create_dir_all(dir)
                .map_err(|e| KnotError::io(dir.display().to_string(), e))?;
            let o = tokio::process::Command::new("git")
                .args(["init", "-q", "--bare"])
                .arg(dir)
                .stdin(Stdio::null())
                .output()
                .await
                .map_err(|e| gerr("init", e.to_string()))?;
            if !o.status.success() {
                return Err(gerr("init", String::from_utf8_lossy(&o.stderr).trim()));
            }
        }
        // Objects only arrive through index-pack and hash-object: nothing
        // here should run gc while a flush packs.
        s.ok(&["config", "gc.auto", "0"]).await?;
        Ok(s)
    }

    /// The repository's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Runs `git --git-dir <dir> args…` with `input` on stdin.
    pub async fn git(&self, args: &[&str], input: Option<&[u8]>) -> Result<Out> {
        let name = args.first().copied().unwrap_or("");
        let mut cmd = tokio::process::Command::new("git");
        cmd.arg("--git-dir")
            .arg(&self.dir)
            .args(args)
            .env_remove("GIT_DIR")
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|e| gerr(name, e.to_string()))?;
        if let Some(data) = input {
            let mut stdin = child.stdin.take().ok_or_else(|| gerr(name, "no stdin"))?;
            let data = data.to_vec();
            // Written beside the wait: a large input would fill both pipes.
            tokio::spawn(async move {
                let _ = stdin.write_all(&data).await;
            });
        }
        let o = child
            .wait_with_output()
            .await
            .map_err(|e| gerr(name, e.to_string()))?;
        let stderr: String = String::from_utf8_lossy(&o.stderr)
            .chars()
            .take(2000)
            .collect();
        Ok(Out {
            code: o.status.code(),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            raw: o.stdout,
            stderr,
        })
    }

    /// Runs git and requires success; returns stdout, trimmed.
    pub async fn ok(&self, args: &[&str]) -> Result<String> {
        let o = self.git(args, None).await?;
        if o.code != Some(0) {
            return Err(gerr(&args.join(" "), o.stderr.trim()));
        }
        Ok(o.stdout.trim().to_owned())
    }

    /// Indexes a pack a writer sent (or the PDS holds). index-pack checks
    /// every object; a hostile pack is refused here.
    pub async fn index_pack(&self, pack: &Bytes) -> Result<()> {
        if pack.is_empty() {
            return Ok(());
        }
        let o = self.git(&["index-pack", "--stdin"], Some(pack)).await?;
        if o.code != Some(0) {
            return Err(gerr("index-pack", o.stderr.trim()));
        }
        Ok(())
    }

    /// Whether `oid` names a commit held here.
    pub async fn has_commit(&self, oid: &str) -> Result<bool> {
        let o = self
            .git(&["cat-file", "-e", &format!("{oid}^{{commit}}")], None)
            .await?;
        Ok(o.code == Some(0))
    }

    /// Whether every object reachable from `tip` is here (walking down to
    /// `stop`, which is known to be complete).
    pub async fn complete(&self, tip: &str, stop: Option<&str>) -> Result<bool> {
        let mut args = vec!["rev-list", "--objects", "--quiet", tip];
        let not;
        if let Some(s) = stop {
            not = format!("^{s}");
            args.push(&not);
        }
        Ok(self.git(&args, None).await?.code == Some(0))
    }

    /// Whether `a` is an ancestor of (or equal to) `b`.
    pub async fn is_ancestor(&self, a: &str, b: &str) -> Result<bool> {
        let o = self
            .git(&["merge-base", "--is-ancestor", a, b], None)
            .await?;
        match o.code {
            Some(0) => Ok(true),
            Some(1) => Ok(false),
            _ => Err(gerr("merge-base --is-ancestor", o.stderr.trim())),
        }
    }
}
