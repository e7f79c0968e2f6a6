//! Object-store dispatch lines and their inline payloads.
//!
//! `{"op", "bucket"|"container", "key"|"object", "content_type"?,
//! "data_base64"|"content_base64"|"data_text"|"content_text"}`. Parsing
//! keeps the payload as the text it came in; [`object_bytes_from_json`]
//! turns it into bytes (base64 through `codec`), refusing anything over
//! [`INLINE_PAYLOAD_CAP`].
//!
//! # Two passes, one result
//!
//! A line is read first by a single-pass scanner on the strict cursor of
//! [`super::scan`]: the fields are found without a DOM or serde's visitor
//! machinery, and the payload (most of a line's bytes) is found with a
//! block scan and copied once. The scanner only ever accepts; at anything
//! it does not take (malformed JSON, a missing, repeated, blank or
//! wrongly typed field, an unknown `op`, a lone surrogate escape) it
//! declines, and the line is parsed again by the serde visitor
//! ([`parse_object_visitor`]), the reference, which returns the request or
//! the typed error naming the field. Property and fuzz tests
//! (`scan_tests.rs`) check that whatever the scanner accepts, the visitor
//! accepts with the same request.

use std::fmt;

use serde::de::{IgnoredAny, MapAccess, Visitor};

use super::scan::{Cursor, MAX_DEPTH};
use super::{FieldKey, FieldName, Slot, Text, fail, once, required, resolve, run, value};
use crate::error::DispatchError;

/// The largest inline payload accepted, decoded: 1 MiB.
pub const INLINE_PAYLOAD_CAP: usize = 1 << 20;

/// What an object request does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectOp {
    /// `put`: create or replace.
    Put,
    /// `upsert`: create or replace, idempotently.
    Upsert,
    /// `append`: add to the end.
    Append,
    /// `get`: read.
    Get,
    /// `delete`: remove.
    Delete,
    /// `head`: metadata (size, entity tag) without the bytes.
    Head,
    /// `list`: the objects under the line's key taken as a prefix.
    List,
}

impl ObjectOp {
    /// The op named `name` (lower case, as on the wire).
    pub fn parse(name: &str) -> Option<ObjectOp> {
        Some(match name {
            "put" => ObjectOp::Put,
            "upsert" => ObjectOp::Upsert,
            "append" => ObjectOp::Append,
            "get" => ObjectOp::Get,
            "delete" => ObjectOp::Delete,
            "head" => ObjectOp::Head,
            "list" => ObjectOp::List,
            _ => return None,
        })
    }

    /// Whether the op writes, and so needs a payload.
    pub fn writes(self) -> bool {
        matches!(self, ObjectOp::Put | ObjectOp::Upsert | ObjectOp::Append)
    }
}

/// How an inline payload is written in the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadEncoding {
    /// `data_base64` / `content_base64`: padded standard base64.
    Base64,
    /// `data_text` / `content_text`: the bytes are the string's UTF-8.
    Text,
}

/// An inline payload as it came in the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InlinePayload {
    /// The field it came in (`data_base64`, `content_base64`, `data_text`
    /// or `content_text`), for error messages.
    pub field: &'static str,
    /// How `data` encodes the bytes.
    pub encoding: PayloadEncoding,
    /// The string value of the field.
    pub data: String,
}

/// A parsed object dispatch line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectDispatch {
    /// The operation.
    pub op: ObjectOp,
    /// `bucket` (alias `container`).
    pub bucket: String,
    /// `key` (alias `object`).
    pub object: String,
    /// `content_type`, when given and not `null`.
    pub content_type: Option<String>,
    /// The inline payload; always present for writing ops.
    pub payload: Option<InlinePayload>,
}

enum Field {
    Op,
    Bucket,
    Object,
    ContentType,
    Payload(&'static str, PayloadEncoding),
    Other,
}

impl FieldName for Field {
    fn from_name(name: &str) -> Self {
        match name {
            "op" => Field::Op,
            "bucket" | "container" => Field::Bucket,
            "key" | "object" => Field::Object,
            "content_type" => Field::ContentType,
            "data_base64" => Field::Payload("data_base64", PayloadEncoding::Base64),
            "content_base64" => Field::Payload("content_base64", PayloadEncoding::Base64),
            "data_text" => Field::Payload("data_text", PayloadEncoding::Text),
            "content_text" => Field::Payload("content_text", PayloadEncoding::Text),
            _ => Field::Other,
        }
    }
}

struct ObjectVisitor<'s> {
    slot: &'s mut Slot,
}

fn non_blank<E: serde::de::Error>(
    v: String,
    field: &'static str,
    slot: &mut Slot,
) -> Result<String, E> {
    if v.trim().is_empty() {
        return Err(fail(
            slot,
            DispatchError::InvalidField {
                field,
                reason: "blank".to_owned(),
            },
        ));
    }
    Ok(v)
}

impl<'de> Visitor<'de> for ObjectVisitor<'_> {
    type Value = ObjectDispatch;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object dispatch object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ObjectDispatch, A::Error> {
        let slot = self.slot;
        let mut op = None;
        let mut bucket = None;
        let mut object = None;
        let mut content_type: Option<Option<String>> = None;
        let mut payload = None;
        while let Some(FieldKey(field)) = map.next_key::<FieldKey<Field>>()? {
            match field {
                Field::Op => {
                    let Text(name) = value(&mut map, "op", slot)?;
                    let Some(v) = ObjectOp::parse(&name) else {
                        return Err(fail(
                            slot,
                            DispatchError::UnsupportedValue {
                                field: "op",
                                value: name.into_owned(),
                            },
                        ));
                    };
                    once(&mut op, v, "op", slot)?;
                }
                Field::Bucket => {
                    let v = non_blank(value(&mut map, "bucket", slot)?, "bucket", slot)?;
                    once(&mut bucket, v, "bucket", slot)?;
                }
                Field::Object => {
                    let v = non_blank(value(&mut map, "key", slot)?, "key", slot)?;
                    once(&mut object, v, "key", slot)?;
                }
                Field::ContentType => {
                    let v: Option<String> = value(&mut map, "content_type", slot)?;
                    once(&mut content_type, v, "content_type", slot)?;
                }
                Field::Payload(name, encoding) => {
                    let data: String = value(&mut map, name, slot)?;
                    let v = InlinePayload {
                        field: name,
                        encoding,
                        data,
                    };
                    once(&mut payload, v, name, slot)?;
                }
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let op = required(op, "op", slot)?;
        let bucket = required(bucket, "bucket", slot)?;
        let object = required(object, "key", slot)?;
        if op.writes() && payload.is_none() {
            return Err(fail(
                slot,
                DispatchError::MissingField {
                    field: "data_base64",
                },
            ));
        }
        Ok(ObjectDispatch {
            op,
            bucket,
            object,
            content_type: content_type.flatten(),
            payload,
        })
    }
}

/// Parses one object dispatch line (aliases as in the module docs; unknown
/// fields are ignored). The payload is kept as text; decode it with
/// [`object_bytes_from_json`].
///
/// # Errors
/// [`DispatchError`] naming the field: a required field missing, blank or
/// of the wrong type, an unknown `op`, a field or two payload fields given
/// twice, a writing op without a payload (named `data_base64`), or the line
/// is not a JSON object.
pub fn parse_object_dispatch(line: &str) -> Result<ObjectDispatch, DispatchError> {
    match scan_object(line) {
        Some(request) => Ok(request),
        None => parse_object_visitor(line),
    }
}

/// The reference parse of an object line: one serde pass with the
/// visitor, every fault a typed error. [`parse_object_dispatch`] falls
/// back to it whenever [`scan_object`] declines.
pub fn parse_object_visitor(line: &str) -> Result<ObjectDispatch, DispatchError> {
    let mut slot = None;
    let result = run(line, ObjectVisitor { slot: &mut slot });
    resolve(line, result, slot)
}

/// Stores `v` in an empty `place`; `None` (decline) when the field was
/// already given.
#[inline]
fn set_once<T>(place: &mut Option<T>, v: T) -> Option<()> {
    if place.is_some() {
        return None;
    }
    *place = Some(v);
    Some(())
}

/// A string field that is not blank, owned.
#[inline]
fn non_blank_string(c: &mut Cursor<'_>) -> Option<String> {
    let v = c.string()?;
    (!v.trim().is_empty()).then(|| v.into_owned())
}

/// The fast path of [`parse_object_dispatch`]: a well-formed object line
/// read in one pass with the strict cursor; `None` (decline) for anything
/// else, which [`parse_object_visitor`] then reports (see the module docs).
pub(crate) fn scan_object(line: &str) -> Option<ObjectDispatch> {
    let mut c = Cursor::new(line);
    c.expect(b'{')?;
    let mut op = None;
    let mut bucket = None;
    let mut object = None;
    let mut content_type: Option<Option<String>> = None;
    let mut payload = None;
    let mut more = !c.eat(b'}');
    while more {
        let key = c.string()?;
        c.expect(b':')?;
        match Field::from_name(&key) {
            Field::Op => {
                let name = c.string()?;
                set_once(&mut op, ObjectOp::parse(&name)?)?;
            }
            Field::Bucket => set_once(&mut bucket, non_blank_string(&mut c)?)?,
            Field::Object => set_once(&mut object, non_blank_string(&mut c)?)?,
            Field::ContentType => {
                let v = if c.eat_literal(b"null") {
                    None
                } else {
                    Some(c.string()?.into_owned())
                };
                set_once(&mut content_type, v)?;
            }
            Field::Payload(field, encoding) => {
                let data = c.string()?.into_owned();
                set_once(
                    &mut payload,
                    InlinePayload {
                        field,
                        encoding,
                        data,
                    },
                )?;
            }
            Field::Other => c.skip_value(MAX_DEPTH)?,
        }
        more = c.more(b'}')?;
    }
    if !c.at_end() {
        return None;
    }
    let op = op?;
    if op.writes() && payload.is_none() {
        return None;
    }
    Some(ObjectDispatch {
        op,
        bucket: bucket?,
        object: object?,
        content_type: content_type.flatten(),
        payload,
    })
}

/// The decoded length of `payload`, or an upper bound that is exact for
/// well-formed base64.
fn decoded_len(payload: &InlinePayload) -> usize {
    match payload.encoding {
        PayloadEncoding::Text => payload.data.len(),
        PayloadEncoding::Base64 => {
            let text = payload.data.as_bytes();
            let pad = text.iter().rev().take(2).filter(|&&b| b == b'=').count();
            (text.len() / 4 * 3).saturating_sub(pad)
        }
    }
}

/// Appends the bytes of `payload` to `out` (base64 decoded through
/// `codec`, text copied). On error `out` is left as it was.
///
/// # Errors
/// [`DispatchError::PayloadTooLarge`] when the decoded size is over
/// [`INLINE_PAYLOAD_CAP`] (checked before decoding);
/// [`DispatchError::Base64`] for invalid base64. Both name the field.
pub fn object_bytes_into(payload: &InlinePayload, out: &mut Vec<u8>) -> Result<(), DispatchError> {
    let len = decoded_len(payload);
    if len > INLINE_PAYLOAD_CAP {
        return Err(DispatchError::PayloadTooLarge {
            field: payload.field,
            len,
            cap: INLINE_PAYLOAD_CAP,
        });
    }
    match payload.encoding {
        PayloadEncoding::Text => {
            out.extend_from_slice(payload.data.as_bytes());
            Ok(())
        }
        PayloadEncoding::Base64 => {
            out.reserve(len);
            codec::base64::decode_into(payload.data.as_bytes(), out).map_err(|source| {
                DispatchError::Base64 {
                    field: payload.field,
                    source,
                }
            })
        }
    }
}

/// The bytes of an inline payload from a parsed object line, in a buffer
/// of exactly their size. See [`object_bytes_into`].
///
/// # Errors
/// As [`object_bytes_into`].
pub fn object_bytes_from_json(payload: &InlinePayload) -> Result<Vec<u8>, DispatchError> {
    let mut out = Vec::new();
    object_bytes_into(payload, &mut out)?;
    Ok(out)
}
