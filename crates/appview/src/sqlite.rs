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
//! inserts the state row and updates the run. PRAGMAs: [`PRAGMAS`].
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
use std::sync::{Arc, LazyLock};

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::error::Result;
use crate::index::Index;
use crate::model::{Flow, FlowRun, FlowRunState, Mutation, StateType};
use crate::query::{
    ACTIVE_LIMIT, COMPLETED_LIMIT, FLOW_LIMIT, PAGE_LIMIT, PAGE_OFFSET, Page, Query, ReadBackend,
    RunWithState, WINDOW_LIMIT, window,
};
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
pub const TABLES: &str = "
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

/// Prefect's indexes on them, as the spec lists them: one text for both
/// SQL baselines (the expression is parenthesised as PostgreSQL requires,
/// which SQLite reads as the same expression: its plans still use it).
pub const INDEXES: &str = "
CREATE UNIQUE INDEX IF NOT EXISTS uq_flow__name ON flow (name);
CREATE INDEX IF NOT EXISTS ix_flow_run__state_type ON flow_run (state_type);
CREATE INDEX IF NOT EXISTS ix_flow_run__state_name ON flow_run (state_name);
CREATE INDEX IF NOT EXISTS ix_flow_run__state_timestamp ON flow_run (state_timestamp);
CREATE INDEX IF NOT EXISTS ix_flow_run__expected_start_time_desc ON flow_run (expected_start_time DESC);
CREATE INDEX IF NOT EXISTS ix_flow_run__next_scheduled_start_time_asc ON flow_run (next_scheduled_start_time ASC);
CREATE INDEX IF NOT EXISTS ix_flow_run__start_time ON flow_run (start_time);
CREATE INDEX IF NOT EXISTS ix_flow_run__end_time_desc ON flow_run (end_time DESC);
CREATE INDEX IF NOT EXISTS ix_flow_run__coalesce_start_time_expected_start_time_desc
    ON flow_run ((coalesce(start_time, expected_start_time)) DESC);
CREATE INDEX IF NOT EXISTS ix_flow_run__flow_id ON flow_run (flow_id);
CREATE UNIQUE INDEX IF NOT EXISTS uq_flow_run_state__flow_run_id_timestamp_desc
    ON flow_run_state (flow_run_id, timestamp DESC);
";

/// The indexes' names (a bulk load drops them, then builds them once).
pub const INDEX_NAMES: [&str; 11] = [
    "uq_flow__name",
    "ix_flow_run__state_type",
    "ix_flow_run__state_name",
    "ix_flow_run__state_timestamp",
    "ix_flow_run__expected_start_time_desc",
    "ix_flow_run__next_scheduled_start_time_asc",
    "ix_flow_run__start_time",
    "ix_flow_run__end_time_desc",
    "ix_flow_run__coalesce_start_time_expected_start_time_desc",
    "ix_flow_run__flow_id",
    "uq_flow_run_state__flow_run_id_timestamp_desc",
];

/// The run columns every run query selects, in [`run_from_row`]'s order.
pub const RUN_COLUMNS: &str = "id, flow_id, name, state_id, state_type, state_name, state_timestamp, \
     expected_start_time, next_scheduled_start_time, start_time, end_time, total_run_time, \
     run_count, created, updated, tags, parameters";

/// Every statement whose text is built from [`RUN_COLUMNS`] or a page
/// limit, built once: the reads look their prepared statement up by its
/// text, so building it per call would time string formatting.
struct Statements {
    point_lookup: String,
    flow_list: String,
    insert_run: String,
    active: String,
    completed: String,
    paginated: String,
    window: String,
}

static SQL: LazyLock<Statements> = LazyLock::new(|| {
    let from = format!("SELECT {RUN_COLUMNS} FROM flow_run");
    let r_cols = RUN_COLUMNS
        .split(", ")
        .map(|c| format!("r.{c}"))
        .collect::<Vec<_>>()
        .join(", ");
    Statements {
        point_lookup: format!(
            "SELECT {r_cols}, s.id, s.type, s.name, s.timestamp, s.message, s.flow_run_id \
             FROM flow_run r LEFT JOIN flow_run_state s ON s.id = r.state_id WHERE r.id = ?1"
        ),
        flow_list: format!(
            "SELECT id, name, tags, created, updated FROM flow ORDER BY name LIMIT {FLOW_LIMIT}"
        ),
        insert_run: format!(
            "INSERT INTO flow_run ({RUN_COLUMNS}) VALUES \
             (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)"
        ),
        active: format!(
            "{from} WHERE state_type IN ('RUNNING', 'PENDING') ORDER BY id DESC LIMIT {ACTIVE_LIMIT}"
        ),
        completed: format!(
            "{from} WHERE state_type = 'COMPLETED' \
             ORDER BY coalesce(start_time, expected_start_time) DESC, id DESC LIMIT {COMPLETED_LIMIT}"
        ),
        paginated: format!(
            "{from} ORDER BY expected_start_time DESC, id DESC LIMIT {PAGE_LIMIT} OFFSET {PAGE_OFFSET}"
        ),
        window: format!(
            "{from} WHERE end_time >= ?1 AND end_time <= ?2 ORDER BY end_time DESC, id DESC LIMIT {WINDOW_LIMIT}"
        ),
    }
});

/// The SQL of each list pattern, shared by the SQL baselines (`?1`, `?2`
/// are the window's bounds in `completed_1h`; PostgreSQL spells every
/// `?` as `$`).
pub fn list_sql(query: &Query) -> Option<&'static str> {
    let sql = &*SQL;
    Some(match query {
        Query::ActiveByState => &sql.active,
        Query::Completed50 => &sql.completed,
        Query::Paginated => &sql.paginated,
        Query::Completed1h { .. } => &sql.window,
        _ => return None,
    })
}

/// `point_lookup`'s SQL (`?1` the run id): the run and its current state
/// row, [`RUN_COLUMNS`] then the state's columns.
pub fn point_lookup_sql() -> &'static str {
    &SQL.point_lookup
}

/// `flow_list`'s SQL.
pub fn flow_list_sql() -> &'static str {
    &SQL.flow_list
}

/// A run's insert (`?1`..`?17`: [`RUN_COLUMNS`] in order).
pub fn insert_run_sql() -> &'static str {
    &SQL.insert_run
}

/// Tags as the JSON columns hold them (PostgreSQL binds the value to
/// `jsonb`; SQLite stores [`tags_json`]'s text).
pub fn tags_value(tags: &[String]) -> serde_json::Value {
    serde_json::Value::from(tags.to_vec())
}

/// Parameters as the JSON columns hold them (an object of text).
pub fn params_value(p: &[(String, String)]) -> serde_json::Value {
    serde_json::Value::Object(
        p.iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::from(v.as_str())))
            .collect(),
    )
}

/// Tags as the JSON text column holds them.
pub fn tags_json(tags: &[String]) -> String {
    tags_value(tags).to_string()
}

/// Parameters as the JSON text column holds them.
pub fn params_json(p: &[(String, String)]) -> String {
    params_value(p).to_string()
}

/// Tags from their JSON column.
pub fn tags_from_json(s: &str) -> Result<Vec<String>> {
    Ok(serde_json::from_str(s)?)
}

/// Parameters from their JSON column, keys ascending.
pub fn params_from_json(s: &str) -> Result<Vec<(String, String)>> {
    let map: std::collections::BTreeMap<String, String> = serde_json::from_str(s)?;
    Ok(map.into_iter().collect())
}

fn uuid_col(row: &Row<'_>, i: usize) -> Result<Uuid> {
    Uuid::parse(row.get_ref(i)?.as_str()?)
}

/// A run from a row of [`RUN_COLUMNS`].
pub fn run_from_row(row: &Row<'_>) -> Result<FlowRun> {
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
        conn.execute_batch(INDEXES)?;
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
        for name in INDEX_NAMES {
            tx.execute_batch(&format!("DROP INDEX IF EXISTS {name}"))?;
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
        tx.execute_batch(INDEXES)?;
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
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            out.push(Arc::new(run_from_row(row)?));
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
