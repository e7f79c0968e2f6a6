//! Tests of the migrations (a child module of `migrations`): the
//! hand-formatted baseline against the eight steps.

use rusqlite::Connection;

use super::{BASELINE, migrate, migrate_steps};

/// Every schema object as `(type, name, table, statement)`, the
/// statement's tokens without their spacing or identifier quotes
/// (SQLite keeps a `CREATE` as written: an `ALTER TABLE … ADD COLUMN`
/// appends to it and a rename quotes the name, which the hand-formatted
/// baseline does not copy).
fn objects(conn: &Connection) -> Vec<(String, String, String, Option<String>)> {
    let mut st = conn
        .prepare("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name")
        .unwrap();
    st.query_map([], |r| {
        let sql: Option<String> = r.get(3)?;
        let tokens = sql.map(|s| {
            s.chars()
                .filter(|c| !c.is_whitespace() && *c != '"')
                .collect()
        });
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, tokens))
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}

/// Every table's columns as SQLite reads them (name, type, not null,
/// default, key position), and every index's columns and order: the
/// same schema, not only the same text.
fn columns(conn: &Connection) -> Vec<String> {
    let mut out = Vec::new();
    let names: Vec<(String, String)> = conn
        .prepare("SELECT type, name FROM sqlite_master ORDER BY name")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for (kind, name) in names {
        let pragma = if kind == "table" {
            "table_xinfo"
        } else {
            "index_xinfo"
        };
        let mut st = conn
            .prepare(&format!("SELECT * FROM pragma_{pragma}(?1)"))
            .unwrap();
        let n = st.column_count();
        let rows = st
            .query_map([&name], |r| {
                (0..n)
                    .map(|i| {
                        r.get::<_, rusqlite::types::Value>(i)
                            .map(|v| format!("{v:?}"))
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .unwrap();
        for row in rows {
            out.push(format!("{kind} {name}: {}", row.unwrap().join(" ")));
        }
    }
    out
}

/// The baseline and the eight steps end at the same schema, object for
/// object and token for token, and a fresh store gets the baseline.
#[test]
fn baseline_equals_the_migrations_from_empty() {
    let stepped = Connection::open_in_memory().unwrap();
    migrate_steps(&stepped, 0).unwrap();
    let based = Connection::open_in_memory().unwrap();
    based.execute_batch(BASELINE).unwrap();
    assert_eq!(objects(&stepped), objects(&based));
    assert!(objects(&based).len() >= 10);
    assert_eq!(columns(&stepped), columns(&based));
    assert!(columns(&based).len() > 40);
    let fresh = Connection::open_in_memory().unwrap();
    assert_eq!(migrate(&fresh).unwrap(), 0);
    assert_eq!(objects(&fresh), objects(&stepped));
    let version: i64 = fresh
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, super::SCHEMA_VERSION);
}
