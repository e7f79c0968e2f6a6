//! The shared state every request sees: the store, the account file, the
//! token keys, the firehose hub, and what the configuration decides once
//! (public URL, server DID, the pre-rendered `describeServer` answer).
//!
//! The secret file (`DB.secret`, mode 0600, created on first start) holds
//! two hex lines: `jwt <32 bytes>` (the HS256 key) and `plc-rotation <32
//! bytes>` (the k256 rotation key put into every genesis operation).

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use http::request::Parts;
use repo::crypto::{Algorithm, Keypair};
use store::Store;

use crate::ServerConfig;
use crate::accounts::{Account, Accounts};
use crate::auth::{Scope, Tokens};
use crate::error::{ServerError, XResult, XrpcError};
use crate::firehose::{Hub, HubLimits};
use crate::params::Id;

/// The state shared by every connection.
pub struct App {
    /// The store.
    pub store: Arc<Store>,
    /// Permissioned data on the store's file (`spaces.rs`).
    pub spaces: crate::spaces::Spaces,
    /// The account file.
    pub accounts: Accounts,
    /// Token signing and checks.
    pub tokens: Tokens,
    /// The PLC rotation key.
    pub rotation: Keypair,
    /// The configuration.
    pub config: ServerConfig,
    /// Where clients reach this server (no trailing slash).
    pub public_url: String,
    /// The firehose.
    pub hub: Arc<Hub>,
    /// The read pool.
    pub reads: Arc<crate::pool::Pool>,
    /// The heavy responses in flight (`admission.rs`).
    pub heavy: Arc<crate::admission::Admission>,
    /// The rate limits' counters, when they are on (`rate_limit.rs`).
    pub limits: Option<crate::rate_limit::RateLimiter>,
    /// Password hashes running at once (one per read thread): each fills
    /// 16 MiB, so fifty logins at once would otherwise take 800 MiB.
    pub kdf: tokio::sync::Semaphore,
    /// A hash of a random password at the configured cost, made at start:
    /// `createSession` checks an unknown identifier's password against
    /// it, so the answer takes one scrypt whether the account exists or
    /// not (its timing does not tell which accounts exist).
    pub dummy_hash: String,
    /// Store writes in flight: record commits, blobs, new accounts,
    /// identity updates (see [`App::write`]).
    writes: AtomicUsize,
    /// The `describeServer` answer.
    pub describe: Bytes,
    /// The pooled client of upstream calls (`upstream.rs`).
    pub proxy: crate::upstream::Proxy,
    /// The relays told about writes (`crawl.rs`).
    pub crawlers: crate::crawl::Crawlers,
    /// The startup report line.
    pub startup: String,
    /// The startup stages this open timed (`http_init`: the read pool
    /// only; the listener and the hub are the caller's to add).
    pub stages: crate::startup::Stages,
}

/// A path beside the store file: `DB<suffix>`.
pub fn beside(db: &Path, suffix: &str) -> PathBuf {
    let mut s = db.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// A fresh k256 key.
pub fn new_key() -> Result<Keypair, String> {
    for _ in 0..16 {
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret).map_err(|e| e.to_string())?;
        if let Ok(k) = Keypair::from_bytes(Algorithm::K256, &secret) {
            return Ok(k);
        }
    }
    Err("could not draw a valid k256 key".into())
}

fn load_secrets(path: &Path) -> Result<([u8; 32], Keypair), ServerError> {
    let bad = |why: &str| ServerError::Startup(format!("{}: {why}", path.display()));
    let hex = data_encoding::HEXLOWER_PERMISSIVE;
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let mut jwt = None;
            let mut rot = None;
            for line in text.lines() {
                let (k, v) = line.split_once(' ').unwrap_or((line, ""));
                let bytes = hex
                    .decode(v.trim().as_bytes())
                    .map_err(|_| bad("bad hex"))?;
                match k {
                    "jwt" => jwt = Some(bytes),
                    "plc-rotation" => rot = Some(bytes),
                    _ => {}
                }
            }
            let jwt: [u8; 32] = jwt
                .and_then(|b| b.try_into().ok())
                .ok_or_else(|| bad("no 32-byte jwt key"))?;
            let rot = rot.ok_or_else(|| bad("no plc-rotation key"))?;
            let rot =
                Keypair::from_bytes(Algorithm::K256, &rot).map_err(|e| bad(&e.to_string()))?;
            Ok((jwt, rot))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut jwt = [0u8; 32];
            getrandom::fill(&mut jwt).map_err(|e| bad(&e.to_string()))?;
            let rot = new_key().map_err(|e| bad(&e))?;
            let text = format!(
                "jwt {}\nplc-rotation {}\n",
                data_encoding::HEXLOWER.encode(&jwt),
                data_encoding::HEXLOWER.encode(&rot.to_bytes())
            );
            let mut opts = std::fs::OpenOptions::new();
            opts.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
            let mut f = opts.open(path)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
            Ok((jwt, rot))
        }
        Err(e) => Err(e.into()),
    }
}

/// A stored hash at cost `log_n` that no password matches (random bytes:
/// no scrypt at startup, where it would be most of the readiness time).
fn dummy_hash(log_n: u8) -> Result<String, ServerError> {
    crate::password::unmatchable(log_n)
        .map_err(|e| ServerError::Startup(format!("dummy password hash: {e}")))
}

fn is_local(host: &str) -> bool {
    host == "localhost" || host.parse::<std::net::IpAddr>().is_ok()
}

impl App {
    /// Opens the store, the account file and the secrets (blocking).
    pub fn open(config: ServerConfig, addr: SocketAddr) -> Result<App, ServerError> {
        if !(1..=crate::password::MAX_LOG_N).contains(&config.scrypt_log_n) {
            return Err(ServerError::Startup(format!(
                "scrypt_log_n {} is outside 1..={}",
                config.scrypt_log_n,
                crate::password::MAX_LOG_N
            )));
        }
        let secrets_started = std::time::Instant::now();
        let (jwt, rotation) = load_secrets(&beside(&config.db, ".secret"))?;
        let secrets_time = secrets_started.elapsed();
        // The hub is the store's event feed: the writer appends every
        // committed event to it, in seq order, before its caller hears
        // back (`firehose.rs`).
        let hub = Arc::new(Hub::new(HubLimits::from(&config)));
        let store_config = store::Config {
            feed: Some(hub.clone()),
            durable: config.durable,
            max_blob_bytes: config.blob_upload_limit,
            wal_restart_frames: config.wal_restart_frames,
            ..store::Config::default()
        };
        let store = Arc::new(Store::open(&config.db, store_config)?);
        let accounts_started = std::time::Instant::now();
        let local = is_local(&config.hostname);
        let public_url = match &config.public_url {
            Some(u) => u.trim_end_matches('/').to_owned(),
            None if local => format!("http://{addr}"),
            None => format!("https://{}", config.hostname),
        };
        let accounts = Accounts::open(
            &beside(&config.db, ".accounts"),
            config.durable,
            &public_url,
        )?;
        let in_store: std::collections::HashSet<String> = store.accounts()?.into_iter().collect();
        let dropped = accounts.retain(|d| in_store.contains(d))?;
        let server_did = format!("did:web:{}", config.hostname);
        let user_domains = if local {
            vec![".test".to_owned()]
        } else {
            vec![format!(".{}", config.hostname)]
        };
        let describe = serde_json::json!({
            "did": server_did,
            "availableUserDomains": user_domains,
            "inviteCodeRequired": false,
            "phoneVerificationRequired": false,
            "links": {},
            "blobUploadLimit": config.blob_upload_limit,
        })
        .to_string();
        let r = store.startup_report();
        let startup = format!(
            "startup: storage {:.1?}, migrations {:.1?} (schema from v{} to v{}), sequence {:.1?} (next seq {}), backfill {:.1?} ({} blocks); {} accounts{}",
            r.storage,
            r.migrations,
            r.migrated_from,
            store::SCHEMA_VERSION,
            r.sequence,
            r.next_seq,
            r.backfill,
            r.backfilled,
            in_store.len(),
            if dropped > 0 {
                format!(", {dropped} account rows without a repository dropped")
            } else {
                String::new()
            }
        );
        let dummy_hash = dummy_hash(config.scrypt_log_n)?;
        let account_setup = secrets_time + accounts_started.elapsed();
        let pool_started = std::time::Instant::now();
        let reads = Arc::new(crate::pool::Pool::new(config.read_threads)?);
        let stages = crate::startup::Stages {
            storage: r.storage,
            migrations: r.migrations,
            sequence: r.sequence + r.backfill,
            account_setup,
            // The read pool; the caller adds the listener and the hub.
            http_init: pool_started.elapsed(),
        };
        // Only plain HTTP upstreams: atpds carries no TLS client.
        for url in config
            .relay_urls
            .iter()
            .chain(config.appview.as_ref().map(|a| &a.url))
        {
            if !url.starts_with("http://") {
                return Err(ServerError::Startup(format!(
                    "{url}: only http:// upstream URLs are supported (no TLS client)"
                )));
            }
        }
        if let Some(a) = &config.appview
            && repo::syntax::validate_did(&a.did).is_err()
        {
            return Err(ServerError::Startup(format!(
                "appview DID {:?} is not a DID",
                a.did
            )));
        }
        let proxy = crate::upstream::Proxy::new();
        let crawlers = crate::crawl::Crawlers::new(
            config.relay_urls.clone(),
            &public_url,
            config.crawl_interval,
            proxy.client(),
        );
        let spaces = crate::spaces::Spaces::open(&config.db, store.clone(), config.durable)
            .map_err(ServerError::Startup)?;
        Ok(App {
            spaces,
            stages,
            kdf: tokio::sync::Semaphore::new(config.read_threads.max(1)),
            dummy_hash,
            writes: AtomicUsize::new(0),
            reads,
            heavy: crate::admission::Admission::new(config.heavy_per_address, config.heavy_total),
            limits: config
                .rate_limits
                .as_ref()
                .map(crate::rate_limit::RateLimiter::new),
            store,
            accounts,
            tokens: Tokens::new(&jwt, &server_did),
            rotation,
            public_url,
            hub,
            describe: Bytes::from(describe),
            crawlers,
            proxy,
            startup,
            config,
        })
    }

    /// A slot to run one password hash in (see [`App::kdf`]).
    pub async fn kdf_slot(&self) -> XResult<tokio::sync::SemaphorePermit<'_>> {
        self.kdf
            .acquire()
            .await
            .map_err(|_| XrpcError::internal("server shutting down"))
    }

    /// Runs one store write, `f`, with the write protocol every write
    /// route shares: counted as a store write in flight while it runs
    /// ([`App::commit_slot`]), on the calling async thread when `run`
    /// allows it and it is the only one, else on the blocking pool. Its
    /// events need no hand-off: the store's writer feeds them to the
    /// firehose before `f` returns. The outer error is the server's (a
    /// worker that failed); `f`'s own result comes back as it is, so a
    /// caller can still tell the store's refusals apart.
    pub async fn write<T, F>(&self, run: Run, f: F) -> XResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Store) -> T + Send + 'static,
    {
        let slot = self.commit_slot();
        let out = if slot.inline && run == Run::InlineIfAlone {
            // The only write in flight: run it here, without the two
            // thread wakes of a blocking-pool hop.
            Ok(f(&self.store))
        } else {
            let store = self.store.clone();
            blocking(move || Ok(f(&store))).await
        };
        drop(slot);
        self.crawlers.notify();
        out
    }

    /// Counts a store write in flight until the returned slot drops, and
    /// says whether it may run on the calling async thread: only when no
    /// other store write is in flight and the store does not fsync.
    ///
    /// Every path that takes the store's writer goes through
    /// [`App::write`], which holds a slot while it runs (record commits,
    /// `uploadBlob`'s `put_blob`, `createAccount`'s `create_account` and
    /// `update_identity`), so an inline commit never waits on the writer
    /// mutex behind another write; only record commits ever run inline
    /// ([`Run::InlineIfAlone`]), the others go to the blocking pool
    /// whatever `inline` says.
    ///
    /// Why inline at all: a commit sent to the blocking pool costs a thread
    /// wake there and another back to the async thread, several context
    /// switches per write, which on two cores cost more CPU than the HTTP
    /// exchange itself (`xrpc.write/create_record/c1`;
    /// `examples/write_probe.rs` counts them). A lone commit runs its own
    /// group commit in the store (no writer thread to wait for), so it
    /// blocks its async thread only for its own work, and the other async
    /// thread stays free. Once writes overlap they all go to the blocking
    /// pool, where they wait in the store's group commit together instead
    /// of holding async threads. A durable store (`synchronous = FULL`)
    /// fsyncs in every commit, which may take milliseconds: its commits
    /// never run inline.
    fn commit_slot(&self) -> CommitSlot<'_> {
        let before = self.writes.fetch_add(1, Ordering::AcqRel);
        CommitSlot {
            count: &self.writes,
            inline: before == 0 && !self.store.config().durable,
        }
    }

    /// Where getRepo spools its exports: beside the database, on its disk
    /// (a temporary directory may be memory).
    pub fn spool_dir(&self) -> std::path::PathBuf {
        match self.config.db.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
            _ => std::path::PathBuf::from("."),
        }
    }

    /// Runs a short store read on the read pool (`pool.rs`).
    pub async fn read<T, F>(&self, f: F) -> XResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Store) -> XResult<T> + Send + 'static,
    {
        let store = self.store.clone();
        self.reads.run(move || f(&store)).await
    }

    /// Charges a route's own rate limits (`rate_limit.rs`; nothing when
    /// they are off): 429 past one.
    pub fn charge(&self, parts: &Parts, what: crate::rate_limit::Charge<'_>) -> XResult<()> {
        crate::rate_limit::charge(self.limits.as_ref(), parts, what)
    }

    /// The DID of the request's access token (401 without a valid one).
    pub fn access_did(&self, parts: &Parts) -> XResult<String> {
        Ok(self.session(parts, Scope::Access)?.sub)
    }

    /// The claims of the request's token for `scope`: signature, scope and
    /// expiry (`auth.rs`), and, for an app-password session, that its app
    /// password is not revoked (a lookup in memory).
    pub fn session(&self, parts: &Parts, scope: Scope) -> XResult<crate::auth::Claims> {
        let claims = self.tokens.check(&parts.headers, scope)?;
        if let Some(id) = &claims.apw
            && !self.accounts.app_pass_live(&claims.sub, id)
        {
            return Err(XrpcError::auth_required(
                "Token could not be verified: its app password was revoked",
            ));
        }
        Ok(claims)
    }

    /// The account a `repo` parameter names (a DID or a handle).
    pub fn account(&self, id: &Id<'_>) -> Option<Arc<Account>> {
        match id {
            Id::Did(d) => self.accounts.by_did(d),
            Id::Handle(h) => self.accounts.by_handle(h),
        }
    }

    /// The DID a `repo` parameter names: a DID as given (the store says
    /// whether it holds it), a handle through the account file.
    pub fn repo_did(&self, id: &Id<'_>, error: &'static str) -> XResult<String> {
        match id {
            Id::Did(d) => Ok((*d).to_owned()),
            Id::Handle(h) => self
                .accounts
                .by_handle(h)
                .map(|a| a.did.clone())
                .ok_or_else(|| XrpcError::bad(error, format!("Could not find repo: {h}"))),
        }
    }
}

/// Where a store write may run ([`App::write`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Run {
    /// On the calling async thread when it is the only store write in
    /// flight and the store does not fsync: record commits.
    InlineIfAlone,
    /// Always on the blocking pool: blob puts (megabytes) and account
    /// creation (two store calls).
    Blocking,
}

/// One store write in flight ([`App::commit_slot`]).
pub struct CommitSlot<'a> {
    count: &'a AtomicUsize,
    /// Whether the write may run on the calling async thread.
    pub inline: bool,
}

impl Drop for CommitSlot<'_> {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Runs blocking work (a store call, scrypt) on the blocking pool.
pub async fn blocking<T, F>(f: F) -> XResult<T>
where
    T: Send + 'static,
    F: FnOnce() -> XResult<T> + Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r,
        Err(e) => Err(XrpcError::internal(format!("worker failed: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(durable: bool) -> (tempfile::TempDir, App) {
        let dir = tempfile::tempdir().unwrap();
        let mut config = ServerConfig::new(dir.path().join("db"));
        config.durable = durable;
        config.read_threads = 1;
        let app = App::open(config, SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
        (dir, app)
    }

    #[test]
    fn only_a_lone_write_on_a_nosync_store_runs_inline() {
        let (_dir, app) = open(false);
        let first = app.commit_slot();
        assert!(first.inline);
        // A second write (a commit, a blob, an account) while one is in
        // flight goes to the blocking pool.
        assert!(!app.commit_slot().inline);
        drop(first);
        assert!(app.commit_slot().inline);
    }

    #[test]
    fn a_durable_store_never_commits_inline() {
        let (_dir, app) = open(true);
        assert!(!app.commit_slot().inline);
    }
}
