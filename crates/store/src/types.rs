//! The store's public value types: options, writes, results, views.

use repo::Cid;

/// Store options.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where the writer hands each committed batch's events, in seq order,
    /// before the batch's callers hear back (`feed.rs`). `None`: events go
    /// to the log only.
    pub feed: Option<std::sync::Arc<dyn crate::EventFeed>>,
    /// `synchronous = FULL` (an fsync at every commit: durable against
    /// power loss) instead of NORMAL (durable against process crashes; a
    /// power loss can take back the commits since the last checkpoint).
    pub durable: bool,
    /// Largest record (DAG-CBOR bytes).
    pub max_record_bytes: usize,
    /// Largest blob.
    pub max_blob_bytes: usize,
    /// Writes per applyWrites call.
    pub max_writes: usize,
    /// Jobs per group-commit transaction. More spreads one COMMIT (and
    /// its fsync) over more callers; each caller waits for the whole batch.
    pub max_batch: usize,
    /// Reader connections kept in the pool (more are opened when needed,
    /// and closed when the pool is full).
    pub readers: usize,
    /// WAL length (frames of one page) past which the background
    /// checkpointer catches up and has the writer rewind the WAL (see
    /// `checkpoint.rs`). Each rewind costs the writer a short checkpoint
    /// with two fsyncs between two batches; a longer WAL means fewer of
    /// them and a larger file.
    pub wal_restart_frames: i64,
    /// How often the background checkpointer copies the WAL back into the
    /// database file (a PASSIVE checkpoint: it never blocks the writer or
    /// a reader). Each pass costs a read of every frame's page from the
    /// WAL, a write of every distinct page into the database file and, at
    /// `synchronous = NORMAL`, an fsync of each file; a page rewritten by
    /// many commits between two passes (a b-tree's upper pages, a table's
    /// last leaf, `repo_root`) is copied once per pass, so a longer
    /// interval copies less per commit. With NORMAL the WAL is synced at
    /// each pass, so the commits of about one interval are what a power
    /// loss (not a process crash) can take back; with
    /// [`durable`](Self::durable) every commit is synced anyway. The
    /// default was chosen with alternating runs of
    /// `store.apply_commit/ours.nosync/callers-{1,10}`. Values under 1 ms
    /// count as 1 ms.
    pub checkpoint_interval: std::time::Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            feed: None,
            durable: false,
            max_record_bytes: 1 << 20,
            max_blob_bytes: 5 << 20,
            max_writes: 200,
            max_batch: 256,
            readers: 128,
            wal_restart_frames: 16384,
            checkpoint_interval: std::time::Duration::from_millis(200),
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

/// A blob's type and size, with its bytes when it is small enough
/// ([`Store::blob_head`](crate::Store::blob_head)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobHead {
    /// MIME type.
    pub mime: String,
    /// Size in bytes.
    pub size: u64,
    /// The whole blob, when its size is within the caller's bound.
    pub bytes: Option<Vec<u8>>,
}

/// One sequenced event, framed for subscribeRepos.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Sequence number.
    pub seq: i64,
    /// Frame bytes (header + body).
    pub frame: Vec<u8>,
}

/// sync.getRecord's proof of one record ([`crate::Store::record_proof`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordProof {
    /// The current commit (the CAR's root).
    pub root: Cid,
    /// The commit block, the covering proof's MST nodes (root first), the
    /// record block.
    pub blocks: Vec<(Cid, Vec<u8>)>,
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
    /// Distinct repo blocks (commits, MST nodes, record blocks).
    pub blocks: u64,
    /// Bytes in those blocks.
    pub block_bytes: u64,
    /// Events.
    pub events: u64,
    /// Blobs.
    pub blobs: u64,
    /// Bytes in those blobs.
    pub blob_bytes: u64,
    /// Last sequence number.
    pub last_seq: i64,
}
