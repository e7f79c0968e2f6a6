//! The [`Executor`] trait (one per backend) and what a line returns
//! ([`Outcome`]).

use std::future::Future;
use std::time::Duration;

use convert::RecordSet;

use crate::error::{Backend, GatewayError};

/// What one executed line produced.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A statement with result columns (`SELECT`, `... RETURNING`): its
    /// record set, built by `convert::rows_to_record_set`.
    Rows(RecordSet),
    /// A statement without result columns: the rows it affected.
    Affected(u64),
    /// An object request's result.
    Object(ObjectOutcome),
    /// A key-value request's result.
    Kv(KvOutcome),
}

/// One object of a `list` answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectEntry {
    /// The key (without the bucket).
    pub key: String,
    /// Size in bytes.
    pub size: u64,
    /// The server's entity tag, when it sent one.
    pub e_tag: Option<String>,
}

/// What an object request returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ObjectOutcome {
    /// `put` / `upsert`: stored.
    Stored {
        /// The entity tag of the stored object, when the server sent one.
        e_tag: Option<String>,
        /// Bytes stored.
        size: u64,
    },
    /// `get`: the object's bytes and content type.
    Got {
        /// The object's bytes.
        bytes: bytes::Bytes,
        /// Its `Content-Type`, when stored with one.
        content_type: Option<String>,
    },
    /// `head`: the object's metadata.
    Head(ObjectEntry),
    /// `delete`: removed (S3 answers the same whether or not it existed).
    Deleted,
    /// `list`: the objects whose key starts with the line's key, in key order.
    Listed(Vec<ObjectEntry>),
}

/// What a key-value request returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KvOutcome {
    /// `get`: the value, or `None` when the key is absent.
    Value(Option<Vec<u8>>),
    /// `mget`: one value (or `None`) per key, in the line's order.
    Values(Vec<Option<Vec<u8>>>),
    /// `set`: stored.
    Stored,
    /// `del`: how many of the keys existed.
    Deleted(u64),
}

/// One backend's executor: parses a dispatch line into its request, then
/// runs the request on the backend and converts the answer.
///
/// Parsing is separate so a caller can reject a line (and a benchmark can
/// time the parse) without a round trip; [`run_line`](Self::run_line) does
/// both.
pub trait Executor: Send + Sync {
    /// A parsed, validated line of this backend.
    type Request: Send + Sync;

    /// Which backend this executor talks to.
    fn backend(&self) -> Backend;

    /// Parses and validates `line`; nothing is sent.
    ///
    /// # Errors
    /// [`GatewayError::BadLine`], [`GatewayError::PlaceholderCount`].
    fn parse(&self, line: &str) -> Result<Self::Request, GatewayError>;

    /// Runs `request` on the backend.
    ///
    /// # Errors
    /// Any [`GatewayError`] raised on the way: checkout, round trip,
    /// conversion of the answer.
    fn execute(
        &self,
        request: &Self::Request,
    ) -> impl Future<Output = Result<Outcome, GatewayError>> + Send;

    /// Parses `line` and runs it.
    ///
    /// # Errors
    /// As [`parse`](Self::parse), then as [`execute`](Self::execute).
    fn run_line(&self, line: &str) -> impl Future<Output = Result<Outcome, GatewayError>> + Send {
        let parsed = self.parse(line);
        async move {
            let request = parsed?;
            self.execute(&request).await
        }
    }
}

/// `work`, or [`GatewayError::Timeout`] naming `what` when it takes longer
/// than `limit`: the client-side deadline every executor puts on a line.
pub(crate) async fn within<F>(
    backend: Backend,
    what: &'static str,
    limit: Duration,
    work: F,
) -> Result<Outcome, GatewayError>
where
    F: Future<Output = Result<Outcome, GatewayError>>,
{
    tokio::time::timeout(limit, work)
        .await
        .unwrap_or(Err(GatewayError::Timeout {
            backend,
            what,
            after: limit,
        }))
}
