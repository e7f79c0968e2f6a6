//! `--bench store`: the SQLite record store (`crates/store`).
//!
//! Fixtures are seeded from `datagen::store` (posts, likes, follows,
//! reposts, a profile per account) and built once per run under
//! `BENCH_DIR` (default a temp dir under `target/atbench/store-tmp`):
//! - `sizes.sqlite`: three accounts holding 1k, 10k and 100k records,
//!   written through `apply_writes` (200 per commit) — the real write path;
//! - `writes-nosync.sqlite` / `writes-fsync.sqlite`: 100 accounts each (one
//!   per caller), the first seeded with 3,000 commits for catch-up;
//! - `index-only.sqlite`, `blobs.sqlite`, the startup files.
//!
//! PRAGMAs come from `store::bench_internals::pragmas` (the store's one
//! list; the writer's overrides in `WRITER_PRAGMAS`) and are recorded in
//! the run context. Results are checked outside the timing: MST == index
//! and commits verifying after the write groups, lookups against the CIDs
//! of the seeded records, page sizes, CAR round trips, startup reports.

use std::cell::Cell;
use std::collections::HashMap;
use std::hint::black_box;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use benches::callers::bench_callers;
use benches::config::Preset;
use benches::registry::{count_tier, size_tier};
use benches::target::{BenchTarget, Budget};
use criterion::{BatchSize, SamplingMode, Throughput};
use repo::Cid;
use repo::crypto::{Algorithm, Keypair, PublicKey};
use repo::firehose::{Frame, verify_commit};
use store::bench_internals;
use store::{Config, ListOptions, RecordWrite, Store};

const POST: &str = "app.bsky.feed.post";
const LIKE: &str = "app.bsky.feed.like";

fn bench_dir() -> tempfile::TempDir {
    let base = std::env::var_os("BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| benches::sidecar::atbench_dir().join("store-tmp"));
    std::fs::create_dir_all(&base)
        .unwrap_or_else(|e| panic!("cannot create bench dir {}: {e}", base.display()));
    tempfile::Builder::new()
        .prefix("store-")
        .tempdir_in(&base)
        .unwrap_or_else(|e| panic!("cannot create a temp dir in {}: {e}", base.display()))
}

fn cbor(v: &serde_json::Value) -> Vec<u8> {
    let value =
        repo::cbor::json::from_json_value(v).expect("datagen records are valid atproto JSON");
    repo::cbor::to_vec(&value)
}

fn keypair(i: u64) -> Keypair {
    Keypair::from_bytes(Algorithm::K256, &datagen::store::signing_secret(i)).expect("valid secret")
}

/// A small deterministic generator for sampling (xorshift).
struct Sampler(u64);

impl Sampler {
    fn next(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
}

/// One seeded account holding `n` records.
struct SizedAccount {
    did: String,
    /// (collection, rkey, cid) of every record.
    records: Vec<(&'static str, String, Cid)>,
}

impl SizedAccount {
    fn sample(&self, n: usize, seed: u64) -> Vec<(&'static str, String, Cid)> {
        let mut s = Sampler(seed | 1);
        (0..n)
            .map(|_| self.records[s.next(self.records.len())].clone())
            .collect()
    }
}

struct Fixtures {
    sizes: Arc<Store>,
    sized: Vec<(usize, SizedAccount)>,
    nosync: Arc<Store>,
    fsync: Arc<Store>,
    write_dids: Vec<String>,
    keys: HashMap<String, PublicKey>,
}

fn seed_account(store: &Store, index: u64, n: usize) -> SizedAccount {
    let did = datagen::store::did(index);
    store
        .create_account(&did, &keypair(index))
        .expect("create account");
    let mut records = Vec::with_capacity(n);
    let generated = datagen::store::records(index, n);
    for chunk in generated.chunks(200) {
        let writes: Vec<RecordWrite> = chunk
            .iter()
            .map(|r| {
                let bytes = cbor(&r.value);
                records.push((r.collection, r.rkey.clone(), Cid::for_dag_cbor(&bytes)));
                RecordWrite::create(r.collection, Some(&r.rkey), bytes)
            })
            .collect();
        store.apply_writes(&did, writes, None).expect("seed writes");
    }
    SizedAccount { did, records }
}

fn build_fixtures(dir: &Path) -> Fixtures {
    let t = Instant::now();
    let sizes = Arc::new(Store::open(dir.join("sizes.sqlite"), Config::default()).expect("open"));
    let sized: Vec<(usize, SizedAccount)> = [1_000usize, 10_000, 100_000]
        .into_iter()
        .enumerate()
        .map(|(i, n)| (n, seed_account(&sizes, 1_000 + i as u64, n)))
        .collect();
    for (n, acc) in &sized {
        assert_eq!(sizes.check_repo(&acc.did).expect("check"), *n);
    }
    eprintln!(
        "store: sized fixture (1k/10k/100k records) built in {:.1?}",
        t.elapsed()
    );

    let t = Instant::now();
    let write_dids: Vec<String> = (0..100).map(datagen::store::did).collect();
    let open = |name: &str, durable: bool| {
        let s = Store::open(
            dir.join(name),
            Config {
                durable,
                ..Config::default()
            },
        )
        .expect("open");
        std::thread::scope(|sc| {
            for chunk in write_dids.chunks(10) {
                let s = &s;
                sc.spawn(move || {
                    for did in chunk {
                        let i = write_dids_index(did);
                        s.create_account(did, &keypair(i)).expect("create account");
                    }
                });
            }
        });
        Arc::new(s)
    };
    let nosync = open("writes-nosync.sqlite", false);
    let fsync = open("writes-fsync.sqlite", true);
    // History for sync_catchup: 3,000 commits on ten accounts.
    let per = 300;
    std::thread::scope(|sc| {
        for (i, did) in write_dids.iter().take(10).enumerate() {
            let nosync = &nosync;
            sc.spawn(move || {
                for n in 0..per {
                    let r = datagen::store::post(i as u64, 10_000_000 + n);
                    nosync
                        .create_record(did, POST, None, cbor(&r.value), None)
                        .expect("seed");
                }
            });
        }
    });
    let mut keys = HashMap::new();
    for (i, did) in write_dids.iter().enumerate() {
        keys.insert(did.clone(), keypair(i as u64).public_key());
    }
    eprintln!("store: write fixtures built in {:.1?}", t.elapsed());
    Fixtures {
        sizes,
        sized,
        nosync,
        fsync,
        write_dids,
        keys,
    }
}

fn write_dids_index(did: &str) -> u64 {
    (0..100u64)
        .find(|i| datagen::store::did(*i) == did)
        .unwrap_or(0)
}

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

fn apply_commit(target: &mut BenchTarget, fx: &Fixtures) {
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
    idx.bench_index_only_write("did:plc:indexonlyprobe", LIKE, "3kaaaaaaaaaaa", probe)
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
                        idx.bench_index_only_write(&did, LIKE, rkey, *cid)
                            .expect("index write"),
                    );
                }
            },
        );
    }
    g.finish();
}

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

fn reads(target: &mut BenchTarget, fx: &Fixtures) {
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
            store
                .bench_current_cid_uncached(&acc10k.did, coll, rkey)
                .expect("lookup"),
            Some(*cid)
        );
    }
    bench_callers(&mut g, "ours.uncached", "callers-1", 1, |_| {
        let store = store.clone();
        let (did, sampled) = (&acc10k.did, &sampled);
        move |i: u64| {
            let (coll, rkey, _) = &sampled[i as usize % sampled.len()];
            black_box(
                store
                    .bench_current_cid_uncached(did, coll, rkey)
                    .expect("lookup"),
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
    let mut s = Sampler(99);
    let cursors: Vec<String> = (0..256)
        .map(|_| likes[50 + s.next(likes.len() - 50)].to_owned())
        .collect();
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

fn blobs(target: &mut BenchTarget, dir: &Path) {
    let store = Store::open(dir.join("blobs.sqlite"), Config::default()).expect("open");
    let did = datagen::store::did(500);
    store.create_account(&did, &keypair(500)).expect("account");
    let sizes = [4usize << 10, 1 << 20];
    let inputs: Vec<Vec<Vec<u8>>> = sizes
        .iter()
        .map(|&n| {
            (0..8u64)
                .map(|k| datagen::random_bytes(0x424c_4f42 + k, n))
                .collect()
        })
        .collect();
    let mut g = target.group("store.blob_put");
    g.criterion().sample_size(10);
    for (n, bufs) in sizes.iter().zip(&inputs) {
        g.throughput(Throughput::Bytes(*n as u64));
        let k = Cell::new(0usize);
        g.bench("ours", &size_tier(*n), |b| {
            b.iter_batched(
                || {
                    k.set(k.get() + 1);
                    bufs[k.get() % bufs.len()].clone()
                },
                |buf| black_box(store.put_blob(&did, buf, "image/jpeg").expect("put")),
                BatchSize::SmallInput,
            )
        });
    }
    g.finish();
    let cids: Vec<Cid> = inputs
        .iter()
        .map(|bufs| {
            store
                .put_blob(&did, bufs[0].clone(), "image/jpeg")
                .expect("put")
        })
        .collect();
    for (cid, bufs) in cids.iter().zip(&inputs) {
        assert_eq!(
            store
                .get_blob(&did, cid)
                .expect("get")
                .expect("present")
                .bytes,
            bufs[0]
        );
    }
    let mut g = target.group("store.blob_get");
    for (n, cid) in sizes.iter().zip(&cids) {
        g.throughput(Throughput::Bytes(*n as u64));
        g.bench("ours", &size_tier(*n), |b| {
            b.iter(|| {
                let blob = store.get_blob(&did, cid).expect("get");
                debug_assert_eq!(blob.as_ref().map(|b| b.bytes.len()), Some(*n));
                black_box(blob)
            })
        });
    }
    g.finish();
}

/// A sink that counts bytes (the export's destination).
struct Counting(u64);

impl Write for Counting {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn export(target: &mut BenchTarget, fx: &Fixtures) {
    let mut g = target.group("store.export_repo");
    for (n, acc) in fx.sized.iter().filter(|(n, _)| *n <= 10_000) {
        let mut car = Vec::new();
        let info = fx
            .sizes
            .export_repo(&acc.did, None, &mut car)
            .expect("export");
        let mut r = repo::car::CarReader::new(&car[..])
            .expect("car")
            .verify(true);
        assert_eq!(
            r.roots(),
            &[fx.sizes
                .repo_root(&acc.did)
                .expect("root")
                .expect("root")
                .commit]
        );
        let mut blocks = 0;
        while r.next_block().expect("block").is_some() {
            blocks += 1;
        }
        assert_eq!(blocks, info.blocks);
        g.throughput(Throughput::Bytes(info.bytes));
        g.bench("ours", &count_tier(*n), |b| {
            b.iter(|| {
                let mut sink = Counting(0);
                let i = fx
                    .sizes
                    .export_repo(&acc.did, None, &mut sink)
                    .expect("export");
                debug_assert_eq!(sink.0, info.bytes);
                black_box(i)
            })
        });
    }
    g.finish();
}

fn catchup(target: &mut BenchTarget, fx: &Fixtures) {
    let store = &fx.nosync;
    let last = store.stats().expect("stats").last_seq;
    assert!(
        last > 1_000,
        "catch-up needs more than 1000 events, have {last}"
    );
    let batch = store.events_after(last - 1_000, 1_000).expect("events");
    assert_eq!(batch.len(), 1_000);
    for ev in batch.iter().take(50) {
        Frame::decode(&ev.frame).expect("frame decodes");
    }
    let mut g = target.group("store.sync_catchup");
    for consumers in [1usize, 10] {
        bench_callers(
            &mut g,
            "ours",
            &format!("consumers-{consumers}"),
            consumers,
            |c| {
                let mut s = Sampler(c as u64 + 5);
                let store = store.clone();
                let starts: Vec<i64> = (0..64)
                    .map(|_| s.next((last - 1_000) as usize) as i64)
                    .collect();
                move |i: u64| {
                    let events = store
                        .events_after(starts[i as usize % starts.len()], 1_000)
                        .expect("events");
                    debug_assert_eq!(events.len(), 1_000);
                    black_box(events);
                }
            },
        );
    }
    g.finish();
}

fn startup(target: &mut BenchTarget, dir: &Path) {
    let empty = dir.join("startup-empty.sqlite");
    drop(Store::open(&empty, Config::default()).expect("open"));
    let history = dir.join("startup-history.sqlite");
    let t = Instant::now();
    bench_internals::build_history_fixture(&history, 10_000, 60_000, 4096, 10_000, 4096, 2_000)
        .expect("history fixture");
    eprintln!("store: history fixture built in {:.1?}", t.elapsed());
    {
        let s = Store::open(&history, Config::default()).expect("open");
        let r = s.startup_report();
        assert_eq!((r.next_seq, r.backfilled), (10_001, 2_000), "{r:?}");
        eprintln!("store: startup history-10k report: {r:?}");
    }
    let mut g = target.group("store.startup");
    g.criterion().sample_size(10);
    let n = Cell::new(0u64);
    g.bench("ours", "fresh", |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                n.set(n.get() + 1);
                let path = dir.join(format!("startup-fresh-{}.sqlite", n.get()));
                let t = Instant::now();
                let s = Store::open(&path, Config::default()).expect("open");
                timed += t.elapsed();
                debug_assert_eq!(s.startup_report().next_seq, 1);
                drop(s);
                for suffix in ["", "-wal", "-shm"] {
                    let mut p = path.clone().into_os_string();
                    p.push(suffix);
                    let _ = std::fs::remove_file(p);
                }
            }
            timed
        })
    });
    g.bench("ours", "empty", |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                let t = Instant::now();
                let s = Store::open(&empty, Config::default()).expect("open");
                timed += t.elapsed();
                drop(s);
            }
            timed
        })
    });
    g.bench("ours", "history-10k", |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                let reset = bench_internals::reset_unversioned(&history).expect("reset");
                debug_assert_eq!(reset, 2_000);
                let t = Instant::now();
                let s = Store::open(&history, Config::default()).expect("open");
                timed += t.elapsed();
                debug_assert_eq!(s.startup_report().backfilled, 2_000);
                drop(s);
            }
            timed
        })
    });
    g.finish();
}

fn main() {
    let mut target = BenchTarget::new(
        "store",
        Budget {
            full_min: 5.0,
            quick_min: 2.0,
        },
    );
    let dir = bench_dir();
    benches::sidecar::context(
        "store",
        serde_json::json!({
            "store_dir": dir.path().display().to_string(),
            "pragmas": bench_internals::pragmas(false),
            "pragmas_fsync": bench_internals::pragmas(true),
            "pragmas_writer": bench_internals::WRITER_PRAGMAS,
            "seed": datagen::SEED,
        }),
    );
    let fx = build_fixtures(dir.path());
    apply_commit(&mut target, &fx);
    reads(&mut target, &fx);
    blobs(&mut target, dir.path());
    export(&mut target, &fx);
    catchup(&mut target, &fx);
    startup(&mut target, dir.path());
    target.finish();
}
