//! The SQLite baseline: Prefect's own tables and indexes for `flow`,
//! `flow_run` and `flow_run_state` (the columns the model has), answering
//! the same read patterns with the same rows in the same order.
//!
//! Differences from Prefect, each so that every backend orders and
//! compares the same values: times are integer microseconds (Prefect's
//! SQLite stores ISO text, which sorts the same way); every ORDER BY ends
//! with `id DESC` (ties of a timestamp are otherwise in no defined order),
//! which Prefect's indexes still serve. A write is one transaction: a new
//! run inserts the run row and its first state row; a state change
//! inserts the state row and updates the run. PRAGMAs: [`PRAGMAS`]. The
//! indexes and the read SQL are the ones every SQL baseline shares
//! ([`crate::baseline_sql`]); the tables and the row decoding are
//! SQLite's own.
//!
//! Every connection turns on SQLite's query planner stability guarantee
//! (`SQLITE_DBCONFIG_ENABLE_QPSG`). The bundled SQLite is built with
//! `SQLITE_ENABLE_STAT4`, and `ANALYZE` writes `sqlite_stat4`. Without the
//! guarantee, a cached statement whose WHERE binds a parameter on a column
//! with STAT4 samples is prepared again whenever the bound value changes:
//! parse, plan and column names on every point lookup, which is most of
//! `appview.point_lookup/sqlite`'s time. Its floor probe (Python's `sqlite3`,
//! a SQLite without STAT4) does not pay for that. With the guarantee, the
//! plan is chosen once per statement, as a statement cache intends (the
//! point lookup's plan is the same either way: a search of each table's
//! primary-key index). The store's connections do the same (`store::schema`).

use std::path::Path;
use std::sync::Arc;

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::baseline_sql::{
    INDEXES, create_indexes, flow_list_sql, insert_run_sql, list_sql, params_from_json,
    params_json, point_lookup_sql, tags_from_json, tags_json,
};
use crate::error::Result;
use crate::index::Index;
use crate::model::{Flow, FlowRun, FlowRunState, Mutation, StateType};
use crate::query::{Page, Query, ReadBackend, RunWithState, window};
use crate::run_page::RunPage;
use crate::uuid::Uuid;

/// The baseline's PRAGMAs (the spec's WAL and busy timeout; NORMAL
/// synchronous like the store's default; Prefect's foreign keys).
pub const PRAGMAS: [(&str, &str); 4] = [
    ("journal_mode", "WAL"),
    ("busy_timeout", "5000"),
    ("synchronous", "NORMAL"),
    ("foreign_keys", "ON"),
];

/// Prefect's tables (SQLite dialect), the columns the model has.
const TABLES: &str = "
CREATE TABLE IF NOT EXISTS flow (
    id TEXT PRIMARY KEY NOT NULL,
    created INTEGER NOT NULL,
    updated INTEGER NOT NULL,
    name TEXT NOT NULL,
    tags TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE IF NOT EXISTS flow_run (
    id TEXT PRIMARY KEY NOT NULL,
    created INTEGER NOT NULL,
    updated INTEGER NOT NULL,
    name TEXT NOT NULL,
    state_type TEXT,
    state_name TEXT,
    state_timestamp INTEGER,
    run_count INTEGER NOT NULL DEFAULT 0,
    expected_start_time INTEGER NOT NULL,
    next_scheduled_start_time INTEGER,
    start_time INTEGER,
    end_time INTEGER,
    total_run_time INTEGER NOT NULL DEFAULT 0,
    flow_id TEXT NOT NULL REFERENCES flow (id) ON DELETE CASCADE,
    state_id TEXT,
    tags TEXT NOT NULL DEFAULT '[]',
    parameters TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS flow_run_state (
    id TEXT PRIMARY KEY NOT NULL,
    created INTEGER NOT NULL,
    updated INTEGER NOT NULL,
    type TEXT NOT NULL,
    timestamp INTEGER NOT NULL,
    name TEXT NOT NULL,
    message TEXT,
    flow_run_id TEXT NOT NULL REFERENCES flow_run (id) ON DELETE CASCADE
);
";

fn uuid_col(row: &Row<'_>, i: usize) -> Result<Uuid> {
    Uuid::parse(row.get_ref(i)?.as_str()?)
}

/// A run from a row of the shared `RUN_COLUMNS`.
fn run_from_row(row: &Row<'_>) -> Result<FlowRun> {
    Ok(FlowRun {
        id: uuid_col(row, 0)?,
        flow_id: uuid_col(row, 1)?,
        name: row.get(2)?,
        state_id: uuid_col(row, 3)?,
        state_type: StateType::parse(row.get_ref(4)?.as_str()?)?,
        state_name: row.get(5)?,
        state_timestamp: row.get(6)?,
        expected_start: row.get(7)?,
        next_scheduled_start: row.get(8)?,
        start: row.get(9)?,
        end: row.get(10)?,
        total_run_time: row.get(11)?,
        run_count: row.get(12)?,
        created: row.get(13)?,
        updated: row.get(14)?,
        tags: tags_from_json(row.get_ref(15)?.as_str()?)?,
        parameters: params_from_json(row.get_ref(16)?.as_str()?)?,
    })
}

/// Turns on the query planner stability guarantee (see the module doc):
/// cached statements keep their plan instead of being prepared again for
/// each new parameter value.
fn stable_plans(conn: &Connection) -> Result<()> {
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
    Ok(())
}

/// The baseline database.
pub struct SqliteBaseline {
    conn: Connection,
}

impl SqliteBaseline {
    /// Opens (creating) the database at `path` with [`PRAGMAS`] and the
    /// schema.
    pub fn open(path: &Path) -> Result<SqliteBaseline> {
        let conn = Connection::open(path)?;
        stable_plans(&conn)?;
        for (k, v) in PRAGMAS {
            conn.pragma_update(None, k, v)?;
        }
        conn.execute_batch(TABLES)?;
        conn.execute_batch(create_indexes())?;
        Ok(SqliteBaseline { conn })
    }

    /// Opens an existing database read-only.
    pub fn open_existing(path: &Path) -> Result<SqliteBaseline> {
        let conn = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
        stable_plans(&conn)?;
        conn.pragma_update(None, "busy_timeout", "5000")?;
        Ok(SqliteBaseline { conn })
    }

    /// The connection (for the benches' checks outside the timing).
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    fn insert_flow(conn: &Connection, f: &Flow) -> Result<()> {
        conn.prepare_cached(
            "INSERT INTO flow (id, created, updated, name, tags) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?
        .execute(params![
            f.id.to_string(),
            f.created,
            f.updated,
            f.name,
            tags_json(&f.tags)
        ])?;
        Ok(())
    }

    fn insert_run(conn: &Connection, r: &FlowRun) -> Result<()> {
        conn.prepare_cached(insert_run_sql())?.execute(params![
            r.id.to_string(),
            r.flow_id.to_string(),
            r.name,
            r.state_id.to_string(),
            r.state_type.as_str(),
            r.state_name,
            r.state_timestamp,
            r.expected_start,
            r.next_scheduled_start,
            r.start,
            r.end,
            r.total_run_time,
            r.run_count,
            r.created,
            r.updated,
            tags_json(&r.tags),
            params_json(&r.parameters),
        ])?;
        Ok(())
    }

    fn update_run(conn: &Connection, r: &FlowRun) -> Result<()> {
        conn.prepare_cached(
            "UPDATE flow_run SET state_id = ?2, state_type = ?3, state_name = ?4, \
                 state_timestamp = ?5, next_scheduled_start_time = ?6, start_time = ?7, \
                 end_time = ?8, total_run_time = ?9, run_count = ?10, updated = ?11 WHERE id = ?1",
        )?
        .execute(params![
            r.id.to_string(),
            r.state_id.to_string(),
            r.state_type.as_str(),
            r.state_name,
            r.state_timestamp,
            r.next_scheduled_start,
            r.start,
            r.end,
            r.total_run_time,
            r.run_count,
            r.updated,
        ])?;
        Ok(())
    }

    fn insert_state(conn: &Connection, s: &FlowRunState) -> Result<()> {
        conn
            .prepare_cached(
                "INSERT INTO flow_run_state (id, created, updated, type, timestamp, name, message, flow_run_id) \
                 VALUES (?1, ?2, ?2, ?3, ?2, ?4, ?5, ?6)",
            )?
            .execute(params![
                s.id.to_string(),
                s.timestamp,
                s.state_type.as_str(),
                s.name,
                s.message,
                s.run_id.to_string(),
            ])?;
        Ok(())
    }

    fn write(conn: &Connection, m: &Mutation) -> Result<()> {
        match m {
            Mutation::CreateFlow(f) => Self::insert_flow(conn, f),
            Mutation::CreateRun(r, s) => {
                Self::insert_run(conn, r)?;
                Self::insert_state(conn, s)
            }
            Mutation::SetState(r, s) => {
                Self::insert_state(conn, s)?;
                Self::update_run(conn, r)
            }
        }
    }

    /// Applies one mutation as one transaction.
    pub fn apply(&mut self, m: &Mutation) -> Result<()> {
        let tx = self.conn.transaction()?;
        Self::write(&tx, m)?;
        tx.commit()?;
        Ok(())
    }

    /// Loads an index's contents (flows, final runs, the whole history)
    /// in one transaction: how the 10^5-run tier is built. As bulk loads
    /// do, rows go in primary-key order with the secondary indexes
    /// dropped, and the indexes are built once at the end.
    pub fn load_index(&mut self, index: &Index) -> Result<()> {
        let tx = self.conn.transaction()?;
        for index in INDEXES {
            tx.execute_batch(&format!("DROP INDEX IF EXISTS {}", index.name))?;
        }
        let mut flows: Vec<_> = index.flows().collect();
        flows.sort_by_key(|f| f.id);
        for f in flows {
            Self::insert_flow(&tx, f)?;
        }
        let mut runs: Vec<_> = index.runs().collect();
        runs.sort_by_key(|r| r.id);
        for r in runs {
            Self::insert_run(&tx, r)?;
        }
        let mut states: Vec<_> = index.states().collect();
        states.sort_by_key(|s| s.id);
        for s in states {
            Self::insert_state(&tx, s)?;
        }
        tx.execute_batch(create_indexes())?;
        tx.commit()?;
        Ok(())
    }

    /// `ANALYZE`: the planner's statistics, gathered once a tier is
    /// loaded (both tiers, so both get the same planner).
    pub fn analyze(&self) -> Result<()> {
        self.conn.execute_batch("ANALYZE")?;
        Ok(())
    }

    /// The run with the latest expected start, and the latest end (the
    /// CLI's defaults for `point_lookup` and `completed_1h`).
    pub fn defaults(&self) -> Result<(Option<Uuid>, Option<i64>)> {
        let id: Option<String> = self
            .conn
            .query_row(
                "SELECT id FROM flow_run ORDER BY expected_start_time DESC, id DESC LIMIT 1",
                [],
                |r| r.get(0),
            )
            .optional()?;
        let end: Option<i64> =
            self.conn
                .query_row("SELECT max(end_time) FROM flow_run", [], |r| r.get(0))?;
        Ok((id.map(|s| Uuid::parse(&s)).transpose()?, end))
    }

    fn runs(&self, sql: &str, bounds: Option<(i64, i64)>) -> Result<Page> {
        let mut st = self.conn.prepare_cached(sql)?;
        let mut rows = match bounds {
            Some((a, b)) => st.query(params![a, b])?,
            None => st.query([])?,
        };
        let mut out = RunPage::default();
        while let Some(row) = rows.next()? {
            out.push(&run_from_row(row)?);
        }
        Ok(Page::Runs(out))
    }
}

impl ReadBackend for SqliteBaseline {
    fn query(&self, query: &Query) -> Result<Page> {
        match query {
            Query::PointLookup(id) => {
                let mut st = self.conn.prepare_cached(point_lookup_sql())?;
                let found = st
                    .query_row(params![id.to_string()], |row| Ok(point_row(row)))
                    .optional()?;
                Ok(Page::Run(found.transpose()?))
            }
            Query::CountCompleted => {
                let n: i64 = self
                    .conn
                    .prepare_cached("SELECT count(*) FROM flow_run WHERE state_type = 'COMPLETED'")?
                    .query_row([], |r| r.get(0))?;
                Ok(Page::Count(n.max(0) as u64))
            }
            Query::FlowList => {
                let mut st = self.conn.prepare_cached(flow_list_sql())?;
                let mut rows = st.query([])?;
                let mut out = Vec::new();
                while let Some(row) = rows.next()? {
                    out.push(Arc::new(Flow {
                        id: uuid_col(row, 0)?,
                        name: row.get(1)?,
                        tags: tags_from_json(row.get_ref(2)?.as_str()?)?,
                        created: row.get(3)?,
                        updated: row.get(4)?,
                    }));
                }
                Ok(Page::Flows(out))
            }
            Query::Completed1h { now } => {
                self.runs(list_sql(query).unwrap_or_default(), Some(window(*now)))
            }
            _ => self.runs(list_sql(query).unwrap_or_default(), None),
        }
    }
}

fn point_row(row: &Row<'_>) -> Result<RunWithState> {
    let run = Arc::new(run_from_row(row)?);
    let state = match row.get_ref(17)?.as_str_or_null()? {
        None => None,
        Some(id) => Some(Arc::new(FlowRunState {
            id: Uuid::parse(id)?,
            run_id: uuid_col(row, 22)?,
            state_type: StateType::parse(row.get_ref(18)?.as_str()?)?,
            name: row.get(19)?,
            timestamp: row.get(20)?,
            message: row.get::<_, Option<String>>(21)?.unwrap_or_default(),
        })),
    };
    Ok(RunWithState { run, state })
}
