//! Shared by knot's integration tests: an in-process atpds and accounts
//! (`pds.rs`), a stub PLC directory, and real `git` processes that find
//! `git-remote-at` on their PATH.

#![allow(dead_code)]

pub mod fault;
pub mod pds;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use bytes::Bytes;
use fault::{Action, FaultProxy};
pub use pds::{PASSWORD, Pds};

/// A fresh atpds with one account `handle`, and a sandbox signed in as
/// it: (server, the account's DID, sandbox).
pub fn signed_in(handle: &str) -> (Pds, String, Sandbox) {
    let pds = Pds::start();
    let did = pds.account(handle);
    (pds, did, Sandbox::new(handle))
}

/// A PLC directory that knows one DID, whose document points at
/// `pds_url`; any other DID is not registered (404).
pub fn plc_directory(did: &str, pds_url: &str) -> FaultProxy {
    let doc = serde_json::json!({"id": did, "service": [{"id": "#atproto_pds", "type": "AtprotoPersonalDataServer", "serviceEndpoint": pds_url}]});
    let (path, body) = (format!("/{did}"), Bytes::from(doc.to_string()));
    FaultProxy::start(
        None,
        std::sync::Arc::new(move |p, _| {
            if p.uri.path() == path {
                Action::Respond(
                    200,
                    vec![("content-type", "application/json".into())],
                    body.clone(),
                )
            } else {
                Action::Respond(
                    404,
                    vec![],
                    Bytes::from_static(b"{\"message\":\"DID not registered\"}"),
                )
            }
        }),
    )
}

/// The directory holding `git-remote-at`, for PATH.
pub fn helper_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_git-remote-at"))
        .parent()
        .unwrap()
        .to_owned()
}

/// A sandbox for git: its own HOME (no user config), the helper on PATH,
/// the account's password in the environment.
pub struct Sandbox {
    pub home: tempfile::TempDir,
    pub identifier: String,
}

impl Sandbox {
    pub fn new(identifier: &str) -> Sandbox {
        Sandbox {
            home: tempfile::tempdir().unwrap(),
            identifier: identifier.to_owned(),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.home.path().join(name)
    }

    pub fn cmd(&self, dir: &Path, args: &[&str]) -> Command {
        let mut c = Command::new("git");
        let path = format!(
            "{}:{}",
            helper_dir().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        c.current_dir(dir)
            .args(args)
            .env("PATH", path)
            .env("HOME", self.home.path())
            .env("XDG_CONFIG_HOME", self.home.path().join(".config"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "Knot Test")
            .env("GIT_AUTHOR_EMAIL", "knot@example.com")
            .env("GIT_COMMITTER_NAME", "Knot Test")
            .env("GIT_COMMITTER_EMAIL", "knot@example.com")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("ATPROTO_IDENTIFIER", &self.identifier)
            .env("ATPROTO_PASSWORD", PASSWORD)
            .env_remove("GIT_DIR");
        c
    }

    /// Runs git; returns the output whatever the status.
    pub fn try_git(&self, dir: &Path, args: &[&str]) -> Output {
        self.cmd(dir, args).output().unwrap()
    }

    /// Runs git and asserts success; returns stdout.
    #[track_caller]
    pub fn git(&self, dir: &Path, args: &[&str]) -> String {
        let o = self.try_git(dir, args);
        assert!(
            o.status.success(),
            "git {args:?} failed: {}\nstderr: {}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).trim().to_owned()
    }

    /// `git init -b main` of a fresh directory.
    pub fn init(&self, name: &str) -> PathBuf {
        let d = self.path(name);
        std::fs::create_dir_all(&d).unwrap();
        self.git(&d, &["init", "-q", "-b", "main"]);
        d
    }

    /// Writes `file` and commits it; returns the commit.
    pub fn commit(&self, dir: &Path, file: &str, content: &str) -> String {
        std::fs::write(dir.join(file), content).unwrap();
        self.git(dir, &["add", file]);
        self.git(
            dir,
            &["commit", "-q", "-m", &format!("{file}: {}", content.len())],
        );
        self.git(dir, &["rev-parse", "HEAD"])
    }

    pub fn rev(&self, dir: &Path, name: &str) -> String {
        self.git(dir, &["rev-parse", name])
    }
}

/// The remote URL naming the PDS directly.
pub fn url(pds_url: &str, account: &str, repo: &str) -> String {
    format!("at::at+{pds_url}/{account}/{repo}")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
