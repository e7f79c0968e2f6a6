//! [`LogStore`]: the flow and task runs' log lines (Prefect's `log`
//! table), kept in a SQLite table beside the store's file
//! (`logs.sqlite` in the appview's directory), not in the repository.
//!
//! Why not the repository: a log line is Prefect's highest-volume write
//! (a flow of ten tasks writes dozens), nothing orchestrates on it, and
//! nothing else reads it but `/logs/filter`. As records, every batch
//! would be a signed commit growing the MST and the firehose by one
//! record per line, and a run's lines would be read back by decoding
//! records; `appview.logs_write/repo/batch-100` against
//! `appview.logs_write/sqlite/batch-100` measures what that costs.
//! A jss0 segment (`crates/segment`) is an archive of sealed, columnar,
//! compressed blocks, written behind a torn-tail recovery: a fit for
//! cold replay, not for a batch that must be durable and readable by run
//! the moment it is acknowledged. A table with Prefect's own index
//! (`flow_run_id, timestamp`) answers `prefect flow-run logs` with one
//! index range (`appview.logs_read/sqlite/run-1000`).
//!
//! Durability: WAL, `synchronous` as the store's
//! ([`store::Config::durable`]: FULL, else NORMAL). A batch is one
//! transaction, committed before `POST /logs/` answers; in WAL mode a
//! committed transaction is in the WAL file (the kernel's page cache at
//! NORMAL) when the commit returns, so a SIGKILL of the server loses no
//! acknowledged line (`tests/crash.rs`); a power loss can take back the
//! last ones at NORMAL, as it can the store's commits.
//!
//! Order: Prefect sorts by `timestamp` alone; ties here fall in the
//! order the lines were written (ascending) or its reverse (descending),
//! so a page boundary never splits or repeats a tie.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OpenFlags, Row};

use crate::error::Result;
use crate::uuid::Uuid;

/// The log table's file inside an appview directory.
pub const LOGS_FILE: &str = "logs.sqlite";

/// The log path of directory `dir`.
pub fn logs_path(dir: &Path) -> PathBuf {
    dir.join(LOGS_FILE)
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS log (
    seq INTEGER PRIMARY KEY,
    id BLOB NOT NULL,
    created INTEGER NOT NULL,
    name TEXT NOT NULL,
    level INTEGER NOT NULL,
    message TEXT NOT NULL,
    timestamp INTEGER NOT NULL,
    flow_run_id BLOB,
    task_run_id BLOB
);
CREATE INDEX IF NOT EXISTS ix_log__flow_run_id_timestamp ON log (flow_run_id, timestamp);
CREATE INDEX IF NOT EXISTS ix_log__task_run_id ON log (task_run_id);
CREATE INDEX IF NOT EXISTS ix_log__timestamp ON log (timestamp);
";

/// One log line (Prefect's `Log`; `updated` is `created`: a line is never
/// changed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRow {
    /// The server's id for it (a version 7 UUID, as Prefect's).
    pub id: Uuid,
    /// When the server took it (µs).
    pub created: i64,
    /// The logger's name.
    pub name: String,
    /// The level (Python's: 10 DEBUG ... 50 CRITICAL).
    pub level: i64,
    /// The text.
    pub message: String,
    /// When the client logged it (µs).
    pub timestamp: i64,
    /// Its flow run.
    pub flow_run_id: Option<Uuid>,
    /// Its task run.
    pub task_run_id: Option<Uuid>,
}

/// Prefect's `LogSort`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogSort {
    /// Oldest first (Prefect's default).
    #[default]
    TimestampAsc,
    /// Newest first.
    TimestampDesc,
}

/// Prefect's `LogFilter`, the parts this server answers (every present
/// part must hold: `and_`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LogFilter {
    /// `flow_run_id.any_`.
    pub flow_runs: Option<Vec<Uuid>>,
    /// `task_run_id.any_`.
    pub task_runs: Option<Vec<Uuid>>,
    /// `task_run_id.is_null_`: without (true) or with (false) a task run.
    pub task_run_null: Option<bool>,
    /// `level.ge_`.
    pub level_ge: Option<i64>,
    /// `level.le_`.
    pub level_le: Option<i64>,
    /// `timestamp.after_` (inclusive, µs).
    pub after: Option<i64>,
    /// `timestamp.before_` (inclusive, µs).
    pub before: Option<i64>,
}

/// The log table: one writer connection, one reader (WAL lets the reader
/// read while a batch commits).
pub struct LogStore {
    writer: Mutex<Connection>,
    reader: Option<Mutex<Connection>>,
}

fn blob(id: Uuid) -> SqlValue {
    SqlValue::Blob(id.0.to_be_bytes().to_vec())
}

fn uuid_of(row: &Row<'_>, i: usize) -> rusqlite::Result<Option<Uuid>> {
    let b: Option<Vec<u8>> = row.get(i)?;
    match b {
        None => Ok(None),
        Some(b) => <[u8; 16]>::try_from(b.as_slice())
            .map(|a| Some(Uuid(u128::from_be_bytes(a))))
            .map_err(|_| {
                rusqlite::Error::FromSqlConversionFailure(
                    i,
                    rusqlite::types::Type::Blob,
                    "a uuid is 16 bytes".into(),
                )
            }),
    }
}

/// A list of ids as the JSON array of hex text `json_each` reads (one
/// bound parameter however long the list).
fn id_list(ids: &[Uuid]) -> SqlValue {
    let mut s = String::with_capacity(ids.len() * 35 + 2);
    s.push('[');
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&format!("\"{:032x}\"", id.0));
    }
    s.push(']');
    SqlValue::Text(s)
}

impl LogStore {
    /// Opens (creating) the table at `path`; `durable` as the store's.
    pub fn open(path: &Path, durable: bool) -> Result<LogStore> {
        let writer = Connection::open(path)?;
        writer.execute_batch(&format!(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = {}; PRAGMA busy_timeout = 5000;",
            if durable { "FULL" } else { "NORMAL" }
        ))?;
        writer.execute_batch(SCHEMA)?;
        let reader = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        reader.execute_batch("PRAGMA busy_timeout = 5000;")?;
        Ok(LogStore {
            writer: Mutex::new(writer),
            reader: Some(Mutex::new(reader)),
        })
    }

    /// Opens the table at `path` read-only, or an empty one in memory when
    /// there is no file (a read-only appview writes no file).
    pub fn open_read_only(path: &Path) -> Result<LogStore> {
        let conn = if path.is_file() {
            let c = Connection::open_with_flags(
                path,
                OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )?;
            c.execute_batch("PRAGMA busy_timeout = 5000;")?;
            c
        } else {
            let c = Connection::open_in_memory()?;
            c.execute_batch(SCHEMA)?;
            c
        };
        Ok(LogStore {
            writer: Mutex::new(conn),
            reader: None,
        })
    }

    /// Writes `rows` as one transaction: all of them or none, durable as
    /// the module doc says once this returns.
    pub fn insert(&self, rows: &[LogRow]) -> Result<()> {
        let mut conn = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let tx = conn.transaction()?;
        {
            let mut st = tx.prepare_cached(
                "INSERT INTO log (id, created, name, level, message, timestamp, flow_run_id, task_run_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?;
            for r in rows {
                st.execute(rusqlite::params![
                    blob(r.id),
                    r.created,
                    r.name,
                    r.level,
                    r.message,
                    r.timestamp,
                    r.flow_run_id.map(blob),
                    r.task_run_id.map(blob),
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// The lines `f` selects in `sort` order, `limit` of them after
    /// skipping `offset`.
    pub fn read(
        &self,
        f: &LogFilter,
        sort: LogSort,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<LogRow>> {
        if f.flow_runs.as_ref().is_some_and(Vec::is_empty)
            || f.task_runs.as_ref().is_some_and(Vec::is_empty)
            || limit == 0
        {
            return Ok(Vec::new());
        }
        let mut sql = String::from(
            "SELECT id, created, name, level, message, timestamp, flow_run_id, task_run_id FROM log WHERE 1",
        );
        let mut args: Vec<SqlValue> = Vec::new();
        let mut cond = |sql: &mut String, text: &str, v: SqlValue| {
            args.push(v);
            sql.push_str(&text.replace('?', &format!("?{}", args.len())));
        };
        if let Some(ids) = &f.flow_runs {
            cond(
                &mut sql,
                " AND flow_run_id IN (SELECT unhex(value) FROM json_each(?))",
                id_list(ids),
            );
        }
        if let Some(ids) = &f.task_runs {
            cond(
                &mut sql,
                " AND task_run_id IN (SELECT unhex(value) FROM json_each(?))",
                id_list(ids),
            );
        }
        match f.task_run_null {
            Some(true) => sql.push_str(" AND task_run_id IS NULL"),
            Some(false) => sql.push_str(" AND task_run_id IS NOT NULL"),
            None => {}
        }
        if let Some(l) = f.level_ge {
            cond(&mut sql, " AND level >= ?", SqlValue::Integer(l));
        }
        if let Some(l) = f.level_le {
            cond(&mut sql, " AND level <= ?", SqlValue::Integer(l));
        }
        if let Some(t) = f.after {
            cond(&mut sql, " AND timestamp >= ?", SqlValue::Integer(t));
        }
        if let Some(t) = f.before {
            cond(&mut sql, " AND timestamp <= ?", SqlValue::Integer(t));
        }
        sql.push_str(match sort {
            LogSort::TimestampAsc => " ORDER BY timestamp ASC, seq ASC",
            LogSort::TimestampDesc => " ORDER BY timestamp DESC, seq DESC",
        });
        let clamp = |n: usize| SqlValue::Integer(i64::try_from(n).unwrap_or(i64::MAX));
        cond(&mut sql, " LIMIT ?", clamp(limit));
        cond(&mut sql, " OFFSET ?", clamp(offset));
        let conn = match &self.reader {
            Some(r) => r.lock(),
            None => self.writer.lock(),
        }
        .unwrap_or_else(|p| p.into_inner());
        let mut st = conn.prepare_cached(&sql)?;
        let rows = st.query_map(rusqlite::params_from_iter(args), |row| {
            Ok(LogRow {
                id: uuid_of(row, 0)?.unwrap_or_default(),
                created: row.get(1)?,
                name: row.get(2)?,
                level: row.get(3)?,
                message: row.get(4)?,
                timestamp: row.get(5)?,
                flow_run_id: uuid_of(row, 6)?,
                task_run_id: uuid_of(row, 7)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// How many lines there are.
    pub fn count(&self) -> Result<u64> {
        let conn = match &self.reader {
            Some(r) => r.lock(),
            None => self.writer.lock(),
        }
        .unwrap_or_else(|p| p.into_inner());
        let n: i64 = conn.query_row("SELECT count(*) FROM log", [], |r| r.get(0))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(i: u128, ts: i64, run: Option<u128>, task: Option<u128>, level: i64) -> LogRow {
        LogRow {
            id: Uuid(i),
            created: 1,
            name: "prefect.flow_runs".into(),
            level,
            message: format!("line {i}"),
            timestamp: ts,
            flow_run_id: run.map(Uuid),
            task_run_id: task.map(Uuid),
        }
    }

    #[test]
    fn filters_sorts_and_pages_as_prefect_and_survives_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let path = logs_path(dir.path());
        let store = LogStore::open(&path, false).unwrap();
        let a = 0xa000_0000_0000_4000_8000_0000_0000_0001;
        let b = 0xb000_0000_0000_4000_8000_0000_0000_0002;
        let t = 0x7000_0000_0000_4000_8000_0000_0000_0003;
        store
            .insert(&[
                row(1, 30, Some(a), None, 20),
                row(2, 10, Some(a), Some(t), 40),
                row(3, 10, Some(a), None, 30),
                row(4, 20, Some(b), None, 20),
                row(5, 5, None, None, 10),
            ])
            .unwrap();
        let ids = |rows: Vec<LogRow>| rows.iter().map(|r| r.id.0).collect::<Vec<_>>();
        let run_a = LogFilter {
            flow_runs: Some(vec![Uuid(a)]),
            ..LogFilter::default()
        };
        // Ties (2, 3 at 10) in write order, reversed when descending.
        assert_eq!(
            ids(store.read(&run_a, LogSort::TimestampAsc, 0, 10).unwrap()),
            [2, 3, 1]
        );
        assert_eq!(
            ids(store.read(&run_a, LogSort::TimestampDesc, 0, 10).unwrap()),
            [1, 3, 2]
        );
        assert_eq!(
            ids(store.read(&run_a, LogSort::TimestampAsc, 1, 1).unwrap()),
            [3]
        );
        let f = LogFilter {
            flow_runs: Some(vec![Uuid(a), Uuid(b)]),
            task_run_null: Some(true),
            level_ge: Some(20),
            level_le: Some(30),
            after: Some(10),
            before: Some(20),
            ..LogFilter::default()
        };
        assert_eq!(
            ids(store.read(&f, LogSort::TimestampAsc, 0, 10).unwrap()),
            [3, 4]
        );
        let tasks = LogFilter {
            task_runs: Some(vec![Uuid(t)]),
            ..LogFilter::default()
        };
        let got = store.read(&tasks, LogSort::TimestampAsc, 0, 10).unwrap();
        assert_eq!(got, vec![row(2, 10, Some(a), Some(t), 40)]);
        let none = LogFilter {
            flow_runs: Some(vec![]),
            ..LogFilter::default()
        };
        assert!(
            store
                .read(&none, LogSort::TimestampAsc, 0, 10)
                .unwrap()
                .is_empty()
        );
        drop(store);
        let again = LogStore::open_read_only(&path).unwrap();
        assert_eq!(again.count().unwrap(), 5);
        let empty = LogStore::open_read_only(&dir.path().join("none.sqlite")).unwrap();
        assert_eq!(empty.count().unwrap(), 0);
    }
}
