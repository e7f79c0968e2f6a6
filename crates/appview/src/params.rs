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
//! earlier values included), values nested at most [`MAX_DEPTH`] deep. Not as
//! Prefect: an integer outside 64 bits (Python's `10**20`, which Prefect's
//! client sends as its digits) is read as the nearest float, `1e+20` (as
//! `serde_json` reads it). `NaN` and `Infinity` never arrive from
//! Prefect's client, which sends them as `null` (pydantic's JSON mode); a
//! body carrying them is not JSON and is refused (422 `json_invalid`).

use std::cell::Cell;
use std::fmt::{self, Write as _};

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

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
/// when the body has none, or it is not an object: the body's parser
/// names that error).
pub fn from_body(body: &[u8]) -> Result<Option<Params>, ParamsError> {
    let ctx = Ctx::default();
    let mut de = serde_json::Deserializer::from_slice(body);
    let got = Body(&ctx).deserialize(&mut de);
    let got = got.and_then(|p| de.end().map(|()| p));
    finish(&ctx, got)
}

/// [`parse_object`] and the bytes it counted against [`MAX_BYTES`].
fn parse_counted(text: &[u8]) -> Result<(Params, usize), ParamsError> {
    let ctx = Ctx::default();
    let mut de = serde_json::Deserializer::from_slice(text);
    let got = Object {
        ctx: &ctx,
        depth: 0,
    }
    .deserialize(&mut de);
    let got = got.and_then(|p| de.end().map(|()| p));
    finish(&ctx, got).map(|p| (p, ctx.written.get()))
}

fn finish<T>(ctx: &Ctx, got: Result<T, serde_json::Error>) -> Result<T, ParamsError> {
    if let Some(e) = ctx.refused.take() {
        return Err(e);
    }
    got.map_err(|e| ParamsError::Json(e.to_string()))
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

/// What a parse shares: the refusal that stopped it (a bound, told apart
/// from a JSON error) and the bytes written so far.
#[derive(Default)]
struct Ctx {
    refused: Cell<Option<ParamsError>>,
    written: Cell<usize>,
}

impl Ctx {
    fn refuse<E: de::Error>(&self, e: ParamsError) -> E {
        let msg = e.to_string();
        self.refused.set(Some(e));
        E::custom(msg)
    }

    /// Counts `n` more bytes of the text against [`MAX_BYTES`], as they
    /// are written, so a parse stops early (a repeated key's earlier
    /// values count too: the count is the text's length when no key
    /// repeats).
    fn spend<E: de::Error>(&self, n: usize) -> Result<(), E> {
        let w = self.written.get().saturating_add(n);
        self.written.set(w);
        if w > MAX_BYTES {
            return Err(self.refuse(ParamsError::TooLarge));
        }
        Ok(())
    }
}

/// An object's entries, in order, repeated keys at their first place
/// with their last value.
fn entries<'de, A: MapAccess<'de>>(
    ctx: &Ctx,
    depth: usize,
    mut map: A,
) -> Result<Params, A::Error> {
    let mut out: Params = Vec::new();
    ctx.spend(2)?;
    let mut first = true;
    while let Some(k) = map.next_key::<String>()? {
        // The key, its colon, and the comma before it.
        ctx.spend(string_len(&k) + 1 + usize::from(!first))?;
        first = false;
        let mut v = String::new();
        map.next_value_seed(Text {
            ctx,
            depth: depth + 1,
            out: &mut v,
        })?;
        match out.iter_mut().find(|(old, _)| *old == k) {
            Some(slot) => slot.1 = v,
            None => out.push((k, v)),
        }
    }
    Ok(out)
}

/// The top object.
struct Object<'c> {
    ctx: &'c Ctx,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for Object<'_> {
    type Value = Params;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Params, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Object<'_> {
    type Value = Params;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Params, A::Error> {
        entries(self.ctx, self.depth, map)
    }
}

/// The non-object values of a body or of its `parameters`: `None` (the
/// body's value tree names the error).
macro_rules! none_unless_object {
    () => {
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(None)
        }
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
    };
}

/// A request body: its `parameters` member, when an object.
struct Body<'c>(&'c Ctx);

impl<'de> DeserializeSeed<'de> for Body<'_> {
    type Value = Option<Params>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Body<'_> {
    type Value = Option<Params>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON body")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(k) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if k == "parameters" {
                // The last one counts, as in the body's value tree.
                found = map.next_value_seed(Maybe(self.0))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
    none_unless_object!();
}

/// A body's `parameters`: an object's entries.
struct Maybe<'c>(&'c Ctx);

impl<'de> DeserializeSeed<'de> for Maybe<'_> {
    type Value = Option<Params>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Maybe<'_> {
    type Value = Option<Params>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        entries(self.0, 0, map).map(Some)
    }
    none_unless_object!();
}

/// One value, written as its text into `out`.
struct Text<'c, 'o> {
    ctx: &'c Ctx,
    depth: usize,
    out: &'o mut String,
}

impl Text<'_, '_> {
    fn scalar<E: de::Error>(self, s: &str) -> Result<(), E> {
        self.ctx.spend(s.len())?;
        self.out.push_str(s);
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for Text<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Text<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.scalar(if v { "true" } else { "false" })
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.scalar(&v.to_string())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.scalar(&v.to_string())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        let mut s = String::new();
        push_float(&mut s, v);
        self.scalar(&s)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.ctx.spend(string_len(v))?;
        push_string(self.out, v);
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.scalar("null")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        if self.depth >= MAX_DEPTH {
            return Err(self.ctx.refuse(ParamsError::TooDeep));
        }
        self.ctx.spend(2)?;
        self.out.push('[');
        let mut first = true;
        loop {
            let mark = self.out.len();
            if !first {
                self.out.push(',');
            }
            let seed = Text {
                ctx: self.ctx,
                depth: self.depth + 1,
                out: self.out,
            };
            if seq.next_element_seed(seed)?.is_none() {
                self.out.truncate(mark);
                break;
            }
            if !first {
                self.ctx.spend(1)?;
            }
            first = false;
        }
        self.out.push(']');
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        if self.depth >= MAX_DEPTH {
            return Err(self.ctx.refuse(ParamsError::TooDeep));
        }
        let e = entries(self.ctx, self.depth, map)?;
        push_object(self.out, e.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        Ok(())
    }
}

#[cfg(test)]
mod tests;
