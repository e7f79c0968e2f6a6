//! repo: the borrowed DAG-CBOR decode of 100 seeded post records; one MST
//! add into a 10k-key tree read through a `BlockSource` with a cold node
//! cache (every node on the key's path decoded from the store); the 148
//! real `#commit` frames of the vendored corpus decoded and checked by
//! everything but their signatures (one reused `CommitVerifier`).
//!
//! CID-keyed maps hash with `repo::cid::CidBuildHasher`, whose keys are
//! per-process random; the `instructions` feature turns on repo's
//! `fixed-hash-keys`, so those maps probe the same way in every run.
//! sha2 runs its portable code under valgrind (no SHA-NI there).

use std::hint::black_box;

use gungraun::{library_benchmark, library_benchmark_group};
use repo::Cid;
use repo::bench_internals::mst_keys;
use repo::cbor::{self, ValueRef};
use repo::firehose::{CommitVerifier, Frame};
use repo::mst::{MemoryBlockStore, Mst, NodeCache};

use benches::corpus;

fn posts(n: u64) -> Vec<Vec<u8>> {
    (0..n)
        .map(|k| {
            let record = datagen::store::post(0, k);
            let value = cbor::json::from_json_value(&record.value).expect("atproto JSON");
            cbor::to_vec(&value)
        })
        .collect()
}

/// The posts, leaked so the decoded values can borrow them past the call
/// (a few KiB, once per process).
fn leaked_posts(n: u64) -> &'static [Vec<u8>] {
    Vec::leak(posts(n))
}

/// Every decoded post encodes back to its bytes (outside the count).
fn check_posts(decoded: Vec<ValueRef<'static>>) {
    let input = posts(decoded.len() as u64);
    assert_eq!(decoded.len(), 100, "one value per record");
    for (value, bytes) in decoded.iter().zip(&input) {
        assert_eq!(&cbor::to_vec(&value.to_owned_value()), bytes, "round trip");
    }
}

#[library_benchmark]
#[bench::ours_borrowed__100(args = (100), setup = leaked_posts, teardown = check_posts)]
fn cbor_decode(input: &'static [Vec<u8>]) -> Vec<ValueRef<'static>> {
    black_box(input)
        .iter()
        .map(|b| cbor::decode(b).expect("strict DAG-CBOR"))
        .collect()
}

/// A seeded 10k-key tree (as `--bench repo`'s `repo.mst_add` builds it),
/// its blocks in a store, and a key not in it.
fn mst_tree(n: usize) -> (MemoryBlockStore, Cid, String) {
    let new_key = mst_keys(0xadd, 1).remove(0);
    let keys: Vec<String> = mst_keys(0xba5e + n as u64, n + 1)
        .into_iter()
        .filter(|k| *k != new_key)
        .take(n)
        .collect();
    let mut tree = Mst::empty(MemoryBlockStore::new());
    for k in &keys {
        tree.insert(k, leaf()).expect("insert");
    }
    let built = tree.commit().expect("commit");
    let mut store = MemoryBlockStore::new();
    store.extend(built.new_blocks);
    (store, built.root, new_key)
}

fn leaf() -> Cid {
    Cid::for_dag_cbor(b"\xa1atbench")
}

/// The new tree holds the key, and the rest of it is a valid MST.
fn check_add((store, new_blocks, root, key): (MemoryBlockStore, Vec<(Cid, Vec<u8>)>, Cid, String)) {
    let mut store = store;
    store.extend(new_blocks);
    let mut tree = Mst::load(&store, root);
    assert_eq!(tree.get(&key).expect("walk"), Some(leaf()), "key added");
    tree.check_structure().expect("a valid MST");
}

#[library_benchmark]
#[bench::ours_cold__10k(args = (10_000), setup = mst_tree, teardown = check_add)]
fn mst_add(
    (store, root, key): (MemoryBlockStore, Cid, String),
) -> (MemoryBlockStore, Vec<(Cid, Vec<u8>)>, Cid, String) {
    let mut tree = Mst::with_cache(&store, black_box(root), NodeCache::new(0));
    tree.insert(black_box(&key), leaf()).expect("insert");
    let commit = tree.commit().expect("commit");
    drop(tree);
    (store, commit.new_blocks, commit.root, key)
}

fn commit_frames() -> (Vec<Vec<u8>>, CommitVerifier) {
    (corpus::Corpus::load().commit_frames, CommitVerifier::new())
}

fn check_frames((passed, frames): (usize, Vec<Vec<u8>>)) {
    assert_eq!(passed, frames.len(), "every corpus frame passes its checks");
}

#[library_benchmark]
#[bench::ours_nosig__148(setup = commit_frames, teardown = check_frames)]
fn frame_verify((frames, mut verifier): (Vec<Vec<u8>>, CommitVerifier)) -> (usize, Vec<Vec<u8>>) {
    let passed = black_box(&frames)
        .iter()
        .filter(|f| match Frame::decode(f) {
            Ok(Frame::Commit(c)) => {
                repo::bench_internals::verify_commit_without_signature_with(&mut verifier, &c)
                    .is_ok()
            }
            _ => false,
        })
        .count();
    (passed, frames)
}

library_benchmark_group!(
    name = repo_group;
    benchmarks = cbor_decode, mst_add, frame_verify
);
