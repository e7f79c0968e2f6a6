//! An atproto record store on SQLite: many accounts' repositories in one
//! WAL database, a record index for reads, signed commits, a sequencer for
//! the firehose, and blobs. Built on the [`repo`] crate.
//!
//! # Storage model (schema version 1, see `schema.rs`)
//!
//! | table | key | holds |
//! |---|---|---|
//! | `repo_root` | `did` | current commit CID, rev, MST root, k256 signing key (NULL for imported, read-only repos) |
//! | `repo_blocks` | `(did, cid)` | every block of the current repo (commit, MST nodes, records) with the rev that added it; partial index `WHERE repo_rev IS NULL` for the backfill |
//! | `records` | `(did, collection, rkey)` | record CID and rev: listRecords is an index range, never a sort; index `(did, cid)` answers "is this block still referenced" |
//! | `commits` | `(did, rev)` | commit CID and its event's seq; index `(did, cid)` |
//! | `seq_events` | `seq` | firehose event bodies (DAG-CBOR) by kind: `#commit`, `#sync` |
//! | `blobs` | `(did, cid)` | MIME, size, bytes (raw sha-256 CID) |
//! | `record_blobs` | `(did, blob, record)` | blobs referenced by records |
//!
//! CIDs are stored as their 36 binary bytes. Only the current tree's blocks
//! are kept: a commit deletes the MST nodes it replaced, the previous
//! commit block, and record blocks no remaining record points at.
//!
//! # Concurrency and durability
//!
//! One writer thread owns the read-write connection; every write goes
//! through its queue and is group-committed (see `writer.rs`): concurrent
//! writers on different accounts share one transaction and one fsync, and a
//! caller returns only after the transaction holding its write committed.
//! Readers take a connection from a pool (`query_only`, WAL), so they never
//! wait on the writer. PRAGMAs live in [`schema::pragmas`]: synchronous
//! NORMAL by default (durable against process crashes, not power loss),
//! FULL with [`Config::durable`]. The writer's connection never
//! checkpoints (`wal_autocheckpoint = 0`); a background thread runs PASSIVE
//! checkpoints every 20 ms and a RESTART once the WAL passes 8192 frames,
//! so no COMMIT pays for a checkpoint's fsync.
//!
//! The CPU-heavy half of a commit (index checks, lazy MST update, covering
//! proof, k256 signature) is a `writer::Plan`. When other commits are in
//! flight, the caller computes its plan on a reader snapshot, in parallel
//! with the others; the writer uses it only if the repo's commit is still
//! the one the plan was based on, and otherwise (or when the caller is
//! alone, and the writer's warm caches make it cheaper) computes the
//! commit itself. Either way the swap checks and the rows are decided
//! inside the writer's transaction.
//!
//! # Input checks
//!
//! Writes are validated and encoded on the caller's thread before they are
//! queued: DID, NSID, record key syntax, strict DAG-CBOR that must be a map
//! (with `$type`, when present, equal to the collection), size limits. A bad
//! write returns a typed [`StoreError`] and nothing is written; a write that
//! fails inside the writer (unknown account, swap mismatch, ...) is rolled
//! back to its savepoint without touching the rest of its batch.

mod error;
mod import;
pub mod schema;
mod writer;

#[cfg(feature = "bench-internals")]
#[doc(hidden)]
pub mod bench_internals;

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use repo::Cid;
use repo::Codec;
use repo::car::CarWriter;
use repo::cbor::ValueRef;
use repo::crypto::{Keypair, PublicKey};
use repo::mst::Mst;
use repo::syntax::{TidGenerator, validate_did, validate_nsid, validate_record_key};
use rusqlite::{Connection, OptionalExtension, params};

pub use error::{Result, StoreError};

pub use schema::StartupReport;

use writer::{Job, Prepared, SqlBlocks, Task, cid_from_sql, frame_header};

/// Store options.
#[derive(Debug, Clone)]
pub struct Config {
    /// `synchronous = FULL` (fsync on every commit) instead of NORMAL.
    pub durable: bool,
    /// Largest record (DAG-CBOR bytes).
    pub max_record_bytes: usize,
    /// Largest blob.
    pub max_blob_bytes: usize,
    /// Writes per applyWrites call.
    pub max_writes: usize,
    /// Jobs per group-commit transaction.
    pub max_batch: usize,
    /// Reader connections kept in the pool.
    pub readers: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            durable: false,
            max_record_bytes: 1 << 20,
            max_blob_bytes: 5 << 20,
            max_writes: 200,
            max_batch: 256,
            readers: 128,
        }
    }
}

/// What a write does to a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteAction {
    /// createRecord: the path must be free.
    Create,
    /// putRecord: create or replace.
    Update,
    /// deleteRecord: the path must hold a record.
    Delete,
}

/// One write of an applyWrites call.
#[derive(Debug, Clone)]
pub struct RecordWrite {
    /// Create / update / delete.
    pub action: WriteAction,
    /// Collection NSID.
    pub collection: String,
    /// Record key (`None` on a create: a TID is generated).
    pub rkey: Option<String>,
    /// The record as DAG-CBOR (creates and updates).
    pub record: Option<Vec<u8>>,
    /// swapRecord: `Some(None)` requires the path to be empty.
    pub swap_record: Option<Option<Cid>>,
}

impl RecordWrite {
    /// A create with a generated or given key.
    pub fn create(collection: &str, rkey: Option<&str>, record: Vec<u8>) -> Self {
        RecordWrite {
            action: WriteAction::Create,
            collection: collection.to_owned(),
            rkey: rkey.map(str::to_owned),
            record: Some(record),
            swap_record: None,
        }
    }

    /// A put (create or replace).
    pub fn update(collection: &str, rkey: &str, record: Vec<u8>) -> Self {
        RecordWrite {
            action: WriteAction::Update,
            collection: collection.to_owned(),
            rkey: Some(rkey.to_owned()),
            record: Some(record),
            swap_record: None,
        }
    }

    /// A delete.
    pub fn delete(collection: &str, rkey: &str) -> Self {
        RecordWrite {
            action: WriteAction::Delete,
            collection: collection.to_owned(),
            rkey: Some(rkey.to_owned()),
            record: None,
            swap_record: None,
        }
    }
}

/// One write's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteOutcome {
    /// `at://did/collection/rkey`.
    pub uri: String,
    /// The record CID (None for deletes).
    pub cid: Option<Cid>,
}

/// A committed write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitInfo {
    /// The account.
    pub did: String,
    /// The new commit's CID.
    pub commit: Cid,
    /// Its rev.
    pub rev: String,
    /// The new MST root.
    pub data: Cid,
    /// The event's sequence number.
    pub seq: i64,
    /// Per write.
    pub results: Vec<WriteOutcome>,
}

/// A repository's current root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoRoot {
    /// Commit CID.
    pub commit: Cid,
    /// Rev.
    pub rev: String,
    /// MST root.
    pub data: Cid,
}

/// A record rendered for getRecord / listRecords.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordView {
    /// Record key.
    pub rkey: String,
    /// Record CID.
    pub cid: Cid,
    /// `{"uri": ..., "cid": ..., "value": ...}` in atproto JSON.
    pub json: String,
}

/// listRecords options.
#[derive(Debug, Clone, Default)]
pub struct ListOptions<'a> {
    /// Page size (1..=100; 0 means 50).
    pub limit: usize,
    /// The last rkey of the previous page.
    pub cursor: Option<&'a str>,
    /// Ascending rkey order (default is descending, newest first).
    pub reverse: bool,
}

/// A stored blob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blob {
    /// MIME type.
    pub mime: String,
    /// Bytes.
    pub bytes: Vec<u8>,
}

/// One sequenced event, framed for subscribeRepos.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Sequence number.
    pub seq: i64,
    /// Frame bytes (header + body).
    pub frame: Vec<u8>,
}

/// What an export wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportInfo {
    /// The commit named as the CAR root.
    pub root: Cid,
    /// Blocks written.
    pub blocks: u64,
    /// Bytes written.
    pub bytes: u64,
}

/// Counts for `atstore stats`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Accounts.
    pub accounts: u64,
    /// Indexed records.
    pub records: u64,
    /// Repo blocks.
    pub blocks: u64,
    /// Bytes in repo blocks.
    pub block_bytes: u64,
    /// Events.
    pub events: u64,
    /// Blobs.
    pub blobs: u64,
    /// Last sequence number.
    pub last_seq: i64,
}

/// The store. Share it between threads by reference or `Arc`.
pub struct Store {
    path: PathBuf,
    config: Config,
    readers: Mutex<Vec<Connection>>,
    tx: Option<Sender<Box<dyn Job>>>,
    writer: Option<JoinHandle<()>>,
    tids: TidGenerator,
    revs: Arc<TidGenerator>,
    keys: Mutex<HashMap<String, Arc<Keypair>>>,
    /// Decoded-MST-node caches for caller-side commit plans (one per
    /// concurrent caller; content-addressed, so any cache serves any repo).
    node_caches: Mutex<Vec<repo::mst::NodeCache>>,
    /// Commits submitted and not yet answered.
    in_flight: std::sync::atomic::AtomicUsize,
    report: StartupReport,
    checkpointer: Option<(Sender<()>, JoinHandle<()>)>,
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
        self.tx = None;
        if let Some(h) = self.writer.take() {
            let _ = h.join();
        }
        if let Some((stop, h)) = self.checkpointer.take() {
            drop(stop);
            let _ = h.join();
        }
    }
}

/// How often the background checkpointer runs a PASSIVE checkpoint.
const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_millis(20);

/// WAL length (frames) past which the checkpointer restarts the WAL.
const WAL_RESTART_FRAMES: i64 = 8192;

/// Moves WAL frames into the database file off the writer's path: the
/// writer's connection has `wal_autocheckpoint = 0`, so its COMMIT never
/// pays for a checkpoint (and its fsync); this thread runs PASSIVE
/// checkpoints, which never block the writer or the readers. It stops when
/// `stop` is dropped, after one last checkpoint.
fn spawn_checkpointer(path: &Path, durable: bool) -> Result<(Sender<()>, JoinHandle<()>)> {
    let conn = schema::open_checkpointer(path, durable)?;
    let (stop, rx) = mpsc::channel::<()>();
    let h = std::thread::Builder::new()
        .name("atstore-checkpoint".into())
        .spawn(move || {
            loop {
                let done = !matches!(
                    rx.recv_timeout(CHECKPOINT_EVERY),
                    Err(mpsc::RecvTimeoutError::Timeout)
                );
                // (busy, frames in the WAL, frames checkpointed)
                let passive = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
                    Ok((r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
                });
                // Under a steady write load a PASSIVE checkpoint never
                // catches up with the last frame, so the WAL would never
                // restart and grow without bound; past a size, RESTART
                // (which briefly waits for the writer) rewinds it.
                if let Ok((log, _)) = passive
                    && log > WAL_RESTART_FRAMES
                {
                    let _ = conn.query_row("PRAGMA wal_checkpoint(RESTART)", [], |_| Ok(()));
                }
                if done {
                    break;
                }
            }
        })?;
    Ok((stop, h))
}

const SQL_CURRENT_CID: &str =
    "SELECT cid FROM records WHERE did = ?1 AND collection = ?2 AND rkey = ?3";
const SQL_RECORD: &str = "SELECT r.cid, b.bytes FROM records r JOIN repo_blocks b \
     ON b.did = r.did AND b.cid = r.cid \
     WHERE r.did = ?1 AND r.collection = ?2 AND r.rkey = ?3";

fn validate_mime(mime: &str) -> Result<()> {
    let ok = mime.len() <= 255
        && mime.split_once('/').is_some_and(|(t, s)| {
            let tok = |x: &str| {
                !x.is_empty()
                    && x.bytes()
                        .all(|c| c.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&c))
            };
            tok(t) && tok(s.split(';').next().unwrap_or(""))
        });
    if ok {
        Ok(())
    } else {
        Err(StoreError::InvalidMime(mime.to_owned()))
    }
}

pub(crate) fn collect_blob_links(v: &ValueRef<'_>, out: &mut Vec<Cid>) {
    match v {
        ValueRef::Link(c) if c.codec() == Codec::Raw && !out.contains(c) => out.push(*c),
        ValueRef::List(items) => items.iter().for_each(|i| collect_blob_links(i, out)),
        ValueRef::Map(m) => m
            .entries()
            .iter()
            .for_each(|(_, i)| collect_blob_links(i, out)),
        _ => {}
    }
}

/// `{"uri":..,"cid":..,"value":..}`.
fn render_record(
    did: &str,
    collection: &str,
    rkey: &str,
    cid: &Cid,
    bytes: &[u8],
) -> Result<String> {
    let value = repo::cbor::decode(bytes)?;
    let mut out = String::with_capacity(bytes.len() * 2 + 128);
    out.push_str("{\"uri\":\"at://");
    out.push_str(did);
    out.push('/');
    out.push_str(collection);
    out.push('/');
    out.push_str(rkey);
    out.push_str("\",\"cid\":\"");
    cid.push_str(&mut out);
    out.push_str("\",\"value\":");
    repo::cbor::json::write_json(&value, &mut out);
    out.push('}');
    Ok(out)
}

impl Store {
    /// Opens (creating if needed) the store at `path`.
    pub fn open(path: impl AsRef<Path>, config: Config) -> Result<Store> {
        let path = path.as_ref().to_path_buf();
        let (conn, report) = schema::startup(&path, config.durable)?;
        let (tx, rx) = mpsc::channel::<Box<dyn Job>>();
        let revs = Arc::new(TidGenerator::new(0));
        let w = writer::Writer::new(conn, report.next_seq, revs.clone());
        let max_batch = config.max_batch.max(1);
        let writer = std::thread::Builder::new()
            .name("atstore-writer".into())
            .spawn(move || writer::run(w, rx, max_batch))?;
        let checkpointer = Some(spawn_checkpointer(&path, config.durable)?);
        Ok(Store {
            path,
            config,
            readers: Mutex::new(Vec::new()),
            tx: Some(tx),
            writer: Some(writer),
            tids: TidGenerator::new(1),
            revs,
            keys: Mutex::new(HashMap::new()),
            node_caches: Mutex::new(Vec::new()),
            in_flight: std::sync::atomic::AtomicUsize::new(0),
            report,
            checkpointer,
        })
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

    fn submit<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut writer::Writer) -> Result<T> + Send + 'static,
    {
        let (rtx, rrx) = mpsc::sync_channel(1);
        let tx = self.tx.as_ref().ok_or(StoreError::WriterGone)?;
        tx.send(Box::new(Task::new(f, rtx)))
            .map_err(|_| StoreError::WriterGone)?;
        rrx.recv().map_err(|_| StoreError::WriterGone)?
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

    fn prepare(&self, w: RecordWrite) -> Result<Prepared> {
        validate_nsid(&w.collection)?;
        let rkey = match w.rkey {
            Some(r) => r,
            None if w.action == WriteAction::Create => self.tids.next_tid().to_string(),
            None => {
                return Err(StoreError::InvalidBatch(
                    "update and delete need a record key",
                ));
            }
        };
        validate_record_key(&rkey)?;
        let path = format!("{}/{rkey}", w.collection);
        repo::mst::validate_key(&path)?;
        let mut blobs = Vec::new();
        let block = match (w.action, w.record) {
            (WriteAction::Delete, None) => None,
            (WriteAction::Delete, Some(_)) => {
                return Err(StoreError::InvalidBatch("a delete carries no record"));
            }
            (_, None) => {
                return Err(StoreError::InvalidBatch(
                    "a create or update needs a record",
                ));
            }
            (_, Some(bytes)) => {
                if bytes.len() > self.config.max_record_bytes {
                    return Err(StoreError::RecordTooLarge {
                        size: bytes.len(),
                        max: self.config.max_record_bytes,
                    });
                }
                let value = repo::cbor::decode(&bytes)?;
                let ValueRef::Map(map) = &value else {
                    return Err(StoreError::InvalidRecord("not a map"));
                };
                match map.get("$type") {
                    None => {}
                    Some(ValueRef::Text(t)) if *t == w.collection => {}
                    Some(_) => {
                        return Err(StoreError::InvalidRecord(
                            "$type differs from the collection",
                        ));
                    }
                }
                collect_blob_links(&value, &mut blobs);
                Some((Cid::for_dag_cbor(&bytes), bytes))
            }
        };
        Ok(Prepared {
            action: w.action,
            collection: w.collection,
            rkey,
            path,
            block,
            blobs,
            swap_record: w.swap_record,
        })
    }

    /// applyWrites: up to [`Config::max_writes`] writes as one commit.
    pub fn apply_writes(
        &self,
        did: &str,
        writes: Vec<RecordWrite>,
        swap_commit: Option<Cid>,
    ) -> Result<CommitInfo> {
        validate_did(did)?;
        if writes.is_empty() {
            return Err(StoreError::InvalidBatch("no writes"));
        }
        if writes.len() > self.config.max_writes {
            return Err(StoreError::InvalidBatch("too many writes"));
        }
        let prepared = writes
            .into_iter()
            .map(|w| self.prepare(w))
            .collect::<Result<Vec<_>>>()?;
        let mut paths: Vec<&str> = prepared.iter().map(|p| p.path.as_str()).collect();
        paths.sort_unstable();
        if paths.windows(2).any(|w| w[0] == w[1]) {
            return Err(StoreError::InvalidBatch("a path is written twice"));
        }
        use std::sync::atomic::Ordering;
        // Alone, the writer computes the commit itself (its connection's
        // page cache and node cache are warm); with other commits in
        // flight, the caller plans it in parallel with them.
        let busy = self.in_flight.fetch_add(1, Ordering::AcqRel) > 0;
        let plan = if busy {
            self.plan(did, &prepared, swap_commit)
        } else {
            None
        };
        let did = did.to_owned();
        let r = self.submit(move |w| w.apply(&did, &prepared, swap_commit, plan));
        self.in_flight.fetch_sub(1, Ordering::AcqRel);
        r
    }

    /// The caller-side half of a commit: on a reader snapshot, the index
    /// checks, the lazy MST update, the proof and the signature, so that
    /// this CPU work runs on the caller's thread, in parallel with other
    /// callers, and the writer thread only checks that the commit it was
    /// based on is still current and writes the rows. `None` whenever
    /// anything is off (the writer then computes the commit itself and
    /// reports the authoritative error).
    fn plan(
        &self,
        did: &str,
        writes: &[Prepared],
        swap_commit: Option<Cid>,
    ) -> Option<writer::Plan> {
        let r = self.reader().ok()?;
        r.execute_batch("BEGIN").ok()?;
        let plan = (|| {
            let root = writer::read_root(&r, did).ok()??;
            let key = self.keypair(did, root.key.as_deref())?;
            let cache = self
                .node_caches
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .pop()
                .unwrap_or_else(|| repo::mst::NodeCache::new(8192));
            let (plan, cache) =
                writer::plan_commit(&r, cache, &self.revs, did, &root, &key, writes, swap_commit);
            let mut caches = self.node_caches.lock().unwrap_or_else(|p| p.into_inner());
            if caches.len() < 16 {
                caches.push(cache);
            }
            drop(caches);
            plan.ok()
        })();
        let _ = r.execute_batch("COMMIT");
        plan
    }

    fn keypair(&self, did: &str, secret: Option<&[u8]>) -> Option<Arc<Keypair>> {
        let mut keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(k) = keys.get(did) {
            return Some(k.clone());
        }
        let k = Arc::new(Keypair::from_bytes(repo::crypto::Algorithm::K256, secret?).ok()?);
        if keys.len() > 100_000 {
            keys.clear();
        }
        keys.insert(did.to_owned(), k.clone());
        Some(k)
    }

    /// createRecord.
    pub fn create_record(
        &self,
        did: &str,
        collection: &str,
        rkey: Option<&str>,
        record: Vec<u8>,
        swap_commit: Option<Cid>,
    ) -> Result<CommitInfo> {
        self.apply_writes(
            did,
            vec![RecordWrite::create(collection, rkey, record)],
            swap_commit,
        )
    }

    /// putRecord (`swap_record`: `Some(None)` = must not exist).
    pub fn put_record(
        &self,
        did: &str,
        collection: &str,
        rkey: &str,
        record: Vec<u8>,
        swap_record: Option<Option<Cid>>,
        swap_commit: Option<Cid>,
    ) -> Result<CommitInfo> {
        let mut w = RecordWrite::update(collection, rkey, record);
        w.swap_record = swap_record;
        self.apply_writes(did, vec![w], swap_commit)
    }

    /// deleteRecord.
    pub fn delete_record(
        &self,
        did: &str,
        collection: &str,
        rkey: &str,
        swap_record: Option<Cid>,
        swap_commit: Option<Cid>,
    ) -> Result<CommitInfo> {
        let mut w = RecordWrite::delete(collection, rkey);
        w.swap_record = swap_record.map(Some);
        self.apply_writes(did, vec![w], swap_commit)
    }

    /// The current root of `did`'s repository.
    pub fn repo_root(&self, did: &str) -> Result<Option<RepoRoot>> {
        validate_did(did)?;
        let r = self.reader()?;
        root_of(&r, did)
    }

    /// The current record CID at (did, collection, rkey), from the index.
    pub fn current_cid(&self, did: &str, collection: &str, rkey: &str) -> Result<Option<Cid>> {
        validate_did(did)?;
        validate_nsid(collection)?;
        validate_record_key(rkey)?;
        let r = self.reader()?;
        let mut st = r.prepare_cached(SQL_CURRENT_CID)?;
        let mut rows = st.query(params![did, collection, rkey])?;
        match rows.next()? {
            Some(row) => Ok(Some(cid_from_sql(row.get_ref(0)?.as_blob()?)?)),
            None => Ok(None),
        }
    }

    /// Index row plus block bytes (no decode).
    pub fn record_block(
        &self,
        did: &str,
        collection: &str,
        rkey: &str,
    ) -> Result<Option<(Cid, Vec<u8>)>> {
        validate_did(did)?;
        validate_nsid(collection)?;
        validate_record_key(rkey)?;
        let r = self.reader()?;
        let mut st = r.prepare_cached(SQL_RECORD)?;
        let mut rows = st.query(params![did, collection, rkey])?;
        match rows.next()? {
            Some(row) => Ok(Some((
                cid_from_sql(row.get_ref(0)?.as_blob()?)?,
                row.get_ref(1)?.as_blob()?.to_vec(),
            ))),
            None => Ok(None),
        }
    }

    /// getRecord: the record as atproto JSON.
    pub fn get_record(
        &self,
        did: &str,
        collection: &str,
        rkey: &str,
    ) -> Result<Option<RecordView>> {
        validate_did(did)?;
        validate_nsid(collection)?;
        validate_record_key(rkey)?;
        let r = self.reader()?;
        let mut st = r.prepare_cached(SQL_RECORD)?;
        let mut rows = st.query(params![did, collection, rkey])?;
        match rows.next()? {
            Some(row) => {
                let cid = cid_from_sql(row.get_ref(0)?.as_blob()?)?;
                let json = render_record(did, collection, rkey, &cid, row.get_ref(1)?.as_blob()?)?;
                Ok(Some(RecordView {
                    rkey: rkey.to_owned(),
                    cid,
                    json,
                }))
            }
            None => Ok(None),
        }
    }

    fn list_sql(full: bool, cursor: bool, reverse: bool) -> &'static str {
        match (full, cursor, reverse) {
            (false, false, false) => {
                "SELECT rkey, cid FROM records WHERE did = ?1 AND collection = ?2 ORDER BY rkey DESC LIMIT ?3"
            }
            (false, false, true) => {
                "SELECT rkey, cid FROM records WHERE did = ?1 AND collection = ?2 ORDER BY rkey ASC LIMIT ?3"
            }
            (false, true, false) => {
                "SELECT rkey, cid FROM records WHERE did = ?1 AND collection = ?2 AND rkey < ?4 ORDER BY rkey DESC LIMIT ?3"
            }
            (false, true, true) => {
                "SELECT rkey, cid FROM records WHERE did = ?1 AND collection = ?2 AND rkey > ?4 ORDER BY rkey ASC LIMIT ?3"
            }
            (true, false, false) => {
                "SELECT r.rkey, r.cid, b.bytes FROM records r JOIN repo_blocks b ON b.did = r.did AND b.cid = r.cid WHERE r.did = ?1 AND r.collection = ?2 ORDER BY r.rkey DESC LIMIT ?3"
            }
            (true, false, true) => {
                "SELECT r.rkey, r.cid, b.bytes FROM records r JOIN repo_blocks b ON b.did = r.did AND b.cid = r.cid WHERE r.did = ?1 AND r.collection = ?2 ORDER BY r.rkey ASC LIMIT ?3"
            }
            (true, true, false) => {
                "SELECT r.rkey, r.cid, b.bytes FROM records r JOIN repo_blocks b ON b.did = r.did AND b.cid = r.cid WHERE r.did = ?1 AND r.collection = ?2 AND r.rkey < ?4 ORDER BY r.rkey DESC LIMIT ?3"
            }
            (true, true, true) => {
                "SELECT r.rkey, r.cid, b.bytes FROM records r JOIN repo_blocks b ON b.did = r.did AND b.cid = r.cid WHERE r.did = ?1 AND r.collection = ?2 AND r.rkey > ?4 ORDER BY r.rkey ASC LIMIT ?3"
            }
        }
    }

    fn list_check(did: &str, collection: &str, opts: &ListOptions<'_>) -> Result<i64> {
        validate_did(did)?;
        validate_nsid(collection)?;
        if let Some(c) = opts.cursor {
            validate_record_key(c)?;
        }
        Ok(match opts.limit {
            0 => 50,
            n => n.min(100) as i64,
        })
    }

    /// listRecords, index only: `(rkey, cid)` of one page.
    pub fn list_record_cids(
        &self,
        did: &str,
        collection: &str,
        opts: &ListOptions<'_>,
    ) -> Result<Vec<(String, Cid)>> {
        let limit = Self::list_check(did, collection, opts)?;
        let r = self.reader()?;
        let mut st =
            r.prepare_cached(Self::list_sql(false, opts.cursor.is_some(), opts.reverse))?;
        let mut rows = match opts.cursor {
            Some(c) => st.query(params![did, collection, limit, c])?,
            None => st.query(params![did, collection, limit])?,
        };
        let mut out = Vec::with_capacity(limit as usize);
        while let Some(row) = rows.next()? {
            out.push((
                row.get_ref(0)?.as_str()?.to_owned(),
                cid_from_sql(row.get_ref(1)?.as_blob()?)?,
            ));
        }
        Ok(out)
    }

    /// listRecords, full: one page rendered to atproto JSON.
    pub fn list_records(
        &self,
        did: &str,
        collection: &str,
        opts: &ListOptions<'_>,
    ) -> Result<Vec<RecordView>> {
        let limit = Self::list_check(did, collection, opts)?;
        let r = self.reader()?;
        let mut st = r.prepare_cached(Self::list_sql(true, opts.cursor.is_some(), opts.reverse))?;
        let mut rows = match opts.cursor {
            Some(c) => st.query(params![did, collection, limit, c])?,
            None => st.query(params![did, collection, limit])?,
        };
        let mut out = Vec::with_capacity(limit as usize);
        while let Some(row) = rows.next()? {
            let rkey = row.get_ref(0)?.as_str()?;
            let cid = cid_from_sql(row.get_ref(1)?.as_blob()?)?;
            let json = render_record(did, collection, rkey, &cid, row.get_ref(2)?.as_blob()?)?;
            out.push(RecordView {
                rkey: rkey.to_owned(),
                cid,
                json,
            });
        }
        Ok(out)
    }

    /// The collections of `did` that hold records.
    pub fn collections(&self, did: &str) -> Result<Vec<String>> {
        validate_did(did)?;
        let r = self.reader()?;
        let mut out = Vec::new();
        let mut st = r.prepare_cached(
            "SELECT collection FROM records WHERE did = ?1 AND collection > ?2 ORDER BY collection LIMIT 1",
        )?;
        let mut last = String::new();
        while let Some(c) = st
            .query_row(params![did, last], |r| r.get::<_, String>(0))
            .optional()?
        {
            out.push(c.clone());
            last = c;
        }
        Ok(out)
    }

    /// Stores a blob (raw sha-256 CID); size and MIME checked.
    pub fn put_blob(&self, did: &str, bytes: Vec<u8>, mime: &str) -> Result<Cid> {
        validate_did(did)?;
        validate_mime(mime)?;
        if bytes.len() > self.config.max_blob_bytes {
            return Err(StoreError::BlobTooLarge {
                size: bytes.len(),
                max: self.config.max_blob_bytes,
            });
        }
        let cid = Cid::for_raw(&bytes);
        let did = did.to_owned();
        let mime = mime.to_owned();
        self.submit(move |w| {
            let exists: Option<i64> = w
                .conn
                .prepare_cached("SELECT 1 FROM repo_root WHERE did = ?1")?
                .query_row([&did], |r| r.get(0))
                .optional()?;
            if exists.is_none() {
                return Err(StoreError::UnknownAccount(did));
            }
            w.conn
                .prepare_cached(
                    "INSERT OR REPLACE INTO blobs (did, cid, mime, size, bytes) VALUES (?1, ?2, ?3, ?4, ?5)",
                )?
                .execute(params![did, &cid.to_bytes()[..], mime, bytes.len() as i64, bytes])?;
            Ok(cid)
        })
    }

    /// A whole blob.
    pub fn get_blob(&self, did: &str, cid: &Cid) -> Result<Option<Blob>> {
        validate_did(did)?;
        let r = self.reader()?;
        let mut st =
            r.prepare_cached("SELECT mime, bytes FROM blobs WHERE did = ?1 AND cid = ?2")?;
        let mut rows = st.query(params![did, &cid.to_bytes()[..]])?;
        match rows.next()? {
            Some(row) => Ok(Some(Blob {
                mime: row.get_ref(0)?.as_str()?.to_owned(),
                bytes: row.get_ref(1)?.as_blob()?.to_vec(),
            })),
            None => Ok(None),
        }
    }

    /// Bytes `offset..offset+len` of a blob (clamped to its end).
    pub fn get_blob_range(
        &self,
        did: &str,
        cid: &Cid,
        offset: u64,
        len: u64,
    ) -> Result<Option<Vec<u8>>> {
        validate_did(did)?;
        let r = self.reader()?;
        let mut st = r.prepare_cached(
            "SELECT substr(bytes, ?3, ?4) FROM blobs WHERE did = ?1 AND cid = ?2",
        )?;
        let start = i64::try_from(offset)
            .unwrap_or(i64::MAX - 1)
            .saturating_add(1);
        let len = i64::try_from(len).unwrap_or(i64::MAX);
        let mut rows = st.query(params![did, &cid.to_bytes()[..], start, len])?;
        match rows.next()? {
            Some(row) => {
                let v = row.get_ref(0)?;
                Ok(Some(match v {
                    rusqlite::types::ValueRef::Blob(b) => b.to_vec(),
                    _ => Vec::new(),
                }))
            }
            None => Ok(None),
        }
    }

    /// Blobs referenced by `did`'s current records.
    pub fn referenced_blobs(&self, did: &str) -> Result<Vec<Cid>> {
        validate_did(did)?;
        let r = self.reader()?;
        let mut st = r.prepare_cached(
            "SELECT DISTINCT blob FROM record_blobs WHERE did = ?1 ORDER BY blob",
        )?;
        let mut rows = st.query([did])?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            out.push(cid_from_sql(row.get_ref(0)?.as_blob()?)?);
        }
        Ok(out)
    }

    /// getRepo: streams the repository as a CAR to `out` in constant memory
    /// (one block in flight), inside one read transaction. With `since`,
    /// only the blocks added by revs after it.
    pub fn export_repo<W: Write>(
        &self,
        did: &str,
        since: Option<&str>,
        out: W,
    ) -> Result<ExportInfo> {
        validate_did(did)?;
        if let Some(s) = since {
            repo::syntax::validate_tid(s)?;
        }
        let r = self.reader()?;
        r.execute_batch("BEGIN")?;
        let result = (|| {
            let root =
                root_of(&r, did)?.ok_or_else(|| StoreError::UnknownAccount(did.to_owned()))?;
            let mut car = CarWriter::new(out, &[root.commit])?;
            let mut blocks = 0u64;
            let mut st = r.prepare_cached(
                "SELECT cid, bytes FROM repo_blocks WHERE did = ?1 AND (?2 IS NULL OR repo_rev > ?2)",
            )?;
            let mut rows = st.query(params![did, since])?;
            while let Some(row) = rows.next()? {
                let cid = cid_from_sql(row.get_ref(0)?.as_blob()?)?;
                car.write_block(&cid, row.get_ref(1)?.as_blob()?)?;
                blocks += 1;
            }
            let bytes = car.bytes_written();
            car.finish()?;
            Ok(ExportInfo {
                root: root.commit,
                blocks,
                bytes,
            })
        })();
        let _ = r.execute_batch("COMMIT");
        result
    }

    /// subscribeRepos catch-up: up to `limit` events after `cursor`, framed.
    pub fn events_after(&self, cursor: i64, limit: usize) -> Result<Vec<Event>> {
        let r = self.reader()?;
        let mut st = r.prepare_cached(
            "SELECT seq, kind, payload FROM seq_events WHERE seq > ?1 ORDER BY seq LIMIT ?2",
        )?;
        let mut rows = st.query(params![cursor, i64::try_from(limit).unwrap_or(i64::MAX)])?;
        let mut out = Vec::with_capacity(limit.min(4096));
        let mut headers: Vec<(String, Vec<u8>)> = Vec::new();
        while let Some(row) = rows.next()? {
            let seq: i64 = row.get(0)?;
            let kind = row.get_ref(1)?.as_str()?;
            let body = row.get_ref(2)?.as_blob()?;
            let header = match headers.iter().find(|h| h.0 == kind) {
                Some(h) => &h.1,
                None => {
                    headers.push((kind.to_owned(), frame_header(kind)));
                    &headers[headers.len() - 1].1
                }
            };
            let mut frame = Vec::with_capacity(header.len() + body.len());
            frame.extend_from_slice(header);
            frame.extend_from_slice(body);
            out.push(Event { seq, frame });
        }
        Ok(out)
    }

    /// Imports a repository CAR (replacing `did`'s repository if present).
    /// Every block is checked against its CID, the MST against the
    /// commit's `data`, and the signature when `key` is given. The account
    /// is read-only unless it already had a signing key here.
    pub fn import_car(
        &self,
        input: impl std::io::Read,
        key: Option<&PublicKey>,
    ) -> Result<CommitInfo> {
        let verified = import::verify_car(input, key)?;
        self.submit(move |w| w.import(&verified))
    }

    /// Checks `did`'s repository: the commit block decodes and names the
    /// stored MST root, the MST is well formed and holds exactly the
    /// indexed records. Returns the record count.
    pub fn check_repo(&self, did: &str) -> Result<usize> {
        validate_did(did)?;
        let r = self.reader()?;
        r.execute_batch("BEGIN")?;
        let result = (|| {
            let root =
                root_of(&r, did)?.ok_or_else(|| StoreError::UnknownAccount(did.to_owned()))?;
            let src = SqlBlocks { conn: &r, did };
            let commit_bytes = repo::mst::BlockSource::get_block(&src, &root.commit)
                .map_err(|e| StoreError::Corrupt(e.to_string()))?
                .ok_or_else(|| StoreError::Corrupt("commit block missing".into()))?
                .into_owned();
            let commit = repo::commit::CommitRef::decode(&commit_bytes)?;
            if commit.data != root.data || commit.rev != root.rev || commit.did != did {
                return Err(StoreError::Corrupt(
                    "commit block disagrees with repo_root".into(),
                ));
            }
            let mut mst = Mst::load(SqlBlocks { conn: &r, did }, root.data);
            mst.check_structure()?;
            let entries = mst.entries()?;
            let mut st = r.prepare(
                "SELECT collection || '/' || rkey, cid FROM records WHERE did = ?1 ORDER BY collection, rkey",
            )?;
            let mut rows = st.query([did])?;
            let mut index = Vec::new();
            while let Some(row) = rows.next()? {
                index.push((
                    row.get::<_, String>(0)?,
                    cid_from_sql(row.get_ref(1)?.as_blob()?)?,
                ));
            }
            index.sort();
            if index != entries {
                return Err(StoreError::Corrupt(format!(
                    "{did}: MST holds {} records, index {}",
                    entries.len(),
                    index.len()
                )));
            }
            Ok(entries.len())
        })();
        let _ = r.execute_batch("COMMIT");
        result
    }

    /// Every account's DID.
    pub fn accounts(&self) -> Result<Vec<String>> {
        let r = self.reader()?;
        let mut st = r.prepare_cached("SELECT did FROM repo_root ORDER BY did")?;
        let rows = st.query_map([], |r| r.get::<_, String>(0))?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// Table counts.
    pub fn stats(&self) -> Result<Stats> {
        let r = self.reader()?;
        let q = |sql: &str| -> Result<i64> {
            Ok(r.query_row(sql, [], |row| row.get::<_, Option<i64>>(0))?
                .unwrap_or(0))
        };
        Ok(Stats {
            accounts: q("SELECT COUNT(*) FROM repo_root")? as u64,
            records: q("SELECT COUNT(*) FROM records")? as u64,
            blocks: q("SELECT COUNT(*) FROM repo_blocks")? as u64,
            block_bytes: q("SELECT SUM(length(bytes)) FROM repo_blocks")? as u64,
            events: q("SELECT COUNT(*) FROM seq_events")? as u64,
            blobs: q("SELECT COUNT(*) FROM blobs")? as u64,
            last_seq: q("SELECT MAX(seq) FROM seq_events")?,
        })
    }

    /// The signing key's public half for `did`, if the store holds it.
    pub fn signing_key(&self, did: &str) -> Result<Option<PublicKey>> {
        validate_did(did)?;
        let r = self.reader()?;
        let secret: Option<Option<Vec<u8>>> = r
            .prepare_cached("SELECT signing_key FROM repo_root WHERE did = ?1")?
            .query_row([did], |row| row.get(0))
            .optional()?;
        match secret.flatten() {
            None => Ok(None),
            Some(s) => Keypair::from_bytes(repo::crypto::Algorithm::K256, &s)
                .map(|k| Some(k.public_key()))
                .map_err(|e| StoreError::Corrupt(format!("signing key: {e}"))),
        }
    }
}

fn root_of(conn: &Connection, did: &str) -> Result<Option<RepoRoot>> {
    let row = conn
        .prepare_cached("SELECT commit_cid, rev, data_cid FROM repo_root WHERE did = ?1")?
        .query_row([did], |r| {
            Ok((
                r.get::<_, Vec<u8>>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Vec<u8>>(2)?,
            ))
        })
        .optional()?;
    row.map(|(c, rev, d)| {
        Ok(RepoRoot {
            commit: cid_from_sql(&c)?,
            rev,
            data: cid_from_sql(&d)?,
        })
    })
    .transpose()
}
