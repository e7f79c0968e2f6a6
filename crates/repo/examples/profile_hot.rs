//! A fixed workload for instruction-count profiles (`valgrind
//! --tool=callgrind`): the non-ECDSA part of verifying every corpus
//! `#commit` frame, or one MST add on a warm tree of 1k / 100k keys.
//!
//! ```sh
//! cargo build --release -p repo --features bench-internals --example profile_hot
//! valgrind --tool=callgrind --toggle-collect='profile_hot::work*' \
//!     target/release/examples/profile_hot verify 10
//! valgrind --tool=callgrind --toggle-collect='profile_hot::work*' \
//!     target/release/examples/profile_hot add 100000 2000
//! ```
//!
//! `verify N`: N passes over the 148 frames, each decoded and checked by
//! `bench_internals::verify_commit_without_signature_with` on one reused
//! `CommitVerifier` (as a firehose consumer runs it); `verify-fresh N`:
//! the same through `verify_commit_without_signature` (a fresh verifier
//! per frame, as the free `verify_commit` does).
//! `verify-sig N`: the same passes through the whole check
//! (`CommitVerifier::verify`, signature included, keys parsed once from
//! the corpus's DID documents); `ecdsa N`: only the ECDSA verifications
//! of those frames (digest, signature and key prepared first), so the
//! three modes split one frame's time as `repo.frame_verify`'s probes do.
//! `decode N`: N strict borrowed decodes (`cbor::decode`, as
//! `repo.cbor_decode/ours.borrowed/like` times it) of the corpus's first
//! like record; `decode-owned N` the same into owned values.
//! `add SIZE N`: builds a tree of SIZE seeded keys, warms the node cache
//! with every pool key, then N counted adds as `repo.mst_add/ours` does
//! them (new blocks persisted into a scratch store). Only the `work_*`
//! functions are meant to be counted; `verify` also prints the wall time
//! per frame and the corpus's block sizes.
//!
//! Caveat: valgrind does not expose SHA-NI, so under callgrind sha2 runs
//! its portable code (tens of times the instructions of SHA-NI). Read the
//! `sha2::sha256::compress256` share as "blocks hashed", and the rest as
//! the instructions that also run natively. The crate's own two-stream
//! SHA-NI hashing (`sha256x2`, used for a CAR slice's block checks) sees
//! no SHA extensions under valgrind either and runs through `sha2`'s
//! `compress256` one block at a time, so its bookkeeping counts there are
//! not the native ones: time it natively (`verify` prints ns per frame).

use std::hint::black_box;

use repo::Cid;
use repo::bench_internals::mst_keys as keys;
use repo::firehose::Frame;
use repo::mst::{MemoryBlockStore, Mst, NodeCache};

/// The corpus readers the integration tests use.
#[path = "../tests/common/mod.rs"]
mod common;

use common::{corpus_did_keys as corpus_keys, corpus_frames};

#[inline(never)]
fn work_verify(frames: &[Vec<u8>], passes: usize, reuse: bool) -> usize {
    use repo::bench_internals::{
        verify_commit_without_signature, verify_commit_without_signature_with,
    };
    let mut verifier = repo::firehose::CommitVerifier::new();
    let mut ok = 0;
    for _ in 0..passes {
        for f in frames {
            if let Ok(Frame::Commit(c)) = Frame::decode(black_box(f)) {
                let r = if reuse {
                    verify_commit_without_signature_with(&mut verifier, &c)
                } else {
                    verify_commit_without_signature(&c)
                };
                ok += usize::from(r.is_ok());
            }
        }
    }
    ok
}

#[inline(never)]
fn work_verify_signed(
    frames: &[Vec<u8>],
    passes: usize,
    keys: &std::collections::HashMap<String, repo::crypto::PublicKey>,
) -> usize {
    let mut verifier = repo::firehose::CommitVerifier::new();
    let mut ok = 0;
    for _ in 0..passes {
        for f in frames {
            if let Ok(Frame::Commit(c)) = Frame::decode(black_box(f)) {
                ok += usize::from(verifier.verify(&c, keys).is_ok());
            }
        }
    }
    ok
}

#[inline(never)]
fn work_ecdsa(jobs: &[(repo::crypto::PublicKey, [u8; 32], Vec<u8>)], passes: usize) -> usize {
    let mut ok = 0;
    for _ in 0..passes {
        for (key, digest, sig) in jobs {
            ok += usize::from(key.verify_digest(black_box(digest), sig).is_ok());
        }
    }
    ok
}

/// Sizes: frame bytes, CAR block bytes (all / MST nodes / records /
/// commit), per frame on average.
/// The corpus's first like record (as `benches::corpus` picks it).
fn corpus_like(frames: &[Vec<u8>]) -> Vec<u8> {
    for f in frames {
        let Ok(Frame::Commit(c)) = Frame::decode(f) else {
            continue;
        };
        let car = repo::car::CarSlice::parse(c.blocks, true).expect("frame CAR");
        for op in &c.ops {
            if op.path.starts_with("app.bsky.feed.like/")
                && let Some(block) = op.cid.and_then(|cid| car.get(&cid))
            {
                return block.to_vec();
            }
        }
    }
    panic!("no like in the corpus")
}

#[inline(never)]
fn work_decode(record: &[u8], n: usize, owned: bool) -> usize {
    let mut ok = 0;
    for _ in 0..n {
        ok += usize::from(if owned {
            repo::cbor::decode_owned(black_box(record)).is_ok()
        } else {
            repo::cbor::decode(black_box(record)).is_ok()
        });
    }
    ok
}

fn stats(frames: &[Vec<u8>]) {
    use repo::car::CarSlice;
    use repo::mst::Node;
    let (mut fb, mut all, mut nodes, mut nn, mut blocks) = (0, 0, 0, 0, 0);
    for f in frames {
        let Ok(Frame::Commit(c)) = Frame::decode(f) else {
            continue;
        };
        fb += f.len();
        let car = CarSlice::parse(c.blocks, true).expect("car");
        for (_, b) in &car.blocks {
            all += b.len();
            blocks += 1;
            if Node::decode(b).is_ok() {
                nodes += b.len();
                nn += 1;
            }
        }
    }
    let n = frames.len() as f64;
    println!(
        "per frame: {:.0} frame bytes, {:.1} blocks with {:.0} bytes, of which {:.1} MST nodes with {:.0} bytes",
        fb as f64 / n,
        blocks as f64 / n,
        all as f64 / n,
        nn as f64 / n,
        nodes as f64 / n
    );
}

#[inline(always)]
fn run_adds(
    store: &MemoryBlockStore,
    root: Cid,
    pool: &[String],
    cache: &mut Option<NodeCache>,
    scratch: &mut MemoryBlockStore,
    range: std::ops::Range<usize>,
) -> Cid {
    let leaf = Cid::for_dag_cbor(b"atbench mst leaf");
    let mut last = root;
    for i in range {
        let key = &pool[i % pool.len()];
        let mut t = Mst::with_cache(store, root, cache.take().unwrap_or_default());
        t.insert(black_box(key), leaf).expect("insert");
        let c = t.commit().expect("commit");
        scratch.clear();
        scratch.extend(c.new_blocks);
        *cache = Some(t.into_cache());
        last = c.root;
    }
    last
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some(mode @ ("verify" | "verify-fresh")) => {
            let passes = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(10);
            let frames = corpus_frames();
            let t = std::time::Instant::now();
            let ok = work_verify(&frames, passes, mode == "verify");
            let per = t.elapsed().as_nanos() as f64 / (passes * frames.len()) as f64;
            println!("{ok} frame checks passed, {per:.0} ns per frame");
            stats(&frames);
        }
        Some(mode @ ("verify-sig" | "ecdsa")) => {
            let passes = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(10);
            let frames = corpus_frames();
            let keys = corpus_keys();
            let t;
            let ok = if mode == "ecdsa" {
                let mut jobs = Vec::new();
                for f in &frames {
                    let Ok(Frame::Commit(c)) = Frame::decode(f) else {
                        continue;
                    };
                    let digest = repo::bench_internals::verify_commit_without_signature(&c)
                        .expect("corpus frame checks pass");
                    let car = repo::car::CarSlice::parse(c.blocks, true).expect("car");
                    let block = car.get(&c.commit).expect("commit block");
                    let sig = repo::commit::CommitRef::decode(block).expect("commit").sig;
                    jobs.push((keys[c.repo].clone(), digest, sig.to_vec()));
                }
                t = std::time::Instant::now();
                work_ecdsa(&jobs, passes)
            } else {
                t = std::time::Instant::now();
                work_verify_signed(&frames, passes, &keys)
            };
            let per = t.elapsed().as_nanos() as f64 / (passes * frames.len()) as f64;
            println!("{ok} checks passed, {per:.0} ns per frame");
        }
        Some(mode @ ("decode" | "decode-owned")) => {
            let n = args
                .get(2)
                .and_then(|a| a.parse().ok())
                .unwrap_or(1_000_000);
            let like = corpus_like(&corpus_frames());
            let t = std::time::Instant::now();
            let ok = work_decode(&like, n, mode == "decode-owned");
            let per = t.elapsed().as_nanos() as f64 / n as f64;
            println!("{ok} decodes of {} B, {per:.1} ns each", like.len());
        }
        Some("add") => {
            let n: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(1000);
            let adds: usize = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(2000);
            let pool = keys(0xadd, 4096);
            let base: Vec<String> = keys(0xba5e + n as u64, n + n / 10)
                .into_iter()
                .filter(|k| pool.binary_search(k).is_err())
                .take(n)
                .collect();
            let leaf = Cid::for_dag_cbor(b"atbench mst leaf");
            let mut m = Mst::empty(MemoryBlockStore::new());
            for k in &base {
                m.insert(k, leaf).expect("insert");
            }
            let c = m.commit().expect("commit");
            let mut store = MemoryBlockStore::new();
            store.extend(c.new_blocks);
            let mut cache = Some(NodeCache::default());
            let mut scratch = MemoryBlockStore::new();
            // Warm the cache over the whole pool (as the bench's warm-up does).
            warm_up(&store, c.root, &pool, &mut cache, &mut scratch);
            let r = work_add(&store, c.root, &pool, &mut cache, &mut scratch, 0..adds);
            println!("{adds} adds on {n} keys, last root {r}");
        }
        _ => eprintln!(
            "usage: profile_hot verify|verify-fresh|verify-sig|ecdsa PASSES | decode|decode-owned N | add SIZE ADDS"
        ),
    }
}

/// Every pool key once, uncounted: fills the node cache.
#[inline(never)]
fn warm_up(
    store: &MemoryBlockStore,
    root: Cid,
    pool: &[String],
    cache: &mut Option<NodeCache>,
    scratch: &mut MemoryBlockStore,
) {
    run_adds(store, root, pool, cache, scratch, 0..pool.len());
}

/// The counted adds.
#[inline(never)]
fn work_add(
    store: &MemoryBlockStore,
    root: Cid,
    pool: &[String],
    cache: &mut Option<NodeCache>,
    scratch: &mut MemoryBlockStore,
    range: std::ops::Range<usize>,
) -> Cid {
    run_adds(store, root, pool, cache, scratch, range)
}
