//! A flow run's parameters: any JSON values, each kept as its JSON text.
//!
//! The model holds a run's parameters as `(key, value text)` pairs in the
//! order the client gave them ([`crate::FlowRun::parameters`]). A value's
//! text is the form Prefect's server answers with: Python's
//! `json.dumps(value, ensure_ascii=False, separators=(",", ":"))` of the
//! value as Python parsed it (Starlette's `JSONResponse`, which Prefect's
//! routes answer through). So a float is its shortest repr (`1.0`,
//! `1e-05`, `1e+16`), an integer its digits, a string escaped as Python
//! escapes it (`\b` and `\f` short, other control characters `\u00XX`,
//! the rest as is), and a nested object keeps its keys in the order sent,
//! a repeated key holding the last value at its first place (a Python
//! dict's rule). Prefect on SQLite gives the object back in that order;
//! Prefect on PostgreSQL answers in `jsonb`'s order (shorter keys first).
//!
//! In a run's record the whole object is one text field, that JSON text
//! ([`object_text`]): DAG-CBOR maps are key-ordered, so a map would lose
//! the order, and atproto's data model has no floats.
//!
//! Bounds: the object's text at most [`MAX_BYTES`] (Prefect's default
//! `PREFECT_SERVER_API_MAX_PARAMETER_SIZE`, which it measures on its
//! compact JSON too; counted as the text is written, a repeated key's
//! earlier values included), values nested at most [`MAX_DEPTH`] deep.
//! An integer keeps its digits at any size (Python's `10**20` comes back
//! `100000000000000000000`; module `scan` reads the JSON text itself,
//! since `serde_json` would read such an integer as a float). `NaN` and `Infinity` never
//! arrive from Prefect's client, which sends them as `null` (pydantic's
//! JSON mode); a body carrying them is not JSON and is refused (422
//! `json_invalid`), as is a number past a double's range (`1e400`).

mod scan;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::value::RawValue;

use scan::Scan;

/// A run's parameters: key and value text, in the order given.
pub type Params = Vec<(String, String)>;

/// The object's JSON text at most (bytes).
pub const MAX_BYTES: usize = 512 * 1024;

/// How deep values may nest (the object itself is level 0).
pub const MAX_DEPTH: usize = 64;

/// Why parameters were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamsError {
    /// Not a JSON object.
    #[error("parameters are not a JSON object: {0}")]
    Json(String),
    /// The text is past [`MAX_BYTES`].
    #[error("Flow run parameters must be less than {MAX_BYTES} bytes when serialized")]
    TooLarge,
    /// Nested past [`MAX_DEPTH`].
    #[error("parameter values nest deeper than {MAX_DEPTH} levels")]
    TooDeep,
}

/// Parses a JSON object of parameters, in order, each value as its text.
pub fn parse_object(text: &[u8]) -> Result<Params, ParamsError> {
    parse_counted(text).map(|(p, _)| p)
}

/// The `parameters` member of a JSON request body, in order (`None`
/// when the body has none, or it or the member is not an object: the
/// body's value tree names that error).
pub fn from_body(body: &[u8]) -> Result<Option<Params>, ParamsError> {
    // The body's members as their raw text (a repeated one: the last, as
    // in the value tree).
    let members: BTreeMap<String, &RawValue> = match serde_json::from_slice(body) {
        Ok(m) => m,
        Err(e) if e.is_data() => return Ok(None),
        Err(e) => return Err(ParamsError::Json(e.to_string())),
    };
    match members.get("parameters") {
        Some(raw) if raw.get().starts_with('{') => parse_object(raw.get().as_bytes()).map(Some),
        _ => Ok(None),
    }
}

/// [`parse_object`] and the bytes it counted against [`MAX_BYTES`].
fn parse_counted(text: &[u8]) -> Result<(Params, usize), ParamsError> {
    let mut scan = Scan::new(text);
    let p = scan.document()?;
    Ok((p, scan.written))
}

/// The parameters as one JSON object text (a record's field, the SQL
/// baselines' column, the REST answer).
pub fn object_text(p: &[(String, String)]) -> String {
    let mut out =
        String::with_capacity(2 + p.iter().map(|(k, v)| k.len() + v.len() + 4).sum::<usize>());
    push_object(&mut out, p.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    out
}

/// Appends the object of `pairs` (keys escaped, values as they are).
pub fn push_object<'a>(out: &mut String, pairs: impl Iterator<Item = (&'a str, &'a str)>) {
    out.push('{');
    for (i, (k, v)) in pairs.enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_string(out, k);
        out.push(':');
        out.push_str(v);
    }
    out.push('}');
}

/// The text of string value `s` (the seeded workload's values are text).
pub fn string_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    push_string(&mut out, s);
    out
}

/// Appends `s` as Python's `json.dumps(s, ensure_ascii=False)` writes it.
// Not `codec::json_text::push_string`: Python writes U+0008 and U+000C as
// `\b` and `\f`, where codec writes `\u0008` and `\u000c`.
pub fn push_string(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The length of `s` as [`push_string`] writes it.
fn string_len(s: &str) -> usize {
    2 + s
        .chars()
        .map(|c| match c {
            '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
            c if (c as u32) < 0x20 => 6,
            c => c.len_utf8(),
        })
        .sum::<usize>()
}

/// Appends `x` as Python's `repr(float)`: the shortest digits that read
/// back as `x`, in positional form when the decimal point falls within
/// (-4, 16] of them, in exponent form (`e+16`, `e-05`) otherwise.
pub fn push_float(out: &mut String, x: f64) {
    if !x.is_finite() {
        // Never read from JSON; what Prefect stores for them.
        out.push_str("null");
        return;
    }
    if x.is_sign_negative() {
        out.push('-');
    }
    // Rust's `{:e}` gives the shortest round-trip digits: `d.ddde±x`.
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let exp: i32 = exp.parse().unwrap_or(0);
    let decpt = exp + 1;
    let n = digits.len() as i32;
    if -4 < decpt && decpt <= 16 {
        if decpt <= 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-decpt) as usize));
            out.push_str(&digits);
        } else if decpt >= n {
            out.push_str(&digits);
            out.extend(std::iter::repeat_n('0', (decpt - n) as usize));
            out.push_str(".0");
        } else {
            out.push_str(&digits[..decpt as usize]);
            out.push('.');
            out.push_str(&digits[decpt as usize..]);
        }
    } else {
        out.push_str(&digits[..1]);
        if n > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let e = decpt - 1;
        let _ = write!(out, "e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    }
}

#[cfg(test)]
mod tests;
