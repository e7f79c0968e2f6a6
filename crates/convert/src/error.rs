//! The crate's typed errors. Every error that comes from input names the
//! field (or the path inside a JSON value) it is about.

use std::fmt;

/// One step of a path into a JSON value: an object key or an array index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathSegment {
    /// An object key.
    Key(String),
    /// An array index.
    Index(usize),
}

/// A path into a JSON value, e.g. `counts.views` or `tags[2]`; empty for
/// the value itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JsonPath(pub Vec<PathSegment>);

impl JsonPath {
    /// Puts `segment` in front (paths are built while unwinding).
    pub(crate) fn prepend(&mut self, segment: PathSegment) {
        self.0.insert(0, segment);
    }
}

impl fmt::Display for JsonPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("$");
        }
        for (i, segment) in self.0.iter().enumerate() {
            match segment {
                PathSegment::Key(key) if i == 0 => f.write_str(key)?,
                PathSegment::Key(key) => write!(f, ".{key}")?,
                PathSegment::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}

/// A JSON number that a protobuf `NumberValue` (an f64) cannot hold
/// exactly: an integer past 2^53 that is not a multiple of a power of two
/// large enough to survive the rounding.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("number {number} at `{path}` loses precision as a protobuf NumberValue (f64)")]
pub struct PrecisionLoss {
    /// Where the number is.
    pub path: JsonPath,
    /// The number as it was written.
    pub number: String,
}

/// Why a JSON text could not be converted straight into a `Struct`
/// ([`crate::struct_from_json_str`]).
#[derive(Debug, thiserror::Error)]
pub enum TextError {
    /// Not well-formed JSON (position in the message).
    #[error("invalid JSON: {0}")]
    Syntax(#[source] serde_json::Error),
    /// Well-formed JSON whose top level is not an object.
    #[error("the top-level JSON value is not an object")]
    NotAnObject,
    /// An integer that an f64 cannot hold exactly.
    #[error(transparent)]
    PrecisionLoss(#[from] PrecisionLoss),
}

/// Why a dispatch line (SQL, object or REST) or its inline payload was
/// rejected. Errors about one field name it (the canonical name, not the
/// alias that was used).
#[derive(Debug, thiserror::Error)]
pub enum DispatchError {
    /// Not well-formed JSON outside any known field (position in the
    /// message), e.g. truncated, or trailing bytes after the object.
    #[error("invalid JSON: {0}")]
    Syntax(#[source] serde_json::Error),
    /// Well-formed JSON whose top level is not an object.
    #[error("the dispatch line is not a JSON object")]
    NotAnObject,
    /// A required field is absent.
    #[error("missing field `{field}`")]
    MissingField {
        /// Canonical field name.
        field: &'static str,
    },
    /// A field appears twice, possibly under two aliases.
    #[error("field `{field}` is given more than once")]
    DuplicateField {
        /// Canonical field name.
        field: &'static str,
    },
    /// A field has the wrong JSON type or is malformed inside.
    #[error("field `{field}`: {reason}")]
    InvalidField {
        /// Canonical field name.
        field: &'static str,
        /// What was wrong, from the parser.
        reason: String,
    },
    /// A field holds a string that is not one of the accepted values.
    #[error("field `{field}`: unsupported value {value:?}")]
    UnsupportedValue {
        /// Canonical field name.
        field: &'static str,
        /// The value as given.
        value: String,
    },
    /// An inline base64 payload that does not decode.
    #[error("field `{field}`: {source}")]
    Base64 {
        /// The payload field as given (`data_base64` or `content_base64`).
        field: &'static str,
        /// The codec's verdict.
        #[source]
        source: codec::Base64Error,
    },
    /// An inline payload over the cap ([`crate::INLINE_PAYLOAD_CAP`]).
    #[error("field `{field}`: inline payload of {len} bytes is over the {cap}-byte cap")]
    PayloadTooLarge {
        /// The payload field as given.
        field: &'static str,
        /// Decoded length in bytes.
        len: usize,
        /// The cap in bytes.
        cap: usize,
    },
}
