//! The official PDS (`@atproto/pds` 0.4.217, the last release that runs on
//! node 20) as a whole HTTP server, for benches that drive it through the
//! same client as `atpds` (`peers/official-pds-server/start.js`).
//!
//! What this module owns: installing the peer folder on first use (`npm ci`
//! from its lock file, through [`crate::peers::ensure_installed`]; the
//! packages stay in `peers/official-pds-server/node_modules`, the install
//! log in `<target>/atbench/`), the server process (started on a free
//! loopback port with a fresh data directory of its own, killed by its
//! process id and its directory removed when the handle drops), its
//! readiness, and account creation.
//!
//! The server runs as its package's defaults have it, except what a
//! benchmark needs (each said in `start.js`): rate limits off, no invite
//! codes, dev mode (http, `localhost`, handles under `.test`), no crawlers,
//! an appview at a closed port unless the caller names a live one
//! ([`OfficialPds::start_with`]: `xrpc.mix` names its appview stand-in),
//! and a local PLC directory (`@did-plc/server` on its
//! in-memory database) in the same node process. Its blobs are files on
//! disk (`<dir>/blobs`), its accounts one SQLite file each, its passwords
//! node's scrypt (N = 2^14, r = 8, p = 1).
//!
//! # API (for any bench)
//!
//! ```ignore
//! use benches::official_pds::{OfficialPds, Start};
//! let pds = match OfficialPds::start_or_skip("xrpc.route") {
//!     Some(pds) => pds,   // running and healthy
//!     None => return,     // the reason was printed (panics under BENCH_REQUIRE_LIVE=1)
//! };
//! let a = pds.create_account("alice").expect("createAccount"); // alice.test
//! // a.did, a.handle, a.access_jwt, a.refresh_jwt; pds.addr(), pds.url(), pds.plc_url()
//! let many = pds.create_accounts("writer", 50); // writer0.test ... in parallel
//! drop(pds); // kills the process, removes its directory
//! ```
//!
//! - [`OfficialPds::start`]: `Err(Start::Unavailable)` when node is missing
//!   or too old, npm is missing or the install fails (a machine without
//!   the registry); `Err(Start::Failed)` when the server, once installed,
//!   does not come up healthy (a bug to fix, not a skip).
//! - [`OfficialPds::start_or_skip`]: prints one line and returns `None` on
//!   `Unavailable` (panics instead under `BENCH_REQUIRE_LIVE=1`); panics on
//!   `Failed`.
//! - [`OfficialPds::start_with`] / [`OfficialPds::start_or_skip_with`]: the
//!   same with `app.bsky.*` proxied to a live appview on a loopback port
//!   (`--appview-url`, `--appview-did` of `start.js`).
//! - [`OfficialPds::create_account`] / [`OfficialPds::create_accounts`]:
//!   `com.atproto.server.createAccount` with [`PASSWORD`] and an email, a
//!   real `did:plc` registered at the local PLC.
//! - [`post_json`] / [`get_json`]: one request outside any timing.
//!
//! It does not decide whether peers run: callers check
//! [`crate::peers::skip_reason`] (`BENCH_PEERS=1`, not a `--test` run)
//! before starting it, as every peer row does.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;

use crate::peers::{self, Peer};

/// The peer folder and the implementation name its rows carry.
pub const OFFICIAL_PDS_SERVER: Peer = Peer {
    folder: "official-pds-server",
    implementation: "official-pds",
};

/// The password of every account [`OfficialPds::create_account`] makes.
pub const PASSWORD: &str = "atbench official pds";

/// How long the server may take to print its address (its first start
/// after an install compiles nothing, but opens a dozen SQLite files and
/// loads the lexicons).
const START_TIMEOUT: Duration = Duration::from_secs(90);

/// Why the server did not start.
#[derive(Debug)]
pub enum Start {
    /// The machine cannot run it (no node, no npm, no install): a skip.
    Unavailable(String),
    /// It is installed but did not come up: a failure.
    Failed(String),
}

impl std::fmt::Display for Start {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Start::Unavailable(r) => write!(f, "unavailable: {r}"),
            Start::Failed(r) => write!(f, "failed: {r}"),
        }
    }
}

/// One account on the server.
#[derive(Debug, Clone)]
pub struct Account {
    /// Its `did:plc`.
    pub did: String,
    /// Its handle (`<name>.test`).
    pub handle: String,
    /// The access JWT createAccount answered.
    pub access_jwt: String,
    /// The refresh JWT createAccount answered.
    pub refresh_jwt: String,
}

/// A running official PDS; dropping it kills the process and removes its
/// data directory.
pub struct OfficialPds {
    child: Child,
    addr: SocketAddr,
    url: String,
    plc_url: String,
    node: String,
    dir: tempfile::TempDir,
}

impl Drop for OfficialPds {
    fn drop(&mut self) {
        // Our own child, by its id: SIGKILL, then reap it. The data
        // directory goes with `dir` after this.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn require_live() -> bool {
    std::env::var("BENCH_REQUIRE_LIVE").is_ok_and(|v| v == "1")
}

impl OfficialPds {
    /// Installs the peer on first use and starts it (its appview at a
    /// closed port: nothing is proxied).
    pub fn start() -> Result<OfficialPds, Start> {
        OfficialPds::start_with(None)
    }

    /// [`OfficialPds::start`] with `app.bsky.*` proxied to `appview` (an
    /// `http://127.0.0.1:PORT` URL; `start.js` refuses any other).
    pub fn start_with(appview: Option<&xrpc::Appview>) -> Result<OfficialPds, Start> {
        let node = peers::node_version().map_err(Start::Unavailable)?;
        peers::ensure_installed(OFFICIAL_PDS_SERVER).map_err(Start::Unavailable)?;
        let folder = peers::peers_dir().join(OFFICIAL_PDS_SERVER.folder);
        let dir = tempfile::Builder::new()
            .prefix("official-pds-")
            .tempdir_in(scratch_root())
            .map_err(|e| Start::Failed(format!("temp dir: {e}")))?;
        let data = dir.path().join("data");
        let started = Instant::now();
        let mut cmd = Command::new("node");
        cmd.arg("start.js").arg("--dir").arg(&data);
        if let Some(a) = appview {
            cmd.args(["--appview-url", &a.url, "--appview-did", &a.did]);
        }
        let mut child = cmd
            .current_dir(&folder)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| Start::Unavailable(format!("cannot run node: {e}")))?;
        let line = match child.stdout.take() {
            Some(out) => first_line(out, "official-pds listening on ", START_TIMEOUT),
            None => Err("no stdout".into()),
        };
        let line = match line {
            Ok(l) => l,
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Start::Failed(format!("start.js: {e}")));
            }
        };
        let mut parts = line
            .trim_start_matches("official-pds listening on ")
            .split(" plc ");
        let url = parts.next().unwrap_or_default().to_owned();
        let plc_url = parts.next().unwrap_or_default().to_owned();
        let addr: Result<SocketAddr, _> = url.trim_start_matches("http://").parse();
        let mut pds = OfficialPds {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            url,
            plc_url,
            node,
            dir,
        };
        pds.addr = addr.map_err(|e| Start::Failed(format!("unreadable address {line:?}: {e}")))?;
        let (status, body) = request(pds.addr, Method::GET, "/xrpc/_health", None, Bytes::new())
            .map_err(Start::Failed)?;
        if status != StatusCode::OK {
            return Err(Start::Failed(format!(
                "_health answered {status}: {}",
                String::from_utf8_lossy(&body)
            )));
        }
        eprintln!(
            "atbench: official-pds: @atproto/pds 0.4.217 on node {} at {} (PLC {}), healthy in {:.1?}",
            pds.node,
            pds.url,
            pds.plc_url,
            started.elapsed()
        );
        Ok(pds)
    }

    /// [`OfficialPds::start`], or `None` after printing why the machine
    /// cannot run it (`what` names the rows skipped). Panics when it is
    /// unavailable under `BENCH_REQUIRE_LIVE=1`, and when it fails.
    pub fn start_or_skip(what: &str) -> Option<OfficialPds> {
        OfficialPds::start_or_skip_with(what, None)
    }

    /// [`OfficialPds::start_or_skip`] with `app.bsky.*` proxied to
    /// `appview` ([`OfficialPds::start_with`]).
    pub fn start_or_skip_with(what: &str, appview: Option<&xrpc::Appview>) -> Option<OfficialPds> {
        match OfficialPds::start_with(appview) {
            Ok(pds) => Some(pds),
            Err(Start::Unavailable(reason)) => {
                assert!(
                    !require_live(),
                    "{what}: the official PDS is required (BENCH_REQUIRE_LIVE=1) but {reason}"
                );
                eprintln!("atbench: {what}: official-pds rows skipped: {reason}");
                None
            }
            Err(Start::Failed(reason)) => {
                panic!("{what}: the official PDS did not start: {reason}")
            }
        }
    }

    /// Its address (loopback).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The local PLC directory its accounts register with.
    pub fn plc_url(&self) -> &str {
        &self.plc_url
    }

    /// The node version it runs on.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// Its data directory (account, sequencer and actor SQLite files,
    /// blobs).
    pub fn data_dir(&self) -> std::path::PathBuf {
        self.dir.path().join("data")
    }

    /// Creates account `<name>.test` with [`PASSWORD`].
    pub fn create_account(&self, name: &str) -> Result<Account, String> {
        let handle = format!("{name}.test");
        let body = serde_json::json!({
            "handle": handle,
            "password": PASSWORD,
            "email": format!("{name}@example.com"),
        });
        let v = post_json(
            self.addr,
            "/xrpc/com.atproto.server.createAccount",
            None,
            &body,
        )?;
        let field = |k: &str| {
            v[k].as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("createAccount answered no {k}: {v}"))
        };
        Ok(Account {
            did: field("did")?,
            handle,
            access_jwt: field("accessJwt")?,
            refresh_jwt: field("refreshJwt")?,
        })
    }

    /// `n` accounts `<prefix>0.test` ..., created from 4 threads (each
    /// hashes a password on the server's one thread, PLC included).
    ///
    /// # Panics
    /// When one cannot be created.
    pub fn create_accounts(&self, prefix: &str, n: usize) -> Vec<Account> {
        let per = n.div_ceil(4).max(1);
        let mut out: Vec<Option<Account>> = vec![None; n];
        std::thread::scope(|s| {
            for (t, chunk) in out.chunks_mut(per).enumerate() {
                s.spawn(move || {
                    for (k, slot) in chunk.iter_mut().enumerate() {
                        let name = format!("{prefix}{}", t * per + k);
                        match self.create_account(&name) {
                            Ok(a) => *slot = Some(a),
                            Err(e) => panic!("official-pds: createAccount {name}: {e}"),
                        }
                    }
                });
            }
        });
        out.into_iter().flatten().collect()
    }
}

/// Where the server's directory goes: under `<target>/atbench`, beside the
/// other benches' scratch files (not /tmp, which may be a small tmpfs).
fn scratch_root() -> std::path::PathBuf {
    let root = crate::sidecar::atbench_dir().join("official-pds-tmp");
    let _ = std::fs::create_dir_all(&root);
    root
}

/// The first stdout line starting with `prefix`, within `timeout`; the
/// rest of stdout keeps draining on the reader thread.
fn first_line(
    stdout: std::process::ChildStdout,
    prefix: &'static str,
    timeout: Duration,
) -> Result<String, String> {
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
        .map_err(|_| format!("no line starting with {prefix:?} within {timeout:?}"))
}

/// One request on a fresh connection, outside any timing: status and body.
pub fn request(
    addr: SocketAddr,
    method: Method,
    path: &str,
    bearer: Option<&str>,
    body: Bytes,
) -> Result<(StatusCode, Bytes), String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}"))?;
    rt.block_on(async move {
        let stream = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connect {addr}: {e}"))?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| format!("handshake: {e}"))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let mut builder = Request::builder()
            .method(method)
            .uri(path)
            .header("host", addr.to_string());
        if let Some(token) = bearer {
            builder = builder.header("authorization", format!("Bearer {token}"));
        }
        if !body.is_empty() {
            builder = builder.header("content-type", "application/json");
        }
        let req = builder
            .body(Full::new(body))
            .map_err(|e| format!("request: {e}"))?;
        let resp = sender
            .send_request(req)
            .await
            .map_err(|e| format!("{path}: {e}"))?;
        let status = resp.status();
        let bytes = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("{path}: body: {e}"))?
            .to_bytes();
        Ok((status, bytes))
    })
}

/// POST of a JSON body that must answer 200 with JSON.
pub fn post_json(
    addr: SocketAddr,
    path: &str,
    bearer: Option<&str>,
    body: &serde_json::Value,
) -> Result<serde_json::Value, String> {
    let bytes = Bytes::from(serde_json::to_vec(body).map_err(|e| e.to_string())?);
    ok_json(path, request(addr, Method::POST, path, bearer, bytes)?)
}

/// GET that must answer 200 with JSON.
pub fn get_json(
    addr: SocketAddr,
    path: &str,
    bearer: Option<&str>,
) -> Result<serde_json::Value, String> {
    ok_json(
        path,
        request(addr, Method::GET, path, bearer, Bytes::new())?,
    )
}

fn ok_json(path: &str, (status, body): (StatusCode, Bytes)) -> Result<serde_json::Value, String> {
    if status != StatusCode::OK {
        return Err(format!(
            "{path} answered {status}: {}",
            String::from_utf8_lossy(&body)
        ));
    }
    serde_json::from_slice(&body).map_err(|e| format!("{path}: not JSON ({e})"))
}
