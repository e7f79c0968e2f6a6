//! `store.apply_commit`: one record create per operation from 1/10/100
//! callers (no-sync and fsync stores), the create at each size tier, and the
//! index-only write (no CBOR, MST or signing); commits and MST == index are
//! verified after each write group, outside the timing.

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use benches::callers::bench_callers;
use benches::config::Preset;
use benches::registry::count_tier;
use benches::target::BenchTarget;
use criterion::{SamplingMode, Throughput};
use repo::Cid;
use repo::crypto::PublicKey;
use repo::firehose::{Frame, verify_commit};
use store::{Config, Store, bench_internals};

use crate::fixtures::{Fixtures, LIKE, POST, cbor};

/// Verifies the last `n` events of `store` (frames decode, commits verify
/// against the account keys, seqs contiguous) and MST == index for `dids`.
fn verify_store(store: &Store, keys: &HashMap<String, PublicKey>, dids: &[String], n: i64) {
    let last = store.stats().expect("stats").last_seq;
    let events = store
        .events_after((last - n).max(0), n as usize)
        .expect("events");
    let mut prev = None;
    for ev in &events {
        if let Some(p) = prev {
            assert_eq!(ev.seq, p + 1, "sequence gap");
        }
        prev = Some(ev.seq);
        if let Frame::Commit(c) = Frame::decode(&ev.frame).expect("frame decodes") {
            verify_commit(&c, keys)
                .unwrap_or_else(|e| panic!("seq {} does not verify: {e}", c.seq));
        }
    }
    for did in dids {
        store
            .check_repo(did)
            .unwrap_or_else(|e| panic!("{did}: {e}"));
    }
}

/// Encoded post bodies for one caller.
fn bodies(caller: usize, n: u64) -> Vec<Vec<u8>> {
    (0..n)
        .map(|k| cbor(&datagen::store::post(caller as u64, k).value))
        .collect()
}

/// Registers the write group.
pub fn run(target: &mut BenchTarget, fx: &Fixtures) {
    let preset = target.preset();
    let mut g = target.group("store.apply_commit");
    g.criterion()
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10);
    if preset == Preset::Full {
        g.criterion().measurement_time(Duration::from_secs(2));
    }
    let pools: Vec<Vec<Vec<u8>>> = (0..100).map(|c| bodies(c, 32)).collect();
    for (variant, store) in [("ours.nosync", &fx.nosync), ("ours.fsync", &fx.fsync)] {
        for callers in [1usize, 10, 100] {
            bench_callers(
                &mut g,
                variant,
                &format!("callers-{callers}"),
                callers,
                |caller| {
                    let did = fx.write_dids[caller].clone();
                    let pool = &pools[caller];
                    let store = store.clone();
                    move |i: u64| {
                        let body = pool[i as usize % pool.len()].clone();
                        let c = store
                            .create_record(&did, POST, None, body, None)
                            .expect("write");
                        debug_assert_eq!(c.results.len(), 1);
                        black_box(c);
                    }
                },
            );
        }
        verify_store(store, &fx.keys, &fx.write_dids[..3], 300);
    }
    // Size tiers: one create (timed) then its delete (untimed).
    g.throughput(Throughput::Elements(1));
    for (n, acc) in &fx.sized {
        let pool = bodies(7, 64);
        let store = &fx.sizes;
        g.bench("ours.nosync", &count_tier(*n), |b| {
            b.iter_custom(|iters| {
                let mut timed = Duration::ZERO;
                for i in 0..iters {
                    let body = pool[i as usize % pool.len()].clone();
                    let t = Instant::now();
                    let c = store
                        .create_record(&acc.did, POST, None, body, None)
                        .expect("write");
                    timed += t.elapsed();
                    let rkey = c.results[0]
                        .uri
                        .rsplit('/')
                        .next()
                        .unwrap_or_default()
                        .to_owned();
                    store
                        .delete_record(&acc.did, POST, &rkey, None, None)
                        .expect("delete");
                }
                timed
            })
        });
        assert_eq!(store.check_repo(&acc.did).expect("check"), *n);
    }
    // Index-only: the same writer, no CBOR/MST/signing.
    let idx = Arc::new(
        Store::open(
            fx.nosync.path().with_file_name("index-only.sqlite"),
            Config::default(),
        )
        .expect("open"),
    );
    // The unit writes what it claims (checked once, outside the timing).
    let probe = Cid::for_dag_cbor(b"index-only probe");
    bench_internals::index_only_write(&idx, "did:plc:indexonlyprobe", LIKE, "3kaaaaaaaaaaa", probe)
        .expect("index write");
    assert_eq!(
        idx.current_cid("did:plc:indexonlyprobe", LIKE, "3kaaaaaaaaaaa")
            .expect("lookup"),
        Some(probe)
    );
    for callers in [1usize, 10] {
        bench_callers(
            &mut g,
            "index-only",
            &format!("callers-{callers}"),
            callers,
            |caller| {
                let did = format!("did:plc:indexonly{caller:016}");
                let keys: Vec<(String, Cid)> = (0..4096u64)
                    .map(|k| {
                        let rkey =
                            datagen::store::tid(datagen::store::BASE_TIME_US + k, caller as u16);
                        let cid = Cid::for_dag_cbor(rkey.as_bytes());
                        (rkey, cid)
                    })
                    .collect();
                let idx = idx.clone();
                move |i: u64| {
                    let (rkey, cid) = &keys[i as usize % keys.len()];
                    black_box(
                        bench_internals::index_only_write(&idx, &did, LIKE, rkey, *cid)
                            .expect("index write"),
                    );
                }
            },
        );
    }
    g.finish();
}
