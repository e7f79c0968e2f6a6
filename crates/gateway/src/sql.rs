//! SQL lines shared by the relational executors: `convert`'s parse plus
//! the placeholder check of [`crate::placeholders`], both before any round
//! trip.

use crate::error::GatewayError;
use crate::placeholders::{Dialect, count_placeholders};

/// A parsed SQL line whose params match its placeholders.
#[derive(Debug, Clone, PartialEq)]
pub struct SqlRequest {
    /// The statement, as the line gave it.
    pub sql: String,
    /// Its params, in placeholder order.
    pub params: Vec<serde_json::Value>,
}

/// Parses `line` (`{"sql", "params"?}`) and checks its params against the
/// statement's placeholders in `dialect`.
///
/// # Errors
/// [`GatewayError::BadLine`] for a line `convert` refuses,
/// [`GatewayError::PlaceholderCount`] when the counts differ.
pub fn parse_sql_line(line: &str, dialect: Dialect) -> Result<SqlRequest, GatewayError> {
    let d = convert::parse_sql_dispatch(line)?;
    let placeholders = count_placeholders(&d.sql, dialect);
    if placeholders != d.params.len() {
        return Err(GatewayError::PlaceholderCount {
            placeholders,
            params: d.params.len(),
        });
    }
    Ok(SqlRequest {
        sql: d.sql,
        params: d.params,
    })
}
