//! The read groups over the 10k-record account of `sizes.sqlite`:
//! `store.current_cid` (cached, uncached, per size tier),
//! `store.index_block_fetch`, `store.get_record` and `store.list_records`;
//! every read is checked against the seeded records before it is timed.

use std::hint::black_box;
use std::sync::Arc;

use benches::callers::bench_callers;
use benches::registry::count_tier;
use benches::target::BenchTarget;
use repo::Cid;
use store::{ListOptions, Store, bench_internals};

use crate::fixtures::{Fixtures, LIKE, Sampler};

/// One read per operation from `callers` threads over the `sampled` keys of
/// account `did`, caller `c` starting at key `start(c)` and walking on; the
/// result is passed through `black_box`. One benchmark per caller count,
/// implementation `ours`, tier `callers-N`.
fn sampled_reads<R>(
    g: &mut benches::Group<'_>,
    callers: &[usize],
    store: &Arc<Store>,
    did: &str,
    sampled: &[(&'static str, String, Cid)],
    start: impl Fn(usize) -> usize + Sync,
    read: impl Fn(&Store, &str, &str, &str) -> R + Sync,
) {
    for &n in callers {
        bench_callers(g, "ours", &format!("callers-{n}"), n, |caller| {
            let first = start(caller);
            let (store, read) = (store.clone(), &read);
            move |i: u64| {
                let (coll, rkey, _) = &sampled[(first + i as usize) % sampled.len()];
                black_box(read(&store, did, coll, rkey));
            }
        });
    }
}

/// Registers the read groups.
pub fn run(target: &mut BenchTarget, fx: &Fixtures) {
    let (_, acc10k) = fx
        .sized
        .iter()
        .find(|(n, _)| *n == 10_000)
        .expect("10k tier");
    let store = &fx.sizes;
    let sampled = acc10k.sample(1024, 11);
    for (coll, rkey, cid) in &sampled {
        assert_eq!(
            store.current_cid(&acc10k.did, coll, rkey).expect("lookup"),
            Some(*cid)
        );
    }

    let mut g = target.group("store.current_cid");
    let random_start = |caller: usize| Sampler(caller as u64 * 7919 + 1).next(sampled.len());
    sampled_reads(
        &mut g,
        &[1, 10, 100],
        store,
        &acc10k.did,
        &sampled,
        random_start,
        |s, did, coll, rkey| {
            let got = s.current_cid(did, coll, rkey).expect("lookup");
            debug_assert!(got.is_some());
            got
        },
    );
    // Adjacent probe: the SQLite index lookup alone, without the store's
    // writer-coherent cache (the cached rows above serve repeated keys).
    for (coll, rkey, cid) in sampled.iter().take(64) {
        assert_eq!(
            bench_internals::current_cid_uncached(store, &acc10k.did, coll, rkey).expect("lookup"),
            Some(*cid)
        );
    }
    bench_callers(&mut g, "ours.uncached", "callers-1", 1, |_| {
        let store = store.clone();
        let (did, sampled) = (&acc10k.did, &sampled);
        move |i: u64| {
            let (coll, rkey, _) = &sampled[i as usize % sampled.len()];
            black_box(
                bench_internals::current_cid_uncached(&store, did, coll, rkey).expect("lookup"),
            );
        }
    });
    for (n, acc) in &fx.sized {
        let keys = acc.sample(1024, *n as u64);
        for (coll, rkey, cid) in keys.iter().take(64) {
            assert_eq!(
                store.current_cid(&acc.did, coll, rkey).expect("lookup"),
                Some(*cid)
            );
        }
        bench_callers(&mut g, "ours", &count_tier(*n), 1, |_| {
            let store = store.clone();
            let (did, keys) = (&acc.did, &keys);
            move |i: u64| {
                let (coll, rkey, _) = &keys[i as usize % keys.len()];
                black_box(store.current_cid(did, coll, rkey).expect("lookup"));
            }
        });
    }
    g.finish();

    let mut g = target.group("store.index_block_fetch");
    for (coll, rkey, cid) in sampled.iter().take(64) {
        let (c, bytes) = store
            .record_block(&acc10k.did, coll, rkey)
            .expect("fetch")
            .expect("present");
        assert!(c == *cid && cid.matches(&bytes));
    }
    sampled_reads(
        &mut g,
        &[10, 100],
        store,
        &acc10k.did,
        &sampled,
        |caller| caller * 37,
        |s, did, coll, rkey| {
            let got = s.record_block(did, coll, rkey).expect("fetch");
            debug_assert!(got.is_some());
            got
        },
    );
    g.finish();

    let mut g = target.group("store.get_record");
    for (coll, rkey, cid) in sampled.iter().take(64) {
        let view = store
            .get_record(&acc10k.did, coll, rkey)
            .expect("get")
            .expect("present");
        assert_eq!(view.cid, *cid);
        let v: serde_json::Value = serde_json::from_str(&view.json).expect("JSON");
        assert_eq!(v["cid"], cid.to_string());
    }
    sampled_reads(
        &mut g,
        &[1, 10, 100],
        store,
        &acc10k.did,
        &sampled,
        |caller| caller * 37,
        |s, did, coll, rkey| {
            let got = s.get_record(did, coll, rkey).expect("get");
            debug_assert!(got.is_some());
            got
        },
    );
    g.finish();

    // listRecords: cursors with at least 50 older likes below them.
    let mut likes: Vec<&str> = acc10k
        .records
        .iter()
        .filter(|r| r.0 == LIKE)
        .map(|r| r.1.as_str())
        .collect();
    likes.sort_unstable();
    let cursors = benches::inputs::store_list_cursors(&likes);
    for c in cursors.iter().take(16) {
        let opts = ListOptions {
            limit: 50,
            cursor: Some(c),
            reverse: false,
        };
        let full = store.list_records(&acc10k.did, LIKE, &opts).expect("list");
        let ids = store
            .list_record_cids(&acc10k.did, LIKE, &opts)
            .expect("list");
        assert_eq!(full.len(), 50);
        assert!(
            full.iter()
                .zip(&ids)
                .all(|(f, i)| f.rkey == i.0 && f.cid == i.1)
        );
    }
    let mut g = target.group("store.list_records");
    // Ids follow the spec's table: `<index-only|full>/limit-50`, the caller
    // count as the implementation's variant.
    for full in [false, true] {
        let implementation = if full { "full" } else { "index-only" };
        for callers in [1usize, 10, 100] {
            bench_callers(
                &mut g,
                &format!("{implementation}.callers-{callers}"),
                "limit-50",
                callers,
                |caller| {
                    let start = caller * 13;
                    let store = store.clone();
                    let (did, cursors) = (&acc10k.did, &cursors);
                    move |i: u64| {
                        let c = &cursors[(start + i as usize) % cursors.len()];
                        let opts = ListOptions {
                            limit: 50,
                            cursor: Some(c),
                            reverse: false,
                        };
                        if full {
                            let page = store.list_records(did, LIKE, &opts).expect("list");
                            debug_assert_eq!(page.len(), 50);
                            black_box(page);
                        } else {
                            let page = store.list_record_cids(did, LIKE, &opts).expect("list");
                            debug_assert_eq!(page.len(), 50);
                            black_box(page);
                        }
                    }
                },
            );
        }
    }
    g.finish();
}
