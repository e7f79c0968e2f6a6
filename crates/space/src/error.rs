//! The crate's typed errors. Each variant that a client can cause maps to a
//! lexicon error name ([`SpaceError::lexicon_name`]), so the XRPC layer
//! answers in the lexicon's own shape.

/// Everything a space operation can fail with.
#[derive(Debug, thiserror::Error)]
pub enum SpaceError {
    /// A space-ref, DID, NSID, record key, TID or cursor that does not parse.
    #[error("invalid {what}: {reason}")]
    InvalidRequest {
        /// Which input.
        what: &'static str,
        /// Why.
        reason: String,
    },
    /// createSpace on a space-ref that exists.
    #[error("space {0} already exists")]
    SpaceAlreadyExists(String),
    /// A policy this host does not serve.
    #[error("unsupported policy {0:?}")]
    UnsupportedPolicy(String),
    /// The space does not exist (or was deleted).
    #[error("space {0} not found")]
    SpaceNotFound(String),
    /// The writer repo has no state in this space.
    #[error("repo {repo} has no records in space {space}")]
    RepoNotFound {
        /// The space.
        space: String,
        /// The writer repo's DID.
        repo: String,
    },
    /// getRecord on a record that does not exist.
    #[error("record {0} not found")]
    RecordNotFound(String),
    /// createRecord (or an applyWrites `#create`) on a record that exists.
    #[error("record {0} already exists")]
    RecordAlreadyExists(String),
    /// An update or a swap on a record that changed or is missing.
    #[error("{0}")]
    InvalidSwap(String),
    /// getBlob of a blob no record in the space references.
    #[error("blob {0} not found in this space")]
    BlobNotFound(String),
    /// The caller may not read (or write) here.
    #[error("{0}")]
    Forbidden(String),
    /// A record larger than [`crate::MAX_RECORD_BYTES`], or a batch over
    /// [`crate::MAX_WRITES`].
    #[error("{0}")]
    TooLarge(String),
    /// A stored row that does not decode (a corrupt or foreign file).
    #[error("corrupt space row: {0}")]
    Corrupt(String),
    /// A per-response MAC or KEM input that does not parse.
    #[error("invalid key share: {0}")]
    InvalidKeyShare(String),
    /// The signer has no key for the writer repo.
    #[error("no signing key for {0}")]
    NoSigningKey(String),
    /// SQLite.
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A stored column of an unexpected type.
    #[error("sqlite column: {0}")]
    Column(#[from] rusqlite::types::FromSqlError),
    /// Writing a response body.
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
}

impl SpaceError {
    /// The lexicon error name (`com.atproto.space.*` / `simplespace.*`), or
    /// `InvalidRequest` / `InternalServerError` for the generic cases.
    pub fn lexicon_name(&self) -> &'static str {
        match self {
            SpaceError::InvalidRequest { .. } | SpaceError::InvalidKeyShare(_) => "InvalidRequest",
            SpaceError::SpaceAlreadyExists(_) => "SpaceAlreadyExists",
            SpaceError::UnsupportedPolicy(_) => "UnsupportedPolicy",
            SpaceError::SpaceNotFound(_) => "SpaceNotFound",
            SpaceError::RepoNotFound { .. } => "RepoNotFound",
            SpaceError::RecordNotFound(_) => "RecordNotFound",
            SpaceError::RecordAlreadyExists(_) => "RecordAlreadyExists",
            SpaceError::InvalidSwap(_) => "InvalidSwap",
            SpaceError::BlobNotFound(_) => "BlobNotFound",
            SpaceError::Forbidden(_) => "Forbidden",
            SpaceError::TooLarge(_) => "InvalidRequest",
            SpaceError::NoSigningKey(_)
            | SpaceError::Corrupt(_)
            | SpaceError::Sqlite(_)
            | SpaceError::Column(_)
            | SpaceError::Io(_) => "InternalServerError",
        }
    }

    pub(crate) fn invalid(what: &'static str, reason: impl Into<String>) -> SpaceError {
        SpaceError::InvalidRequest {
            what,
            reason: reason.into(),
        }
    }
}

/// The crate's result type.
pub type Result<T, E = SpaceError> = std::result::Result<T, E>;
