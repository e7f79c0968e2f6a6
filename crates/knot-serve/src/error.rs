//! [`ServeError`]: what went wrong serving a request or keeping the mirror
//! up to date, and the HTTP status each kind answers with.

use http::StatusCode;

/// Why a request path was refused (a 400).
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum PathError {
    #[error("path is {len} bytes, over the {max}-byte limit")]
    TooLong { len: usize, max: usize },
    #[error("path has {count} segments, over the {max}-segment limit")]
    TooDeep { count: usize, max: usize },
    #[error("path segment {0:?} is not allowed (`.`, `..` or empty)")]
    DotSegment(String),
    #[error("path holds a NUL or control byte")]
    ControlByte,
    #[error("path is not valid UTF-8 after percent-decoding")]
    NotUtf8,
    #[error("bad percent-escape in the path")]
    BadEscape,
    #[error("a segment decodes to an absolute path or holds `/` or `\\`")]
    Separator,
    #[error("revision {0:?} is not a branch, tag or object id")]
    BadRevision(String),
    #[error("log page {page:?} is not a number from 2 to {max}")]
    BadPage { page: String, max: usize },
    #[error("no page at this path")]
    NoRoute,
}

/// Everything a request or a sync can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("bad path: {0}")]
    Path(#[from] PathError),
    #[error("method {0} not allowed (read-only server)")]
    Method(String),
    #[error("{what} not found")]
    NotFound { what: String },
    #[error("{what} is {size} bytes, over the {max}-byte limit")]
    TooLarge { what: String, size: u64, max: u64 },
    #[error("reading the mirror: {0}")]
    Git(String),
    #[error("drawing the card: {0}")]
    Card(String),
    #[error("syncing the mirror: {0}")]
    Sync(String),
    #[error(transparent)]
    Knot(#[from] knot::KnotError),
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
}

impl ServeError {
    /// The HTTP status this error answers with.
    pub fn status(&self) -> StatusCode {
        match self {
            ServeError::Path(PathError::NoRoute) | ServeError::NotFound { .. } => {
                StatusCode::NOT_FOUND
            }
            ServeError::Path(_) => StatusCode::BAD_REQUEST,
            ServeError::Method(_) => StatusCode::METHOD_NOT_ALLOWED,
            ServeError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub(crate) fn git(e: impl std::fmt::Display) -> ServeError {
        ServeError::Git(e.to_string())
    }

    pub(crate) fn not_found(what: impl Into<String>) -> ServeError {
        ServeError::NotFound { what: what.into() }
    }
}

pub type Result<T, E = ServeError> = std::result::Result<T, E>;
