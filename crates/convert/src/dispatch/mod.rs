//! Dispatch-line parsing: one JSON object per line, one request each.
//!
//! | line | parser | result |
//! |---|---|---|
//! | `{"sql", "params"\|"parameters"?}` | [`parse_sql_dispatch`] | [`SqlDispatch`] |
//! | `{"op", "bucket"\|"container", "key"\|"object", "content_type"?, payload}` | [`parse_object_dispatch`] | [`ObjectDispatch`] |
//! | `{"path", "method"?, "body"?}` | [`parse_rest_dispatch`], [`parse_rest_dispatch_value`] | [`RestDispatch`] |
//!
//! Each parser is a single serde pass over the line with a hand-written
//! visitor: keys are matched without being allocated, only the fields the
//! request keeps become owned values, and unknown fields are skipped. A
//! fault is a [`DispatchError`] naming the canonical field (the visitor
//! parks the typed error in a slot, since serde's error type cannot carry
//! it). Nothing input-dependent panics.
//!
//! Object lines, mostly one long base64 string, are read first by a
//! scanner on a strict JSON cursor (`scan`), which finds the fields without
//! serde and declines anything it does not take; the visitor then parses
//! the declined line and reports (`object` module docs).

pub(crate) mod object;
pub(crate) mod rest;
mod scan;
mod sql;

use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};

pub use object::{
    INLINE_PAYLOAD_CAP, InlinePayload, ObjectDispatch, ObjectOp, PayloadEncoding,
    object_bytes_from_json, object_bytes_into, parse_object_dispatch,
};
pub use rest::{Method, RestBody, RestDispatch, parse_rest_dispatch, parse_rest_dispatch_value};
pub use sql::{SqlDispatch, parse_sql_dispatch};

use crate::error::DispatchError;

/// Where a visitor parks the typed error it raised.
pub(crate) type Slot = Option<DispatchError>;

/// Parks `err` and returns the serde error that unwinds the parse.
#[cold]
pub(crate) fn fail<E: de::Error>(slot: &mut Slot, err: DispatchError) -> E {
    *slot = Some(err);
    E::custom("dispatch field error")
}

/// The next value as `T`; a failure is parked as
/// [`DispatchError::InvalidField`] naming `field`.
#[inline]
pub(crate) fn value<'de, A, T>(
    map: &mut A,
    field: &'static str,
    slot: &mut Slot,
) -> Result<T, A::Error>
where
    A: MapAccess<'de>,
    T: Deserialize<'de>,
{
    map.next_value::<T>().inspect_err(|e| {
        if slot.is_none() {
            *slot = Some(DispatchError::InvalidField {
                field,
                reason: e.to_string(),
            });
        }
    })
}

/// Stores `v` in `place`, refusing a second occurrence of `field`.
#[inline]
pub(crate) fn once<T, E: de::Error>(
    place: &mut Option<T>,
    v: T,
    field: &'static str,
    slot: &mut Slot,
) -> Result<(), E> {
    if place.is_some() {
        return Err(fail(slot, DispatchError::DuplicateField { field }));
    }
    *place = Some(v);
    Ok(())
}

/// The required `place`, or [`DispatchError::MissingField`].
#[inline]
pub(crate) fn required<T, E: de::Error>(
    place: Option<T>,
    field: &'static str,
    slot: &mut Slot,
) -> Result<T, E> {
    match place {
        Some(v) => Ok(v),
        None => Err(fail(slot, DispatchError::MissingField { field })),
    }
}

/// A set of field names a visitor recognises (aliases map to one variant).
pub(crate) trait FieldName: Sized {
    /// The variant for `name` (an "other" variant for unknown names).
    fn from_name(name: &str) -> Self;
}

/// A map key decoded to `K` without allocating.
pub(crate) struct FieldKey<K>(pub K);

impl<'de, K: FieldName> Deserialize<'de> for FieldKey<K> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor<K>(PhantomData<K>);
        impl<K: FieldName> Visitor<'_> for KeyVisitor<K> {
            type Value = FieldKey<K>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_str<E: de::Error>(self, name: &str) -> Result<FieldKey<K>, E> {
                Ok(FieldKey(K::from_name(name)))
            }
        }
        d.deserialize_identifier(KeyVisitor(PhantomData))
    }
}

/// A string field borrowed from the line when it has no escapes.
pub(crate) struct Text<'de>(pub std::borrow::Cow<'de, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(std::borrow::Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Text<'de>, E> {
                Ok(Text(std::borrow::Cow::Owned(s.to_owned())))
            }
        }
        d.deserialize_str(TextVisitor)
    }
}

/// Runs `visitor` over `line` as a JSON object with nothing after it.
pub(crate) fn run<'de, V: Visitor<'de>>(
    line: &'de str,
    visitor: V,
) -> Result<V::Value, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(line);
    let value = de.deserialize_map(visitor)?;
    de.end()?;
    Ok(value)
}

/// The outcome of [`run`] as a request or a typed error: a parked error
/// wins, a data error on a line that does not open an object is
/// [`DispatchError::NotAnObject`], anything else is a syntax error.
pub(crate) fn resolve<T>(
    line: &str,
    result: Result<T, serde_json::Error>,
    slot: Slot,
) -> Result<T, DispatchError> {
    match (result, slot) {
        (_, Some(err)) => Err(err),
        (Ok(v), None) => Ok(v),
        (Err(e), None) => {
            let opens_object = line
                .trim_start_matches([' ', '\t', '\n', '\r'])
                .starts_with('{');
            if e.is_data() && !opens_object {
                Err(DispatchError::NotAnObject)
            } else {
                Err(DispatchError::Syntax(e))
            }
        }
    }
}

#[cfg(test)]
mod scan_tests;
#[cfg(test)]
mod tests;
