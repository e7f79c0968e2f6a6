//! `store.apply_commit`: one record create per operation from 1/10/100
//! callers (no-sync and fsync stores) and the create at each size tier;
//! `store.apply_commit_index_only` (a probe): the index-only write through
//! the same writer (no CBOR, MST or signing). Commits and MST == index are
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
use repo::crypto::PublicKey;
use repo::firehose::{Frame, verify_commit};
use store::bench_internals::{self, DetachedRepo, IndexOnly, IndexOnlyRecord};
use store::{Config, Store};

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
    g.finish();
    index_only(target, fx);
}

/// `store.apply_commit_index_only/ours/callers-{1,10}`.
fn index_only(target: &mut BenchTarget, fx: &Fixtures) {
    if !target.may_run("store.apply_commit_index_only") {
        return;
    }
    let full = target.preset() == Preset::Full;
    let mut g = target.group("store.apply_commit_index_only");
    g.criterion()
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10);
    if full {
        g.criterion().measurement_time(Duration::from_secs(2));
    }
    // Index-only: the same writer, no CBOR/MST/signing in the timed write.
    let idx = Arc::new(
        Store::open(
            fx.nosync.path().with_file_name("index-only.sqlite"),
            Config::default(),
        )
        .expect("open"),
    );
    // Each caller's writes, prepared once and outside the timing: a like
    // per key, its createRecord planned and signed on an in-memory account
    // (`DetachedRepo`), and that commit's `#commit` event.
    let smoke = benches::config::is_smoke();
    let keys_per_caller = if smoke { 16 } else { 4096 };
    let t = Instant::now();
    let prepared: Vec<(String, PublicKey, Vec<Arc<IndexOnly>>)> = std::thread::scope(|sc| {
        let workers: Vec<_> = (0..10usize)
            .map(|caller| sc.spawn(move || index_only_writes(caller, keys_per_caller)))
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("prepared"))
            .collect()
    });
    eprintln!(
        "store: index-only writes ({keys_per_caller} per caller) prepared in {:.1?}",
        t.elapsed()
    );
    // The unit writes what it claims (checked once, outside the timing):
    // the index row, and an event that is the #commit of that record.
    let (did, key, writes) = &prepared[0];
    let seq = bench_internals::index_only_write(&idx, did, writes[0].clone()).expect("index write");
    let like = &writes[0].records[0];
    assert_eq!(
        idx.current_cid(did, LIKE, &like.rkey).expect("lookup"),
        Some(like.cid)
    );
    let events = idx.events_after(seq - 1, 1).expect("events");
    let Ok(Frame::Commit(c)) = Frame::decode(&events[0].frame) else {
        panic!("the index-only event is not a #commit frame");
    };
    assert_eq!((c.seq, c.repo), (seq, did.as_str()));
    assert_eq!(c.ops[0].cid, Some(like.cid));
    verify_commit(&c, &HashMap::from([(did.clone(), key.clone())])).expect("the event verifies");
    for callers in [1usize, 10] {
        bench_callers(
            &mut g,
            "ours",
            &format!("callers-{callers}"),
            callers,
            |caller| {
                let (did, _, writes) = prepared[caller].clone();
                let idx = idx.clone();
                move |i: u64| {
                    let write = &writes[i as usize % writes.len()];
                    black_box(
                        bench_internals::index_only_write(&idx, &did, write.clone())
                            .expect("index write"),
                    );
                }
            },
        );
    }
    g.finish();
}

/// Caller `caller`'s index-only writes: `n` likes, each with the
/// `#commit` event of its createRecord planned on an empty in-memory
/// account (its DID and key come back with them).
fn index_only_writes(caller: usize, n: usize) -> (String, PublicKey, Vec<Arc<IndexOnly>>) {
    let did = format!("did:plc:indexonly{caller:016}");
    let key = crate::fixtures::keypair(500 + caller as u64);
    let public = key.public_key();
    let account = DetachedRepo::new(&did, key, &[]).expect("account");
    let writes = (0..n as u64)
        .map(|k| {
            let rkey = datagen::store::tid(datagen::store::BASE_TIME_US + k, caller as u16);
            let like = cbor(&serde_json::json!({
                "$type": LIKE,
                "subject": {
                    "uri": format!("at://{did}/{POST}/{rkey}"),
                    "cid": "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm",
                },
                "createdAt": datagen::store::datetime(datagen::store::BASE_TIME_US + k),
            }));
            let planned = account.plan_create(LIKE, &rkey, like).expect("plans");
            Arc::new(IndexOnly {
                records: vec![IndexOnlyRecord {
                    collection: LIKE.to_owned(),
                    rkey,
                    cid: planned.record,
                }],
                rev: planned.rev.clone(),
                event: account.commit_event(&planned).expect("event"),
            })
        })
        .collect();
    (did, public, writes)
}
