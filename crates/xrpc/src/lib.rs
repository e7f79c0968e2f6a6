//! The [`store`] served as an atproto Personal Data Server: XRPC over
//! HTTP/1.1, the `com.atproto.sync.subscribeRepos` firehose over WebSocket,
//! accounts and sessions (`docs/design/xrpc.md`), and the `atpds` binary.
//!
//! # Shape
//!
//! One tokio runtime: the async threads parse HTTP, route, check tokens and
//! render JSON. Short reads run on a fixed read pool (`pool.rs`, one
//! thread per core), and so does every read a response streams from (a
//! getRepo export, or a large record's proof, is spooled there, then read
//! back chunk by chunk; a large listRecords page or blob is read chunk by
//! chunk, each chunk under its own read transaction: `stream.rs`), so a
//! client that stops reading never holds a thread, a read transaction or
//! more than a few chunks; scrypt and store writes run on tokio's
//! blocking pool, which readers never enter.
//! The router is a `match` on the method name (`routes/mod.rs`); handlers
//! render their JSON directly into one buffer (records come pre-rendered
//! from the store: [`store::RecordView::json`]), or into chunks when the
//! answer is large.
//!
//! # Deviation: a large listRecords page is not one snapshot
//!
//! A page whose records come to 256 KiB or more is streamed, each chunk
//! of records read under its own transaction (`routes/repo.rs`), so that
//! a client that stops reading pins neither the page in memory nor the
//! WAL. A record written or deleted past the chunks already sent may or
//! may not appear, as at a page boundary; no record appears twice, the
//! order holds, and `limit` and the cursor keep their lexicon meaning.
//!
//! # Deviation: a lone commit runs on its async thread
//!
//! The spec asks that "the store's blocking work runs off the async
//! threads". One exception, on purpose: a record commit that finds no
//! other store write in flight runs on its async thread
//! (`App::commit_slot`), because the two thread wakes of a hop to the
//! blocking pool cost more CPU on two cores than the HTTP exchange around
//! the commit (`xrpc.write/create_record/c1` in `benches/units.toml`;
//! `examples/write_probe.rs` counts the context switches). Bounds that
//! keep it honest: every store write (record commits, `uploadBlob`,
//! `createAccount`, identity updates) is counted in the same slot, so an
//! inline commit never waits for the store's writer behind another write;
//! the other async thread stays free; overlapping writes all go to the
//! blocking pool and wait in the store's group commit there; and a
//! durable store (fsync in every commit) never commits inline.
//!
//! # Deviation: proxying resolves no DID, and speaks plain HTTP
//!
//! The reference PDS resolves the DID of an `atproto-proxy` header and
//! proxies to whatever service its document names. atpds resolves none
//! over the network: the header may name only the configured appview
//! (`--appview-did`, service `#bsky_appview`), and every other DID is the
//! reference's 400 "could not resolve proxy did" (`proxy.rs`). Upstreams
//! (the appview, relays) are `http://` only: atpds carries no TLS client.
//!
//! # Deviation: no OAuth
//!
//! The OAuth discovery documents are served, and say that no grant,
//! response type or scope is supported and that the JWKS is empty: clients
//! log in with `createSession` (`routes/well_known.rs`).
//!
//! # Deviation: an unrecognised blob keeps no wildcard type
//!
//! `uploadBlob` takes any `Content-Type` and sniffs the type from the
//! bytes, as the reference does. Where nothing is recognised and the
//! header is `*/*`, missing or no valid type, the reference stores the
//! header's string; atpds stores `application/octet-stream` (`mime.rs`).
//!
//! # Modules
//!
//! | module | owns |
//! |---|---|
//! | `admission` | the heavy responses in flight, per client address and in total (429 / 503 past the caps), and the bytes their bodies hold |
//! | `mime` | a blob's stored MIME type: sniffed from its bytes, else the declared concrete type |
//! | `app` | the shared state: store, accounts, token keys, firehose, config-derived answers |
//! | `net` | the listener, connections (limits, keep-alive), the runtime, graceful shutdown |
//! | `request` | reading request bodies (capped), JSON bodies |
//! | `response` | the response body type and the shared JSON answers |
//! | `snapshot` | `--snapshot FILE`: a backup copied over the store with SQLite's backup API before start |
//! | `stall` | the connection's socket with its write deadline |
//! | `stream` | response bodies produced chunk by chunk on demand, each chunk one short read |
//! | `error` | `XrpcError`-style JSON errors and the store's errors mapped to lexicon names |
//! | `params` | query strings: percent-decoding and the lexicon format checks |
//! | `auth` | HS256 access / refresh JWTs, their scopes (full, app password) |
//! | `app_passwords` | app passwords: their rows in the account file, the live set their sessions are checked against |
//! | `service_jwt` | ES256K service-auth JWTs signed with the account's repository key |
//! | `crawl` | `requestCrawl` to the configured relays after writes, debounced |
//! | `cors` | CORS: preflight answers and the `Access-Control-*` headers of every answer |
//! | `password` | scrypt password hashes |
//! | `accounts` | the account file: handles, password hashes, refresh tokens |
//! | `plc` | did:plc genesis operations and their submission |
//! | `pool` | the read pool: the store's short reads, off the async threads |
//! | `rate_limit` | write points and rate limits (`--rate-limits`): the counters, the `RateLimit-*` headers |
//! | `routes` | the XRPC methods, by lexicon namespace |
//! | `proxy` | methods atpds does not serve, forwarded to the appview (`atproto-proxy`, `--appview-url`) with a service-auth JWT |
//! | `firehose` | the event hub: the store's event feed (each frame encoded once by the store's writer, appended in seq order as batches commit) fanned out to subscribers, its bytes shared by all |
//! | `startup` | the startup stage timings printed on the startup line (`storage_ms` ... `http_init_ms`) |
//! | `subscribe` | one WebSocket subscriber: replay, cut-over, outbox, ping |
//! | `sweeper` | the store's sweep on a timer: orphan uploads past their grace, events past their retention |
//!
//! # Persistence
//!
//! Beside the store file `DB` the server keeps `DB.accounts` (a small
//! SQLite file of its own: handle, password hash, email, live refresh
//! tokens) and `DB.secret` (the JWT key and the PLC rotation key, mode
//! 0600). Repositories, signing keys and the event log are the store's.

mod accounts;
mod admission;
mod app;
mod auth;
mod cors;
mod crawl;
mod error;
mod firehose;
mod methods;
mod mime;
mod net;
mod params;
mod password;
mod plc;
mod pool;
mod proxy;
mod rate_limit;
mod request;
mod response;
mod routes;
mod service_jwt;
mod snapshot;
mod spaces;
mod stall;
mod startup;
mod stream;
mod subscribe;
mod sweeper;
mod upstream;

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

pub use error::ServerError;
pub use net::runtime;
pub use proxy::{APPVIEW_SERVICE_ID, Appview};
pub use rate_limit::{Limit, RateLimits};
pub use snapshot::restore_snapshot;

/// How the server runs. [`ServerConfig::new`] gives the defaults of the
/// `atpds` command line.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The store's database file (created if missing); the account file
    /// and the secret file live beside it.
    pub db: PathBuf,
    /// Where to listen (port 0: any free port, see [`RunningServer::addr`]).
    pub listen: SocketAddr,
    /// The server's host name: its `did:web`, the handle domain it offers.
    pub hostname: String,
    /// The URL clients reach this server at, written into each new
    /// account's DID document. `None`: `http://<listen address>` when the
    /// host name is `localhost` or an IP address, else `https://<hostname>`.
    pub public_url: Option<String>,
    /// A PLC directory to submit each new account's genesis operation to.
    pub plc_url: Option<String>,
    /// The appview `app.bsky.*` calls atpds does not serve go to, and the
    /// one service an `atproto-proxy` header may name (`proxy.rs`).
    pub appview: Option<Appview>,
    /// How long a proxied call waits for the upstream's answer head (504
    /// `UpstreamTimeout` past it); its body may take twice that in all.
    pub proxy_timeout: Duration,
    /// Largest proxied answer body (bytes).
    pub proxy_max_bytes: usize,
    /// Relays to send `com.atproto.sync.requestCrawl` to after writes
    /// (`crawl.rs`), base URLs.
    pub relay_urls: Vec<String>,
    /// The least time between two `requestCrawl` rounds (the reference
    /// PDS's 20 minutes by default).
    pub crawl_interval: Duration,
    /// Largest blob `uploadBlob` accepts (bytes).
    pub blob_upload_limit: usize,
    /// Largest JSON request body (bytes).
    pub json_body_limit: usize,
    /// How long any request body may take before its bytes are counted
    /// against [`body_min_rate`](Self::body_min_rate).
    pub body_grace: Duration,
    /// The slowest a request body may arrive, in bytes per second: a body
    /// of `n` bytes (declared, else the route's cap) must have arrived
    /// `body_grace + n / body_min_rate` after the handler starts reading
    /// it, else 408 and the connection closes.
    pub body_min_rate: u64,
    /// How long a response write may wait for the client to read before
    /// the connection is dropped (a client that stops reading holds the
    /// server's buffers that long at most).
    pub write_stall: Duration,
    /// Heavy responses (getRepo, getBlob, listBlobs, listRecords,
    /// sync.getRecord) in flight per client address; past it, 429 with
    /// `Retry-After` before any work.
    pub heavy_per_address: usize,
    /// Heavy responses in flight in total; past it, 503 with
    /// `Retry-After` before any work.
    pub heavy_total: usize,
    /// Write points and rate limits (see `rate_limit.rs`); `None`, the
    /// default, turns them off, as in the reference PDS.
    /// [`RateLimits::reference`] gives the reference's values.
    pub rate_limits: Option<RateLimits>,
    /// Largest request URL (path and query, bytes).
    pub max_url_bytes: usize,
    /// Largest request head (request line and headers, bytes).
    pub max_header_bytes: usize,
    /// Async worker threads of the runtime [`spawn`] and the `atpds`
    /// binary build ([`runtime`]); one per core by default.
    pub workers: usize,
    /// Threads running the store's short reads (see `pool.rs`).
    pub read_threads: usize,
    /// Concurrent `subscribeRepos` connections.
    pub max_subscribers: usize,
    /// `SO_SNDBUF` of each subscriber's socket (0: the kernel's
    /// autotuning, which lets megabytes of frames sit in the kernel before
    /// the outbox bound applies).
    pub subscriber_send_buffer: usize,
    /// How long the broadcaster lets commits gather after a wake before it
    /// reads and publishes them: frames published together reach each
    /// subscriber in one wake and one write, so at a steady commit rate a
    /// few milliseconds of added lag divide the per-frame work of every
    /// subscriber (`xrpc.firehose/fanout/consumers-100`). Zero publishes
    /// each commit at once.
    pub firehose_coalesce: Duration,
    /// Frames a subscriber's outbox holds before it is dropped as too slow.
    pub outbox_frames: usize,
    /// Bytes a subscriber's outbox holds before it is dropped as too slow.
    pub outbox_bytes: usize,
    /// How often an idle subscriber is pinged; one that has not answered
    /// two pings is closed.
    pub ping_interval: Duration,
    /// WAL length (frames of one page) past which the store rewinds the
    /// WAL ([`store::Config::wal_restart_frames`]): with the time the
    /// checkpointer takes to catch up under a write load, it sets how large
    /// the WAL file grows.
    pub wal_restart_frames: i64,
    /// Open the store with `synchronous = FULL` (see [`store::Config::durable`]).
    pub durable: bool,
    /// Lifetime of an access token.
    pub access_ttl: Duration,
    /// Lifetime of a refresh token.
    pub refresh_ttl: Duration,
    /// scrypt cost, log2 of N (see `password.rs`).
    pub scrypt_log_n: u8,
    /// What the periodic sweep frees (`sweeper.rs`): uploads no record
    /// named after `orphan_grace` (1 hour by default), events older than
    /// `event_retention` (a day by default, the reference PDS's
    /// subscribeRepos backfill window, `repoBackfillLimitMs`; `None` keeps
    /// every event).
    pub sweep: store::Sweep,
    /// How often the sweep runs.
    pub sweep_interval: Duration,
}

impl ServerConfig {
    /// The defaults for a store at `db`.
    pub fn new(db: impl Into<PathBuf>) -> Self {
        ServerConfig {
            db: db.into(),
            listen: SocketAddr::from(([127, 0, 0, 1], 2583)),
            hostname: "localhost".to_owned(),
            public_url: None,
            plc_url: None,
            appview: None,
            proxy_timeout: Duration::from_secs(15),
            proxy_max_bytes: 16 << 20,
            relay_urls: Vec::new(),
            crawl_interval: Duration::from_secs(20 * 60),
            blob_upload_limit: 5 << 20,
            json_body_limit: 1 << 20,
            body_grace: Duration::from_secs(10),
            body_min_rate: 32 << 10,
            write_stall: Duration::from_secs(30),
            heavy_per_address: 64,
            heavy_total: 256,
            rate_limits: None,
            max_url_bytes: 8 << 10,
            max_header_bytes: 16 << 10,
            workers: std::thread::available_parallelism().map_or(2, |n| n.get()),
            read_threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
            max_subscribers: 1024,
            subscriber_send_buffer: 128 << 10,
            firehose_coalesce: Duration::from_millis(4),
            outbox_frames: 4096,
            outbox_bytes: 16 << 20,
            ping_interval: Duration::from_secs(30),
            wal_restart_frames: 4096,
            durable: false,
            access_ttl: Duration::from_secs(2 * 3600),
            refresh_ttl: Duration::from_secs(90 * 24 * 3600),
            scrypt_log_n: password::DEFAULT_LOG_N,
            sweep: store::Sweep {
                orphan_grace: Duration::from_secs(3600),
                event_retention: Some(Duration::from_secs(24 * 3600)),
            },
            sweep_interval: Duration::from_secs(60),
        }
    }
}

/// A server started by [`spawn`] on its own runtime.
pub struct RunningServer {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    done: Option<std::sync::mpsc::Receiver<Result<(), ServerError>>>,
    thread: Option<std::thread::JoinHandle<()>>,
    stats: std::sync::Arc<firehose::Stats>,
    heavy: std::sync::Arc<admission::Admission>,
    startup: String,
}

impl RunningServer {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<addr>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Live `subscribeRepos` connections.
    pub fn subscribers(&self) -> usize {
        self.stats.subscribers()
    }

    /// `subscribeRepos` subscribers let go as too slow so far: counted
    /// the moment their outbox overflowed (their connection ends after the
    /// `ConsumerTooSlow` goodbye, later).
    pub fn too_slow_drops(&self) -> usize {
        self.stats.too_slow()
    }

    /// Bytes of heavy responses (getRepo, getBlob, listBlobs, listRecords,
    /// sync.getRecord) the connections hold now: every chunk handed to a
    /// connection and not yet sent and freed. What a client that stops
    /// reading pins in the server, beside the few chunks a streamed
    /// body's producer keeps ahead of it (`stream.rs`).
    pub fn heavy_bytes_held(&self) -> usize {
        self.heavy.held()
    }

    /// The one-line startup report (storage, migrations, sequence).
    pub fn startup_report(&self) -> &str {
        &self.startup
    }

    /// Stops accepting, lets in-flight requests finish, closes the store.
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(done) = self.done.take() {
            let _ = done.recv();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// Starts a server on a runtime of its own ([`ServerConfig::workers`]
/// async threads, a blocking pool for the store) and returns once it
/// listens.
pub fn spawn(config: ServerConfig) -> Result<RunningServer, ServerError> {
    let runtime = net::runtime(config.workers)?;
    let (ready_tx, ready_rx) = std::sync::mpsc::sync_channel(1);
    let (done_tx, done_rx) = std::sync::mpsc::sync_channel(1);
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("atpds".into())
        .spawn(move || {
            let result = runtime.block_on(async move {
                let bound = match net::Bound::start(config).await {
                    Ok(b) => b,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return Ok(());
                    }
                };
                let _ = ready_tx.send(Ok((
                    bound.addr(),
                    bound.stats(),
                    bound.heavy(),
                    bound.startup_line().to_owned(),
                )));
                bound
                    .run(async move {
                        let _ = stop_rx.await;
                    })
                    .await
            });
            // Blocking store calls still running finish before the store
            // (its last Arc) closes.
            drop(runtime);
            let _ = done_tx.send(result);
        })
        .map_err(ServerError::Io)?;
    match ready_rx.recv() {
        Ok(Ok((addr, stats, heavy, startup))) => Ok(RunningServer {
            addr,
            stop: Some(stop_tx),
            done: Some(done_rx),
            thread: Some(thread),
            stats,
            heavy,
            startup,
        }),
        Ok(Err(e)) => {
            let _ = thread.join();
            Err(e)
        }
        Err(_) => {
            let _ = thread.join();
            Err(ServerError::Startup("server thread exited".into()))
        }
    }
}

/// Runs the server on the current runtime until `shutdown` completes, then
/// stops accepting, lets in-flight requests finish and closes the store.
/// `on_ready` is called once with the bound address and the startup line.
pub async fn serve_with(
    config: ServerConfig,
    shutdown: impl Future<Output = ()>,
    on_ready: impl FnOnce(SocketAddr, &str),
) -> Result<(), ServerError> {
    let bound = net::Bound::start(config).await?;
    on_ready(bound.addr(), bound.startup_line());
    bound.run(shutdown).await
}

/// [`serve_with`] without the ready callback.
pub async fn serve(
    config: ServerConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServerError> {
    serve_with(config, shutdown, |_, _| {}).await
}
