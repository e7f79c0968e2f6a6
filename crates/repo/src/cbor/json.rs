//! atproto JSON: rendering data-model values as JSON text, and parsing JSON
//! back into [`Value`] with the data-model checks.
//!
//! Rendering (serde-free, one pass into a `String`): bytes become
//! `{"$bytes": "<unpadded standard base64>"}`, links `{"$link": "bafy..."}`;
//! blob refs are ordinary maps and render as such. Map keys come out in the
//! value's (canonical DAG-CBOR) order.
//!
//! Parsing (via `serde_json`; [`from_json_value_owned`] moves the
//! document's strings instead of copying them), choices where the spec is
//! silent or the vectors decide:
//! - the top level must be an object (data-model-invalid "top-level not an
//!   object");
//! - numbers must be integers in the i64 range; floats with no fractional
//!   part (`123.0`) are accepted as integers, any other float is rejected;
//! - an object with a `$bytes` or `$link` key must have exactly that one key
//!   and a string value (standard base64, padding optional; a CID this crate
//!   accepts);
//! - `$type`, where present, must be a non-empty string; `$type: "blob"`
//!   requires exactly `ref` (a `$link`), `mimeType` (string) and `size`
//!   (integer) besides `$type`;
//! - nesting is limited to [`MAX_DEPTH`].

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

use super::value::{Kind, Node};
use super::{MAX_DEPTH, Map, Value, ValueRef};
use crate::cid::Cid;

const B64_ENCODE: GeneralPurpose = base64::engine::general_purpose::STANDARD_NO_PAD;
const B64_DECODE: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Why JSON is not valid atproto data-model JSON.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason} at {path}")]
pub struct JsonError {
    /// JSON-pointer-like path of the offending value (`/` is the top).
    pub path: String,
    /// What is wrong.
    pub reason: JsonErrorKind,
}

/// The reasons atproto JSON parsing fails.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JsonErrorKind {
    /// Not JSON at all (serde_json's message, with line and column).
    #[error("JSON syntax: {0}")]
    Syntax(String),
    /// The top level is not an object.
    #[error("top level must be an object")]
    NotObject,
    /// A number with a fractional part, or an exponent form that is not an
    /// integer.
    #[error("floats are not allowed")]
    Float,
    /// An integer outside i64 (or one in float syntax past 2^53, where
    /// the f64 it was read as may not be the number written).
    #[error("integer outside the i64 range")]
    IntRange,
    /// A bad `$bytes` object.
    #[error("bad $bytes: {0}")]
    Bytes(&'static str),
    /// A bad `$link` object.
    #[error("bad $link: {0}")]
    Link(&'static str),
    /// A bad `$type` value.
    #[error("bad $type: {0}")]
    Type(&'static str),
    /// A malformed blob.
    #[error("bad blob: {0}")]
    Blob(&'static str),
    /// Nested too deeply.
    #[error("nesting deeper than {MAX_DEPTH}")]
    TooDeep,
}

/// Renders a borrowed value as atproto JSON.
pub fn to_json(v: &ValueRef<'_>) -> String {
    let mut out = String::with_capacity(256);
    write_json(v, &mut out);
    out
}

/// Renders an owned value as atproto JSON.
pub fn value_to_json(v: &Value) -> String {
    let mut out = String::with_capacity(256);
    write_json(v, &mut out);
    out
}

/// Appends the atproto JSON of `v` (a [`Value`] or [`ValueRef`]) to `out`.
#[allow(private_bounds)]
pub fn write_json<N: Node>(v: &N, out: &mut String) {
    match v.kind() {
        Kind::Null => out.push_str("null"),
        Kind::Bool(true) => out.push_str("true"),
        Kind::Bool(false) => out.push_str("false"),
        Kind::Int(i) => push_int(i, out),
        Kind::Text(s) => push_json_str(s, out),
        Kind::Bytes(b) => {
            out.push_str("{\"$bytes\":\"");
            B64_ENCODE.encode_string(b, out);
            out.push_str("\"}");
        }
        Kind::Link(c) => {
            out.push_str("{\"$link\":\"");
            c.push_str(out);
            out.push_str("\"}");
        }
        Kind::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(item, out);
            }
            out.push(']');
        }
        Kind::Map(entries) => {
            out.push('{');
            for (i, (k, v)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_json_str(k.as_ref(), out);
                out.push(':');
                write_json(v, out);
            }
            out.push('}');
        }
    }
}

/// Appends the decimal text of `i` to `out` (what atproto JSON writes for a
/// DAG-CBOR integer), without going through `fmt`.
pub fn push_int(i: i64, out: &mut String) {
    let mut buf = [0u8; 20];
    // Only ASCII digits and '-' are written.
    out.push_str(std::str::from_utf8(int_digits(i, &mut buf)).unwrap_or("0"));
}

/// [`push_int`] for a byte buffer.
pub fn push_int_bytes(i: i64, out: &mut Vec<u8>) {
    let mut buf = [0u8; 20];
    out.extend_from_slice(int_digits(i, &mut buf));
}

/// The decimal text of `i` (ASCII), written at the end of `buf`.
fn int_digits(i: i64, buf: &mut [u8; 20]) -> &[u8] {
    let mut pos = buf.len();
    let mut n = i.unsigned_abs();
    loop {
        pos -= 1;
        buf[pos] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if i < 0 {
        // 19 digits at most for |i64|, so there is room for the sign.
        pos -= 1;
        buf[pos] = b'-';
    }
    &buf[pos..]
}

/// Appends `s` as a JSON string literal.
pub fn push_json_str(s: &str, out: &mut String) {
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &str = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0x00..=0x1f => "",
            _ => continue,
        };
        // `i` is at an ASCII byte, so both cuts are on char boundaries.
        out.push_str(&s[start..i]);
        if esc.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push_str("\\u00");
            out.push(HEX[(b >> 4) as usize] as char);
            out.push(HEX[(b & 0xf) as usize] as char);
        } else {
            out.push_str(esc);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// Parses atproto JSON text (top level must be an object).
pub fn from_json_str(s: &str) -> Result<Value, JsonError> {
    let v: serde_json::Value = serde_json::from_str(s).map_err(|e| JsonError {
        path: "/".into(),
        reason: JsonErrorKind::Syntax(e.to_string()),
    })?;
    from_json_value(&v)
}

/// Converts a parsed JSON document (top level must be an object).
pub fn from_json_value(v: &serde_json::Value) -> Result<Value, JsonError> {
    if !v.is_object() {
        return Err(JsonError {
            path: "/".into(),
            reason: JsonErrorKind::NotObject,
        });
    }
    let mut path = Vec::new();
    convert(v, &mut path).map_err(|reason| JsonError {
        path: format!("/{}", path.join("/")),
        reason,
    })
}

/// [`from_json_value`] taking the document by value: strings and map keys
/// move into the result instead of being copied. Same value, or the same
/// error with the same path, for the same input (`tests/props.rs`
/// compares the two).
pub fn from_json_value_owned(v: serde_json::Value) -> Result<Value, JsonError> {
    if !v.is_object() {
        return Err(JsonError {
            path: "/".into(),
            reason: JsonErrorKind::NotObject,
        });
    }
    // The path is built only on error, innermost segment first, so the
    // keys need no copy on the way down.
    let mut rev_path = Vec::new();
    convert_owned(v, 0, &mut rev_path).map_err(|reason| {
        rev_path.reverse();
        JsonError {
            path: format!("/{}", rev_path.join("/")),
            reason,
        }
    })
}

/// [`convert`] by value; on error `rev_path` holds the offending value's
/// path below this one, innermost first.
fn convert_owned(
    v: serde_json::Value,
    depth: usize,
    rev_path: &mut Vec<String>,
) -> Result<Value, JsonErrorKind> {
    use serde_json::Value as J;
    if depth > MAX_DEPTH {
        return Err(JsonErrorKind::TooDeep);
    }
    Ok(match v {
        J::Null => Value::Null,
        J::Bool(b) => Value::Bool(b),
        J::Number(n) => Value::Int(number(&n)?),
        J::String(s) => Value::Text(s),
        J::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.into_iter().enumerate() {
                match convert_owned(item, depth + 1, rev_path) {
                    Ok(v) => out.push(v),
                    Err(e) => {
                        rev_path.push(i.to_string());
                        return Err(e);
                    }
                }
            }
            Value::List(out)
        }
        J::Object(obj) => {
            if let Some(special) = special_object(&obj)? {
                return Ok(special);
            }
            let mut entries = Vec::with_capacity(obj.len());
            for (k, item) in obj {
                match convert_owned(item, depth + 1, rev_path) {
                    Ok(v) => entries.push((k, v)),
                    Err(e) => {
                        rev_path.push(k);
                        return Err(e);
                    }
                }
            }
            Value::Map(entries.into_iter().collect::<Map>())
        }
    })
}

/// The checks of an object before its entries: a `$bytes` or `$link`
/// object is that value, a `$type` must be a non-empty string and a blob
/// well formed. `None`: an ordinary map, to convert entry by entry.
fn special_object(
    obj: &serde_json::Map<String, serde_json::Value>,
) -> Result<Option<Value>, JsonErrorKind> {
    if let Some(b) = obj.get("$bytes") {
        if obj.len() != 1 {
            return Err(JsonErrorKind::Bytes("extra fields"));
        }
        let s = b.as_str().ok_or(JsonErrorKind::Bytes("not a string"))?;
        let bytes = B64_DECODE
            .decode(s)
            .map_err(|_| JsonErrorKind::Bytes("invalid base64"))?;
        return Ok(Some(Value::Bytes(bytes)));
    }
    if let Some(l) = obj.get("$link") {
        return Ok(Some(Value::Link(link(l, obj.len())?)));
    }
    if let Some(t) = obj.get("$type") {
        let t = t.as_str().ok_or(JsonErrorKind::Type("not a string"))?;
        if t.is_empty() {
            return Err(JsonErrorKind::Type("empty"));
        }
        if t == "blob" {
            check_blob(obj)?;
        }
    }
    Ok(None)
}

/// On error `path` is left pointing at the offending value.
fn convert(v: &serde_json::Value, path: &mut Vec<String>) -> Result<Value, JsonErrorKind> {
    use serde_json::Value as J;
    if path.len() > MAX_DEPTH {
        return Err(JsonErrorKind::TooDeep);
    }
    Ok(match v {
        J::Null => Value::Null,
        J::Bool(b) => Value::Bool(*b),
        J::Number(n) => Value::Int(number(n)?),
        J::String(s) => Value::Text(s.clone()),
        J::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                path.push(i.to_string());
                out.push(convert(item, path)?);
                path.pop();
            }
            Value::List(out)
        }
        J::Object(obj) => {
            if let Some(special) = special_object(obj)? {
                return Ok(special);
            }
            let mut entries = Vec::with_capacity(obj.len());
            for (k, item) in obj {
                path.push(k.clone());
                entries.push((k.clone(), convert(item, path)?));
                path.pop();
            }
            Value::Map(entries.into_iter().collect::<Map>())
        }
    })
}

fn number(n: &serde_json::Number) -> Result<i64, JsonErrorKind> {
    if let Some(i) = n.as_i64() {
        return Ok(i);
    }
    if n.is_u64() {
        return Err(JsonErrorKind::IntRange);
    }
    // Here the number did not parse as an i64 or a u64: an integer
    // literal past the 64-bit range, or one in float syntax (`2.0`,
    // `1e3`), read as the nearest f64. Only an integral value under 2^53
    // is exactly the number written; past it the f64 may be a rounding
    // (`-9223372036854775809` reads as -2^63), and taking it would change
    // the record on its way in.
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    match n.as_f64() {
        Some(f) if f.is_finite() && f.fract() == 0.0 => {
            if f.abs() < EXACT {
                Ok(f as i64)
            } else {
                Err(JsonErrorKind::IntRange)
            }
        }
        _ => Err(JsonErrorKind::Float),
    }
}

fn link(l: &serde_json::Value, fields: usize) -> Result<Cid, JsonErrorKind> {
    if fields != 1 {
        return Err(JsonErrorKind::Link("extra fields"));
    }
    let s = l.as_str().ok_or(JsonErrorKind::Link("not a string"))?;
    s.parse::<Cid>()
        .map_err(|_| JsonErrorKind::Link("not a supported CID"))
}

fn check_blob(obj: &serde_json::Map<String, serde_json::Value>) -> Result<(), JsonErrorKind> {
    let r = obj.get("ref").ok_or(JsonErrorKind::Blob("missing ref"))?;
    let r = r
        .as_object()
        .ok_or(JsonErrorKind::Blob("ref is not a $link"))?;
    let l = r
        .get("$link")
        .ok_or(JsonErrorKind::Blob("ref is not a $link"))?;
    link(l, r.len()).map_err(|_| JsonErrorKind::Blob("ref is not a valid $link"))?;
    obj.get("mimeType")
        .and_then(|m| m.as_str())
        .ok_or(JsonErrorKind::Blob("mimeType must be a string"))?;
    let size = obj.get("size").ok_or(JsonErrorKind::Blob("missing size"))?;
    match size {
        serde_json::Value::Number(n) => {
            number(n).map_err(|_| JsonErrorKind::Blob("size must be an integer"))?;
        }
        _ => return Err(JsonErrorKind::Blob("size must be an integer")),
    }
    if obj.len() != 4 {
        return Err(JsonErrorKind::Blob("unexpected fields"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes() {
        let mut s = String::new();
        push_json_str("a\"b\\c\n\u{1}é", &mut s);
        assert_eq!(s, "\"a\\\"b\\\\c\\n\\u0001é\"");
        let back: String = serde_json::from_str(&s).unwrap();
        assert_eq!(back, "a\"b\\c\n\u{1}é");
    }

    #[test]
    fn owned_conversion_errors_at_the_same_path() {
        let mut deep = serde_json::json!(1);
        for i in 0..MAX_DEPTH + 2 {
            deep = if i % 2 == 0 {
                serde_json::json!([deep])
            } else {
                serde_json::json!({"k": deep})
            };
        }
        for doc in [
            serde_json::json!({"a": [1, {"b": 1.5}]}),
            serde_json::json!({"a": {"$bytes": "aGk", "x": 1}}),
            serde_json::json!({"z": [{"$type": ""}], "a": "ok"}),
            serde_json::json!([1]),
            serde_json::json!({"d": deep}),
        ] {
            let borrowed = from_json_value(&doc).unwrap_err();
            assert_eq!(from_json_value_owned(doc), Err(borrowed));
        }
        assert_eq!(
            from_json_value_owned(serde_json::json!({"a": [1, {"b": 1.5}]}))
                .unwrap_err()
                .path,
            "/a/1/b"
        );
    }

    #[test]
    fn ints() {
        for i in [0, 7, -1, 10, i64::MIN, i64::MAX] {
            let mut s = String::new();
            push_int(i, &mut s);
            assert_eq!(s, i.to_string());
        }
        assert!(from_json_str("{\"a\": 1.5}").is_err());
        assert_eq!(
            from_json_str("{\"a\": 2.0}").unwrap().get("a"),
            Some(&Value::Int(2))
        );
        assert!(from_json_str("{\"a\": 9223372036854775808}").is_err());
        assert!(from_json_str("{\"a\": 1e300}").is_err());
    }
}
