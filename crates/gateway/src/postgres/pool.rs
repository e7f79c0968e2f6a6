//! [`PgPool`]: `size` shared, pipelined `tokio-postgres` connections,
//! each with its own statement cache.
//!
//! A `tokio-postgres` client takes requests from many tasks at once and
//! pipelines them on its connection, so a line does not need a connection
//! to itself: each line goes to the slot with the fewest lines in flight
//! (the lowest such slot on a tie), and a connection is opened on first use
//! of its slot. A lone caller therefore keeps to one warm connection, and
//! concurrent callers spread over more as they pile up; round robin, the
//! first policy, sent a lone caller's lines to a different connection (and
//! its task and socket) each time, which `live.pg_point_select/ours/callers-1`
//! showed as client CPU the client alone does not spend. A connection that died
//! (`is_closed`) is replaced by the next line that picks its slot; the
//! lines in flight on it fail once with a lost-connection error. Each line
//! is one statement in autocommit, so sharing is safe; a line that opens a
//! transaction (`BEGIN`) would share it with the other lines of its
//! connection, which is why the gateway's line shape has no transactions.
//!
//! An exclusive-checkout pool (`deadpool-postgres`) was the first design;
//! `live.pg_point_select` at 10 and 100 callers showed callers queueing
//! for connections that could have pipelined their requests.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use tokio_postgres::{Client, NoTls, Statement};

use super::types::ColumnKind;

/// Statements cached per connection at most; past it a statement is
/// prepared for its line and not kept (a workload of ad-hoc statements
/// must not grow memory without bound).
pub(crate) const STATEMENT_CACHE: usize = 1024;

/// A statement prepared on one connection, with what every line of it
/// needs from its result columns worked out once: their names and how
/// each decodes (or the first column whose type is not mapped).
pub(crate) struct Prepared {
    pub statement: Statement,
    pub names: Vec<String>,
    pub kinds: Result<Vec<ColumnKind>, Unmapped>,
}

/// A result column of a type the gateway does not map.
pub(crate) struct Unmapped {
    pub column: String,
    pub type_name: String,
}

impl Prepared {
    fn new(statement: Statement) -> Self {
        let columns = statement.columns();
        let names = columns.iter().map(|c| c.name().to_string()).collect();
        let kinds = columns
            .iter()
            .map(|c| {
                ColumnKind::of(c.type_()).ok_or_else(|| Unmapped {
                    column: c.name().to_string(),
                    type_name: c.type_().name().to_string(),
                })
            })
            .collect();
        Prepared {
            statement,
            names,
            kinds,
        }
    }
}

/// One open connection and the statements prepared on it.
pub(crate) struct PgConn {
    pub client: Client,
    statements: RwLock<HashMap<String, Arc<Prepared>>>,
}

impl PgConn {
    /// The prepared statement of `sql` on this connection, prepared on
    /// first use.
    pub async fn statement(&self, sql: &str) -> Result<Arc<Prepared>, tokio_postgres::Error> {
        if let Some(s) = self
            .statements
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(sql)
        {
            return Ok(Arc::clone(s));
        }
        let prepared = Arc::new(Prepared::new(self.client.prepare(sql).await?));
        let mut cache = self.statements.write().unwrap_or_else(|p| p.into_inner());
        if cache.len() < STATEMENT_CACHE {
            cache.insert(sql.to_string(), Arc::clone(&prepared));
        }
        Ok(prepared)
    }
}

struct Slot {
    current: Mutex<Option<Arc<PgConn>>>,
    /// Lines checked out on this slot and not yet finished.
    in_flight: AtomicUsize,
    /// Held while this slot connects, so a dead connection is replaced once.
    connecting: tokio::sync::Mutex<()>,
}

/// Why a connection could not be had.
pub(crate) enum ConnectError {
    /// The connect did not finish within the connect timeout.
    Timeout,
    /// The client's error (refused, authentication, bad database).
    Client(tokio_postgres::Error),
}

/// `size` connection slots over one configuration.
pub(crate) struct PgPool {
    config: tokio_postgres::Config,
    slots: Vec<Slot>,
    connect_timeout: Duration,
}

/// A checked-out connection; its slot counts it in flight until dropped.
pub(crate) struct Checkout<'a> {
    conn: Arc<PgConn>,
    _counted: InFlight<'a>,
}

impl std::ops::Deref for Checkout<'_> {
    type Target = PgConn;

    fn deref(&self) -> &PgConn {
        &self.conn
    }
}

/// Counts a line in flight on a slot from the moment it picks the slot
/// (lines waiting for the slot's connect count too) until it is dropped:
/// when the line ends, fails or is cancelled.
struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl PgPool {
    pub fn new(config: tokio_postgres::Config, size: usize, connect_timeout: Duration) -> Self {
        PgPool {
            config,
            slots: (0..size.max(1))
                .map(|_| Slot {
                    current: Mutex::new(None),
                    in_flight: AtomicUsize::new(0),
                    connecting: tokio::sync::Mutex::new(()),
                })
                .collect(),
            connect_timeout,
        }
    }

    fn live(slot: &Slot) -> Option<Arc<PgConn>> {
        let current = slot.current.lock().unwrap_or_else(|p| p.into_inner());
        current.as_ref().filter(|c| !c.client.is_closed()).cloned()
    }

    /// The slot with the fewest lines in flight (the first such), counted
    /// as one more from here on.
    fn pick(&self) -> (&Slot, InFlight<'_>) {
        let mut best = &self.slots[0];
        let mut least = usize::MAX;
        for slot in &self.slots {
            let n = slot.in_flight.load(Ordering::Relaxed);
            if n < least {
                best = slot;
                least = n;
                if n == 0 {
                    break;
                }
            }
        }
        best.in_flight.fetch_add(1, Ordering::Relaxed);
        (best, InFlight(&best.in_flight))
    }

    /// A connection of the least-loaded slot, opened (or replaced) when
    /// needed.
    pub async fn get(&self) -> Result<Checkout<'_>, ConnectError> {
        let (slot, counted) = self.pick();
        let conn = self.connection(slot).await?;
        Ok(Checkout {
            conn,
            _counted: counted,
        })
    }

    async fn connection(&self, slot: &Slot) -> Result<Arc<PgConn>, ConnectError> {
        if let Some(c) = Self::live(slot) {
            return Ok(c);
        }
        let _connecting = slot.connecting.lock().await;
        if let Some(c) = Self::live(slot) {
            return Ok(c);
        }
        let (client, connection) =
            tokio::time::timeout(self.connect_timeout, self.config.connect(NoTls))
                .await
                .map_err(|_| ConnectError::Timeout)?
                .map_err(ConnectError::Client)?;
        // The connection task ends when the socket does; the client then
        // reports `is_closed` and the slot reconnects.
        tokio::spawn(async move {
            let _ = connection.await;
        });
        let conn = Arc::new(PgConn {
            client,
            statements: RwLock::new(HashMap::new()),
        });
        *slot.current.lock().unwrap_or_else(|p| p.into_inner()) = Some(Arc::clone(&conn));
        Ok(conn)
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| Self::live(s).is_some())
            .count()
    }
}
