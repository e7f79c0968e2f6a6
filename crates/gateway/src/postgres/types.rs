//! PostgreSQL values <-> the gateway's: JSON params encoded in the binary
//! format of the type the server inferred for each `$n` ([`PgParam`]), and
//! result columns decoded from their binary format into
//! `convert::Cell`s ([`ColumnKind`]).
//!
//! | PostgreSQL type | cell | param accepted |
//! |---|---|---|
//! | `bool` | `Bool` | JSON bool |
//! | `int2`, `int4`, `int8`, `oid` | `Int` | JSON integer in range |
//! | `float4`, `float8` | `Float` | JSON number |
//! | `numeric` | `Numeric` (exact decimal text; `NaN`, `Infinity`) | JSON number or decimal string |
//! | `text`, `varchar`, `bpchar`, `name`, `"char"`, `unknown` | `Text` | string (other JSON as its text) |
//! | `bytea` | `Bytes` | `base64:` cell string |
//! | `uuid` | `Uuid` | hyphenated or plain hex string |
//! | `timestamp`, `timestamptz` | `Timestamp` (a `timestamp` is read as UTC) | RFC 3339 string |
//! | `json`, `jsonb` | `Json` | any JSON value |
//! | `void` (a function that returns nothing) | `Null` | - |
//! | NULL of any type | `Null` | `null` |
//!
//! Any other column type is [`GatewayError::UnsupportedType`], found from
//! the prepared statement before the statement runs.

use std::error::Error;
use std::fmt;

use bytes::{BufMut, BytesMut};
use codec::datetime::parse_rfc3339_micros;
use convert::Cell;
use tokio_postgres::types::{FromSql, IsNull, ToSql, Type, to_sql_checked};

use crate::error::GatewayError;

/// Microseconds from 1970-01-01 to PostgreSQL's epoch, 2000-01-01.
const PG_EPOCH_US: i64 = 946_684_800_000_000;

mod oid {
    pub const BOOL: u32 = 16;
    pub const BYTEA: u32 = 17;
    pub const CHAR: u32 = 18;
    pub const NAME: u32 = 19;
    pub const INT8: u32 = 20;
    pub const INT2: u32 = 21;
    pub const INT4: u32 = 23;
    pub const TEXT: u32 = 25;
    pub const OID: u32 = 26;
    pub const JSON: u32 = 114;
    pub const FLOAT4: u32 = 700;
    pub const FLOAT8: u32 = 701;
    pub const UNKNOWN: u32 = 705;
    pub const BPCHAR: u32 = 1042;
    pub const VARCHAR: u32 = 1043;
    pub const TIMESTAMP: u32 = 1114;
    pub const TIMESTAMPTZ: u32 = 1184;
    pub const NUMERIC: u32 = 1700;
    pub const UUID: u32 = 2950;
    pub const JSONB: u32 = 3802;
    pub const VOID: u32 = 2278;
}

/// How a result column decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ColumnKind {
    Bool,
    Int2,
    Int4,
    Int8,
    Oid,
    Float4,
    Float8,
    Numeric,
    Text,
    Char,
    Bytea,
    Uuid,
    Timestamp,
    Json,
    Jsonb,
    Void,
}

impl ColumnKind {
    /// The kind of a column of type `ty`, or `None` when it is not mapped.
    pub(crate) fn of(ty: &Type) -> Option<ColumnKind> {
        Some(match ty.oid() {
            oid::BOOL => ColumnKind::Bool,
            oid::INT2 => ColumnKind::Int2,
            oid::INT4 => ColumnKind::Int4,
            oid::INT8 => ColumnKind::Int8,
            oid::OID => ColumnKind::Oid,
            oid::FLOAT4 => ColumnKind::Float4,
            oid::FLOAT8 => ColumnKind::Float8,
            oid::NUMERIC => ColumnKind::Numeric,
            oid::TEXT | oid::VARCHAR | oid::BPCHAR | oid::NAME | oid::UNKNOWN => ColumnKind::Text,
            oid::CHAR => ColumnKind::Char,
            oid::BYTEA => ColumnKind::Bytea,
            oid::UUID => ColumnKind::Uuid,
            oid::TIMESTAMP | oid::TIMESTAMPTZ => ColumnKind::Timestamp,
            oid::JSON => ColumnKind::Json,
            oid::JSONB => ColumnKind::Jsonb,
            oid::VOID => ColumnKind::Void,
            _ => return None,
        })
    }

    /// Decodes one non-NULL value in binary format.
    pub(crate) fn decode(self, raw: &[u8]) -> Result<Cell, String> {
        fn fixed<const N: usize>(raw: &[u8]) -> Result<[u8; N], String> {
            raw.try_into()
                .map_err(|_| format!("{} bytes where {N} were expected", raw.len()))
        }
        fn utf8(raw: &[u8]) -> Result<String, String> {
            std::str::from_utf8(raw)
                .map(str::to_owned)
                .map_err(|e| e.to_string())
        }
        fn json(raw: &[u8]) -> Result<Cell, String> {
            serde_json::from_slice(raw)
                .map(Cell::Json)
                .map_err(|e| e.to_string())
        }
        Ok(match self {
            ColumnKind::Bool => Cell::Bool(fixed::<1>(raw)?[0] != 0),
            ColumnKind::Int2 => Cell::Int(i16::from_be_bytes(fixed(raw)?).into()),
            ColumnKind::Int4 => Cell::Int(i32::from_be_bytes(fixed(raw)?).into()),
            ColumnKind::Int8 => Cell::Int(i64::from_be_bytes(fixed(raw)?)),
            ColumnKind::Oid => Cell::Int(u32::from_be_bytes(fixed(raw)?).into()),
            ColumnKind::Float4 => Cell::Float(f32::from_be_bytes(fixed(raw)?).into()),
            ColumnKind::Float8 => Cell::Float(f64::from_be_bytes(fixed(raw)?)),
            ColumnKind::Numeric => Cell::Numeric(numeric_text(raw)?),
            ColumnKind::Text => Cell::Text(utf8(raw)?),
            ColumnKind::Char => Cell::Text(String::from_utf8_lossy(raw).into_owned()),
            ColumnKind::Bytea => Cell::Bytes(raw.to_vec()),
            ColumnKind::Uuid => Cell::Uuid(u128::from_be_bytes(fixed(raw)?)),
            ColumnKind::Timestamp => {
                let since_2000 = i64::from_be_bytes(fixed(raw)?);
                if since_2000 == i64::MAX || since_2000 == i64::MIN {
                    return Err("an infinite timestamp has no cell".into());
                }
                Cell::Timestamp(
                    since_2000
                        .checked_add(PG_EPOCH_US)
                        .ok_or("timestamp out of range")?,
                )
            }
            ColumnKind::Json => json(raw)?,
            ColumnKind::Void => Cell::Null,
            ColumnKind::Jsonb => match raw.split_first() {
                Some((1, text)) => json(text)?,
                _ => return Err("jsonb without format version 1".into()),
            },
        })
    }
}

/// A column's raw value, whatever its type: decoding is [`ColumnKind`]'s.
pub(crate) struct Raw<'a>(pub Option<&'a [u8]>);

impl<'a> FromSql<'a> for Raw<'a> {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn Error + Sync + Send>> {
        Ok(Raw(Some(raw)))
    }

    fn from_sql_null(_: &Type) -> Result<Self, Box<dyn Error + Sync + Send>> {
        Ok(Raw(None))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

/// The decimal text of a binary `numeric`.
pub(crate) fn numeric_text(raw: &[u8]) -> Result<String, String> {
    let word = |i: usize| -> Result<u16, String> {
        raw.get(i..i + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
            .ok_or_else(|| "numeric shorter than its header".to_string())
    };
    let ndigits = usize::from(word(0)?);
    let weight = i64::from(word(2)? as i16);
    let sign = word(4)?;
    let dscale = usize::from(word(6)?);
    match sign {
        0xC000 => return Ok("NaN".into()),
        0xD000 => return Ok("Infinity".into()),
        0xF000 => return Ok("-Infinity".into()),
        0x0000 | 0x4000 => {}
        other => return Err(format!("numeric sign {other:#06x}")),
    }
    if raw.len() != 8 + 2 * ndigits {
        return Err(format!(
            "numeric of {} bytes for {ndigits} digits",
            raw.len()
        ));
    }
    let mut digits = Vec::with_capacity(ndigits);
    for i in 0..ndigits {
        let d = word(8 + 2 * i)?;
        if d > 9999 {
            return Err(format!("numeric digit {d} over 9999"));
        }
        digits.push(d);
    }
    let digit = |idx: i64| -> u16 {
        usize::try_from(idx)
            .ok()
            .and_then(|i| digits.get(i).copied())
            .unwrap_or(0)
    };
    let mut out = String::new();
    if sign == 0x4000 {
        out.push('-');
    }
    if weight < 0 {
        out.push('0');
    } else {
        for (k, idx) in (0..=weight).enumerate() {
            if k == 0 {
                out.push_str(&digit(idx).to_string());
            } else {
                out.push_str(&format!("{:04}", digit(idx)));
            }
        }
    }
    if dscale > 0 {
        out.push('.');
        let mut frac = String::with_capacity(dscale + 4);
        let mut idx = weight + 1;
        while frac.len() < dscale {
            frac.push_str(&format!("{:04}", digit(idx)));
            idx += 1;
        }
        frac.truncate(dscale);
        out.push_str(&frac);
    }
    Ok(out)
}

/// The binary `numeric` of a decimal text (`-12.5`, `1e-3`, `+7`), or
/// `None` when the text is not a decimal number.
pub(crate) fn numeric_binary(text: &str) -> Option<Vec<u8>> {
    match text {
        "NaN" => return Some(vec![0, 0, 0, 0, 0xC0, 0, 0, 0]),
        "Infinity" => return Some(vec![0, 0, 0, 0, 0xD0, 0, 0, 0]),
        "-Infinity" => return Some(vec![0, 0, 0, 0, 0xF0, 0, 0, 0]),
        _ => {}
    }
    let (negative, rest) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let (mantissa, exponent) = match rest.find(['e', 'E']) {
        Some(p) => (&rest[..p], rest[p + 1..].parse::<i64>().ok()?),
        None => (rest, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if (int.is_empty() && frac.is_empty())
        || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
        || exponent.unsigned_abs() > 100_000
    {
        return None;
    }
    let all: Vec<u8> = int.bytes().chain(frac.bytes()).map(|b| b - b'0').collect();
    // Digits before the decimal point once the exponent is applied.
    let point = int.len() as i64 + exponent;
    let dscale = u16::try_from((frac.len() as i64 - exponent).max(0)).ok()?;
    if dscale > 0x3FFF {
        return None;
    }
    let (mut int_digits, mut frac_digits) = if point <= 0 {
        let mut f = vec![0u8; usize::try_from(-point).ok()?];
        f.extend_from_slice(&all);
        (Vec::new(), f)
    } else {
        let p = usize::try_from(point).ok()?;
        if p >= all.len() {
            let mut i = all.clone();
            i.resize(p, 0);
            (i, Vec::new())
        } else {
            (all[..p].to_vec(), all[p..].to_vec())
        }
    };
    // Base-10000 groups are aligned on the decimal point.
    let lead = (4 - int_digits.len() % 4) % 4;
    int_digits.splice(0..0, std::iter::repeat_n(0, lead));
    frac_digits.resize(frac_digits.len().div_ceil(4) * 4, 0);
    let group = |c: &[u8]| c.iter().fold(0u16, |acc, &d| acc * 10 + u16::from(d));
    let mut groups: Vec<u16> = int_digits
        .chunks(4)
        .chain(frac_digits.chunks(4))
        .map(group)
        .collect();
    let mut weight = (int_digits.len() / 4) as i64 - 1;
    let leading = groups.iter().take_while(|&&g| g == 0).count();
    groups.drain(..leading);
    weight -= leading as i64;
    while groups.last() == Some(&0) {
        groups.pop();
    }
    if groups.is_empty() {
        weight = 0;
    }
    let weight = i16::try_from(weight).ok()?;
    let mut out = Vec::with_capacity(8 + 2 * groups.len());
    out.extend_from_slice(&u16::try_from(groups.len()).ok()?.to_be_bytes());
    out.extend_from_slice(&weight.to_be_bytes());
    let sign: u16 = if negative && !groups.is_empty() {
        0x4000
    } else {
        0
    };
    out.extend_from_slice(&sign.to_be_bytes());
    out.extend_from_slice(&dscale.to_be_bytes());
    for g in groups {
        out.extend_from_slice(&g.to_be_bytes());
    }
    Some(out)
}

/// Why a param could not be encoded: raised inside `to_sql`, found again
/// in the client's error chain by the executor.
#[derive(Debug)]
pub(crate) struct ParamError {
    pub index: usize,
    pub type_name: String,
    pub reason: String,
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "param {} ({}): {}",
            self.index, self.type_name, self.reason
        )
    }
}

impl Error for ParamError {}

impl From<&ParamError> for GatewayError {
    fn from(e: &ParamError) -> Self {
        GatewayError::Param {
            index: e.index,
            type_name: e.type_name.clone(),
            reason: e.reason.clone(),
        }
    }
}

/// A JSON param, encoded as whatever type the server inferred for its
/// placeholder (see the module table).
#[derive(Debug)]
pub(crate) struct PgParam<'a> {
    /// 1-based position, for errors.
    pub index: usize,
    pub value: &'a serde_json::Value,
}

impl PgParam<'_> {
    fn fail(&self, ty: &Type, reason: impl Into<String>) -> Box<dyn Error + Sync + Send> {
        Box::new(ParamError {
            index: self.index,
            type_name: ty.name().to_string(),
            reason: reason.into(),
        })
    }

    fn int(&self, ty: &Type, min: i64, max: i64) -> Result<i64, Box<dyn Error + Sync + Send>> {
        self.value
            .as_i64()
            .filter(|v| (min..=max).contains(v))
            .ok_or_else(|| {
                self.fail(
                    ty,
                    format!("expected an integer in {min}..={max}, got {}", self.value),
                )
            })
    }
}

impl ToSql for PgParam<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        use serde_json::Value;
        if self.value.is_null() {
            return Ok(IsNull::Yes);
        }
        match ty.oid() {
            oid::BOOL => {
                let b = self
                    .value
                    .as_bool()
                    .ok_or_else(|| self.fail(ty, "expected a boolean"))?;
                out.put_u8(u8::from(b));
            }
            oid::INT2 => out.put_i16(self.int(ty, i16::MIN.into(), i16::MAX.into())? as i16),
            oid::INT4 => out.put_i32(self.int(ty, i32::MIN.into(), i32::MAX.into())? as i32),
            oid::INT8 => out.put_i64(self.int(ty, i64::MIN, i64::MAX)?),
            oid::OID => out.put_u32(self.int(ty, 0, u32::MAX.into())? as u32),
            oid::FLOAT4 | oid::FLOAT8 => {
                let f = self
                    .value
                    .as_f64()
                    .ok_or_else(|| self.fail(ty, "expected a number"))?;
                if ty.oid() == oid::FLOAT4 {
                    out.put_f32(f as f32);
                } else {
                    out.put_f64(f);
                }
            }
            oid::NUMERIC => {
                let text = match self.value {
                    Value::Number(n) => n.to_string(),
                    Value::String(s) => s.clone(),
                    _ => return Err(self.fail(ty, "expected a number or a decimal string")),
                };
                let bin = numeric_binary(text.trim())
                    .ok_or_else(|| self.fail(ty, format!("{text:?} is not a decimal number")))?;
                out.put_slice(&bin);
            }
            oid::TEXT | oid::VARCHAR | oid::BPCHAR | oid::NAME | oid::UNKNOWN | oid::CHAR => {
                match self.value {
                    Value::String(s) => out.put_slice(s.as_bytes()),
                    other => out.put_slice(other.to_string().as_bytes()),
                }
            }
            oid::BYTEA => {
                let s = self
                    .value
                    .as_str()
                    .ok_or_else(|| self.fail(ty, "expected a base64: cell string"))?;
                let bytes = convert::base64_cell_bytes(s)
                    .ok_or_else(|| self.fail(ty, "expected a base64: cell string"))?;
                out.put_slice(&bytes);
            }
            oid::UUID => {
                let s = self
                    .value
                    .as_str()
                    .ok_or_else(|| self.fail(ty, "expected a UUID string"))?;
                let hex: String = s.chars().filter(|&c| c != '-').collect();
                let v = (hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
                    .then(|| u128::from_str_radix(&hex, 16).ok())
                    .flatten()
                    .ok_or_else(|| self.fail(ty, format!("{s:?} is not a UUID")))?;
                out.put_u128(v);
            }
            oid::TIMESTAMP | oid::TIMESTAMPTZ => {
                let s = self
                    .value
                    .as_str()
                    .ok_or_else(|| self.fail(ty, "expected an RFC 3339 string"))?;
                let micros = parse_rfc3339_micros(s)
                    .ok_or_else(|| self.fail(ty, format!("{s:?} is not RFC 3339")))?;
                out.put_i64(micros - PG_EPOCH_US);
            }
            oid::JSON | oid::JSONB => {
                if ty.oid() == oid::JSONB {
                    out.put_u8(1);
                }
                serde_json::to_writer(out.writer(), self.value)
                    .map_err(|e| self.fail(ty, e.to_string()))?;
            }
            _ => return Err(self.fail(ty, "this parameter type is not mapped")),
        }
        Ok(IsNull::No)
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

#[cfg(test)]
mod tests {
    use super::{numeric_binary, numeric_text};
    use proptest::prelude::*;

    fn round(text: &str) -> String {
        numeric_text(&numeric_binary(text).expect("decimal")).expect("decodes")
    }

    #[test]
    fn numerics_round_trip_through_the_binary_format() {
        assert_eq!(round("0"), "0");
        assert_eq!(round("12345.678"), "12345.678");
        assert_eq!(round("-0.0001"), "-0.0001");
        assert_eq!(round("10000"), "10000");
        assert_eq!(round("1e3"), "1000");
        assert_eq!(round("1.5e-3"), "0.0015");
        assert_eq!(round("+000123.4500"), "123.4500");
        assert_eq!(round("NaN"), "NaN");
        for bad in ["", "-", ".", "1.2.3", "1e", "abc", "1e999999"] {
            assert!(numeric_binary(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn the_binary_format_matches_postgres_own_layout() {
        // 12345.678: digits 1 2345 6780, weight 1, dscale 3.
        assert_eq!(
            numeric_binary("12345.678").expect("decimal"),
            [0, 3, 0, 1, 0, 0, 0, 3, 0, 1, 0x09, 0x29, 0x1A, 0x7C]
        );
        assert!(numeric_text(&[0, 1, 0, 0]).is_err());
        assert!(numeric_text(&[0, 1, 0, 0, 0, 0, 0, 0, 0x27, 0x10]).is_err());
    }

    proptest! {
        #[test]
        fn decimal_strings_round_trip(int in "[1-9][0-9]{0,20}|0", frac in "[0-9]{0,12}", neg: bool) {
            let text = if frac.is_empty() { int.clone() } else { format!("{int}.{frac}") };
            let expect = if neg && text.bytes().any(|b| b != b'0' && b != b'.') {
                format!("-{text}")
            } else {
                text.clone()
            };
            let given = if neg { format!("-{text}") } else { text };
            prop_assert_eq!(round(&given), expect);
        }

        #[test]
        fn arbitrary_bytes_never_panic(raw in proptest::collection::vec(any::<u8>(), 0..40)) {
            let _ = numeric_text(&raw);
        }
    }
}
