//! The MariaDB/MySQL executor against the machine's live server
//! (`GATEWAY_MYSQL_URL`, default `mysql://root@127.0.0.1:3306/test`), each
//! test in a database of its own, created and dropped.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{
    KILL_LINES, KILL_TASKS, lines_through_kills, ok, pool, records, runtime, skip, sql, unique,
};
use convert::RecordSetMode;
use gateway::{Executor, GatewayError, MysqlExecutor, Outcome, SqlConfig};
use mysql_async::prelude::Queryable;
use serde_json::json;

/// A database of the test's own and an admin connection (text protocol,
/// for what prepared statements cannot do: `KILL`, `DROP DATABASE`).
struct TestDb {
    admin: tokio::sync::Mutex<mysql_async::Conn>,
    name: String,
    url: String,
}

impl TestDb {
    async fn create(tag: &str) -> Option<TestDb> {
        let base = SqlConfig::mysql_from_env();
        let opts = match mysql_async::Opts::from_url(&base.url) {
            Ok(o) => o,
            Err(e) => panic!("GATEWAY_MYSQL_URL: {e}"),
        };
        let connect =
            tokio::time::timeout(Duration::from_secs(3), mysql_async::Conn::new(opts)).await;
        let mut admin = match connect {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                skip("mariadb", &e.to_string());
                return None;
            }
            Err(_) => {
                skip("mariadb", "connect timed out");
                return None;
            }
        };
        let name = unique(tag);
        admin
            .query_drop(format!("CREATE DATABASE {name}"))
            .await
            .expect("create database");
        let url = base.with_database(&name).url;
        Some(TestDb {
            admin: tokio::sync::Mutex::new(admin),
            name,
            url,
        })
    }

    fn executor(&self, size: usize, mode: RecordSetMode) -> MysqlExecutor {
        MysqlExecutor::new(
            &SqlConfig {
                url: self.url.clone(),
                pool: pool(size),
            },
            mode,
        )
        .expect("config")
    }

    async fn drop_db(self) {
        let mut admin = self.admin.into_inner();
        admin
            .query_drop(format!("DROP DATABASE {}", self.name))
            .await
            .expect("drop database");
        let _ = admin.disconnect().await;
    }
}

#[test]
fn every_mapped_type_round_trips_as_params_and_cells() {
    runtime().block_on(async {
        let Some(db) = TestDb::create("types").await else { return };
        let e = db.executor(2, RecordSetMode::JsonAndRows);
        ok(&e, &sql(
            "CREATE TABLE t (k INT PRIMARY KEY, ti TINYINT, b BOOL, bi BIGINT, ub BIGINT UNSIGNED, f FLOAT, d DOUBLE, \
             n DECIMAL(20,6), s VARCHAR(20), tx TEXT, bin VARBINARY(8), bl BLOB, j JSON, dt DATETIME(6), ts TIMESTAMP(6) NULL)",
            json!([]),
        )).await;
        let insert = "INSERT INTO t VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
        let row = json!([1, -7, true, 9007199254740993i64, 18446744073709551615u64, 1.5, -2.25, "12345.678900",
            "héllo", "long text", "bin\u{1}", "blob", "{\"a\":[1,null]}", "2024-05-01 12:34:56.789012",
            "2024-05-01 12:34:56"]);
        assert_eq!(ok(&e, &sql(insert, row)).await, Outcome::Affected(1));
        let mut nulls = vec![serde_json::Value::Null; 15];
        nulls[0] = json!(2);
        assert_eq!(ok(&e, &sql(insert, json!(nulls))).await, Outcome::Affected(1));
        let got = records(&e, &sql("SELECT * FROM t ORDER BY k", json!([]))).await;
        assert_eq!(got[0], json!({
            "k": 1, "ti": -7, "b": 1, "bi": 9007199254740993i64, "ub": "18446744073709551615", "f": 1.5,
            "d": -2.25, "n": "12345.678900", "s": "héllo", "tx": "long text", "bin": "base64:YmluAQ==",
            "bl": "base64:YmxvYg==", "j": "{\"a\":[1,null]}", "dt": "2024-05-01T12:34:56.789012Z",
            "ts": "2024-05-01T12:34:56.000000Z",
        }));
        let second = got[1].as_object().expect("object");
        assert!(second.iter().all(|(k, v)| k == "k" || v.is_null()), "{second:?}");
        let date = e.run_line(&sql("SELECT CURDATE() AS day", json!([]))).await;
        assert!(matches!(&date, Err(GatewayError::UnsupportedType { column, .. }) if column == "day"), "{date:?}");
        db.drop_db().await;
    });
}

#[test]
fn injection_strings_are_bound_as_data() {
    runtime().block_on(async {
        let Some(db) = TestDb::create("inject").await else {
            return;
        };
        let e = db.executor(2, RecordSetMode::JsonOnly);
        ok(
            &e,
            &sql(
                "CREATE TABLE users (id INT AUTO_INCREMENT PRIMARY KEY, name TEXT)",
                json!([]),
            ),
        )
        .await;
        let nasty = [
            "Robert'); DROP TABLE users;--",
            "' OR '1'='1",
            "?",
            "\\'; SELECT SLEEP(10); -- ",
            "\"; DELETE FROM users; #",
            "\u{0}nul",
        ];
        for s in nasty {
            ok(&e, &sql("INSERT INTO users (name) VALUES (?)", json!([s]))).await;
        }
        let got = records(&e, &sql("SELECT name FROM users ORDER BY id", json!([]))).await;
        let names: Vec<&str> = got
            .iter()
            .map(|r| r["name"].as_str().expect("text"))
            .collect();
        assert_eq!(names, nasty);
        db.drop_db().await;
    });
}

#[test]
fn bad_lines_and_placeholder_mismatches_fail_before_any_round_trip() {
    runtime().block_on(async {
        let e = MysqlExecutor::new(
            &SqlConfig {
                url: "mysql://root@127.0.0.1:1/test".into(),
                pool: pool(1),
            },
            RecordSetMode::JsonOnly,
        )
        .expect("config");
        let count = e.run_line(&sql("SELECT ?, ?", json!([1]))).await;
        assert!(
            matches!(
                count,
                Err(GatewayError::PlaceholderCount {
                    placeholders: 2,
                    params: 1
                })
            ),
            "{count:?}"
        );
        let literal = e.run_line(&sql("SELECT '?' -- ?\n", json!([1]))).await;
        assert!(
            matches!(
                literal,
                Err(GatewayError::PlaceholderCount {
                    placeholders: 0,
                    params: 1
                })
            ),
            "{literal:?}"
        );
        for bad in [
            "",
            "nope",
            r#"{"sql": ""}"#,
            r#"{"sql": "x", "params": {}}"#,
        ] {
            let r = e.run_line(bad).await;
            assert!(matches!(r, Err(GatewayError::BadLine(_))), "{bad}: {r:?}");
        }
        let start = Instant::now();
        let r = e.run_line(&sql("SELECT 1", json!([]))).await;
        assert!(matches!(r, Err(GatewayError::Unreachable { .. })), "{r:?}");
        assert!(start.elapsed() < Duration::from_secs(4));
    });
}

#[test]
fn server_errors_are_typed_with_the_server_code() {
    runtime().block_on(async {
        let Some(db) = TestDb::create("errors").await else {
            return;
        };
        let e = db.executor(2, RecordSetMode::JsonOnly);
        let missing = e.run_line(&sql("SELECT * FROM nowhere", json!([]))).await;
        assert!(
            matches!(&missing, Err(GatewayError::Server { code, .. }) if code.starts_with("1146")),
            "{missing:?}"
        );
        ok(
            &e,
            &sql("CREATE TABLE k (id VARCHAR(8) PRIMARY KEY)", json!([])),
        )
        .await;
        ok(&e, &sql("INSERT INTO k VALUES (?)", json!(["a"]))).await;
        let dup = e
            .run_line(&sql("INSERT INTO k VALUES (?)", json!(["a"])))
            .await;
        assert!(
            matches!(&dup, Err(GatewayError::Server { code, .. }) if code.starts_with("1062")),
            "{dup:?}"
        );
        assert_eq!(
            records(&e, &sql("SELECT 1 AS one", json!([]))).await,
            [json!({"one": 1})]
        );
        db.drop_db().await;
    });
}

/// As the PostgreSQL test: 100,000 lines, the pool's connections killed
/// (`KILL`) twice along the way.
#[test]
fn killed_connections_fail_their_lines_once_and_the_pool_recovers() {
    runtime().block_on(async {
        let Some(db) = TestDb::create("kill").await else { return };
        let e = Arc::new(db.executor(4, RecordSetMode::JsonOnly));
        ok(&*e, &sql("CREATE TABLE kv (id INT PRIMARY KEY, v TEXT)", json!([]))).await;
        for chunk in 0..10 {
            let values: Vec<String> = (chunk * 100..chunk * 100 + 100).map(|i| format!("({i}, 'v{i}')")).collect();
            ok(&*e, &sql(&format!("INSERT INTO kv VALUES {}", values.join(",")), json!([]))).await;
        }
        let admin = &db.admin;
        let name = db.name.clone();
        let (killed, lost) = lines_through_kills(
            Arc::clone(&e),
            |i| sql("SELECT v FROM kv WHERE id = ?", json!([i % 1000])),
            |_, outcome| match outcome {
                Outcome::Rows(set) => assert_eq!(set.records.len(), 1),
                other => panic!("{other:?}"),
            },
            || {
                let name = name.clone();
                async move {
                    let mut admin = admin.lock().await;
                    let ids: Vec<u64> = admin
                        .exec("SELECT id FROM information_schema.processlist WHERE db = ? AND id <> CONNECTION_ID()", (name,))
                        .await
                        .expect("processlist");
                    let mut killed = 0;
                    for id in ids {
                        // A connection may end by itself between the list and the kill.
                        if admin.query_drop(format!("KILL CONNECTION {id}")).await.is_ok() {
                            killed += 1;
                        }
                    }
                    killed
                }
            },
        )
        .await;
        assert!(lost <= 2 * KILL_TASKS, "{lost} lines lost to {killed} killed connections");
        assert_eq!(records(&*e, &sql("SELECT v FROM kv WHERE id = ?", json!([7]))).await, [json!({"v": "v7"})]);
        eprintln!("mariadb: {killed} connections killed, {lost} of {KILL_LINES} lines failed with a typed error");
        drop(e);
        db.drop_db().await;
    });
}
