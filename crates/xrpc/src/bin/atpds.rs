//! `atpds`: the store served as an atproto PDS (`docs/design/xrpc.md`).
//!
//! Prints, first and flushed, exactly one line `atpds listening on
//! http://<addr>`, then a one-line startup report ending with the stage
//! timings (`stages storage_ms=... migrations_ms=... sequence_ms=...
//! account_setup_ms=... http_init_ms=...`, and `snapshot_ms=...` when
//! `--snapshot` copied a backup first); serves until SIGINT or SIGTERM,
//! then drains (in-flight writes finish) and closes the store.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use xrpc::ServerConfig;

/// The store as an XRPC server.
#[derive(Parser, Debug)]
#[command(name = "atpds", version, about)]
struct Args {
    /// The store's database file (created if missing).
    #[arg(long)]
    db: PathBuf,
    /// Address to listen on (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:2583")]
    listen: SocketAddr,
    /// The server's host name (its did:web and handle domain).
    #[arg(long, default_value = "localhost")]
    hostname: String,
    /// The URL clients reach this server at (default: http://<listen
    /// address> for localhost, https://<hostname> otherwise).
    #[arg(long)]
    public_url: Option<String>,
    /// A PLC directory to submit new accounts' genesis operations to.
    #[arg(long)]
    plc_url: Option<String>,
    /// The appview `app.bsky.*` calls atpds does not serve are proxied to
    /// (an http:// base URL); needs --appview-did.
    #[arg(long, requires = "appview_did")]
    appview_url: Option<String>,
    /// The appview's DID (the audience of the proxied calls' tokens, and
    /// the DID an `atproto-proxy: <did>#bsky_appview` header names).
    #[arg(long, requires = "appview_url")]
    appview_did: Option<String>,
    /// A relay to send com.atproto.sync.requestCrawl to after writes (at
    /// most once per 20 minutes); repeat for several.
    #[arg(long)]
    relay_url: Vec<String>,
    /// Largest blob uploadBlob accepts, in bytes.
    #[arg(long, default_value_t = 5 << 20)]
    blob_upload_limit: usize,
    /// Concurrent subscribeRepos connections.
    #[arg(long, default_value_t = 1024)]
    max_subscribers: usize,
    /// synchronous = FULL: every commit survives a power loss.
    #[arg(long)]
    durable: bool,
    /// Seconds any request body may take before its bytes count against
    /// --body-min-rate.
    #[arg(long, default_value_t = 10)]
    body_grace_secs: u64,
    /// The slowest a request body may arrive, in bytes per second (past
    /// its deadline: 408 and the connection closes).
    #[arg(long, default_value_t = 32 << 10)]
    body_min_rate: u64,
    /// Seconds a response write may wait for the client to read before
    /// the connection is dropped.
    #[arg(long, default_value_t = 30)]
    write_stall_secs: u64,
    /// Heavy responses (getRepo, getBlob, listBlobs, listRecords,
    /// sync.getRecord) in flight per client address (past it: 429).
    #[arg(long, default_value_t = 64)]
    heavy_per_address: usize,
    /// Heavy responses in flight in total (past it: 503).
    #[arg(long, default_value_t = 256)]
    heavy_total: usize,
    /// WAL length in pages past which the store rewinds the WAL.
    #[arg(long, default_value_t = 4096)]
    wal_restart_frames: i64,
    /// Async worker threads (default: one per core).
    #[arg(long)]
    workers: Option<usize>,
    /// Turn on write points and rate limits, at the reference PDS's values
    /// unless set below (off by default, as in the reference PDS).
    #[arg(long)]
    rate_limits: bool,
    /// Record-write points per DID per hour (create 3, update 2, delete 1).
    #[arg(long, requires = "rate_limits", default_value_t = 5_000)]
    rate_limit_writes_hour: u32,
    /// Record-write points per DID per day.
    #[arg(long, requires = "rate_limits", default_value_t = 35_000)]
    rate_limit_writes_day: u32,
    /// XRPC requests per client IP per 5 minutes.
    #[arg(long, requires = "rate_limits", default_value_t = 3_000)]
    rate_limit_global: u32,
    /// uploadBlob calls per client IP per day.
    #[arg(long, requires = "rate_limits", default_value_t = 1_000)]
    rate_limit_upload_blob: u32,
    /// createSession calls per identifier and IP per 5 minutes.
    #[arg(long, requires = "rate_limits", default_value_t = 30)]
    rate_limit_session_short: u32,
    /// createSession calls per identifier and IP per day.
    #[arg(long, requires = "rate_limits", default_value_t = 300)]
    rate_limit_session_day: u32,
    /// Keys (addresses, DIDs, identifiers) each limit tracks at most.
    #[arg(long, requires = "rate_limits", default_value_t = 50_000)]
    rate_limit_max_keys: usize,
    /// Seconds an uploaded blob no record names is kept before the sweep
    /// deletes it (a blob whose last record goes is deleted with it).
    #[arg(long, default_value_t = 3600)]
    blob_orphan_grace_secs: u64,
    /// Seconds firehose events are kept for subscribeRepos replay (a
    /// cursor before the oldest kept gets #info OutdatedCursor); 0 keeps
    /// every event. The default is the reference PDS's backfill window.
    #[arg(long, default_value_t = 24 * 3600)]
    event_retention_secs: u64,
    /// Seconds between two sweeps (orphan blobs, old events).
    #[arg(long, default_value_t = 60)]
    sweep_interval_secs: u64,
    /// A backup of a store to start from: copied over --db (with its
    /// .accounts and .secret files when present) with SQLite's backup
    /// API, the backup opened read-only, before the server starts.
    #[arg(long)]
    snapshot: Option<PathBuf>,
}

/// Installs the SIGINT and SIGTERM handlers now (before the address is
/// printed, so a signal sent as soon as the line is read is never the
/// default action) and returns a future that ends at the first signal.
#[cfg(unix)]
fn signals() -> std::io::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    Ok(async move {
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
    })
}

#[cfg(not(unix))]
fn signals() -> std::io::Result<impl std::future::Future<Output = ()>> {
    Ok(async {
        let _ = tokio::signal::ctrl_c().await;
    })
}

fn main() -> ExitCode {
    let args = Args::parse();
    let mut snapshot_ms = None;
    if let Some(src) = &args.snapshot {
        let started = std::time::Instant::now();
        if let Err(e) = xrpc::restore_snapshot(src, &args.db) {
            eprintln!("atpds: {e}");
            return ExitCode::FAILURE;
        }
        snapshot_ms = Some(started.elapsed().as_secs_f64() * 1e3);
    }
    let mut config = ServerConfig::new(args.db);
    config.listen = args.listen;
    config.hostname = args.hostname;
    config.public_url = args.public_url;
    config.plc_url = args.plc_url;
    if let (Some(url), Some(did)) = (args.appview_url, args.appview_did) {
        config.appview = Some(xrpc::Appview {
            url: url.trim_end_matches('/').to_owned(),
            did,
        });
    }
    config.relay_urls = args.relay_url;
    config.blob_upload_limit = args.blob_upload_limit;
    config.max_subscribers = args.max_subscribers;
    config.durable = args.durable;
    config.body_grace = std::time::Duration::from_secs(args.body_grace_secs);
    config.body_min_rate = args.body_min_rate;
    config.write_stall = std::time::Duration::from_secs(args.write_stall_secs);
    config.heavy_per_address = args.heavy_per_address;
    config.heavy_total = args.heavy_total;
    config.wal_restart_frames = args.wal_restart_frames;
    config.sweep.orphan_grace = std::time::Duration::from_secs(args.blob_orphan_grace_secs);
    config.sweep.event_retention = (args.event_retention_secs > 0)
        .then(|| std::time::Duration::from_secs(args.event_retention_secs));
    config.sweep_interval = std::time::Duration::from_secs(args.sweep_interval_secs.max(1));
    if let Some(n) = args.workers {
        config.workers = n;
    }
    if args.rate_limits {
        let mut l = xrpc::RateLimits::reference();
        l.writes_hour.points = args.rate_limit_writes_hour;
        l.writes_day.points = args.rate_limit_writes_day;
        l.global.points = args.rate_limit_global;
        l.upload_blob.points = args.rate_limit_upload_blob;
        l.session_short.points = args.rate_limit_session_short;
        l.session_day.points = args.rate_limit_session_day;
        l.max_keys = args.rate_limit_max_keys;
        config.rate_limits = Some(l);
    }
    let runtime = match xrpc::runtime(config.workers) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("atpds: runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        let stop = match signals() {
            Ok(s) => s,
            Err(e) => return Err(xrpc::ServerError::Io(e)),
        };
        xrpc::serve_with(config, stop, |addr, report| {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "atpds listening on http://{addr}");
            match snapshot_ms {
                Some(ms) => {
                    let _ = writeln!(out, "atpds {report} snapshot_ms={ms:.2}");
                }
                None => {
                    let _ = writeln!(out, "atpds {report}");
                }
            }
            let _ = out.flush();
        })
        .await
    });
    // Blocking store calls still running finish before the store closes.
    drop(runtime);
    match result {
        Ok(()) => {
            println!("atpds stopped");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("atpds: {e}");
            ExitCode::FAILURE
        }
    }
}
