//! [`KnotError`]: every way a remote operation fails, named after what was
//! wrong, and [`RateLimit`], what a 429 said about when to come back.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What a rate-limited (429) or limit-reporting answer carried.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RateLimit {
    /// `Retry-After`, seconds.
    pub retry_after: Option<u64>,
    /// `RateLimit-Reset`, unix seconds.
    pub reset: Option<u64>,
    /// `RateLimit-Limit`.
    pub limit: Option<u64>,
    /// `RateLimit-Remaining`.
    pub remaining: Option<u64>,
    /// `RateLimit-Policy` (`<limit>;w=<seconds>`).
    pub policy: Option<String>,
    /// The server's message.
    pub message: String,
}

impl RateLimit {
    /// When the client may write again (unix seconds): the later of
    /// `Retry-After` (from `now`) and `RateLimit-Reset`; `None` when the
    /// answer said neither.
    pub fn retry_at(&self, now: SystemTime) -> Option<u64> {
        let now = now
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO)
            .as_secs();
        let a = self.retry_after.map(|s| now.saturating_add(s));
        match (a, self.reset) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    /// "after 2026-12-05 10:31:07 UTC (in 3600 s)" or "later (the server gave no time)".
    pub fn when(&self) -> String {
        let now = SystemTime::now();
        match self.retry_at(now) {
            Some(at) => {
                let secs = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
                format!("after {} (in {} s)", utc(at), at.saturating_sub(secs))
            }
            None => "later (the server gave no time)".to_owned(),
        }
    }
}

/// Unix seconds as `YYYY-MM-DD HH:MM:SS UTC` (the calendar is
/// `codec::datetime`'s).
pub fn utc(secs: u64) -> String {
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    let (y, m, d) = codec::datetime::civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// A failed remote operation.
#[derive(Debug, thiserror::Error)]
pub enum KnotError {
    /// The remote URL does not parse.
    #[error("invalid remote URL {url:?}: {why}")]
    Url { url: String, why: String },
    /// No credentials for a write.
    #[error("no credentials: {0}")]
    Credentials(String),
    /// A handle or DID that does not resolve to a PDS.
    #[error("cannot resolve {what}: {why}")]
    Resolve { what: String, why: String },
    /// The connection failed or timed out.
    #[error("{op}: transport error: {why}")]
    Transport { op: String, why: String },
    /// The server answered with an XRPC error.
    #[error("{op}: server said {status} {error}: {message}")]
    Xrpc {
        op: String,
        status: u16,
        error: String,
        message: String,
    },
    /// The server refused for a rate limit (429).
    #[error("{op}: rate limited ({}); try again {}", .limit.message, .limit.when())]
    RateLimited { op: String, limit: Box<RateLimit> },
    /// An answer that is not what the method returns.
    #[error("{op}: malformed answer: {why}")]
    BadResponse { op: String, why: String },
    /// An answer longer than the bound for its kind.
    #[error("{op}: answer larger than {limit} bytes")]
    TooLarge { op: String, limit: usize },
    /// Bytes whose hash is not the one they were named by.
    #[error("{what}: content hash mismatch (expected {expected}, got {got})")]
    HashMismatch {
        what: String,
        expected: String,
        got: String,
    },
    /// A record of ours that does not follow its lexicon.
    #[error("invalid {what} record: {why}")]
    Record { what: String, why: String },
    /// A git subprocess failed.
    #[error("git {cmd}: {why}")]
    Git { cmd: String, why: String },
    /// Local I/O (state file, pipes).
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A line of the remote-helper protocol git should not send.
    #[error("protocol: {0}")]
    Protocol(String),
}

impl KnotError {
    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        KnotError::Io {
            what: what.into(),
            source,
        }
    }

    pub(crate) fn bad(op: &str, why: impl Into<String>) -> Self {
        KnotError::BadResponse {
            op: op.to_owned(),
            why: why.into(),
        }
    }

    /// The XRPC error name, when the server sent one.
    pub fn xrpc_name(&self) -> Option<&str> {
        match self {
            KnotError::Xrpc { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// The crate's result.
pub type Result<T, E = KnotError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_renders_known_instants() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(1_796_470_267), "2026-12-05 11:31:07 UTC");
    }

    #[test]
    fn retry_at_takes_the_later_bound() {
        let now = UNIX_EPOCH + Duration::from_secs(1000);
        let l = RateLimit {
            retry_after: Some(10),
            reset: Some(2000),
            ..Default::default()
        };
        assert_eq!(l.retry_at(now), Some(2000));
        let l = RateLimit {
            retry_after: Some(10),
            ..Default::default()
        };
        assert_eq!(l.retry_at(now), Some(1010));
        assert_eq!(RateLimit::default().retry_at(now), None);
    }
}
