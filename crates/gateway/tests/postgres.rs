//! The PostgreSQL executor against the machine's live server
//! (`GATEWAY_PG_URL`, default `postgres://postgres@127.0.0.1:5432/test`),
//! each test in a database of its own, created and dropped.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{
    KILL_LINES, KILL_TASKS, lines_through_kills, ok, pool, records, runtime, skip, sql, unique,
};
use convert::RecordSetMode;
use gateway::{Executor, GatewayError, Outcome, PgExecutor, SqlConfig};
use serde_json::json;

/// A database of the test's own, dropped (with its connections) on drop.
struct TestDb {
    admin: PgExecutor,
    name: String,
    url: String,
}

impl TestDb {
    async fn create(tag: &str) -> Option<TestDb> {
        let base = SqlConfig::postgres_from_env();
        let admin = PgExecutor::new(
            &SqlConfig {
                url: base.url.clone(),
                pool: pool(1),
            },
            RecordSetMode::JsonOnly,
        )
        .expect("config");
        if let Err(e) = admin.run_line(&sql("SELECT 1", json!([]))).await {
            skip("postgres", &e.to_string());
            return None;
        }
        let name = unique(tag);
        ok(&admin, &sql(&format!("CREATE DATABASE {name}"), json!([]))).await;
        let url = base.with_database(&name).url;
        Some(TestDb { admin, name, url })
    }

    fn executor(&self, size: usize, mode: RecordSetMode) -> PgExecutor {
        PgExecutor::new(
            &SqlConfig {
                url: self.url.clone(),
                pool: pool(size),
            },
            mode,
        )
        .expect("config")
    }

    async fn drop_db(self) {
        ok(
            &self.admin,
            &sql(
                &format!("DROP DATABASE {} WITH (FORCE)", self.name),
                json!([]),
            ),
        )
        .await;
    }
}

#[test]
fn every_mapped_type_round_trips_as_params_and_cells() {
    runtime().block_on(async {
        let Some(db) = TestDb::create("types").await else { return };
        let e = db.executor(2, RecordSetMode::JsonAndRows);
        ok(&e, &sql(
            "CREATE TABLE t (i2 int2, i4 int4, i8 int8, f4 float4, f8 float8, b bool, n numeric, \
             s text, v varchar(20), c char(3), y bytea, u uuid, ts timestamp, tz timestamptz, j json, jb jsonb)",
            json!([]),
        )).await;
        let row = json!([-7, 2147483647, 9007199254740993i64, 1.5, -2.25, true, "12345.678900",
            "héllo", "v", "abc", "base64:AAEC/w==", "67e55044-10b1-426f-9247-bb680e5fe0c8",
            "2024-05-01T12:34:56.789012Z", "2024-05-01T14:34:56+02:00", {"a": [1, null]}, {"k": "v"}]);
        let insert = "INSERT INTO t VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16)";
        assert_eq!(ok(&e, &sql(insert, row)).await, Outcome::Affected(1));
        let nulls: Vec<serde_json::Value> = vec![serde_json::Value::Null; 16];
        assert_eq!(ok(&e, &sql(insert, json!(nulls))).await, Outcome::Affected(1));
        let got = records(&e, &sql("SELECT * FROM t ORDER BY i2 NULLS LAST", json!([]))).await;
        assert_eq!(got[0], json!({
            "i2": -7, "i4": 2147483647, "i8": 9007199254740993i64, "f4": 1.5, "f8": -2.25, "b": true,
            "n": "12345.678900", "s": "héllo", "v": "v", "c": "abc", "y": "base64:AAEC/w==",
            "u": "67e55044-10b1-426f-9247-bb680e5fe0c8", "ts": "2024-05-01T12:34:56.789012Z",
            "tz": "2024-05-01T12:34:56.000000Z", "j": {"a": [1, null]}, "jb": {"k": "v"},
        }));
        assert!(got[1].as_object().expect("object").values().all(serde_json::Value::is_null));
        // Protobuf rows too: one value per column, the int past 2^53 as text.
        match ok(&e, &sql("SELECT i8, n FROM t WHERE i2 = $1", json!([-7]))).await {
            Outcome::Rows(set) => {
                assert_eq!(set.columns, ["i8", "n"]);
                assert_eq!(set.rows.len(), 1);
                assert_eq!(set.rows[0].values.len(), 2);
            }
            other => panic!("{other:?}"),
        }
        // Numerics of every shape come back exactly.
        for n in ["0", "-0.0001", "10000", "99999999999999999999.99999", "NaN", "1e-20"] {
            let got = records(&e, &sql("SELECT $1::numeric::text AS t, $1::numeric AS n", json!([n]))).await;
            assert_eq!(got[0]["n"], got[0]["t"], "{n}");
        }
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
                "CREATE TABLE users (id serial primary key, name text)",
                json!([]),
            ),
        )
        .await;
        let nasty = [
            "Robert'); DROP TABLE users;--",
            "' OR '1'='1",
            "$1",
            "\\'; SELECT pg_sleep(10); --",
            "\"; DELETE FROM users; --",
            "$$ ; DROP TABLE users; $$",
        ];
        for s in nasty {
            ok(&e, &sql("INSERT INTO users (name) VALUES ($1)", json!([s]))).await;
        }
        let got = records(&e, &sql("SELECT name FROM users ORDER BY id", json!([]))).await;
        let names: Vec<&str> = got
            .iter()
            .map(|r| r["name"].as_str().expect("text"))
            .collect();
        assert_eq!(names, nasty);
        let found = records(
            &e,
            &sql(
                "SELECT count(*) AS n FROM users WHERE name = $1",
                json!(["' OR '1'='1"]),
            ),
        )
        .await;
        assert_eq!(found[0]["n"], 1);
        db.drop_db().await;
    });
}

#[test]
fn bad_lines_and_placeholder_mismatches_fail_before_any_round_trip() {
    runtime().block_on(async {
        // Nothing listens on port 1: a line that reached the network would
        // fail as unreachable, not with these errors.
        let e = PgExecutor::new(
            &SqlConfig {
                url: "postgres://postgres@127.0.0.1:1/test".into(),
                pool: pool(1),
            },
            RecordSetMode::JsonOnly,
        )
        .expect("config");
        let count = e.run_line(&sql("SELECT $1, $2", json!([1]))).await;
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
        let literal = e.run_line(&sql("SELECT '$1'", json!([1]))).await;
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
            "{",
            "[]",
            r#"{"params": []}"#,
            r#"{"sql": "  "}"#,
            r#"{"sql": 1}"#,
        ] {
            let r = e.run_line(bad).await;
            assert!(matches!(r, Err(GatewayError::BadLine(_))), "{bad}: {r:?}");
        }
        assert_eq!(e.open_connections(), 0);
    });
}

#[test]
fn unreachable_servers_fail_typed_within_the_connect_timeout() {
    runtime().block_on(async {
        let e = PgExecutor::new(
            &SqlConfig {
                url: "postgres://postgres@127.0.0.1:1/test".into(),
                pool: pool(1),
            },
            RecordSetMode::JsonOnly,
        )
        .expect("config");
        let start = Instant::now();
        let r = e.run_line(&sql("SELECT 1", json!([]))).await;
        assert!(matches!(r, Err(GatewayError::Unreachable { .. })), "{r:?}");
        assert!(
            start.elapsed() < Duration::from_secs(4),
            "{:?}",
            start.elapsed()
        );
        let msg = r.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(msg.contains("127.0.0.1:1"), "{msg}");
    });
}

#[test]
fn server_errors_types_and_timeouts_are_typed() {
    runtime().block_on(async {
        let Some(db) = TestDb::create("errors").await else { return };
        let e = db.executor(2, RecordSetMode::JsonOnly);
        let missing = e.run_line(&sql("SELECT * FROM nowhere", json!([]))).await;
        assert!(matches!(&missing, Err(GatewayError::Server { code, .. }) if code == "42P01"), "{missing:?}");
        ok(&e, &sql("CREATE TABLE k (id text primary key)", json!([]))).await;
        ok(&e, &sql("INSERT INTO k VALUES ($1)", json!(["a"]))).await;
        let dup = e.run_line(&sql("INSERT INTO k VALUES ($1)", json!(["a"]))).await;
        assert!(matches!(&dup, Err(GatewayError::Server { code, .. }) if code == "23505"), "{dup:?}");
        let interval = e.run_line(&sql("SELECT '1 day'::interval AS span", json!([]))).await;
        assert!(matches!(&interval, Err(GatewayError::UnsupportedType { column, type_name })
            if column == "span" && type_name == "interval"), "{interval:?}");
        let param = e.run_line(&sql("SELECT $1::int4 AS n", json!(["seven"]))).await;
        assert!(matches!(&param, Err(GatewayError::Param { index: 1, type_name, .. }) if type_name == "int4"), "{param:?}");
        let range = e.run_line(&sql("SELECT $1::int2 AS n", json!([70000]))).await;
        assert!(matches!(&range, Err(GatewayError::Param { index: 1, .. })), "{range:?}");
        let infinite = e.run_line(&sql("SELECT 'infinity'::timestamp AS t", json!([]))).await;
        assert!(matches!(&infinite, Err(GatewayError::TypeMismatch { column, .. }) if column == "t"), "{infinite:?}");
        // The connection is still good after each of these.
        assert_eq!(records(&e, &sql("SELECT 1 AS one", json!([]))).await, [json!({"one": 1})]);
        let short = PgExecutor::new(
            &SqlConfig {
                url: db.url.clone(),
                pool: gateway::PoolConfig { statement_timeout: Duration::from_millis(300), ..pool(1) },
            },
            RecordSetMode::JsonOnly,
        ).expect("config");
        let start = Instant::now();
        let slow = short.run_line(&sql("SELECT pg_sleep(5)", json!([]))).await;
        assert!(matches!(&slow, Err(GatewayError::Timeout { .. })
            | Err(GatewayError::Server { .. })), "{slow:?}");
        assert!(start.elapsed() < Duration::from_secs(3));
        assert_eq!(records(&short, &sql("SELECT 2 AS two", json!([]))).await, [json!({"two": 2})]);
        drop(short);
        db.drop_db().await;
    });
}

/// 100,000 lines through a pool of 4 (shared) connections, all killed
/// from the server side twice along the way: every line ends done or
/// failed with a typed connection error, and the pool serves again.
#[test]
fn killed_connections_fail_their_lines_once_and_the_pool_recovers() {
    runtime().block_on(async {
        let Some(db) = TestDb::create("kill").await else { return };
        let e = Arc::new(db.executor(4, RecordSetMode::JsonOnly));
        ok(&*e, &sql("CREATE TABLE kv (id int primary key, v text)", json!([]))).await;
        ok(&*e, &sql("INSERT INTO kv SELECT g, 'v' || g FROM generate_series(0, 999) g", json!([]))).await;
        let kill = sql(
            "SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
            json!([db.name]),
        );
        let (killed, lost) = lines_through_kills(
            Arc::clone(&e),
            |i| sql("SELECT v FROM kv WHERE id = $1", json!([i % 1000])),
            |_, outcome| match outcome {
                Outcome::Rows(set) => assert_eq!(set.records.len(), 1),
                other => panic!("{other:?}"),
            },
            || async { records(&db.admin, &kill).await.len() },
        )
        .await;
        // Only lines in flight on a killed connection fail: connections are
        // shared and pipelined, so each kill round can fail every task's
        // current line, plus lines that picked the slot before its client
        // noticed the close.
        assert!(lost <= 6 * KILL_TASKS, "{lost} lines lost to {killed} killed connections");
        assert_eq!(records(&*e, &sql("SELECT v FROM kv WHERE id = $1", json!([7]))).await, [json!({"v": "v7"})]);
        assert!(e.open_connections() <= 4);
        eprintln!("postgres: {killed} connections killed, {lost} of {KILL_LINES} lines failed with a typed error");
        drop(e);
        db.drop_db().await;
    });
}
