//! The Redis executor against the machine's live server
//! (`GATEWAY_REDIS_URL`, default `redis://127.0.0.1:6379/`), each test
//! under a key prefix of its own, whose keys are deleted at the end.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{KILL_LINES, KILL_TASKS, lines_through_kills, pool, runtime, skip, unique};
use gateway::{Executor, GatewayError, KvOutcome, Outcome, RedisConfig, RedisExecutor};
use serde_json::json;

/// Redis database the kill test's pool uses, so its connections can be
/// told apart in `CLIENT LIST` (nothing else here uses it).
const KILL_DB: u8 = 11;

fn url_with_db(db: u8) -> String {
    let base = RedisConfig::from_env().url;
    let host = base
        .trim_end_matches('/')
        .rsplit_once('/')
        .map_or(base.as_str(), |(h, last)| {
            if last.parse::<u8>().is_ok() {
                h
            } else {
                base.trim_end_matches('/')
            }
        })
        .to_string();
    format!("{host}/{db}")
}

async fn admin(url: &str) -> Option<redis::aio::MultiplexedConnection> {
    let client = redis::Client::open(url).expect("redis url");
    match tokio::time::timeout(
        Duration::from_secs(3),
        client.get_multiplexed_async_connection(),
    )
    .await
    {
        Ok(Ok(c)) => Some(c),
        Ok(Err(e)) => {
            skip("redis", &e.to_string());
            None
        }
        Err(_) => {
            skip("redis", "connect timed out");
            None
        }
    }
}

async fn clean(conn: &mut redis::aio::MultiplexedConnection, prefix: &str) {
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}*"))
        .query_async(conn)
        .await
        .expect("keys");
    if !keys.is_empty() {
        let _: u64 = redis::cmd("DEL")
            .arg(&keys)
            .query_async(conn)
            .await
            .expect("del");
    }
}

fn executor(url: String, prefix: &str, size: usize) -> RedisExecutor {
    RedisExecutor::new(&RedisConfig {
        url,
        key_prefix: prefix.into(),
        pool: pool(size),
    })
    .expect("config")
}

async fn kv(e: &RedisExecutor, line: serde_json::Value) -> KvOutcome {
    match e.run_line(&line.to_string()).await {
        Ok(Outcome::Kv(k)) => k,
        other => panic!("{line}: {other:?}"),
    }
}

#[test]
fn every_op_round_trips_under_the_prefix() {
    runtime().block_on(async {
        let url = RedisConfig::from_env().url;
        let Some(mut raw) = admin(&url).await else {
            return;
        };
        let prefix = format!("{}:", unique("kv"));
        let e = executor(url, &prefix, 2);
        assert_eq!(
            kv(&e, json!({"op": "get", "key": "a"})).await,
            KvOutcome::Value(None)
        );
        assert_eq!(
            kv(&e, json!({"op": "set", "key": "a", "value": "héllo"})).await,
            KvOutcome::Stored
        );
        assert_eq!(
            kv(
                &e,
                json!({"op": "set", "key": "b", "value": "' OR 1; FLUSHALL"})
            )
            .await,
            KvOutcome::Stored
        );
        assert_eq!(
            kv(&e, json!({"op": "get", "key": "a"})).await,
            KvOutcome::Value(Some("héllo".into()))
        );
        assert_eq!(
            kv(&e, json!({"op": "mget", "key": ["a", "missing", "b"]})).await,
            KvOutcome::Values(vec![
                Some("héllo".into()),
                None,
                Some("' OR 1; FLUSHALL".into())
            ])
        );
        // The key really is under the prefix on the server.
        let direct: Option<String> = redis::cmd("GET")
            .arg(format!("{prefix}a"))
            .query_async(&mut raw)
            .await
            .expect("get");
        assert_eq!(direct.as_deref(), Some("héllo"));
        assert_eq!(
            kv(
                &e,
                json!({"op": "set", "key": "t", "value": "x", "ttl_ms": 60000})
            )
            .await,
            KvOutcome::Stored
        );
        let ttl: i64 = redis::cmd("PTTL")
            .arg(format!("{prefix}t"))
            .query_async(&mut raw)
            .await
            .expect("pttl");
        assert!((1..=60000).contains(&ttl), "{ttl}");
        assert_eq!(
            kv(&e, json!({"op": "del", "key": ["a", "b", "missing"]})).await,
            KvOutcome::Deleted(2)
        );
        assert_eq!(
            kv(&e, json!({"op": "del", "key": "t"})).await,
            KvOutcome::Deleted(1)
        );
        // A key of another type: the server's own error code.
        let _: () = redis::cmd("LPUSH")
            .arg(format!("{prefix}list"))
            .arg("x")
            .query_async(&mut raw)
            .await
            .expect("lpush");
        let wrong = e
            .run_line(&json!({"op": "get", "key": "list"}).to_string())
            .await;
        assert!(
            matches!(&wrong, Err(GatewayError::Server { code, .. }) if code == "WRONGTYPE"),
            "{wrong:?}"
        );
        clean(&mut raw, &prefix).await;
    });
}

#[test]
fn bad_lines_fail_before_any_round_trip_and_unreachable_is_typed() {
    runtime().block_on(async {
        let e = executor("redis://127.0.0.1:1/".into(), "p:", 1);
        for bad in [
            r#"{"op":"get"}"#,
            r#"{"op":"set","key":"a"}"#,
            r#"{"op":"nope","key":"a"}"#,
            "x",
        ] {
            let r = e.run_line(bad).await;
            assert!(matches!(r, Err(GatewayError::BadLine(_))), "{bad}: {r:?}");
        }
        let start = Instant::now();
        let r = e.run_line(r#"{"op":"get","key":"a"}"#).await;
        assert!(
            matches!(
                r,
                Err(GatewayError::Unreachable { .. } | GatewayError::Timeout { .. })
            ),
            "{r:?}"
        );
        assert!(start.elapsed() < Duration::from_secs(4));
    });
}

/// 100,000 lines through a pool of 4 whose connections are killed
/// (`CLIENT KILL ID`) twice along the way.
#[test]
fn killed_connections_fail_their_lines_once_and_the_pool_recovers() {
    runtime().block_on(async {
        let Some(raw) = admin(&RedisConfig::from_env().url).await else {
            return;
        };
        let prefix = format!("{}:", unique("kill"));
        let e = Arc::new(executor(url_with_db(KILL_DB), &prefix, 4));
        for i in 0..100 {
            kv(
                &e,
                json!({"op": "set", "key": format!("k{i}"), "value": format!("v{i}")}),
            )
            .await;
        }
        let raw = &raw;
        let (killed, lost) = lines_through_kills(
            Arc::clone(&e),
            |i| json!({"op": "get", "key": format!("k{}", i % 100)}).to_string(),
            |i, outcome| match outcome {
                Outcome::Kv(KvOutcome::Value(Some(v))) => assert_eq!(v, format!("v{}", i % 100).into_bytes()),
                other => panic!("{other:?}"),
            },
            || async move {
                let mut raw = raw.clone();
                let list: String = redis::cmd("CLIENT").arg("LIST").query_async(&mut raw).await.expect("client list");
                let mut killed = 0usize;
                for line in list.lines().filter(|l| l.split(' ').any(|f| f == format!("db={KILL_DB}"))) {
                    let id = line.split(' ').find_map(|f| f.strip_prefix("id=")).expect("id");
                    let n: u64 = redis::cmd("CLIENT").arg("KILL").arg("ID").arg(id).query_async(&mut raw).await.unwrap_or(0);
                    killed += n as usize;
                }
                killed
            },
        )
        .await;
        assert!(
            lost <= 8 * KILL_TASKS,
            "{lost} lines lost to {killed} killed connections"
        );
        assert_eq!(
            kv(&e, json!({"op": "get", "key": "k7"})).await,
            KvOutcome::Value(Some(b"v7".to_vec()))
        );
        eprintln!(
            "redis: {killed} connections killed, {lost} of {KILL_LINES} lines failed with a typed error"
        );
        let mut in_db = redis::Client::open(url_with_db(KILL_DB).as_str())
            .expect("url")
            .get_multiplexed_async_connection()
            .await
            .expect("connect");
        clean(&mut in_db, &prefix).await;
    });
}
