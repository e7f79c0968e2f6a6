//! An atproto record store on SQLite: many accounts' repositories in one
//! WAL database, a record index for reads, signed commits, a sequencer for
//! the firehose, and blobs. Built on the [`repo`] crate.
//!
//! # Storage model (schema version 8; each version's change and why: `migrations.rs`)
//!
//! | table | key | holds |
//! |---|---|---|
//! | `repo_root` | `did` | current commit CID, rev, MST root, k256 signing key (NULL for imported, read-only repos); handle, active flag, status (`accounts.rs`); the commit block's bytes |
//! | `repo_blocks` | `(did, pos, cid)` | the current repo's MST nodes with the rev that added each, clustered by the position in the key space their parent gives them (`node_pos.rs`: a commit's new and released nodes share pages instead of landing on random ones); covering partial index `(did, repo_rev) WHERE repo_rev IS NULL` finds unversioned (pre-revision) blocks |
//! | `rev_backfill` | `did` | the revision of an account's unversioned blocks, written by the startup backfill (one narrow row per account instead of rewriting every block row; `export_repo`'s `since` reads `COALESCE(repo_rev, rev_backfill.rev)`) |
//! | `records` | `(did, collection, rkey)` | record CID, rev, and the record block's bytes: getRecord is one row and listRecords one range scan, never a sort or a join; `cid_dup` marks all but the first row holding a CID, so getRepo writes a shared block once; index `(did, cid)` |
//! | `commits` | `seq` | the log of commits by the seq of the event that carried each (did, rev, commit CID); no secondary index, since nothing looks a commit up by rev or CID (the spec's suggested `(did, rev)` key and `(did, cid)` index cost each commit two WAL pages, see `migrations.rs`) |
//! | `seq_events` | `seq` | firehose event bodies (DAG-CBOR) by kind: `#commit`, `#sync`, `#identity`, `#account` |
//! | `blobs` | rowid, unique `(did, cid)` | MIME, size, bytes (raw sha-256 CID), upload time (`created_at`, unix seconds); a rowid table, so a lookup never compares blob bytes; index `blobs_age (created_at)` for the orphan sweep |
//! | `record_blobs` | `(did, blob, record)` | the blobs each record links (index `(did, record)`): a blob is held while a row names it |
//!
//! CIDs are stored as their 36 binary bytes. Only the current tree's blocks
//! are kept: a commit deletes the MST nodes it replaced and overwrites the
//! previous commit block in `repo_root`; a record's block goes with its
//! row.
//!
//! # Concurrency and durability
//!
//! One writer process, many readers: [`Store::open`] takes an exclusive
//! advisory lock on `<database>.lock` for as long as the store is open, so
//! a second writer anywhere fails with [`StoreError::Locked`] (naming the
//! holder's pid) instead of two processes handing out the same sequence
//! numbers; [`Store::open_read_only`] takes no lock and writes nothing, and
//! reads while another process writes. Only databases the store created
//! (stamped with [`APPLICATION_ID`]) are opened; see `ownership.rs`.
//!
//! One writer thread owns the read-write connection; every write goes
//! through its queue and is group-committed (`batch.rs`): concurrent
//! writers on different accounts share one transaction and one fsync, and a
//! caller returns only after the transaction holding its write committed.
//! Readers take a connection from a pool (`query_only`, WAL), so they never
//! wait on the writer. PRAGMAs live in one place (`schema.rs`): synchronous
//! NORMAL by default (durable against process crashes, not power loss),
//! FULL with [`Config::durable`]. The writer's connection never
//! checkpoints (`wal_autocheckpoint = 0`); a background thread runs PASSIVE
//! checkpoints every [`Config::checkpoint_interval`], so no COMMIT pays for
//! a checkpoint's fsync; once the WAL passes [`Config::wal_restart_frames`],
//! the writer copies the last few frames itself between two batches so
//! that the WAL rewinds (`checkpoint.rs`).
//!
//! The writer's connection opens through a thin VFS over SQLite's unix VFS
//! (`vfs.rs`) that hands each transaction's WAL frames to the kernel in one
//! write instead of two per frame (header, page). The frames are in the
//! file before SQLite publishes the commit to other connections, so
//! readers, the checkpointer and a process killed after an acknowledged
//! write see exactly what they would without it. It cut most of a single
//! caller's kernel time per createRecord (`examples/profile.rs`,
//! `store.apply_commit/ours.nosync/callers-1`).
//!
//! # A commit's path
//!
//! It starts in `commit.rs` ([`Store::apply_writes`]) and runs on the
//! caller's thread up to its rows. Each active account has one lane
//! (`lane.rs`): its root, signing key, decoded MST nodes and their row
//! positions, the only copy of that state. The commit locks its account's
//! lane, plans on it (`plan.rs`: the lazy MST update, covering proof, k256
//! signature and `#commit` CAR; nodes missing from the lane's cache are
//! read through a pooled reader), and hands the writer only the rows
//! (`writer.rs`), which checks that the account is still at the plan's
//! base commit, writes them and group-commits. The lane stays locked until
//! the writer answers, so the account's next commit plans on this one's
//! new nodes without reading them back; a commit that does not land (its
//! batch rolled back, say) empties the lane, which reloads from the rows on
//! next use.
//!
//! The writer owns the event order: every event (`#commit`, `#sync`,
//! `#identity`, `#account`) gets its seq from it, and after each batch's
//! COMMIT, still under its lock and before any caller hears back, the
//! batch's events go in seq order to the [`EventFeed`] registered in
//! [`Config::feed`] (`feed.rs`): the firehose and appview's index read that
//! one stream instead of rebuilding the order.
//!
//! # What is freed (`blob_refs.rs`, `sweep.rs`)
//!
//! A blob lives while a record names it, as in the reference PDS: a
//! commit naming a blob its account never uploaded is refused by the
//! writer's guard ([`StoreError::BlobNotFound`], nothing written), and the
//! commit that updates or deletes the last record naming a blob deletes
//! its row in the same transaction. An upload no record ever names, and
//! events past the log's retention, are freed by [`Store::sweep`], which
//! the server runs on a timer as one writer job ([`Sweep`]: the orphan
//! grace and the retention). The newest event always stays, so the next
//! seq never goes back; the log's first event is the pruned horizon
//! ([`Store::first_seq`]). A write naming no blob pays nothing for this.
//!
//! # Read path
//!
//! Every connection runs with the query planner stability guarantee
//! (`SQLITE_DBCONFIG_ENABLE_QPSG`, set in `schema.rs`): without it SQLite
//! re-prepared every cached statement on `repo_blocks` at each execution
//! (its partial index makes plans depend on bound values), a large share
//! of `store.get_record/ours/callers-1`'s instructions. `current_cid`
//! answers from a cache of the record index that the writer keeps
//! coherent (`cid_cache.rs`: invalidated per account after each batch,
//! before any caller is answered; readers insert only if no invalidation
//! happened since their snapshot began).
//! getRecord and listRecords render DAG-CBOR to atproto JSON in one pass
//! without a value tree (`render.rs`, byte-identical to the reference).
//!
//! # Modules
//!
//! | module | owns |
//! |---|---|
//! | `commit` | where a commit's path starts: applyWrites, create/put/deleteRecord |
//! | `prepare` | a write's checks and encoding on the caller's thread |
//! | `lane` | each active account's commit state, locked by the commit using it |
//! | `plan` | a commit's CPU half, planned from a lane |
//! | `bench_internals::plan_detached` | that over an account held in memory (tests and `--bench instructions` only) |
//! | `node_pos` | the position rule of MST node rows and a lane's known positions |
//! | `node_rows` | reading and writing MST node rows by position |
//! | `rows` | the root, record, record-blob and commit-log rows; CID columns |
//! | `events` | event frames (`#commit`, `#sync`), encoded once; event rows |
//! | `feed` | [`EventFeed`]: each committed batch's events, handed over in seq order |
//! | `writer` | the read-write connection: the guard, a commit's rows, account creation, import |
//! | `batch` | the writer's queue, group commit, jobs and their outcomes |
//! | `checkpoint` | the background checkpointer and the WAL rewind hand-over |
//! | `gate` | at most one planner per core |
//! | `cid_cache` | the writer-coherent `current_cid` cache |
//! | `read` | lookups, getRecord, listRecords, table counts |
//! | `render` | DAG-CBOR to atproto JSON in one pass |
//! | `blobs` | blob put, get, ranged get, references |
//! | `blob_refs` | a blob's lifetime: the guard's `BlobNotFound`, freeing a blob with its last reference |
//! | `sweep` | [`Store::sweep`]: orphan uploads past their grace, events past their retention |
//! | `sync` | export, catch-up, import, the repository check |
//! | `import` | verifying a repository CAR |
//! | `accounts` | `#identity` / `#account` state and events |
//! | `ownership` | the writer lock; our databases only |
//! | `schema` | PRAGMAs, the connections, startup |
//! | `migrations` | the schema's versions V1..V8, the fresh store's baseline, the revision backfill |
//! | `vfs` | the writer's WAL write coalescing |
//! | `types` | the public values |
//! | `error` | [`StoreError`]; a writer job's failure (before or after it wrote) |
//! | `fixtures` | the startup history fixture, written through the public API (feature `bench-internals`) |
//! | `bench_internals` | the benches' facade and the bench-only units: the index-only write, seqless events (feature `bench-internals`) |
//!
//! # Input checks
//!
//! Writes are validated and encoded on the caller's thread before they are
//! queued: DID, NSID, record key syntax, strict DAG-CBOR that must be a map
//! (with `$type`, when present, equal to the collection), size limits. A bad
//! write returns a typed [`StoreError`] and nothing is written. A commit's
//! swap and existence checks run as it plans, against its lane; what fails
//! inside the writer is refused before its first write (the guard) or, if
//! it fails while writing (an I/O error), rolls its whole batch back.

mod accounts;
mod batch;
mod blob_refs;
mod blobs;
mod checkpoint;
mod cid_cache;
mod commit;
mod error;
mod events;
mod feed;
#[cfg(feature = "bench-internals")]
mod fixtures;
mod gate;
mod import;
mod lane;
mod migrations;
mod node_pos;
mod node_rows;
mod ownership;
mod plan;
mod prepare;
mod read;
mod render;
mod rows;
mod schema;
mod sweep;
mod sync;
mod types;
mod vfs;
mod writer;

// The benches' facade and the bench-only units, commit planning over an
// in-memory account (`bench_internals/plan_detached.rs`, counted by `--bench
// instructions` and checked by its own tests) among them.
#[cfg(any(test, feature = "bench-internals"))]
#[doc(hidden)]
pub mod bench_internals;

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use repo::crypto::{Keypair, PublicKey};
use repo::syntax::{TidGenerator, validate_did};
use rusqlite::{Connection, OptionalExtension};

pub use accounts::{ACCOUNT_STATUSES, AccountState};
pub use blobs::is_valid_mime;
pub use error::{Result, StoreError};
pub use feed::EventFeed;
pub use ownership::APPLICATION_ID;
pub use read::{AccountCounts, RepoBlocks};

pub use migrations::SCHEMA_VERSION;
pub use schema::StartupReport;
pub use sweep::{Sweep, Swept};
pub use types::*;

use batch::Task;
use error::Failed;

/// The store. Share it between threads by reference or `Arc`.
pub struct Store {
    path: PathBuf,
    config: Config,
    readers: Mutex<Vec<Connection>>,
    /// The writer's queue; `None` for a store opened read-only.
    queue: Option<batch::Queue>,
    writer: Option<JoinHandle<()>>,
    tids: TidGenerator,
    revs: Arc<TidGenerator>,
    /// Each active account's commit state (`lane.rs`).
    lanes: lane::Lanes,
    /// Callers planning commits at once (`gate.rs`).
    planners: gate::Gate,
    report: StartupReport,
    /// `current_cid` answers, kept coherent by the writer (`cid_cache.rs`).
    cids: Arc<cid_cache::CidCache>,
    checkpointer: Option<(Sender<()>, JoinHandle<()>)>,
    /// The exclusive writer lock (`ownership.rs`), released last.
    _lock: Option<ownership::WriterLock>,
}

/// A pooled reader connection (returned to the pool on drop).
struct Reader<'s> {
    conn: Option<Connection>,
    store: &'s Store,
}

impl std::ops::Deref for Reader<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        // Always Some until drop.
        self.conn.as_ref().unwrap_or_else(|| unreachable!())
    }
}

impl Drop for Reader<'_> {
    fn drop(&mut self) {
        if let Some(c) = self.conn.take() {
            let mut pool = self.store.readers.lock().unwrap_or_else(|p| p.into_inner());
            if pool.len() < self.store.config.readers {
                pool.push(c);
            }
        }
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        if let Some(queue) = &mut self.queue {
            queue.close();
        }
        if let Some(h) = self.writer.take() {
            let _ = h.join();
        }
        if let Some((stop, h)) = self.checkpointer.take() {
            drop(stop);
            let _ = h.join();
        }
    }
}

impl Store {
    /// Opens (creating if needed) the store at `path` for writing: takes
    /// the database's exclusive writer lock ([`StoreError::Locked`] names
    /// the holder's pid) and refuses a file that is not one of our
    /// databases before changing anything in it
    /// ([`StoreError::ForeignDatabase`]). One writer process, many
    /// readers ([`Store::open_read_only`]); see `ownership.rs`.
    pub fn open(path: impl AsRef<Path>, config: Config) -> Result<Store> {
        let path = path.as_ref().to_path_buf();
        let (conn, report, (identity, lock)) = schema::startup(&path, config.durable, |conn| {
            let identity = ownership::identify(conn, &path)?;
            Ok((identity, ownership::WriterLock::acquire(&path)?))
        })?;
        if !matches!(identity, ownership::Identity::Ours { stamped: true, .. }) {
            ownership::stamp(&conn)?;
        }
        let revs = Arc::new(TidGenerator::new(0));
        let cids = Arc::new(cid_cache::CidCache::default());
        if let Some(feed) = &config.feed {
            feed.opened(report.next_seq - 1);
        }
        let events = feed::Pending::new(config.feed.clone());
        let w = writer::Writer::new(conn, report.next_seq, revs.clone(), cids.clone(), events);
        let wal = Arc::new(checkpoint::WalBacklog::default());
        let (queue, writer) = batch::Queue::start(w, config.max_batch, wal.clone())?;
        let checkpointer = Some(checkpoint::spawn(
            &path,
            config.durable,
            config.wal_restart_frames,
            config.checkpoint_interval,
            wal,
        )?);
        Ok(Store {
            path,
            config,
            readers: Mutex::new(Vec::new()),
            queue: Some(queue),
            writer: Some(writer),
            tids: TidGenerator::new(1),
            revs,
            lanes: lane::Lanes::default(),
            planners: gate::Gate::new(gate::planners()),
            report,
            cids,
            checkpointer,
            _lock: Some(lock),
        })
    }

    /// Opens an existing store for reading only: no writer lock, no
    /// writer thread, no migration, nothing written to the file, so it
    /// works while another process writes and on a file it cannot write.
    /// Every write returns [`StoreError::ReadOnly`]; `current_cid` reads
    /// the index each time (no cache: another process may write).
    pub fn open_read_only(path: impl AsRef<Path>, config: Config) -> Result<Store> {
        let path = path.as_ref().to_path_buf();
        std::fs::metadata(&path).map_err(|source| StoreError::File {
            path: path.clone(),
            op: "open the database",
            source,
        })?;
        let first = schema::open_reader(&path)
            .map_err(|e| ownership::foreign_if_not_a_database(e, &path))?;
        match ownership::identify(&first, &path)? {
            ownership::Identity::Ours { version, .. } if version == SCHEMA_VERSION => {}
            ownership::Identity::Ours { version, .. } => {
                return Err(StoreError::NeedsMigration {
                    path,
                    version,
                    current: SCHEMA_VERSION,
                });
            }
            ownership::Identity::Fresh => {
                return Err(StoreError::ForeignDatabase {
                    path,
                    detail: "empty (no store was ever written here)".into(),
                });
            }
        }
        Ok(Store {
            path,
            config,
            readers: Mutex::new(vec![first]),
            queue: None,
            writer: None,
            tids: TidGenerator::new(1),
            revs: Arc::new(TidGenerator::new(0)),
            lanes: lane::Lanes::default(),
            planners: gate::Gate::new(1),
            report: StartupReport::default(),
            cids: Arc::new(cid_cache::CidCache::default()),
            checkpointer: None,
            _lock: None,
        })
    }

    /// Whether the store was opened with [`Store::open_read_only`].
    pub fn is_read_only(&self) -> bool {
        self.queue.is_none()
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The options it was opened with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// How long opening took, by stage.
    pub fn startup_report(&self) -> &StartupReport {
        &self.report
    }

    fn reader(&self) -> Result<Reader<'_>> {
        let pooled = self.readers.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let conn = match pooled {
            Some(c) => c,
            None => schema::open_reader(&self.path)?,
        };
        Ok(Reader {
            conn: Some(conn),
            store: self,
        })
    }

    /// Runs `f` in the writer's next batch, inside its own savepoint.
    pub(crate) fn submit<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut writer::Writer) -> Result<T> + Send + 'static,
    {
        self.submit_job(move |w| f(w).map_err(Failed::wrote), true)
    }

    /// Runs `f` in the writer's next batch; `guarded: false` for a job that
    /// says whether it failed before or after writing (`batch::Job::guarded`).
    fn submit_job<T, F>(&self, f: F, guarded: bool) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut writer::Writer) -> std::result::Result<T, Failed> + Send + 'static,
    {
        let (rtx, rrx) = mpsc::sync_channel(1);
        let task = Task::new(f, rtx, guarded);
        match &self.queue {
            Some(queue) => queue.submit(Box::new(task), &rrx),
            None => Err(StoreError::ReadOnly(self.path.clone())),
        }
    }

    /// Creates an account with an empty, signed repository.
    pub fn create_account(&self, did: &str, signing_key: &Keypair) -> Result<CommitInfo> {
        validate_did(did)?;
        let secret = match signing_key {
            Keypair::K256(_) => signing_key.to_bytes(),
            Keypair::P256(_) => {
                return Err(StoreError::UnsupportedKey(
                    "only k256 signing keys are supported",
                ));
            }
        };
        let did = did.to_owned();
        self.submit(move |w| w.create_account(&did, secret))
    }

    /// Every account's DID.
    pub fn accounts(&self) -> Result<Vec<String>> {
        let r = self.reader()?;
        let mut st = r.prepare_cached("SELECT did FROM repo_root ORDER BY did")?;
        let rows = st.query_map([], |r| r.get::<_, String>(0))?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// The signing key's public half for `did`, if the store holds it.
    pub fn signing_key(&self, did: &str) -> Result<Option<PublicKey>> {
        Ok(self.keypair(did)?.map(|k| k.public_key()))
    }

    /// Signs SHA-256(`msg`) with `did`'s repository signing key (compact,
    /// low-S); `None` when the store holds no key for `did`. The secret
    /// never leaves the store: service-auth tokens are signed here.
    pub fn sign_as(&self, did: &str, msg: &[u8]) -> Result<Option<[u8; 64]>> {
        Ok(self.keypair(did)?.map(|k| k.sign(msg)))
    }

    /// `did`'s repository signing key, read for one use and not kept;
    /// `None` when the store holds none.
    fn keypair(&self, did: &str) -> Result<Option<Keypair>> {
        validate_did(did)?;
        let r = self.reader()?;
        let secret: Option<Option<Vec<u8>>> = r
            .prepare_cached("SELECT signing_key FROM repo_root WHERE did = ?1")?
            .query_row([did], |row| row.get(0))
            .optional()?;
        secret
            .flatten()
            .map(|s| Keypair::from_bytes(repo::crypto::Algorithm::K256, &s))
            .transpose()
            .map_err(|e| StoreError::Corrupt(format!("signing key: {e}")))
    }
}
