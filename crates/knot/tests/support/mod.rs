//! Shared by knot's integration tests: an in-process atpds, accounts, and

//! real `git` processes that find `git-remote-at` on their PATH.

#![allow(dead_code)]

pub mod fault;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use knot::client::Xrpc;
use serde_json::json;

pub const PASSWORD: &str = "pw-knot-test";

pub struct Pds {
    pub server: Option<xrpc::RunningServer>,
    pub dir: tempfile::TempDir,
    pub url: String,
}

impl Pds {
    pub fn start() -> Pds {
        let dir = tempfile::tempdir().unwrap();
        let mut c = xrpc::ServerConfig::new(dir.path().join("pds.sqlite"));
        c.listen = "127.0.0.1:0".parse().unwrap();
        c.scrypt_log_n = 4;
        c.workers = 2;
        c.read_threads = 2;
        let server = xrpc::spawn(c).unwrap();
        let url = server.url();
        Pds {
            server: Some(server),
            dir,
            url,
        }
    }

    pub fn addr(&self) -> std::net::SocketAddr {
        self.server.as_ref().unwrap().addr()
    }

    /// Creates an account; returns its DID.
    pub fn account(&self, handle: &str) -> String {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let x = Xrpc::new(&self.url, Duration::from_secs(30));
            let v = x
                .procedure(
                    "com.atproto.server.createAccount",
                    &json!({"handle": handle, "password": PASSWORD, "email": format!("{handle}@example.com")}),
                    None,
                )
                .await
                .unwrap();
            v["did"].as_str().unwrap().to_owned()
        })
    }

    /// A record's value read from the server now (`None` when absent).
    pub fn record(&self, did: &str, collection: &str, rkey: &str) -> Option<serde_json::Value> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let x = Xrpc::new(&self.url, Duration::from_secs(30));
            match x
                .query(
                    "com.atproto.repo.getRecord",
                    &[("repo", did), ("collection", collection), ("rkey", rkey)],
                    None,
                )
                .await
            {
                Ok(mut v) => Some(v["value"].take()),
                Err(e) if e.xrpc_name() == Some("RecordNotFound") => None,
                Err(e) => panic!("getRecord {collection}/{rkey}: {e}"),
            }
        })
    }

    pub fn db(&self) -> PathBuf {
        self.dir.path().join("pds.sqlite")
    }
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
