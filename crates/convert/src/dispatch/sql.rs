//! SQL dispatch lines: `{"sql": "...", "params": [...]}`.

use std::fmt;

use serde::de::{IgnoredAny, MapAccess, Visitor};

use super::{FieldKey, FieldName, Slot, fail, once, required, resolve, run, value};
use crate::error::DispatchError;

/// A parsed SQL dispatch line.
#[derive(Debug, Clone, PartialEq)]
pub struct SqlDispatch {
    /// The statement text (never blank).
    pub sql: String,
    /// Its bind parameters in order; empty when the line has none.
    pub params: Vec<serde_json::Value>,
}

enum Field {
    Sql,
    Params,
    Other,
}

impl FieldName for Field {
    fn from_name(name: &str) -> Self {
        match name {
            "sql" => Field::Sql,
            "params" | "parameters" => Field::Params,
            _ => Field::Other,
        }
    }
}

struct SqlVisitor<'s> {
    slot: &'s mut Slot,
}

impl<'de> Visitor<'de> for SqlVisitor<'_> {
    type Value = SqlDispatch;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a SQL dispatch object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SqlDispatch, A::Error> {
        let slot = self.slot;
        let mut sql: Option<String> = None;
        let mut params: Option<Vec<serde_json::Value>> = None;
        while let Some(FieldKey(field)) = map.next_key::<FieldKey<Field>>()? {
            match field {
                Field::Sql => {
                    let v: String = value(&mut map, "sql", slot)?;
                    once(&mut sql, v, "sql", slot)?;
                }
                Field::Params => {
                    // `null` reads as no parameters.
                    let v: Option<Vec<serde_json::Value>> = value(&mut map, "params", slot)?;
                    once(&mut params, v.unwrap_or_default(), "params", slot)?;
                }
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let sql = required(sql, "sql", slot)?;
        if sql.trim().is_empty() {
            return Err(fail(
                slot,
                DispatchError::InvalidField {
                    field: "sql",
                    reason: "blank statement".to_owned(),
                },
            ));
        }
        Ok(SqlDispatch {
            sql,
            params: params.unwrap_or_default(),
        })
    }
}

/// Parses one SQL dispatch line. `parameters` is accepted for `params`;
/// a missing (or `null`) `params` is an empty list; unknown fields are
/// ignored.
///
/// # Errors
/// [`DispatchError`] naming the field: `sql` missing, blank or not a
/// string; `params` not an array; either given twice; or the line is not a
/// JSON object.
pub fn parse_sql_dispatch(line: &str) -> Result<SqlDispatch, DispatchError> {
    let mut slot = None;
    let result = run(line, SqlVisitor { slot: &mut slot });
    resolve(line, result, slot)
}
