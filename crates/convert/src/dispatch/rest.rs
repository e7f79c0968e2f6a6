//! REST dispatch lines: `{"path", "method"? (default POST), "body"?
//! (default null)}`.
//!
//! The body is moved, never deep-cloned. A request is generic over how it
//! holds the body:
//!
//! * [`parse_rest_dispatch`] -> `RestDispatch<Box<RawValue>>`: the body is
//!   validated (fully: syntax, strings, numbers) and kept as its JSON text,
//!   copied once out of the line and moved into the request. A gateway
//!   forwards REST bodies, so building a DOM only to serialize it again is
//!   avoided; [`RestDispatch::body_value`] builds one on demand.
//! * [`parse_rest_dispatch_value`] -> `RestDispatch<Value>`: the body is
//!   deserialized into a `serde_json::Value` in the same single pass and
//!   moved into the request.
//! * [`RestDispatch::from_json`]: for a caller that already holds the line
//!   as a `Value`; the body is moved out of it.
//!
//! The benchmark's baseline, `parse_rest_dispatch_clone_body` (exposed only
//! through `bench_internals`), is the reference gateway's shape: parse the
//! line to a DOM, read the fields from it by reference and deep-clone the
//! body. It returns the same requests as [`parse_rest_dispatch_value`].

use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::{FieldKey, FieldName, Slot, Text, fail, once, required, resolve, run, value};
use crate::error::DispatchError;

/// An HTTP method a REST dispatch line may name (case-insensitive on the
/// wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// GET
    Get,
    /// POST (the default)
    Post,
    /// PUT
    Put,
    /// PATCH
    Patch,
    /// DELETE
    Delete,
    /// HEAD
    Head,
    /// OPTIONS
    Options,
}

impl Method {
    /// The method named `name`, in any case.
    pub fn parse(name: &str) -> Option<Method> {
        const ALL: [(&str, Method); 7] = [
            ("POST", Method::Post),
            ("GET", Method::Get),
            ("PUT", Method::Put),
            ("PATCH", Method::Patch),
            ("DELETE", Method::Delete),
            ("HEAD", Method::Head),
            ("OPTIONS", Method::Options),
        ];
        ALL.iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|&(_, m)| m)
    }

    /// The upper-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Patch => "PATCH",
            Method::Delete => "DELETE",
            Method::Head => "HEAD",
            Method::Options => "OPTIONS",
        }
    }
}

/// A parsed REST dispatch line; `B` is how the body is held (see the
/// module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct RestDispatch<B = Box<RawValue>> {
    /// `method`, [`Method::Post`] when absent or `null`.
    pub method: Method,
    /// `path`: starts with `/`.
    pub path: String,
    /// `body`, `null` when absent.
    pub body: B,
}

/// A representation a REST body can be parsed into.
pub trait RestBody: Sized {
    /// The body of a line without one: JSON `null`.
    fn null() -> Self;
}

impl RestBody for serde_json::Value {
    fn null() -> Self {
        serde_json::Value::Null
    }
}

impl RestBody for Box<RawValue> {
    fn null() -> Self {
        // A constant that is valid JSON: not input-dependent.
        RawValue::from_string("null".to_owned()).expect("`null` is valid JSON")
    }
}

impl RestDispatch<Box<RawValue>> {
    /// The body as a `serde_json::Value` (parsed from the validated text).
    ///
    /// # Errors
    /// Only if serde_json cannot build the DOM of text it validated (e.g.
    /// nesting past its recursion limit).
    pub fn body_value(&self) -> Result<serde_json::Value, serde_json::Error> {
        serde_json::from_str(self.body.get())
    }
}

fn method_of(name: &str) -> Result<Method, DispatchError> {
    Method::parse(name).ok_or_else(|| DispatchError::UnsupportedValue {
        field: "method",
        value: name.to_owned(),
    })
}

fn check_path(path: &str) -> Result<(), DispatchError> {
    if path.starts_with('/') {
        Ok(())
    } else {
        Err(DispatchError::InvalidField {
            field: "path",
            reason: "does not start with '/'".to_owned(),
        })
    }
}

enum Field {
    Path,
    Method,
    Body,
    Other,
}

impl FieldName for Field {
    fn from_name(name: &str) -> Self {
        match name {
            "path" => Field::Path,
            "method" => Field::Method,
            "body" => Field::Body,
            _ => Field::Other,
        }
    }
}

struct RestVisitor<'s, B> {
    slot: &'s mut Slot,
    body: PhantomData<B>,
}

impl<'de, B: RestBody + Deserialize<'de>> Visitor<'de> for RestVisitor<'_, B> {
    type Value = RestDispatch<B>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a REST dispatch object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RestDispatch<B>, A::Error> {
        let slot = self.slot;
        let mut path: Option<String> = None;
        let mut method: Option<Method> = None;
        let mut body: Option<B> = None;
        while let Some(FieldKey(field)) = map.next_key::<FieldKey<Field>>()? {
            match field {
                Field::Path => {
                    let v: String = value(&mut map, "path", slot)?;
                    if let Err(e) = check_path(&v) {
                        return Err(fail(slot, e));
                    }
                    once(&mut path, v, "path", slot)?;
                }
                Field::Method => {
                    let name: Option<Text<'de>> = value(&mut map, "method", slot)?;
                    let v = match name {
                        None => Method::Post,
                        Some(Text(name)) => match method_of(&name) {
                            Ok(m) => m,
                            Err(e) => return Err(fail(slot, e)),
                        },
                    };
                    once(&mut method, v, "method", slot)?;
                }
                Field::Body => {
                    // Built in place and moved into the request.
                    let v: B = value(&mut map, "body", slot)?;
                    once(&mut body, v, "body", slot)?;
                }
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(RestDispatch {
            path: required(path, "path", slot)?,
            method: method.unwrap_or(Method::Post),
            body: body.unwrap_or_else(B::null),
        })
    }
}

/// Parses one REST dispatch line in a single pass; the body is validated
/// and moved into the request as its JSON text. Unknown fields are ignored.
///
/// # Errors
/// [`DispatchError`] naming the field: `path` missing, not a string or not
/// starting with `/`; `method` not a string or not a known method; `body`
/// not valid JSON; any of them given twice; or the line is not a JSON
/// object.
pub fn parse_rest_dispatch(line: &str) -> Result<RestDispatch<Box<RawValue>>, DispatchError> {
    parse_rest_dispatch_as(line)
}

/// [`parse_rest_dispatch`] with the body deserialized into a
/// `serde_json::Value` in the same pass and moved into the request.
///
/// # Errors
/// As [`parse_rest_dispatch`].
pub fn parse_rest_dispatch_value(
    line: &str,
) -> Result<RestDispatch<serde_json::Value>, DispatchError> {
    parse_rest_dispatch_as(line)
}

fn parse_rest_dispatch_as<'de, B: RestBody + Deserialize<'de>>(
    line: &'de str,
) -> Result<RestDispatch<B>, DispatchError> {
    let mut slot = None;
    let visitor = RestVisitor {
        slot: &mut slot,
        body: PhantomData,
    };
    let result = run(line, visitor);
    resolve(line, result, slot)
}

fn field_of<'a>(
    map: &'a serde_json::Map<String, serde_json::Value>,
) -> impl Fn(&'static str) -> Result<Option<&'a str>, DispatchError> {
    move |field| match map.get(field) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(DispatchError::InvalidField {
            field,
            reason: format!("expected a string, found {other}"),
        }),
    }
}

impl RestDispatch<serde_json::Value> {
    /// The request held by a parsed line, moving the body (and the path)
    /// out of `line` instead of cloning them.
    ///
    /// # Errors
    /// As [`parse_rest_dispatch`] (a duplicate field cannot be seen in a
    /// DOM: serde_json keeps the last one).
    pub fn from_json(
        line: serde_json::Value,
    ) -> Result<RestDispatch<serde_json::Value>, DispatchError> {
        let serde_json::Value::Object(mut map) = line else {
            return Err(DispatchError::NotAnObject);
        };
        let method = match field_of(&map)("method")? {
            None => Method::Post,
            Some(name) => method_of(name)?,
        };
        let path = match map.remove("path") {
            Some(serde_json::Value::String(path)) => path,
            None => return Err(DispatchError::MissingField { field: "path" }),
            Some(other) => {
                return Err(DispatchError::InvalidField {
                    field: "path",
                    reason: format!("expected a string, found {other}"),
                });
            }
        };
        check_path(&path)?;
        let body = map.remove("body").unwrap_or(serde_json::Value::Null);
        Ok(RestDispatch { method, path, body })
    }
}

/// The baseline the benchmark compares against (the reference's shape):
/// parse the line to a DOM, read every field by reference, copy the path
/// and **deep-clone the body**. Same result as [`parse_rest_dispatch_value`].
///
/// # Errors
/// As [`RestDispatch::from_json`].
#[cfg(any(test, feature = "bench-internals"))]
pub fn parse_rest_dispatch_clone_body(
    line: &str,
) -> Result<RestDispatch<serde_json::Value>, DispatchError> {
    let dom: serde_json::Value = serde_json::from_str(line).map_err(|e| {
        if e.is_data() {
            DispatchError::NotAnObject
        } else {
            DispatchError::Syntax(e)
        }
    })?;
    let Some(map) = dom.as_object() else {
        return Err(DispatchError::NotAnObject);
    };
    let field = field_of(map);
    let method = match field("method")? {
        None => Method::Post,
        Some(name) => method_of(name)?,
    };
    let path = field("path")?
        .ok_or(DispatchError::MissingField { field: "path" })?
        .to_owned();
    check_path(&path)?;
    let body = map.get("body").cloned().unwrap_or(serde_json::Value::Null);
    Ok(RestDispatch { method, path, body })
}
