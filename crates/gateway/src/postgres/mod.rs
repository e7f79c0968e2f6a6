//! [`PgExecutor`]: SQL dispatch lines on PostgreSQL through
//! `tokio-postgres`, over a pool of shared, pipelined connections
//! (`pool`).
//!
//! A line's statement is prepared once per connection (each connection's
//! statement cache), its result columns checked against
//! the mapped types ([`types`]) before it runs, its params bound in binary
//! as the types the server inferred, and its rows decoded to
//! `convert::Cell`s and built into a record set by
//! `convert::rows_to_record_set`.
//!
//! Each connection's session gets `statement_timeout` (so the server stops
//! a statement nobody waits for); the client gives up at the same
//! deadline. A connection that died (killed backend, reset socket) fails
//! the statements in flight on it with [`GatewayError::ConnectionLost`];
//! the next line on its slot opens a fresh one.

pub(crate) mod pool;
pub(crate) mod types;

use std::error::Error as _;
use std::time::Duration;

use convert::{Cell, RecordSetMode, rows_to_record_set};
use tokio_postgres::types::ToSql;

use crate::config::{SqlConfig, endpoint_of};
use crate::error::{Backend, GatewayError};
use crate::executor::{Executor, Outcome, within};
use crate::placeholders::Dialect;
use crate::sql::{SqlRequest, parse_sql_line};
use pool::{ConnectError, PgPool};
use types::{ParamError, PgParam, Raw};

const BACKEND: Backend = Backend::Postgres;

/// SQL lines on PostgreSQL.
pub struct PgExecutor {
    pool: PgPool,
    endpoint: String,
    mode: RecordSetMode,
    connect_timeout: Duration,
    statement_timeout: Duration,
}

impl PgExecutor {
    /// A pool for `config` (no connection is opened until the first line);
    /// record sets are built in `mode`.
    ///
    /// # Errors
    /// [`GatewayError::Config`] for a URL that does not parse or a pool that
    /// cannot be built.
    pub fn new(config: &SqlConfig, mode: RecordSetMode) -> Result<Self, GatewayError> {
        let bad = |reason: String| GatewayError::Config {
            backend: BACKEND,
            reason,
        };
        let mut pg: tokio_postgres::Config = config.url.parse().map_err(|e| bad(format!("{e}")))?;
        let timeout_ms = config.pool.statement_timeout.as_millis();
        pg.connect_timeout(config.pool.connect_timeout)
            .options(format!("-c statement_timeout={timeout_ms}"));
        if pg.get_application_name().is_none() {
            pg.application_name("atbench-gateway");
        }
        let pool = PgPool::new(pg, config.pool.size, config.pool.connect_timeout);
        Ok(PgExecutor {
            pool,
            endpoint: endpoint_of(&config.url),
            mode,
            connect_timeout: config.pool.connect_timeout,
            statement_timeout: config.pool.statement_timeout,
        })
    }

    /// Connections open now.
    pub fn open_connections(&self) -> usize {
        self.pool.open()
    }

    fn connect_error(&self, e: ConnectError) -> GatewayError {
        match e {
            ConnectError::Timeout => GatewayError::Timeout {
                backend: BACKEND,
                what: "connect",
                after: self.connect_timeout,
            },
            ConnectError::Client(e) => match pg_error(e) {
                GatewayError::ConnectionLost { reason, .. }
                | GatewayError::Protocol { reason, .. } => GatewayError::Unreachable {
                    backend: BACKEND,
                    endpoint: self.endpoint.clone(),
                    reason,
                },
                // Refused by the server itself: bad password, no such database.
                other => other,
            },
        }
    }

    async fn run(&self, request: &SqlRequest) -> Result<Outcome, GatewayError> {
        let conn = self.pool.get().await.map_err(|e| self.connect_error(e))?;
        let client = &conn.client;
        let prepared = conn.statement(&request.sql).await.map_err(pg_error)?;
        let statement = &prepared.statement;
        let columns = statement.columns();
        let kinds = prepared
            .kinds
            .as_ref()
            .map_err(|u| GatewayError::UnsupportedType {
                column: u.column.clone(),
                type_name: u.type_name.clone(),
            })?;
        let names = &prepared.names;
        let params: Vec<PgParam<'_>> = request
            .params
            .iter()
            .enumerate()
            .map(|(i, value)| PgParam {
                index: i + 1,
                value,
            })
            .collect();
        let refs: Vec<&(dyn ToSql + Sync)> =
            params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
        if columns.is_empty() {
            let n = client.execute(statement, &refs).await.map_err(pg_error)?;
            return Ok(Outcome::Affected(n));
        }
        let rows = client.query(statement, &refs).await.map_err(pg_error)?;
        let mut cells = Vec::with_capacity(rows.len());
        for row in &rows {
            let mut out = Vec::with_capacity(kinds.len());
            for (i, kind) in kinds.iter().enumerate() {
                let raw: Raw<'_> = row.try_get(i).map_err(pg_error)?;
                out.push(match raw.0 {
                    None => Cell::Null,
                    Some(bytes) => {
                        kind.decode(bytes)
                            .map_err(|reason| GatewayError::TypeMismatch {
                                column: names[i].clone(),
                                type_name: columns[i].type_().name().to_string(),
                                reason,
                            })?
                    }
                });
            }
            cells.push(out);
        }
        Ok(Outcome::Rows(rows_to_record_set(names, &cells, self.mode)?))
    }
}

/// The gateway's error for a client error (see the module docs).
fn pg_error(e: tokio_postgres::Error) -> GatewayError {
    if let Some(db) = e.as_db_error() {
        let code = db.code().code();
        if code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03") {
            return GatewayError::ConnectionLost {
                backend: BACKEND,
                reason: format!("{code}: {}", db.message()),
            };
        }
        return GatewayError::Server {
            backend: BACKEND,
            code: code.to_string(),
            message: db.message().to_string(),
        };
    }
    let mut source = e.source();
    while let Some(s) = source {
        if let Some(p) = s.downcast_ref::<ParamError>() {
            return p.into();
        }
        if s.is::<std::io::Error>() {
            return GatewayError::ConnectionLost {
                backend: BACKEND,
                reason: e.to_string(),
            };
        }
        source = s.source();
    }
    if e.is_closed() {
        return GatewayError::ConnectionLost {
            backend: BACKEND,
            reason: e.to_string(),
        };
    }
    GatewayError::Protocol {
        backend: BACKEND,
        reason: e.to_string(),
    }
}

impl Executor for PgExecutor {
    type Request = SqlRequest;

    fn backend(&self) -> Backend {
        BACKEND
    }

    fn parse(&self, line: &str) -> Result<SqlRequest, GatewayError> {
        parse_sql_line(line, Dialect::Postgres)
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
