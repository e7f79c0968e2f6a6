//! Errors: [`XrpcError`], what a request answers with (`{"error": Name,
//! "message": ...}` and a status), the store's errors mapped to lexicon
//! names, and [`ServerError`], what starting or running the server fails
//! with.
//!
//! # Two names for a 401
//!
//! A request without a valid access or refresh token is `AuthRequired`
//! ([`XrpcError::auth_required`]): the spec's name for it. A login refused
//! by `createSession` (unknown identifier or wrong password) is
//! `AuthenticationRequired` ([`XrpcError::login_refused`]): the lexicon of
//! `com.atproto.server.createSession` lists only `AccountTakedown` and
//! `AuthFactorTokenRequired`, so the name is the reference PDS's, whose
//! `AuthRequiredError('Invalid identifier or password')` carries no custom
//! name and so answers with the generic name of status 401. Both are
//! status 401; the name tells a refused login from a missing session (the
//! tests and the official-client script check both).

use http::StatusCode;
use store::StoreError;

/// Starting or running the server failed.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The store could not be opened.
    #[error("store: {0}")]
    Store(#[from] StoreError),
    /// The account file failed.
    #[error("account file: {0}")]
    Accounts(#[from] rusqlite::Error),
    /// Binding, accepting or a file.
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    /// Anything else at startup (a bad secret file, a bad option).
    #[error("startup: {0}")]
    Startup(String),
}

/// An XRPC error answer.
#[derive(Debug, Clone)]
pub struct XrpcError {
    /// HTTP status.
    pub status: StatusCode,
    /// The lexicon's error name.
    pub error: &'static str,
    /// Human-readable detail.
    pub message: String,
}

/// A handler's result.
pub type XResult<T> = Result<T, XrpcError>;

impl XrpcError {
    /// An error of any status and name.
    pub fn new(status: StatusCode, error: &'static str, message: impl Into<String>) -> Self {
        XrpcError {
            status,
            error,
            message: message.into(),
        }
    }

    /// 400 `InvalidRequest`.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "InvalidRequest", message)
    }

    /// 400 with a lexicon error name.
    pub fn bad(error: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, error, message)
    }

    /// 401 `AuthRequired`.
    pub fn auth_required(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "AuthRequired", message)
    }

    /// 401 `AuthenticationRequired`: a `createSession` login refused (see
    /// the module doc for why it is not `AuthRequired`).
    pub fn login_refused() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "AuthenticationRequired",
            "Invalid identifier or password",
        )
    }

    /// 500 `InternalServerError`.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalServerError",
            message,
        )
    }

    /// 500 `InternalServerError` from a failure the client cannot fix (the
    /// account file, randomness, a header): `.map_err(XrpcError::fault)`.
    pub fn fault(e: impl std::fmt::Display) -> Self {
        Self::internal(e.to_string())
    }

    /// 413 `PayloadTooLarge`.
    pub fn too_large(message: impl Into<String>) -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, "PayloadTooLarge", message)
    }

    /// The JSON body.
    pub fn body(&self) -> String {
        let mut out = String::with_capacity(48 + self.message.len());
        out.push_str("{\"error\":");
        repo::cbor::json::push_json_str(self.error, &mut out);
        out.push_str(",\"message\":");
        repo::cbor::json::push_json_str(&self.message, &mut out);
        out.push('}');
        out
    }
}

/// The message of an `InvalidSwap`, worded as the reference PDS words it
/// (its `BadCommitSwapError` / `BadRecordSwapError`): "Commit was at
/// <cid>" for `swapCommit`, "Record was at <cid>" (or "... at null" when
/// the record does not exist) for `swapRecord`. A client can take the
/// current CID from it instead of reading the record again.
fn swap_message(what: &str, found: Option<&repo::Cid>) -> String {
    let at = found.map_or_else(|| "null".to_owned(), ToString::to_string);
    if what == "commit" {
        format!("Commit was at {at}")
    } else {
        format!("Record was at {at}")
    }
}

impl From<StoreError> for XrpcError {
    fn from(e: StoreError) -> Self {
        use StoreError as E;
        match e {
            E::Syntax(_)
            | E::RecordDecode(_)
            | E::InvalidRecord(_)
            | E::RecordTooLarge { .. }
            | E::InvalidMime(_)
            | E::InvalidBatch(_)
            | E::RecordExists(_)
            | E::InvalidAccountStatus(_) => XrpcError::invalid(e.to_string()),
            E::BlobTooLarge { .. } => XrpcError::too_large(e.to_string()),
            E::InvalidSwap { what, found, .. } => {
                XrpcError::bad("InvalidSwap", swap_message(&what, found.as_ref()))
            }
            E::UnknownAccount(_) => XrpcError::bad("RepoNotFound", e.to_string()),
            E::RecordNotFound(_) => XrpcError::bad("RecordNotFound", e.to_string()),
            // The reference's `InvalidRequestError(..., 'BlobNotFound')`.
            E::BlobNotFound(_) => XrpcError::bad("BlobNotFound", e.to_string()),
            E::ReadOnlyAccount(_) => {
                XrpcError::new(StatusCode::FORBIDDEN, "RepoDeactivated", e.to_string())
            }
            E::AccountExists(_) => XrpcError::bad("HandleNotAvailable", e.to_string()),
            other => XrpcError::internal(other.to_string()),
        }
    }
}

impl From<repo::syntax::SyntaxError> for XrpcError {
    fn from(e: repo::syntax::SyntaxError) -> Self {
        XrpcError::invalid(e.to_string())
    }
}
