//! The fixtures every group reads: the seeded stores (`sizes.sqlite`, the
//! two write stores with their catch-up history), their accounts and keys,
//! and the helpers that build them (record CBOR, signing keys, sampling).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use repo::Cid;
use repo::crypto::{Algorithm, Keypair, PublicKey};
use store::{Config, RecordWrite, Store};

pub const POST: &str = "app.bsky.feed.post";
pub const LIKE: &str = "app.bsky.feed.like";

pub fn cbor(v: &serde_json::Value) -> Vec<u8> {
    let value =
        repo::cbor::json::from_json_value(v).expect("datagen records are valid atproto JSON");
    repo::cbor::to_vec(&value)
}

pub fn keypair(i: u64) -> Keypair {
    Keypair::from_bytes(Algorithm::K256, &datagen::store::signing_secret(i)).expect("valid secret")
}

pub use benches::inputs::Sampler;

/// One seeded account holding `n` records.
pub struct SizedAccount {
    pub did: String,
    /// (collection, rkey, cid) of every record.
    pub records: Vec<(&'static str, String, Cid)>,
}

impl SizedAccount {
    pub fn sample(&self, n: usize, seed: u64) -> Vec<(&'static str, String, Cid)> {
        benches::inputs::store_sample(&self.records, n, seed)
    }
}

pub struct Fixtures {
    pub sizes: Arc<Store>,
    pub sized: Vec<(usize, SizedAccount)>,
    pub nosync: Arc<Store>,
    pub fsync: Arc<Store>,
    pub write_dids: Vec<String>,
    pub keys: HashMap<String, PublicKey>,
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

/// Builds the seeded stores under `dir` (checked: each sized account holds
/// its `n` records).
pub fn build(dir: &Path) -> Fixtures {
    let t = Instant::now();
    let sizes = Arc::new(Store::open(dir.join("sizes.sqlite"), Config::default()).expect("open"));
    let sized: Vec<(usize, SizedAccount)> = [1_000usize, 10_000, 100_000]
        .into_iter()
        .enumerate()
        .map(|(i, n)| {
            let index = benches::inputs::STORE_10K_ACCOUNT - 1 + i as u64;
            (n, seed_account(&sizes, index, n))
        })
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
