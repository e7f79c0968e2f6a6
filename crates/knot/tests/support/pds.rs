//! An in-process atpds on a free loopback port, in a temporary directory,
//! and accounts on it. Dev-only and free of knot's binaries, so
//! knot-serve's tests include this file too (`#[path]` in
//! `crates/knot-serve/tests/sync.rs`) rather than keeping a copy.

#![allow(dead_code)]

use std::path::PathBuf;
use std::time::Duration;

use knot::Xrpc;
use serde_json::json;

pub const PASSWORD: &str = "pw-knot-test";

pub struct Pds {
    pub server: Option<xrpc::RunningServer>,
    pub dir: tempfile::TempDir,
    pub url: String,
}

/// A new account: its DID and an access token for it.
pub struct Account {
    pub did: String,
    pub token: String,
}

impl Pds {
    pub fn start() -> Pds {
        Pds::start_with(|_| {})
    }

    /// Starts one whose config `configure` has changed from the tests'
    /// (cheap scrypt, two workers, two read threads).
    pub fn start_with(configure: impl FnOnce(&mut xrpc::ServerConfig)) -> Pds {
        let dir = tempfile::tempdir().unwrap();
        let mut c = xrpc::ServerConfig::new(dir.path().join("pds.sqlite"));
        c.listen = "127.0.0.1:0".parse().unwrap();
        c.scrypt_log_n = 4;
        c.workers = 2;
        c.read_threads = 2;
        configure(&mut c);
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
        self.create_account(handle).did
    }

    /// Creates an account (password [`PASSWORD`]); returns its DID and
    /// access token.
    pub fn create_account(&self, handle: &str) -> Account {
        self.call(|x| async move {
            let v = x
                .procedure(
                    "com.atproto.server.createAccount",
                    &json!({"handle": handle, "password": PASSWORD, "email": format!("{handle}@example.com")}),
                    None,
                )
                .await
                .unwrap();
            Account {
                did: v["did"].as_str().unwrap().to_owned(),
                token: v["accessJwt"].as_str().unwrap().to_owned(),
            }
        })
    }

    /// A record's value read from the server now (`None` when absent).
    pub fn record(&self, did: &str, collection: &str, rkey: &str) -> Option<serde_json::Value> {
        self.call(|x| async move {
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

    /// Runs `f` with a client of this server, on a runtime of its own (so
    /// synchronous tests can call it; not from inside a runtime).
    fn call<F: Future>(&self, f: impl FnOnce(Xrpc) -> F) -> F::Output {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(f(Xrpc::new(&self.url, Duration::from_secs(30))))
    }

    pub fn db(&self) -> PathBuf {
        self.dir.path().join("pds.sqlite")
    }
}
