//! The store's typed errors, and how a writer job failed (`Failed`: before or
//! after it began writing, which decides what its batch undoes).

use repo::Cid;

/// Everything a store operation can fail on. Input errors (the first group)
/// are detected before anything is written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A DID, NSID, record key or AT-URI with bad syntax.
    #[error("{0}")]
    Syntax(#[from] repo::syntax::SyntaxError),
    /// A record that is not valid DAG-CBOR.
    #[error("record is not valid DAG-CBOR: {0}")]
    RecordDecode(#[from] repo::cbor::DecodeError),
    /// A record that is valid DAG-CBOR but not an acceptable record.
    #[error("invalid record: {0}")]
    InvalidRecord(&'static str),
    /// A record over the configured size limit.
    #[error("record of {size} bytes exceeds the limit of {max}")]
    RecordTooLarge {
        /// Encoded size.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// A blob over the configured size limit.
    #[error("blob of {size} bytes exceeds the limit of {max}")]
    BlobTooLarge {
        /// Blob size.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// A MIME type that is not `type/subtype`.
    #[error("invalid MIME type {0:?}")]
    InvalidMime(String),
    /// An applyWrites batch that is empty, too long, or names a path twice.
    #[error("invalid write batch: {0}")]
    InvalidBatch(&'static str),
    /// A signing key of an algorithm the store does not sign with (k256 only).
    #[error("unsupported signing key: {0}")]
    UnsupportedKey(&'static str),
    /// No such account.
    #[error("unknown account {0}")]
    UnknownAccount(String),
    /// The account already exists.
    #[error("account {0} already exists")]
    AccountExists(String),
    /// The account was imported without a signing key; it cannot be written.
    #[error("account {0} has no signing key in this store")]
    ReadOnlyAccount(String),
    /// swapCommit / swapRecord did not match.
    #[error("invalid swap on {what}: expected {expected:?}, found {found:?}")]
    InvalidSwap {
        /// `commit` or the record path.
        what: String,
        /// What the caller expected.
        expected: Option<Cid>,
        /// What the store holds.
        found: Option<Cid>,
    },
    /// A record names a blob its account never uploaded (or one already
    /// freed): the reference PDS's `BlobNotFound`. Nothing is written.
    #[error("Could not find blob: {0}")]
    BlobNotFound(Cid),
    /// A create on a path that already holds a record.
    #[error("record {0} already exists")]
    RecordExists(String),
    /// An update or delete of a path that holds no record.
    #[error("record {0} not found")]
    RecordNotFound(String),
    /// A CAR file that is malformed or whose blocks do not match their CIDs.
    #[error("CAR: {0}")]
    Car(#[from] repo::car::CarError),
    /// A commit block that does not decode or verify.
    // CommitError's messages already say "commit:".
    #[error(transparent)]
    Commit(#[from] repo::commit::CommitError),
    /// An event prepared outside the writer is not what it should be.
    #[error("invalid event: {0}")]
    InvalidEvent(&'static str),
    /// An imported repository that is inconsistent.
    #[error("invalid repository: {0}")]
    InvalidRepo(String),
    /// The MST could not be read or edited.
    #[error("MST: {0}")]
    Mst(#[from] repo::mst::MstError),
    /// Stored data that breaks the store's invariants.
    #[error("store corrupt: {0}")]
    Corrupt(String),
    /// SQLite failed.
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A stored column has an unexpected type.
    #[error("sqlite column: {0}")]
    Column(#[from] rusqlite::types::FromSqlError),
    /// File I/O failed.
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    /// I/O on a named file failed.
    #[error("{}: cannot {op}: {source}", path.display())]
    File {
        /// The file.
        path: std::path::PathBuf,
        /// What was being done to it.
        op: &'static str,
        /// The error.
        source: std::io::Error,
    },
    /// Another store has the database open for writing.
    #[error("database {} is in use by {}", path.display(), match pid { Some(p) => format!("pid {p}"), None => "another process".to_owned() })]
    Locked {
        /// The database.
        path: std::path::PathBuf,
        /// The holder's pid, as its lock file says.
        pid: Option<u32>,
    },
    /// A file that is not one of our databases (left untouched).
    #[error("{} is not an atbench store: {detail}", path.display())]
    ForeignDatabase {
        /// The file.
        path: std::path::PathBuf,
        /// What it is instead.
        detail: String,
    },
    /// A write on a store opened read-only.
    #[error("store {} is open read-only", .0.display())]
    ReadOnly(std::path::PathBuf),
    /// A read-only open of a database whose schema needs a migration (a
    /// writable open does it).
    #[error("{} has schema version {version}, this build reads {current}: open it for writing once to migrate", path.display())]
    NeedsMigration {
        /// The database.
        path: std::path::PathBuf,
        /// Its schema version.
        version: i64,
        /// This build's.
        current: i64,
    },
    /// An `#account` status that is not one of atproto's, or a status on
    /// an active account.
    #[error("invalid account status: {0}")]
    InvalidAccountStatus(String),
    /// The account's root moved under a planned commit (nothing was
    /// written). Every commit of an account passes through its lane, so
    /// this means the rows changed behind the store's back; the lane is
    /// reloaded, and trying again plans on the new root.
    #[error("the repository of {0} moved under a planned commit")]
    RootMoved(String),
    /// The batch this write was part of failed to commit.
    #[error("write batch failed to commit: {0}")]
    BatchFailed(String),
    /// The writer thread is gone (the store is shutting down or crashed).
    #[error("store writer is not running")]
    WriterGone,
}

/// Result alias.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// A job's failure, and whether it had begun writing.
#[derive(Debug)]
pub(crate) struct Failed {
    pub error: StoreError,
    pub wrote: bool,
}

impl Failed {
    /// A failure before the job's first write.
    pub(crate) fn clean(error: impl Into<StoreError>) -> Self {
        Failed {
            error: error.into(),
            wrote: false,
        }
    }

    /// A failure after the job began writing.
    pub(crate) fn wrote(error: impl Into<StoreError>) -> Self {
        Failed {
            error: error.into(),
            wrote: true,
        }
    }
}
