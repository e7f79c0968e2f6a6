//! [`MysqlExecutor`]: SQL dispatch lines on MariaDB or MySQL through
//! `mysql_async` (its own pool and per-connection statement cache).
//!
//! Statements go over the binary protocol: prepared once per connection
//! (the client's cache), columns checked against the mapped types before
//! the statement runs, params bound positionally.
//!
//! | column type | cell |
//! |---|---|
//! | `TINYINT` .. `BIGINT`, `YEAR` (`BOOL` is `TINYINT(1)`) | `Int`; an unsigned value past `i64::MAX` as `Numeric` |
//! | `FLOAT`, `DOUBLE` | `Float` |
//! | `DECIMAL` | `Numeric` (exact text) |
//! | `CHAR`, `VARCHAR`, `TEXT` types, `ENUM`, `SET` | `Text` |
//! | the same with the binary character set (`BINARY`, `VARBINARY`, `BLOB` types) | `Bytes` |
//! | `JSON` (MySQL) | `Json` |
//! | `DATETIME`, `TIMESTAMP` | `Timestamp` (sessions run with `time_zone = '+00:00'`) |
//! | NULL | `Null` |
//!
//! MariaDB's `JSON` is an alias of `LONGTEXT` and its `UUID` a string
//! type: without the extended type metadata (which this client does not
//! request) both arrive as text columns, and so become `Text` cells.
//! `DATE`, `TIME`, `BIT` and spatial columns are
//! [`GatewayError::UnsupportedType`].
//!
//! Params map from JSON: `null` -> NULL, booleans -> 0/1, integers ->
//! signed or unsigned 64-bit, other numbers -> DOUBLE, strings -> their
//! bytes, arrays and objects -> their JSON text.
//!
//! A connection going back to the pool is not reset (`COM_RESET_CONNECTION`
//! would drop the server's prepared statements and empty the cache, so
//! every line would prepare again): as on PostgreSQL, session state a line
//! sets (`SET @v`, a temporary table) stays with that connection.
//!
//! MySQL has no session-wide statement limit for every statement kind, so
//! the statement timeout is the client's alone; a killed connection fails
//! the statement in flight with [`GatewayError::ConnectionLost`] and the
//! pool discards it.

use std::time::Duration;

use codec::datetime::micros_from_fields;
use convert::{Cell, RecordSetMode, rows_to_record_set};
use mysql_async::consts::ColumnType;
use mysql_async::prelude::Queryable;
use mysql_async::{Column, Opts, OptsBuilder, Params, Pool, PoolConstraints, PoolOpts, Row, Value};

use crate::config::{SqlConfig, endpoint_of};
use crate::error::{Backend, GatewayError};
use crate::executor::{Executor, Outcome, within};
use crate::placeholders::Dialect;
use crate::sql::{SqlRequest, parse_sql_line};

const BACKEND: Backend = Backend::Mysql;
/// How long an idle connection stays in the pool. mysql_async keeps idle
/// connections past the pool's minimum (zero here) only when this is
/// non-zero; at its default of zero every connection would be closed when
/// its line ends, and each line would connect anew.
const IDLE_TTL: Duration = Duration::from_secs(300);
/// MySQL's id of the `binary` character set.
const BINARY_CHARSET: u16 = 63;
/// Server errors that mean the connection is gone, not the statement
/// wrong: `ER_CONNECTION_KILLED`, `ER_QUERY_INTERRUPTED`, server shutdown.
const LOST_CODES: [u16; 4] = [1927, 1317, 1053, 2013];

/// SQL lines on MariaDB/MySQL.
pub struct MysqlExecutor {
    pool: Pool,
    endpoint: String,
    mode: RecordSetMode,
    connect_timeout: Duration,
    statement_timeout: Duration,
}

#[derive(Debug, Clone, Copy)]
enum ColumnKind {
    Int,
    Float,
    Numeric,
    Text,
    Bytes,
    Json,
    Timestamp,
}

fn column_kind(c: &Column) -> Result<ColumnKind, GatewayError> {
    use ColumnType::*;
    Ok(match c.column_type() {
        MYSQL_TYPE_TINY | MYSQL_TYPE_SHORT | MYSQL_TYPE_INT24 | MYSQL_TYPE_LONG
        | MYSQL_TYPE_LONGLONG | MYSQL_TYPE_YEAR => ColumnKind::Int,
        MYSQL_TYPE_FLOAT | MYSQL_TYPE_DOUBLE => ColumnKind::Float,
        MYSQL_TYPE_DECIMAL | MYSQL_TYPE_NEWDECIMAL => ColumnKind::Numeric,
        MYSQL_TYPE_VARCHAR
        | MYSQL_TYPE_VAR_STRING
        | MYSQL_TYPE_STRING
        | MYSQL_TYPE_TINY_BLOB
        | MYSQL_TYPE_MEDIUM_BLOB
        | MYSQL_TYPE_LONG_BLOB
        | MYSQL_TYPE_BLOB
        | MYSQL_TYPE_ENUM
        | MYSQL_TYPE_SET => {
            // The binary flag also marks `_bin` collations of text; only the
            // binary character set means bytes.
            if c.character_set() == BINARY_CHARSET {
                ColumnKind::Bytes
            } else {
                ColumnKind::Text
            }
        }
        MYSQL_TYPE_JSON => ColumnKind::Json,
        MYSQL_TYPE_DATETIME
        | MYSQL_TYPE_DATETIME2
        | MYSQL_TYPE_TIMESTAMP
        | MYSQL_TYPE_TIMESTAMP2 => ColumnKind::Timestamp,
        other => {
            return Err(GatewayError::UnsupportedType {
                column: c.name_str().into_owned(),
                type_name: format!("{other:?}"),
            });
        }
    })
}

fn decode(kind: ColumnKind, value: Value) -> Result<Cell, String> {
    fn text(bytes: Vec<u8>) -> Result<String, String> {
        String::from_utf8(bytes).map_err(|e| e.to_string())
    }
    Ok(match (kind, value) {
        (_, Value::NULL) => Cell::Null,
        (ColumnKind::Int, Value::Int(v)) => Cell::Int(v),
        (ColumnKind::Int, Value::UInt(v)) => match i64::try_from(v) {
            Ok(v) => Cell::Int(v),
            Err(_) => Cell::Numeric(v.to_string()),
        },
        (ColumnKind::Float, Value::Float(v)) => Cell::Float(v.into()),
        (ColumnKind::Float, Value::Double(v)) => Cell::Float(v),
        (ColumnKind::Numeric, Value::Bytes(b)) => Cell::Numeric(text(b)?),
        (ColumnKind::Text, Value::Bytes(b)) => Cell::Text(text(b)?),
        (ColumnKind::Bytes, Value::Bytes(b)) => Cell::Bytes(b),
        (ColumnKind::Json, Value::Bytes(b)) => {
            Cell::Json(serde_json::from_slice(&b).map_err(|e| e.to_string())?)
        }
        (ColumnKind::Timestamp, Value::Date(y, mo, d, h, mi, s, us)) => Cell::Timestamp(
            micros_from_fields(
                y.into(),
                mo.into(),
                d.into(),
                h.into(),
                mi.into(),
                s.into(),
                us,
            )
            .ok_or("a zero or out-of-range date has no cell")?,
        ),
        (kind, value) => return Err(format!("a {value:?} value in a {kind:?} column")),
    })
}

fn param(v: &serde_json::Value) -> Value {
    use serde_json::Value as J;
    match v {
        J::Null => Value::NULL,
        J::Bool(b) => Value::Int(i64::from(*b)),
        J::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Value::Int(i),
            (None, Some(u)) => Value::UInt(u),
            _ => Value::Double(n.as_f64().unwrap_or(f64::NAN)),
        },
        J::String(s) => Value::Bytes(s.as_bytes().to_vec()),
        other => Value::Bytes(other.to_string().into_bytes()),
    }
}

impl MysqlExecutor {
    /// A pool for `config` (no connection is opened until the first line);
    /// record sets are built in `mode`.
    ///
    /// # Errors
    /// [`GatewayError::Config`] for a URL that does not parse.
    pub fn new(config: &SqlConfig, mode: RecordSetMode) -> Result<Self, GatewayError> {
        let bad = |reason: String| GatewayError::Config {
            backend: BACKEND,
            reason,
        };
        let opts = Opts::from_url(&config.url).map_err(|e| bad(e.to_string()))?;
        let constraints = PoolConstraints::new(0, config.pool.size.max(1))
            .ok_or_else(|| bad("pool size".into()))?;
        let opts = OptsBuilder::from_opts(opts)
            .pool_opts(
                PoolOpts::default()
                    .with_constraints(constraints)
                    .with_inactive_connection_ttl(IDLE_TTL)
                    .with_reset_connection(false),
            )
            .stmt_cache_size(256)
            .prefer_socket(false)
            .init(vec!["SET time_zone = '+00:00'"]);
        Ok(MysqlExecutor {
            pool: Pool::new(opts),
            endpoint: endpoint_of(&config.url),
            mode,
            connect_timeout: config.pool.connect_timeout,
            statement_timeout: config.pool.statement_timeout,
        })
    }

    /// Closes every connection (waits for those in use to come back).
    ///
    /// # Errors
    /// [`GatewayError::ConnectionLost`] when the pool cannot be closed cleanly.
    pub async fn close(self) -> Result<(), GatewayError> {
        self.pool
            .disconnect()
            .await
            .map_err(|e| mysql_error(e, &self.endpoint, false))
    }

    async fn run(&self, request: &SqlRequest) -> Result<Outcome, GatewayError> {
        let mut conn = match tokio::time::timeout(self.connect_timeout, self.pool.get_conn()).await
        {
            Err(_) => {
                return Err(GatewayError::Timeout {
                    backend: BACKEND,
                    what: "connect",
                    after: self.connect_timeout,
                });
            }
            Ok(conn) => conn.map_err(|e| mysql_error(e, &self.endpoint, true))?,
        };
        let lost = |e| mysql_error(e, &self.endpoint, false);
        let statement = conn.prep(request.sql.as_str()).await.map_err(lost)?;
        let columns = statement.columns();
        let kinds = columns
            .iter()
            .map(column_kind)
            .collect::<Result<Vec<_>, _>>()?;
        let params = if request.params.is_empty() {
            Params::Empty
        } else {
            Params::Positional(request.params.iter().map(param).collect())
        };
        if columns.is_empty() {
            conn.exec_drop(&statement, params).await.map_err(lost)?;
            return Ok(Outcome::Affected(conn.affected_rows()));
        }
        let rows: Vec<Row> = conn.exec(&statement, params).await.map_err(lost)?;
        let names: Vec<String> = columns.iter().map(|c| c.name_str().into_owned()).collect();
        let mut cells = Vec::with_capacity(rows.len());
        for row in rows {
            let values = row.unwrap_raw();
            let mut out = Vec::with_capacity(kinds.len());
            for (i, (kind, value)) in kinds.iter().zip(values).enumerate() {
                let value = value.unwrap_or(Value::NULL);
                out.push(
                    decode(*kind, value).map_err(|reason| GatewayError::TypeMismatch {
                        column: names[i].clone(),
                        type_name: format!("{:?}", columns[i].column_type()),
                        reason,
                    })?,
                );
            }
            cells.push(out);
        }
        Ok(Outcome::Rows(rows_to_record_set(
            &names, &cells, self.mode,
        )?))
    }
}

/// The gateway's error for a client error; `connecting` says whether it
/// came from opening a connection (then an I/O fault means unreachable).
fn mysql_error(e: mysql_async::Error, endpoint: &str, connecting: bool) -> GatewayError {
    use mysql_async::{DriverError, Error};
    match e {
        Error::Server(s) if LOST_CODES.contains(&s.code) => GatewayError::ConnectionLost {
            backend: BACKEND,
            reason: format!("{} ({}): {}", s.code, s.state, s.message),
        },
        Error::Server(s) => GatewayError::Server {
            backend: BACKEND,
            code: format!("{} ({})", s.code, s.state),
            message: s.message,
        },
        Error::Io(io) if connecting => GatewayError::Unreachable {
            backend: BACKEND,
            endpoint: endpoint.to_string(),
            reason: io.to_string(),
        },
        Error::Io(io) => GatewayError::ConnectionLost {
            backend: BACKEND,
            reason: io.to_string(),
        },
        Error::Driver(DriverError::StmtParamsMismatch { required, supplied }) => {
            GatewayError::PlaceholderCount {
                placeholders: usize::from(required),
                params: supplied,
            }
        }
        Error::Driver(d @ (DriverError::ConnectionClosed | DriverError::PoolDisconnected)) => {
            GatewayError::ConnectionLost {
                backend: BACKEND,
                reason: d.to_string(),
            }
        }
        Error::Url(u) => GatewayError::Config {
            backend: BACKEND,
            reason: u.to_string(),
        },
        other => GatewayError::Protocol {
            backend: BACKEND,
            reason: other.to_string(),
        },
    }
}

impl Executor for MysqlExecutor {
    type Request = SqlRequest;

    fn backend(&self) -> Backend {
        BACKEND
    }

    fn parse(&self, line: &str) -> Result<SqlRequest, GatewayError> {
        parse_sql_line(line, Dialect::Mysql)
    }

    async fn execute(&self, request: &SqlRequest) -> Result<Outcome, GatewayError> {
        within(
            BACKEND,
            "statement",
            self.statement_timeout,
            self.run(request),
        )
        .await
    }
}
