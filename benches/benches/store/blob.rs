//! `store.blob_put` and `store.blob_get`: 4 KiB and 1 MiB blobs in their own
//! store (`blobs.sqlite`); stored bytes are read back and compared untimed.

use std::cell::Cell;
use std::hint::black_box;
use std::path::Path;

use benches::registry::size_tier;
use benches::target::BenchTarget;
use criterion::{BatchSize, Throughput};
use repo::Cid;
use store::{Config, Store};

use crate::fixtures::keypair;

/// Registers the blob groups.
pub fn run(target: &mut BenchTarget, dir: &Path) {
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
