//! `live.s3_put` / `live.s3_get`: one object of 4 KiB, 16 KiB or 1 MiB on
//! the in-process S3 emulator (`gateway::S3Emulator`, s3s-fs over a temp
//! directory: an emulator, not a real object store), `ours` (the
//! S3Executor: line parse, base64 payload decode for puts, the request)
//! beside `raw` (object_store alone, the same client and bytes).

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};

use benches::callers::bench_callers_counting;
use benches::target::BenchTarget;
use criterion::Throughput;
use gateway::S3Emulator;
use gateway::{Executor, ObjectOutcome, Outcome, PoolConfig, S3Executor};
use object_store::ObjectStore;
use object_store::path::Path;
use serde_json::json;
use tokio::runtime::Runtime;

use crate::live::{run_name, unavailable};

pub const GROUPS: [&str; 2] = ["live.s3_put", "live.s3_get"];
const SIZES: [(usize, &str); 3] = [(4 << 10, "4KiB"), (16 << 10, "16KiB"), (1 << 20, "1MiB")];
/// Distinct objects per size, so puts and gets do not hit one hot key.
const KEYS: usize = 16;

pub fn run(target: &mut BenchTarget, rt: &Runtime, context: &mut serde_json::Value) {
    let dir = benches::sidecar::atbench_dir().join("live-s3");
    let _ = std::fs::remove_dir_all(&dir);
    let started = std::fs::create_dir_all(&dir).and_then(|()| S3Emulator::start(&dir));
    let emulator = match started {
        Ok(e) => e,
        Err(e) => {
            unavailable(target, "s3 emulator", &GROUPS, &e.to_string());
            return;
        }
    };
    context["s3"] = json!("s3s-fs 0.14.1 in process (an emulator over the local file system)");
    let bucket = run_name().replace('_', "-");
    emulator.create_bucket(&bucket).expect("bucket");
    let e = S3Executor::new(emulator.config(PoolConfig::default()));
    let store = e.store(&bucket).expect("client");
    let mut put = target.group("live.s3_put");
    for (size, tier) in SIZES {
        let payloads: Vec<Vec<u8>> = (0..KEYS)
            .map(|k| datagen::random_bytes(0x5333 + k as u64, size))
            .collect();
        let lines: Vec<String> = payloads
            .iter()
            .enumerate()
            .map(|(k, p)| {
                json!({"op": "put", "bucket": bucket, "key": format!("{tier}/o{k}"),
                    "content_type": "application/octet-stream", "data_base64": codec::base64::encode(p)})
                .to_string()
            })
            .collect();
        let paths: Vec<Path> = (0..KEYS)
            .map(|k| Path::from(format!("{tier}/raw{k}")))
            .collect();
        let bytes: Vec<bytes::Bytes> = payloads
            .iter()
            .map(|p| bytes::Bytes::from(p.clone()))
            .collect();
        // One caller through the concurrent runner, for its CPU/op: the
        // client and the emulator share this process.
        let bytes_per_op = Throughput::Bytes(size as u64);
        // Which sides ran: a filtered run has nothing to read back of a
        // side it skipped.
        let (ours_ran, raw_ran) = (AtomicBool::new(false), AtomicBool::new(false));
        bench_callers_counting(&mut put, "ours", tier, 1, bytes_per_op.clone(), |_| {
            ours_ran.store(true, Ordering::Relaxed);
            let mut k = 0usize;
            let (lines, e) = (&lines, &e);
            move |_| {
                let out = rt.block_on(e.run_line(&lines[k % KEYS])).expect("put");
                k += 1;
                black_box(out);
            }
        });
        bench_callers_counting(&mut put, "raw", tier, 1, bytes_per_op, |_| {
            raw_ran.store(true, Ordering::Relaxed);
            let mut k = 0usize;
            let (paths, bytes, store) = (&paths, &bytes, &store);
            move |_| {
                let j = k % KEYS;
                k += 1;
                let out = rt
                    .block_on(store.put(&paths[j], bytes[j].clone().into()))
                    .expect("put");
                black_box(out);
            }
        });
        if ours_ran.load(Ordering::Relaxed) {
            // The timed puts landed: the first key of each side (written in
            // every mode, `--test` included) holds its payload.
            match rt.block_on(e.run_line(
                &json!({"op": "get", "bucket": bucket, "key": format!("{tier}/o0")}).to_string(),
            )) {
                Ok(Outcome::Object(ObjectOutcome::Got { bytes, .. })) => {
                    assert!(bytes[..] == payloads[0][..])
                }
                other => panic!("{other:?}"),
            }
        }
        if raw_ran.load(Ordering::Relaxed) {
            let raw0 = rt
                .block_on(async { store.get(&paths[0]).await?.bytes().await })
                .expect("get");
            assert!(raw0[..] == payloads[0][..]);
        }
        // Every object of both sides is in place for the gets.
        for (j, p) in payloads.iter().enumerate() {
            let line = json!({"op": "put", "bucket": bucket, "key": format!("{tier}/o{j}"),
                "data_base64": codec::base64::encode(p)})
            .to_string();
            rt.block_on(e.run_line(&line)).expect("put");
            rt.block_on(store.put(&paths[j], bytes[j].clone().into()))
                .expect("put");
        }
    }
    put.finish();
    let mut get = target.group("live.s3_get");
    for (size, tier) in SIZES {
        let expect: Vec<Vec<u8>> = (0..KEYS)
            .map(|k| datagen::random_bytes(0x5333 + k as u64, size))
            .collect();
        let lines: Vec<String> = (0..KEYS)
            .map(|k| {
                json!({"op": "get", "bucket": bucket, "key": format!("{tier}/o{k}")}).to_string()
            })
            .collect();
        let paths: Vec<Path> = (0..KEYS)
            .map(|k| Path::from(format!("{tier}/raw{k}")))
            .collect();
        // Outside the timing: both sides read back the bytes that were put.
        for k in 0..KEYS {
            match rt.block_on(e.run_line(&lines[k])).expect("get") {
                Outcome::Object(ObjectOutcome::Got { bytes, .. }) => {
                    assert!(bytes[..] == expect[k][..])
                }
                other => panic!("{other:?}"),
            }
            let raw = rt
                .block_on(async { store.get(&paths[k]).await?.bytes().await })
                .expect("get");
            assert!(raw[..] == expect[k][..]);
        }
        let bytes_per_op = Throughput::Bytes(size as u64);
        bench_callers_counting(&mut get, "ours", tier, 1, bytes_per_op.clone(), |_| {
            let mut k = 0usize;
            let (lines, e) = (&lines, &e);
            move |_| {
                let out = rt.block_on(e.run_line(&lines[k % KEYS])).expect("get");
                k += 1;
                black_box(out);
            }
        });
        bench_callers_counting(&mut get, "raw", tier, 1, bytes_per_op, |_| {
            let mut k = 0usize;
            let (paths, store) = (&paths, &store);
            move |_| {
                let path = &paths[k % KEYS];
                k += 1;
                let out = rt
                    .block_on(async { store.get(path).await?.bytes().await })
                    .expect("get");
                black_box(out);
            }
        });
    }
    get.finish();
    drop(e);
    drop(emulator);
    let _ = std::fs::remove_dir_all(&dir);
}
