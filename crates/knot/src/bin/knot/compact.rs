//! The `knot compact` command line: its flags, the remote named by URL or
//! by the current repository's remote name, and the exit codes (0 done or
//! nothing to do, 3 stopped by the uploads budget (run again), 4 refused
//! by the points budget, 1 an error). The compaction itself is the
//! library's (`knot::compact`).

use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use knot::compact::{Budget, CompactOptions, Compactor, Ended, prepare_dir};
use knot::{KnotError, Remote, Result};
use sha2::{Digest, Sha256};

/// `knot compact` flags.
#[derive(Debug, clap::Args)]
pub struct CompactArgs {
    /// The remote: an `at://` / `at+http(s)://` URL, or a remote name of
    /// the repository in the current directory.
    pub remote: String,
    /// Fold only this ref's packs (repeatable; default: every ref).
    #[arg(long = "ref")]
    pub refs: Vec<String>,
    /// Most write points this run may spend.
    #[arg(long)]
    pub max_points: Option<u32>,
    /// Most blob uploads this run may make.
    #[arg(long)]
    pub max_uploads: Option<u32>,
    /// Seconds a folded pack stays before its record is deleted.
    #[arg(long, default_value_t = 600)]
    pub grace: u64,
    /// State and scratch directory (default: under `$XDG_CACHE_HOME/knot/compact/`).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Print the cost and write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

fn url_of(remote: &str) -> Result<String> {
    let url = if remote.contains("://") || remote.starts_with("at::") {
        remote.to_owned()
    } else {
        remote_url(remote).ok_or_else(|| {
            KnotError::Protocol(format!(
                "{remote:?} is neither a URL nor a remote of this repository"
            ))
        })?
    };
    let url = url.strip_prefix("at::").unwrap_or(&url).to_owned();
    Ok(url)
}

/// `remote.<name>.url` of the repository in the current directory.
fn remote_url(name: &str) -> Option<String> {
    let out = Command::new("git")
        .args(["config", "--get", &format!("remote.{name}.url")])
        .stdin(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn default_dir(url: &str) -> Result<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .ok_or_else(|| KnotError::Protocol("no --dir, XDG_CACHE_HOME or HOME".into()))?;
    let h = Sha256::digest(url.as_bytes());
    Ok(base
        .join("knot")
        .join("compact")
        .join(data_encoding::HEXLOWER.encode(&h[..8])))
}

async fn run(a: CompactArgs) -> Result<Ended> {
    let url = url_of(&a.remote)?;
    let dir = match a.dir {
        Some(d) => d,
        None => default_dir(&url)?,
    };
    let scratch = prepare_dir(&dir)?;
    let mut remote = Remote::open(&url, Some(&scratch)).await?;
    let opts = CompactOptions {
        refs: a.refs,
        budget: Budget {
            points: a.max_points,
            uploads: a.max_uploads,
        },
        grace: Duration::from_secs(a.grace),
        dry_run: a.dry_run,
        ..CompactOptions::default()
    };
    let c = Compactor::new(&remote, &dir, opts)?;
    let report = c.run(&mut remote).await;
    remote.save().await?;
    let report = report?;
    eprintln!(
        "knot: spent {} write points and {} uploads; switched: {}; moved by pushes: {}; old packs deleted: {}, retired (deleted after the grace period): {}",
        report.spent.points,
        report.spent.uploads,
        report.switched.len(),
        if report.moved.is_empty() {
            "none".to_owned()
        } else {
            report.moved.join(", ")
        },
        report.deleted.len(),
        report.retired.len()
            - report
                .deleted
                .iter()
                .filter(|d| report.retired.contains(d))
                .count(),
    );
    if report.ended == Ended::Nothing {
        eprintln!("knot: nothing to compact: every ref names one pack");
    }
    Ok(report.ended)
}

/// Runs `knot compact`; the process's exit code.
pub fn main(a: CompactArgs) -> ExitCode {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("fatal: {e}");
            return ExitCode::from(1);
        }
    };
    match rt.block_on(run(a)) {
        Ok(Ended::Stopped) => ExitCode::from(3),
        Ok(Ended::Refused(_)) => ExitCode::from(4),
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fatal: {e}");
            ExitCode::from(1)
        }
    }
}
