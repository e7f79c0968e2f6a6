//! `knot gateway`: a small server that `git-remote-at` pushes through
//! instead of the PDS, for many writers on one branch (`docs/design/knot.md`: of
//! N writers pushing straight to a branch, one lands per round).
//!
//! It serves one account (credentials as the helper finds them,
//! `crate::session`) and keeps one queue per (repository, branch). A
//! push that fast-forwards the queue's end joins it; one that does not has
//! its own commits replayed onto the end with `git merge-tree` in the
//! gateway's scratch repository, or is refused with `fetch first`. Each
//! flush lands every waiting push as one pack and one compare-and-swap of
//! the ref record; a writer hears `ok` only after that, with the commit
//! its work landed as. Writers outside the gateway stay guarded by the
//! swap: the gateway re-reads, replays and lands again. Write points,
//! uploads and requests go through token buckets sized to the PDS's
//! limits, so a flood waits here rather than tripping 429s.
//!
//! # Using it
//!
//! ```text
//! knot gateway --pds http://pds:2583 --account alice.example.com --listen 127.0.0.1:7070
//! git config knot.gateway http://127.0.0.1:7070     # in each writer's clone
//! git push origin main                              # lands through the gateway
//! ```
//!
//! `KNOT_GATEWAY` in the environment does the same as the config key. A
//! push goes through the gateway when every ref of the batch is a plain
//! (not forced, no lease) update or creation of a branch, without
//! `--atomic` or `--dry-run`; anything else goes straight to the PDS as
//! before. Fetches always read the PDS. When the gateway replayed a push,
//! the helper says on stderr `knot: gateway: <ref> landed as <sha>
//! (rebased)`; git still records the pushed commit as the remote's, so the
//! writer's next `git pull --rebase` (or `git fetch`) adopts the landed one
//! (git drops the writer's original, whose change is upstream).
//!
//! # Wire (between the helper and the gateway)
//!
//! `POST /v1/push?repo=<repo>&ref=<refs/heads/…>&new=<sha>`, body: a pack
//! (`git pack-objects --revs --stdout` of `new` minus the remote tips the
//! writer holds; empty when nothing is new), optional `Authorization:
//! Bearer <--token>`. Answer: `{"status":"landed","landed":<sha>,
//! "rebased":<bool>}`, `{"status":"refused","why":<git's words>}`, or an
//! HTTP error with `{"error","message"}`. `GET /v1/stats`: the counters.
//!
//! # Bounds
//!
//! Connections ([`Config::max_connections`], beyond which accepts wait),
//! request bodies ([`Config::max_push_bytes`]), header read time, queue
//! length ([`Config::max_queue`]), queues ([`Config::max_queues`]),
//! links per flush (`flush::MAX_BATCH`), commits per replay
//! (`rebase::MAX_REPLAY`), mirrored pack size (`sync::MAX_MIRROR_PACK`).
//!
//! | module | owns |
//! |---|---|
//! | `scratch` | the scratch repository and its git calls |
//! | `rebase` | replaying a push onto a queue's end |
//! | `sync` | mirroring what a ref record names into the scratch repository |
//! | `queue` | the chain of one (repository, branch) |
//! | `flush` | landing a chain: one pack, one compare-and-swap |
//! | `bucket` | the account's budget: token buckets |
//! | `server` | the HTTP server |
//! | `client` | the helper's side |

mod bucket;
pub(crate) mod client;
mod flush;
mod queue;
mod rebase;
mod scratch;
mod server;
mod sync;

pub use bucket::{Kind, Limit};

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};
use tokio::sync::Mutex;

use bucket::Budget;
use queue::{Chain, Queue};
use scratch::Scratch;

use crate::error::{KnotError, Result};
use crate::remote::{Auth, Remote};
use crate::session::{self, Credentials};

/// What `knot gateway` runs with.
#[derive(Debug, Clone)]
pub struct Config {
    /// The PDS (`http://host:port` or `https://…`).
    pub pds: String,
    /// The account (handle or DID) whose repositories it lands.
    pub account: String,
    /// Where it listens.
    pub listen: SocketAddr,
    /// The scratch repository (created when absent).
    pub dir: PathBuf,
    /// The budget's limits.
    pub limits: Vec<(Kind, Limit)>,
    /// Pushes one queue holds at most (landing and waiting).
    pub max_queue: usize,
    /// Queues at most.
    pub max_queues: usize,
    /// Largest push body.
    pub max_push_bytes: usize,
    /// Connections served at once.
    pub max_connections: usize,
    /// When set, writers must send it as a bearer token.
    pub token: Option<String>,
    /// The account's password; `None`: found as the helper finds it
    /// (`crate::session`).
    pub password: Option<String>,
}

impl Config {
    /// The PDS's reference limits: write points 5,000 an hour and 35,000
    /// a day, uploadBlob 1,000 a day, requests 3,000 per 5 minutes.
    pub fn reference_limits() -> Vec<(Kind, Limit)> {
        let l = |points, secs| Limit {
            points,
            window: std::time::Duration::from_secs(secs),
        };
        vec![
            (Kind::Points, l(5_000, 3_600)),
            (Kind::Points, l(35_000, 86_400)),
            (Kind::Uploads, l(1_000, 86_400)),
            (Kind::Requests, l(3_000, 300)),
        ]
    }

    /// Defaults around `pds`, `account`, `listen` and `dir`.
    pub fn new(pds: &str, account: &str, listen: SocketAddr, dir: PathBuf) -> Config {
        Config {
            pds: pds.trim_end_matches('/').to_owned(),
            account: account.to_owned(),
            listen,
            dir,
            limits: Config::reference_limits(),
            max_queue: 1024,
            max_queues: 256,
            max_push_bytes: 64 << 20,
            max_connections: 256,
            token: None,
            password: None,
        }
    }
}

/// The counters `GET /v1/stats` shows.
#[derive(Debug, Default)]
pub struct Stats {
    /// Pushes received.
    pub pushes: AtomicU64,
    /// Pushes landed.
    pub landed: AtomicU64,
    /// Of them, replayed.
    pub rebased: AtomicU64,
    /// Refused (`fetch first`, queue full).
    pub refused: AtomicU64,
    /// Flushes that landed (one CAS each).
    pub flushes: AtomicU64,
    /// Failed swaps (a writer outside the gateway moved the branch).
    pub swap_retries: AtomicU64,
    /// 429s the PDS answered.
    pub rate_limited: AtomicU64,
    /// Flushes that failed.
    pub failed: AtomicU64,
    /// Time spent waiting for the budget, ms.
    pub budget_wait_ms: AtomicU64,
}

impl Stats {
    /// The counters as JSON.
    pub fn to_json(&self) -> Value {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        json!({"pushes": g(&self.pushes), "landed": g(&self.landed), "rebased": g(&self.rebased),
               "refused": g(&self.refused), "flushes": g(&self.flushes),
               "swap_retries": g(&self.swap_retries), "rate_limited": g(&self.rate_limited),
               "failed": g(&self.failed), "budget_wait_ms": g(&self.budget_wait_ms)})
    }
}

/// The gateway's shared state.
pub struct Core {
    /// Its configuration.
    pub cfg: Config,
    /// The scratch repository.
    pub scratch: Scratch,
    /// The account's budget.
    pub budget: Budget,
    /// Counters.
    pub stats: Stats,
    auth: Mutex<Option<Arc<Auth>>>,
    queues: Mutex<HashMap<(String, String), Arc<Queue>>>,
}

impl Core {
    /// Opens the scratch repository.
    pub async fn new(cfg: Config) -> Result<Arc<Core>> {
        let scratch = Scratch::open(&cfg.dir).await?;
        Ok(Arc::new(Core {
            budget: Budget::new(&cfg.limits),
            cfg,
            scratch,
            stats: Stats::default(),
            auth: Mutex::new(None),
            queues: Mutex::new(HashMap::new()),
        }))
    }

    /// The queue of (`repo`, `branch`), opened (ref read, objects
    /// mirrored, flusher started) on first use. `None` when the gateway
    /// holds [`Config::max_queues`] already.
    pub async fn queue(self: &Arc<Self>, repo: &str, branch: &str) -> Result<Option<Arc<Queue>>> {
        let key = (repo.to_owned(), branch.to_owned());
        let mut qs = self.queues.lock().await;
        if let Some(q) = qs.get(&key) {
            return Ok(Some(q.clone()));
        }
        if qs.len() >= self.cfg.max_queues {
            return Ok(None);
        }
        let url = format!("at+{}/{}/{repo}", self.cfg.pds, self.cfg.account);
        let mut remote = Remote::open(&url, None).await?;
        {
            // One session for every repository of the account.
            let mut a = self.auth.lock().await;
            let shared = match a.as_ref() {
                Some(shared) => shared.clone(),
                None => {
                    let auth = match &self.cfg.password {
                        Some(pw) => {
                            let c = Credentials {
                                identifier: self.cfg.account.clone(),
                                password: pw.clone(),
                            };
                            let t = session::create(&remote.pds, &c).await?;
                            Arc::new(Auth::new(
                                remote.pds.clone(),
                                self.cfg.account.clone(),
                                Some(c),
                                Some(t),
                            ))
                        }
                        None => remote.auth.clone(),
                    };
                    *a = Some(auth.clone());
                    auth
                }
            };
            remote.auth = shared;
        }
        let landed = remote.read_ref(branch).await?;
        let repo_exists = remote.read_repo().await?.head.is_some();
        if let Some(l) = &landed {
            sync::mirror(&remote, &self.scratch, &l.record).await?;
        }
        let q = Arc::new(Queue {
            remote: Arc::new(remote),
            branch: branch.to_owned(),
            chain: Mutex::new(Chain {
                landed,
                repo_exists,
                ..Chain::default()
            }),
            wake: tokio::sync::Notify::new(),
        });
        tokio::spawn(flush::run(self.clone(), q.clone()));
        qs.insert(key, q.clone());
        Ok(Some(q))
    }
}

/// A gateway running on a thread of its own (tests, `--bench knot`);
/// stopped when dropped.
pub struct Running {
    addr: SocketAddr,
    core: Arc<Core>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Running {
    /// `http://<addr>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its counters.
    pub fn stats(&self) -> Value {
        self.core.stats.to_json()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Starts a gateway on a thread and runtime of its own.
pub fn spawn(cfg: Config) -> Result<Running> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| KnotError::io("gateway runtime", e))?;
    let (core, listener) = rt.block_on(async {
        let core = Core::new(cfg.clone()).await?;
        let l = tokio::net::TcpListener::bind(cfg.listen)
            .await
            .map_err(|e| KnotError::io(format!("listen on {}", cfg.listen), e))?;
        Ok::<_, KnotError>((core, l))
    })?;
    let addr = listener
        .local_addr()
        .map_err(|e| KnotError::io("listener address", e))?;
    let (tx, rx) = tokio::sync::oneshot::channel();
    let c = core.clone();
    let thread = std::thread::Builder::new()
        .name("knot-gateway".into())
        .spawn(move || {
            rt.block_on(async move {
                tokio::select! {
                    _ = rx => {}
                    _ = server::serve(c, listener) => {}
                }
            });
            rt.shutdown_background();
        })
        .map_err(|e| KnotError::io("gateway thread", e))?;
    Ok(Running {
        addr,
        core,
        stop: Some(tx),
        thread: Some(thread),
    })
}

/// `knot gateway`: serves until killed.
pub fn run(cfg: Config) -> Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| KnotError::io("gateway runtime", e))?;
    rt.block_on(async {
        let core = Core::new(cfg.clone()).await?;
        let l = tokio::net::TcpListener::bind(cfg.listen)
            .await
            .map_err(|e| KnotError::io(format!("listen on {}", cfg.listen), e))?;
        eprintln!(
            "knot gateway: landing pushes for {} on {} (listening on {}, scratch {})",
            cfg.account,
            cfg.pds,
            l.local_addr().map_err(|e| KnotError::io("listener", e))?,
            cfg.dir.display()
        );
        server::serve(core, l).await;
        Ok(())
    })
}
