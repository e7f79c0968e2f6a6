//! [`GatewayError`]: every way a line can fail, named by what went wrong
//! and, where there is one, the backend, column or parameter.

use std::fmt;
use std::time::Duration;

use convert::{DispatchError, RecordSetError};

/// The backend an error (or an executor) belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    /// PostgreSQL.
    Postgres,
    /// MariaDB or MySQL.
    Mysql,
    /// Redis.
    Redis,
    /// An S3-compatible object store.
    S3,
}

impl Backend {
    /// The lower-case name used in errors, bench ids and skip messages.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Postgres => "postgres",
            Backend::Mysql => "mysql",
            Backend::Redis => "redis",
            Backend::S3 => "s3",
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a dispatch line was not executed, or failed on its backend.
///
/// The first group ([`BadLine`](Self::BadLine) to
/// [`Param`](Self::Param)) is raised before any round trip. A statement in
/// flight on a connection that dies fails once with
/// [`ConnectionLost`](Self::ConnectionLost); the pool replaces the
/// connection for the next line.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// The line did not parse (`convert`'s verdict, naming the field).
    #[error("bad dispatch line: {0}")]
    BadLine(#[from] DispatchError),
    /// The statement's placeholders and the line's params disagree.
    #[error("the statement has {placeholders} placeholder(s) but the line gives {params} param(s)")]
    PlaceholderCount {
        /// Placeholders in the statement (the highest `$n`, or the `?` count).
        placeholders: usize,
        /// Params in the line.
        params: usize,
    },
    /// A param that cannot be bound as the type the server asks for.
    #[error("param {index} (`{type_name}`): {reason}")]
    Param {
        /// 1-based position of the param.
        index: usize,
        /// The parameter type the statement declares.
        type_name: String,
        /// What was wrong with the value.
        reason: String,
    },
    /// The backend could not be reached (refused, no route, bad host).
    #[error("{backend}: cannot reach {endpoint}: {reason}")]
    Unreachable {
        /// Which backend.
        backend: Backend,
        /// Host and port (never the password).
        endpoint: String,
        /// The client's reason.
        reason: String,
    },
    /// A connect, checkout or statement took longer than its timeout.
    #[error("{backend}: {what} timed out after {after:?}")]
    Timeout {
        /// Which backend.
        backend: Backend,
        /// `connect`, `statement`, ...
        what: &'static str,
        /// The configured timeout.
        after: Duration,
    },
    /// The server refused or failed the request, with its own code
    /// (SQLSTATE, MySQL error number, Redis error kind, S3 status).
    #[error("{backend} error {code}: {message}")]
    Server {
        /// Which backend.
        backend: Backend,
        /// The server's code.
        code: String,
        /// The server's message.
        message: String,
    },
    /// The connection died under the request (killed, reset, closed).
    #[error("{backend}: connection lost: {reason}")]
    ConnectionLost {
        /// Which backend.
        backend: Backend,
        /// What the client saw.
        reason: String,
    },
    /// The client failed the request in a way that is neither the server's
    /// error nor a lost connection (a protocol or encoding fault).
    #[error("{backend}: client error: {reason}")]
    Protocol {
        /// Which backend.
        backend: Backend,
        /// The client's message.
        reason: String,
    },
    /// A result column of a type the gateway does not map to a cell.
    #[error("column `{column}`: type `{type_name}` is not mapped to a cell")]
    UnsupportedType {
        /// Column name.
        column: String,
        /// The server's type name.
        type_name: String,
    },
    /// A value that does not decode as its column's type.
    #[error("column `{column}` (`{type_name}`): {reason}")]
    TypeMismatch {
        /// Column name.
        column: String,
        /// The server's type name.
        type_name: String,
        /// What did not decode.
        reason: String,
    },
    /// The rows did not become a record set (`convert`'s verdict).
    #[error(transparent)]
    RecordSet(#[from] RecordSetError),
    /// An object that does not exist (`get`, `head`).
    #[error("s3: object `{key}` not found in bucket `{bucket}`")]
    NotFound {
        /// Bucket.
        bucket: String,
        /// Key.
        key: String,
    },
    /// An operation the backend has no equivalent for.
    #[error("{backend}: operation `{op}` is not supported")]
    Unsupported {
        /// Which backend.
        backend: Backend,
        /// The line's op.
        op: &'static str,
    },
    /// A configuration value (URL, bucket, pool size) that cannot be used.
    #[error("{backend}: bad configuration: {reason}")]
    Config {
        /// Which backend.
        backend: Backend,
        /// What was wrong.
        reason: String,
    },
}
