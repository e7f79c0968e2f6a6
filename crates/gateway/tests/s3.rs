//! The S3 executor against the in-process emulator (`s3s-fs` over a temp
//! directory; feature `s3-emulator`), started and stopped by each test, a
//! bucket of its own per test.
#![cfg(feature = "s3-emulator")]

mod common;

use std::time::{Duration, Instant};

use common::{pool, runtime, unique};
use gateway::S3Emulator;
use gateway::{Executor, GatewayError, ObjectOutcome, Outcome, S3Config, S3Executor};
use serde_json::json;

fn line(op: &str, bucket: &str, key: &str) -> serde_json::Value {
    json!({"op": op, "bucket": bucket, "key": key})
}

async fn object(e: &S3Executor, line: serde_json::Value) -> ObjectOutcome {
    match e.run_line(&line.to_string()).await {
        Ok(Outcome::Object(o)) => o,
        other => panic!("{line}: {other:?}"),
    }
}

#[test]
fn every_op_round_trips_through_the_emulator() {
    let dir = tempfile::tempdir().expect("temp dir");
    let emulator = S3Emulator::start(dir.path()).expect("emulator");
    let bucket = unique("b").replace('_', "-");
    emulator.create_bucket(&bucket).expect("bucket");
    let e = S3Executor::new(emulator.config(pool(4)));
    runtime().block_on(async {
        let payload = datagen::random_bytes(7, 16 * 1024);
        let mut put = line("put", &bucket, "dir/a.bin");
        put["data_base64"] = json!(codec::base64::encode(&payload));
        put["content_type"] = json!("application/octet-stream");
        match object(&e, put).await {
            ObjectOutcome::Stored { size, .. } => assert_eq!(size, 16 * 1024),
            other => panic!("{other:?}"),
        }
        let mut text = line("upsert", &bucket, "dir/b.txt");
        text["data_text"] = json!("héllo");
        text["content_type"] = json!("text/plain");
        object(&e, text).await;
        match object(&e, line("get", &bucket, "dir/a.bin")).await {
            ObjectOutcome::Got {
                bytes,
                content_type,
            } => {
                assert_eq!(&bytes[..], &payload[..]);
                assert_eq!(content_type.as_deref(), Some("application/octet-stream"));
            }
            other => panic!("{other:?}"),
        }
        match object(&e, line("get", &bucket, "dir/b.txt")).await {
            ObjectOutcome::Got { bytes, .. } => assert_eq!(&bytes[..], "héllo".as_bytes()),
            other => panic!("{other:?}"),
        }
        match object(&e, line("head", &bucket, "dir/a.bin")).await {
            ObjectOutcome::Head(entry) => {
                assert_eq!((entry.key.as_str(), entry.size), ("dir/a.bin", 16 * 1024))
            }
            other => panic!("{other:?}"),
        }
        match object(&e, line("list", &bucket, "dir")).await {
            ObjectOutcome::Listed(entries) => {
                let keys: Vec<&str> = entries.iter().map(|x| x.key.as_str()).collect();
                assert_eq!(keys, ["dir/a.bin", "dir/b.txt"]);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            object(&e, line("delete", &bucket, "dir/a.bin")).await,
            ObjectOutcome::Deleted
        );
        let gone = e
            .run_line(&line("get", &bucket, "dir/a.bin").to_string())
            .await;
        assert!(
            matches!(&gone, Err(GatewayError::NotFound { key, .. }) if key == "dir/a.bin"),
            "{gone:?}"
        );
        let headless = e
            .run_line(&line("head", &bucket, "nothing").to_string())
            .await;
        assert!(
            matches!(headless, Err(GatewayError::NotFound { .. })),
            "{headless:?}"
        );
        // A 1 MiB object, the inline cap.
        let big = datagen::random_bytes(8, 1 << 20);
        let mut put = line("put", &bucket, "big");
        put["data_base64"] = json!(codec::base64::encode(&big));
        object(&e, put).await;
        match object(&e, line("get", &bucket, "big")).await {
            ObjectOutcome::Got { bytes, .. } => assert!(bytes[..] == big[..]),
            other => panic!("{other:?}"),
        }
    });
    emulator.remove_bucket(&bucket).expect("remove bucket");
}

#[test]
fn bad_lines_bad_credentials_and_unreachable_servers_are_typed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let emulator = S3Emulator::start(dir.path()).expect("emulator");
    let bucket = unique("c").replace('_', "-");
    emulator.create_bucket(&bucket).expect("bucket");
    runtime().block_on(async {
        let e = S3Executor::new(emulator.config(pool(2)));
        for bad in [
            json!({"op": "put", "bucket": &bucket, "key": "a"}),
            json!({"op": "copy", "bucket": &bucket, "key": "a"}),
            json!({"op": "get", "bucket": &bucket, "key": "a//b"}),
            json!({"op": "put", "bucket": &bucket, "key": "a", "data_base64": "not base64!"}),
        ] {
            let r = e.run_line(&bad.to_string()).await;
            assert!(matches!(r, Err(GatewayError::BadLine(_))), "{bad}: {r:?}");
        }
        let append = json!({"op": "append", "bucket": &bucket, "key": "a", "data_text": "x"});
        assert!(matches!(
            e.run_line(&append.to_string()).await,
            Err(GatewayError::Unsupported { .. })
        ));
        let wrong = S3Executor::new(S3Config {
            secret_key: "wrong".into(),
            ..emulator.config(pool(1))
        });
        let denied = wrong.run_line(&line("get", &bucket, "a").to_string()).await;
        assert!(
            matches!(denied, Err(GatewayError::Server { .. })),
            "{denied:?}"
        );
        let nowhere = S3Executor::new(S3Config {
            endpoint: "http://127.0.0.1:1".into(),
            pool: gateway::PoolConfig {
                connect_timeout: Duration::from_secs(2),
                ..pool(1)
            },
            ..emulator.config(pool(1))
        });
        let start = Instant::now();
        let r = nowhere
            .run_line(&line("get", &bucket, "a").to_string())
            .await;
        assert!(matches!(r, Err(GatewayError::Unreachable { .. })), "{r:?}");
        assert!(start.elapsed() < Duration::from_secs(4));
    });
}
