//! atproto identifier syntax: TID, record key, NSID, DID, handle,
//! at-identifier, AT-URI, datetime, plus the lexicon string formats the
//! interop vectors also cover (CID string syntax, BCP-47 language, URI).
//!
//! Every validator takes the string exactly as given (whitespace is
//! significant: nothing is trimmed) and returns a [`SyntaxError`] naming the
//! rule it broke and, where it is one character, its byte position.
//!
//! Choices where the spec is silent (the interop vectors are the tie-breaker):
//! - NSID: total length <= 317, each segment <= 63, at least three segments;
//!   the domain part is not separately capped at 253 (a valid vector needs
//!   more).
//! - DID: at most 2048 characters; `%` is accepted anywhere but last, and is
//!   not required to start a hex pair (as the vectors' `did:method:val%BB`).
//! - AT-URI: the strict form `at://AUTHORITY[/NSID[/RKEY]]`, no query or
//!   fragment (every fragment vector is in the invalid list), <= 8 KiB.
//! - datetime: [`validate_datetime_syntax`] is the RFC 3339 ∩ ISO 8601
//!   grammar (with `-00:00` rejected); [`validate_datetime`] adds the
//!   calendar checks (month, day-of-month with leap years, hour < 24,
//!   minute < 60, second < 60 — no leap second) and rejects values that
//!   normalise to before year 0.
//! - language: the naive atproto check (primary subtag of 2–3 lowercase
//!   letters, or `i`/`x` singletons, then `-`-separated 1–8 alphanumeric
//!   subtags), plus [`validate_language`]'s duplicate variant / singleton
//!   checks (case-insensitive).
//! - URI: a lowercase scheme of letters, digits, `+`, `.`, `-`, a `:`, then
//!   at least one visible ASCII character and no whitespace; <= 8 KiB.

mod aturi;
mod datetime;
mod ident;
mod misc;
mod tid;

pub use aturi::{AtUri, validate_at_uri};
pub use datetime::{validate_datetime, validate_datetime_syntax};
pub use ident::{
    validate_at_identifier, validate_did, validate_handle, validate_nsid, validate_record_key,
};
pub use misc::{validate_cid_syntax, validate_language, validate_language_syntax, validate_uri};
pub use tid::{Tid, TidGenerator, validate_tid};

/// Why a string is not a valid identifier of some kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {what}: {reason}{}", at(.pos))]
pub struct SyntaxError {
    /// Which syntax (e.g. "DID", "handle").
    pub what: &'static str,
    /// The rule that was broken.
    pub reason: &'static str,
    /// Byte position of the offending character, when it is one character.
    pub pos: Option<usize>,
}

fn at(pos: &Option<usize>) -> String {
    pos.map(|p| format!(" at byte {p}")).unwrap_or_default()
}

impl SyntaxError {
    pub(crate) fn new(what: &'static str, reason: &'static str) -> Self {
        SyntaxError {
            what,
            reason,
            pos: None,
        }
    }

    pub(crate) fn at(what: &'static str, reason: &'static str, pos: usize) -> Self {
        SyntaxError {
            what,
            reason,
            pos: Some(pos),
        }
    }

    pub(crate) fn offset(mut self, by: usize) -> Self {
        self.pos = self.pos.map(|p| p + by);
        self
    }
}
