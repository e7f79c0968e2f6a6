//! The SQL every SQL baseline shares: Prefect's indexes (one table of
//! names and definitions), the read SQL of each pattern, a run's insert,
//! and the JSON columns' values. The SQLite baseline (`sqlite.rs`) runs
//! them as they are; the PostgreSQL baseline (`--bench live_backends`,
//! `appview_pg.rs`) spells each `?` as `$` and keeps its own table DDL
//! (its dialect's types and collation). Only the texts are shared: each
//! baseline owns its connection, its schema and its row decoding.

use std::sync::LazyLock;

use crate::error::Result;
use crate::params;
use crate::query::{
    ACTIVE_LIMIT, COMPLETED_LIMIT, FLOW_LIMIT, PAGE_LIMIT, PAGE_OFFSET, Query, WINDOW_LIMIT,
};

/// One of Prefect's indexes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SqlIndex {
    /// Its name (a bulk load drops it by name, then builds it once).
    pub name: &'static str,
    /// `CREATE UNIQUE INDEX` rather than `CREATE INDEX`.
    pub unique: bool,
    /// What follows `ON`: the table and the indexed expressions.
    pub on: &'static str,
}

impl SqlIndex {
    /// Its `CREATE … INDEX IF NOT EXISTS` statement.
    pub fn create_sql(&self) -> String {
        let unique = if self.unique { "UNIQUE " } else { "" };
        format!(
            "CREATE {unique}INDEX IF NOT EXISTS {} ON {};",
            self.name, self.on
        )
    }
}

const fn index(name: &'static str, on: &'static str) -> SqlIndex {
    SqlIndex {
        name,
        unique: false,
        on,
    }
}

const fn unique(name: &'static str, on: &'static str) -> SqlIndex {
    SqlIndex {
        name,
        unique: true,
        on,
    }
}

/// Prefect's indexes on `flow`, `flow_run` and `flow_run_state`, as the
/// spec lists them: one table for both SQL baselines (the expression is
/// parenthesised as PostgreSQL requires, which SQLite reads as the same
/// expression: its plans still use it).
pub const INDEXES: [SqlIndex; 11] = [
    unique("uq_flow__name", "flow (name)"),
    index("ix_flow_run__state_type", "flow_run (state_type)"),
    index("ix_flow_run__state_name", "flow_run (state_name)"),
    index("ix_flow_run__state_timestamp", "flow_run (state_timestamp)"),
    index(
        "ix_flow_run__expected_start_time_desc",
        "flow_run (expected_start_time DESC)",
    ),
    index(
        "ix_flow_run__next_scheduled_start_time_asc",
        "flow_run (next_scheduled_start_time ASC)",
    ),
    index("ix_flow_run__start_time", "flow_run (start_time)"),
    index("ix_flow_run__end_time_desc", "flow_run (end_time DESC)"),
    index(
        "ix_flow_run__coalesce_start_time_expected_start_time_desc",
        "flow_run ((coalesce(start_time, expected_start_time)) DESC)",
    ),
    index("ix_flow_run__flow_id", "flow_run (flow_id)"),
    unique(
        "uq_flow_run_state__flow_run_id_timestamp_desc",
        "flow_run_state (flow_run_id, timestamp DESC)",
    ),
];

/// Every index of [`INDEXES`] as one batch of statements (built once).
pub fn create_indexes() -> &'static str {
    static SQL: LazyLock<String> = LazyLock::new(|| {
        INDEXES
            .iter()
            .map(SqlIndex::create_sql)
            .collect::<Vec<_>>()
            .join("\n")
    });
    &SQL
}

/// The run columns every run query selects (each baseline decodes a row
/// of them in this order).
pub(crate) const RUN_COLUMNS: &str = "id, flow_id, name, state_id, state_type, state_name, state_timestamp, \
     expected_start_time, next_scheduled_start_time, start_time, end_time, total_run_time, \
     run_count, created, updated, tags, parameters";

/// Every statement whose text is built from `RUN_COLUMNS` or a page
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
/// row, `RUN_COLUMNS` then the state's columns.
pub fn point_lookup_sql() -> &'static str {
    &SQL.point_lookup
}

/// `flow_list`'s SQL.
pub fn flow_list_sql() -> &'static str {
    &SQL.flow_list
}

/// A run's insert (`?1`..`?17`: `RUN_COLUMNS` in order).
pub fn insert_run_sql() -> &'static str {
    &SQL.insert_run
}

/// Tags as the JSON columns hold them (PostgreSQL binds the value to
/// `jsonb`; SQLite stores its text).
pub fn tags_value(tags: &[String]) -> serde_json::Value {
    serde_json::Value::from(tags.to_vec())
}

/// Parameters as the JSON columns hold them (PostgreSQL binds the value
/// to `jsonb`, which keeps its own key order).
pub fn params_value(p: &[(String, String)]) -> serde_json::Value {
    serde_json::from_str(&params::object_text(p))
        .unwrap_or_else(|_| serde_json::Value::Object(serde_json::Map::new()))
}

/// Parameters from a JSON column's value (PostgreSQL's `jsonb`).
pub fn params_of_value(v: &serde_json::Value) -> Result<Vec<(String, String)>> {
    params_from_json(&v.to_string())
}

/// Tags as the JSON text column holds them.
pub(crate) fn tags_json(tags: &[String]) -> String {
    tags_value(tags).to_string()
}

/// Parameters as the JSON text column holds them (in order).
pub(crate) fn params_json(p: &[(String, String)]) -> String {
    params::object_text(p)
}

/// Tags from their JSON column.
pub(crate) fn tags_from_json(s: &str) -> Result<Vec<String>> {
    Ok(serde_json::from_str(s)?)
}

/// Parameters from their JSON column, in the column's order.
pub(crate) fn params_from_json(s: &str) -> Result<Vec<(String, String)>> {
    Ok(params::parse_object(s.as_bytes())?)
}
