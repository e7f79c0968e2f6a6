//! Mutation robustness: bit flips and truncations over the real frames and
//! the real repo.car never panic (errors are fine), and a flip inside any
//! hashed or signed region never still verifies.

mod common;

use std::collections::HashMap;

use repo::car::{CarReader, CarSlice};
use repo::crypto::PublicKey;
use repo::firehose::{Frame, verify_commit};
use repo::mst::{MemoryBlockStore, Mst};

fn frames() -> Vec<Vec<u8>> {
    let out = common::corpus_frames();
    assert_eq!(out.len(), 150);
    out
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Decodes and, when it decodes as a commit, verifies. Returns whether it
/// verified.
fn exercise(bytes: &[u8], keys: &HashMap<String, PublicKey>) -> bool {
    match Frame::decode(bytes) {
        Ok(Frame::Commit(c)) => verify_commit(&c, keys).is_ok(),
        Ok(_) => false,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            false
        }
    }
}

#[test]
fn frame_mutations_never_panic() {
    let keys = common::corpus_did_keys();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut mutations = 0;
    let mut still_verified = 0;
    for f in frames() {
        let is_commit = matches!(Frame::decode(&f), Ok(Frame::Commit(_)));
        for _ in 0..12 {
            let mut m = f.clone();
            let pos = rng.below(m.len());
            m[pos] ^= 1 << rng.below(8);
            if exercise(&m, &keys) {
                still_verified += 1;
            }
            mutations += 1;
        }
        for _ in 0..3 {
            let cut = rng.below(f.len());
            assert!(Frame::decode(&f[..cut]).is_err(), "truncated frame decoded");
            mutations += 1;
        }
        if is_commit {
            // Flip a byte inside the CAR slice: a block hash or the
            // signature must catch it (or the CAR framing itself).
            let Ok(Frame::Commit(c)) = Frame::decode(&f) else {
                unreachable!()
            };
            let start = c.blocks.as_ptr() as usize - f.as_ptr() as usize;
            let mut m = f.clone();
            let pos = start + rng.below(c.blocks.len());
            m[pos] ^= 0x40;
            assert!(
                !exercise(&m, &keys),
                "flip at {pos} inside blocks still verified"
            );
            mutations += 1;
        }
    }
    assert!(mutations > 2000, "{mutations}");
    // Flips outside hashed/signed data (e.g. in `time`) may still verify.
    assert!(
        still_verified < mutations / 2,
        "{still_verified} of {mutations}"
    );
}

#[test]
fn repo_car_mutations_never_panic() {
    let car = common::read("corpus/repo.car");
    let mut rng = Rng(42);
    for i in 0..600 {
        let mut m = car.clone();
        if i % 3 == 0 {
            m.truncate(rng.below(car.len()));
        } else {
            let pos = rng.below(m.len());
            m[pos] ^= 1 << rng.below(8);
        }
        let _ = CarSlice::parse(&m, true);
        let mut store = MemoryBlockStore::new();
        let mut root = None;
        if let Ok(r) = CarReader::new(&m[..]) {
            root = r.roots().first().copied();
            for b in r {
                match b {
                    Ok((cid, data)) => store.put(cid, data),
                    Err(_) => break,
                }
            }
        }
        // Walk whatever tree the (possibly damaged) blocks describe.
        if let Some(root) = root
            && let Some(bytes) = store.get(&root)
            && let Ok(commit) = repo::commit::CommitRef::decode(bytes)
        {
            let mut tree = Mst::load(&store, commit.data);
            let _ = tree.entries();
            let _ = tree.check_structure();
            let _ = tree.insert("app.bsky.feed.post/3zzzzzzzzzzzz", commit.data);
            let _ = tree.delete("app.bsky.feed.like/3lqdkdjpy6t2e");
            let _ = tree.commit();
        }
    }
}
