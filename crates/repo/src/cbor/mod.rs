//! Strict DAG-CBOR for the atproto data model, and its atproto JSON form.
//!
//! What this module owns:
//! - [`Reader`]: a zero-copy, strict, position-reporting reader of CBOR items
//!   (the building block of every typed decoder in the crate: MST nodes,
//!   commits, CAR headers, firehose frames);
//! - [`ValueRef`]: the borrowed value tree (`&str`/`&[u8]` point into the
//!   input), decoded by [`decode`]; [`Value`]: the owned tree, decoded by
//!   [`decode_owned`];
//! - [`Encoder`] helpers and [`encode`]/[`to_vec`] for both trees;
//! - [`json`]: rendering to atproto JSON (`$bytes`, `$link`) and parsing it
//!   back with the data-model checks.
//!
//! Strictness (the decoder rejects, with the byte position of the offending
//! item): floats, `undefined` and other simple values, indefinite lengths,
//! non-minimal integer/length heads, tags other than 42, links that are not
//! `0x00 || CIDv1` byte strings, integers outside i64, invalid UTF-8, map keys
//! that are not text, duplicate or unsorted map keys (sorted by length, then
//! bytewise), nesting deeper than [`MAX_DEPTH`], lengths past the end of the
//! input, and trailing bytes after the top-level value.
//!
//! Choices where the spec is silent: the depth limit is 64 nested containers;
//! a link must be a CID this crate's [`Cid`](crate::Cid) accepts (v1, sha2-256,
//! dag-cbor or raw), so other CIDs are rejected rather than carried opaquely.

mod decode;
mod encode;
pub mod json;
mod reader;
mod value;

use std::cmp::Ordering;

pub use decode::{decode, decode_owned, decode_prefix};
pub use encode::{Encoder, encode, encode_ref, to_vec, to_vec_ref};
pub use reader::{Reader, Type};
pub use value::{Map, MapRef, Value, ValueRef};

use crate::cid::CidError;

/// Deepest nesting of lists and maps the decoder accepts.
pub const MAX_DEPTH: usize = 64;

/// A strict-decoding failure: what went wrong and at which byte offset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} at byte {pos}")]
pub struct DecodeError {
    /// Byte offset (into the decoded buffer) of the item that failed.
    pub pos: usize,
    /// What went wrong.
    pub kind: DecodeErrorKind,
}

/// The reasons a strict DAG-CBOR decode can fail.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeErrorKind {
    /// The input ended inside an item.
    #[error("unexpected end of input")]
    UnexpectedEof,
    /// A byte/text/list/map length reaches past the end of the input.
    #[error("length {0} reaches past the end of the input")]
    LengthPastEnd(u64),
    /// Bytes remain after the top-level value.
    #[error("{0} trailing bytes")]
    TrailingBytes(usize),
    /// An integer or length not in its shortest form.
    #[error("non-minimal integer or length encoding")]
    NonMinimal,
    /// An indefinite-length string, list or map.
    #[error("indefinite length")]
    Indefinite,
    /// A stray break (0xff).
    #[error("unexpected break")]
    UnexpectedBreak,
    /// Additional information 28..30 (reserved).
    #[error("reserved additional information {0}")]
    Reserved(u8),
    /// A floating point number (not allowed in the atproto data model).
    #[error("floats are not allowed")]
    Float,
    /// `undefined` or another simple value than false/true/null.
    #[error("unsupported simple value {0}")]
    Simple(u8),
    /// A tag other than 42.
    #[error("unsupported tag {0}")]
    Tag(u64),
    /// Tag 42 not followed by a byte string.
    #[error("tag 42 must wrap a byte string")]
    LinkNotBytes,
    /// Tag 42 byte string without the 0x00 multibase prefix.
    #[error("link missing its 0x00 prefix")]
    LinkPrefix,
    /// Tag 42 over bytes that are not a supported CID.
    #[error("bad link: {0}")]
    Link(CidError),
    /// An integer outside the i64 range.
    #[error("integer outside the i64 range")]
    IntRange,
    /// Text that is not UTF-8.
    #[error("invalid UTF-8")]
    Utf8,
    /// A map key that is not a text string.
    #[error("map key is not a text string")]
    NonTextKey,
    /// The same map key twice.
    #[error("duplicate map key {0:?}")]
    DuplicateKey(String),
    /// Map keys not in length-then-bytewise order.
    #[error("map key {0:?} out of canonical order")]
    UnsortedKey(String),
    /// Lists/maps nested deeper than [`MAX_DEPTH`].
    #[error("nesting deeper than {MAX_DEPTH}")]
    TooDeep,
    /// A typed read found another type.
    #[error("expected {expected}, found {found}")]
    Unexpected {
        /// What the caller wanted.
        expected: &'static str,
        /// What the input holds.
        found: &'static str,
    },
}

/// DAG-CBOR map key order: shorter first, then bytewise.
#[inline]
pub fn key_cmp(a: &str, b: &str) -> Ordering {
    a.len()
        .cmp(&b.len())
        .then_with(|| a.as_bytes().cmp(b.as_bytes()))
}
