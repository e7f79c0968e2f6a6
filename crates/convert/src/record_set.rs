//! `rows_to_record_set`: typed SQL rows -> a record set holding protobuf
//! rows (`ListValue`, one value per column) and JSON-encoded records (one
//! JSON object per row, keyed by column name).
//!
//! Cells map as follows:
//!
//! | cell | JSON record | protobuf row |
//! |---|---|---|
//! | `Null` | `null` | `NullValue` |
//! | `Int` | integer, exact | `NumberValue`; past 2^53 (inexact in an f64) the decimal digits as a `StringValue`, as the proto3 JSON mapping does for int64 |
//! | `Float` | number (finite only) | `NumberValue` |
//! | `Bool` | `true`/`false` | `BoolValue` |
//! | `Numeric` | the decimal text as a string (exact) | `StringValue` |
//! | `Text` | string | `StringValue` |
//! | `Bytes` | [`crate::base64_cell`] string | the same string |
//! | `Uuid` | hyphenated lower-case string | the same string |
//! | `Timestamp` | RFC 3339 UTC with microseconds | the same string |
//! | `Json` | the JSON value inline | [`crate::json_to_prost_value_checked`] |
//!
//! Every output vector is allocated once at its final size (rows, columns);
//! a record's buffer is sized from the previous record's length, so it
//! rarely grows.

use prost_types::value::Kind;
use prost_types::{ListValue, Value};
use serde::Serializer as _;

use crate::error::PrecisionLoss;
use crate::value::{i64_is_exact, json_to_prost_value_checked, null};

/// One typed SQL cell.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// SQL NULL.
    Null,
    /// A 64-bit integer column.
    Int(i64),
    /// A double-precision column.
    Float(f64),
    /// A boolean column.
    Bool(bool),
    /// An exact numeric (DECIMAL) as its decimal text.
    Numeric(String),
    /// A text column.
    Text(String),
    /// A BLOB / BYTEA column.
    Bytes(Vec<u8>),
    /// A UUID column.
    Uuid(u128),
    /// A timestamp column: microseconds since 1970-01-01T00:00:00Z.
    Timestamp(i64),
    /// A JSON / JSONB column.
    Json(serde_json::Value),
}

/// What [`rows_to_record_set`] builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordSetMode {
    /// Only the JSON records (`rows` stays empty).
    JsonOnly,
    /// JSON records and protobuf rows.
    JsonAndRows,
}

/// A result set in both encodings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecordSet {
    /// Column names, in order.
    pub columns: Vec<String>,
    /// One `ListValue` per row, one value per column (empty in
    /// [`RecordSetMode::JsonOnly`]).
    pub rows: Vec<ListValue>,
    /// One JSON object text per row.
    pub records: Vec<String>,
}

/// Why a result set could not be built; names the row and column.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RecordSetError {
    /// A row with a different number of cells than there are columns.
    #[error("row {row} has {found} cells for {expected} columns")]
    RowWidth {
        /// Row index.
        row: usize,
        /// Column count.
        expected: usize,
        /// Cells in the row.
        found: usize,
    },
    /// A NaN or infinite float, which JSON cannot hold.
    #[error("row {row}, column `{column}`: non-finite float")]
    NonFiniteFloat {
        /// Row index.
        row: usize,
        /// Column name.
        column: String,
    },
    /// A timestamp outside years 0000-9999.
    #[error("row {row}, column `{column}`: timestamp {micros} µs is outside years 0000-9999")]
    TimestampOutOfRange {
        /// Row index.
        row: usize,
        /// Column name.
        column: String,
        /// The cell value.
        micros: i64,
    },
    /// A JSON cell holding an integer an f64 cannot hold exactly (protobuf
    /// rows only).
    #[error("row {row}, column `{column}`: {source}")]
    PrecisionLoss {
        /// Row index.
        row: usize,
        /// Column name.
        column: String,
        /// Where inside the JSON cell.
        #[source]
        source: PrecisionLoss,
    },
}

/// Writes `uuid` as `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
fn write_uuid(uuid: u128, out: &mut [u8; 36]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut at = 0;
    for nibble in (0..32).rev() {
        if matches!(at, 8 | 13 | 18 | 23) {
            out[at] = b'-';
            at += 1;
        }
        out[at] = HEX[((uuid >> (nibble * 4)) & 0xf) as usize];
        at += 1;
    }
}

/// ASCII bytes as a `&str` (they are, by construction; the check is cheap
/// and keeps this free of `unsafe`).
fn ascii(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).unwrap_or("")
}

// Writing into a Vec<u8> cannot fail: the serializers' results are ignored.
fn json_i64(out: &mut Vec<u8>, i: i64) {
    let _ = serde_json::Serializer::new(out).serialize_i64(i);
}

fn json_f64(out: &mut Vec<u8>, f: f64) {
    let _ = serde_json::Serializer::new(out).serialize_f64(f);
}

fn json_str(out: &mut Vec<u8>, s: &str) {
    let _ = serde_json::Serializer::new(out).serialize_str(s);
}

/// Appends one cell to the JSON record and returns its protobuf value when
/// `rows` is set.
fn cell(
    cell: &Cell,
    record: &mut Vec<u8>,
    rows: bool,
    scratch: &mut String,
    at: (usize, &str),
) -> Result<Option<Value>, RecordSetError> {
    let (row, column) = at;
    let text_value = |s: &str| rows.then(|| crate::value::string_value(s.to_owned()));
    Ok(match cell {
        Cell::Null => {
            record.extend_from_slice(b"null");
            rows.then(null)
        }
        Cell::Int(i) => {
            json_i64(record, *i);
            rows.then(|| {
                if i64_is_exact(*i) {
                    crate::value::number_value(*i as f64)
                } else {
                    crate::value::string_value(i.to_string())
                }
            })
        }
        Cell::Float(f) => {
            if !f.is_finite() {
                return Err(RecordSetError::NonFiniteFloat {
                    row,
                    column: column.to_owned(),
                });
            }
            json_f64(record, *f);
            rows.then(|| crate::value::number_value(*f))
        }
        Cell::Bool(b) => {
            record.extend_from_slice(if *b { b"true" } else { b"false" });
            rows.then_some(Value {
                kind: Some(Kind::BoolValue(*b)),
            })
        }
        Cell::Numeric(s) | Cell::Text(s) => {
            json_str(record, s);
            text_value(s)
        }
        Cell::Bytes(bytes) => {
            scratch.clear();
            crate::cell::base64_cell_into(bytes, scratch);
            // Base64 needs no escaping.
            record.push(b'"');
            record.extend_from_slice(scratch.as_bytes());
            record.push(b'"');
            text_value(scratch)
        }
        Cell::Uuid(u) => {
            let mut buf = [0u8; 36];
            write_uuid(*u, &mut buf);
            record.push(b'"');
            record.extend_from_slice(&buf);
            record.push(b'"');
            text_value(ascii(&buf))
        }
        Cell::Timestamp(micros) => {
            let mut buf = [0u8; 27];
            if !codec::datetime::write_rfc3339_micros(*micros, &mut buf) {
                return Err(RecordSetError::TimestampOutOfRange {
                    row,
                    column: column.to_owned(),
                    micros: *micros,
                });
            }
            record.push(b'"');
            record.extend_from_slice(&buf);
            record.push(b'"');
            text_value(ascii(&buf))
        }
        Cell::Json(v) => {
            let _ = serde_json::to_writer(&mut *record, v);
            if rows {
                Some(json_to_prost_value_checked(v).map_err(|source| {
                    RecordSetError::PrecisionLoss {
                        row,
                        column: column.to_owned(),
                        source,
                    }
                })?)
            } else {
                None
            }
        }
    })
}

/// Builds the record set of `rows` (each `columns.len()` cells wide).
///
/// # Errors
/// [`RecordSetError`] naming the row (and column): a row of the wrong width,
/// a non-finite float, a timestamp outside years 0000-9999, or (protobuf
/// rows) a JSON cell with an integer an f64 cannot hold exactly.
pub fn rows_to_record_set(
    columns: &[String],
    rows: &[Vec<Cell>],
    mode: RecordSetMode,
) -> Result<RecordSet, RecordSetError> {
    let with_rows = mode == RecordSetMode::JsonAndRows;
    // `"name":` for each column, escaped once per set.
    let prefixes: Vec<Vec<u8>> = columns
        .iter()
        .map(|name| {
            let mut p = Vec::with_capacity(name.len() + 4);
            let _ = serde_json::to_writer(&mut p, name);
            p.push(b':');
            p
        })
        .collect();
    let mut set = RecordSet {
        columns: columns.to_vec(),
        rows: Vec::with_capacity(if with_rows { rows.len() } else { 0 }),
        records: Vec::with_capacity(rows.len()),
    };
    let mut scratch = String::new();
    let mut size_hint = 2 + columns.len() * 24;
    for (r, row) in rows.iter().enumerate() {
        if row.len() != columns.len() {
            return Err(RecordSetError::RowWidth {
                row: r,
                expected: columns.len(),
                found: row.len(),
            });
        }
        let mut record = Vec::with_capacity(size_hint);
        let mut values = Vec::with_capacity(if with_rows { columns.len() } else { 0 });
        record.push(b'{');
        for (c, value) in row.iter().enumerate() {
            if c > 0 {
                record.push(b',');
            }
            record.extend_from_slice(&prefixes[c]);
            if let Some(v) = cell(
                value,
                &mut record,
                with_rows,
                &mut scratch,
                (r, &columns[c]),
            )? {
                values.push(v);
            }
        }
        record.push(b'}');
        size_hint = record.len() + record.len() / 8;
        // Everything written is UTF-8 (from &str values and ASCII).
        let record = String::from_utf8(record).unwrap_or_default();
        set.records.push(record);
        if with_rows {
            set.rows.push(ListValue { values });
        }
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        let mut u = [0u8; 36];
        write_uuid(0x0123_4567_89ab_cdef_0011_2233_4455_6677, &mut u);
        assert_eq!(ascii(&u), "01234567-89ab-cdef-0011-223344556677");
    }

    #[test]
    fn both_modes() {
        let columns = vec![
            "id".to_owned(),
            "n\"ame".to_owned(),
            "big".to_owned(),
            "blob".to_owned(),
            "j".to_owned(),
        ];
        let rows = vec![vec![
            Cell::Uuid(1),
            Cell::Text("x\ny".to_owned()),
            Cell::Int(i64::MAX),
            Cell::Bytes(b"hi!".to_vec()),
            Cell::Json(serde_json::json!({"a": [1, null]})),
        ]];
        let set =
            rows_to_record_set(&columns, &rows, RecordSetMode::JsonAndRows).unwrap_or_default();
        assert_eq!(
            set.records,
            [
                r#"{"id":"00000000-0000-0000-0000-000000000001","n\"ame":"x\ny","big":9223372036854775807,"blob":"base64:aGkh","j":{"a":[1,null]}}"#
            ]
        );
        let big = &set.rows[0].values[2];
        assert_eq!(
            big.kind,
            Some(Kind::StringValue("9223372036854775807".to_owned()))
        );
        let only = rows_to_record_set(&columns, &rows, RecordSetMode::JsonOnly).unwrap_or_default();
        assert_eq!(only.records, set.records);
        assert!(only.rows.is_empty());
        let bad = vec![vec![Cell::Null]];
        assert!(matches!(
            rows_to_record_set(&columns, &bad, RecordSetMode::JsonOnly),
            Err(RecordSetError::RowWidth {
                row: 0,
                expected: 5,
                found: 1
            })
        ));
    }
}
