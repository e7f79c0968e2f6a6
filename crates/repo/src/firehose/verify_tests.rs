//! Tests of `#commit` verification: the reusable `CommitVerifier` against
//! the reference path it replaced (a child module of `verify`).

use super::*;
use crate::car::CarSlice;
use crate::firehose::{Frame, RepoOp};

/// The verification as it was before [`CommitVerifier`]: a fresh CAR
/// parse, a fresh node cache, every node through the cache, `delete`
/// with its lookup. The reference the reusable path is held to.
fn reference(ev: &CommitEvent<'_>) -> Result<[u8; 32], VerifyError> {
    validate_did(ev.repo)?;
    validate_tid(ev.rev)?;
    if let Some(since) = ev.since {
        validate_tid(since)?;
        if since >= ev.rev {
            return Err(VerifyError::RevOrder {
                rev: ev.rev.to_owned(),
                since: since.to_owned(),
            });
        }
    }
    let car = CarSlice::parse(ev.blocks, true)?;
    if !car.roots.contains(&ev.commit) {
        return Err(VerifyError::NotRoot(ev.commit));
    }
    let blocks = SliceBlocks::new(&car.blocks);
    let commit = event_commit(blocks.get(&ev.commit), ev.commit, ev.repo, ev.rev)?;
    let digest = commit.signing_digest();
    check_op_shapes(ev, &blocks)?;
    let mut tree = Mst::with_cache(&blocks, commit.data, NodeCache::with_capacity(256, 16));
    let Some(prev_data) = ev.prev_data else {
        for op in &ev.ops {
            if tree.get(op.path)? != op.cid {
                return Err(mismatch(op.path, "tree value differs from the op"));
            }
        }
        return Ok(digest);
    };
    for op in ev.ops.iter().rev() {
        match op.action {
            Action::Create => {
                if tree.delete(op.path)? != op.cid {
                    return Err(mismatch(op.path, "created record not in the new tree"));
                }
            }
            Action::Update => {
                let prev = op
                    .prev
                    .ok_or_else(|| op_err(op.path, "update without prev"))?;
                if tree.insert(op.path, prev)? != op.cid {
                    return Err(mismatch(op.path, "updated record not in the new tree"));
                }
            }
            Action::Delete => {
                let prev = op
                    .prev
                    .ok_or_else(|| op_err(op.path, "delete without prev"))?;
                if tree.insert(op.path, prev)?.is_some() {
                    return Err(mismatch(op.path, "deleted record still in the new tree"));
                }
            }
        }
    }
    let computed = tree.root()?;
    if computed != prev_data {
        return Err(VerifyError::PrevData {
            expected: prev_data,
            computed,
        });
    }
    Ok(digest)
}

fn frames() -> Vec<Vec<u8>> {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus/frames.bin.zst");
    let raw = zstd::decode_all(&std::fs::read(p).expect("corpus")[..]).expect("zstd");
    let mut out = Vec::new();
    let mut pos = 0;
    while pos + 4 <= raw.len() {
        let len = u32::from_le_bytes(raw[pos..pos + 4].try_into().expect("4")) as usize;
        out.push(raw[pos + 4..pos + 4 + len].to_vec());
        pos += 4 + len;
    }
    out
}

/// Semantic variants of a valid event whose CAR still hashes: each op
/// flipped to another action, ops dropped, paths and CIDs swapped,
/// `prevData` removed or replaced.
fn variants<'a>(ev: &CommitEvent<'a>) -> Vec<CommitEvent<'a>> {
    let mut out = Vec::new();
    let other = Cid::for_dag_cbor(b"not in the tree");
    for i in 0..ev.ops.len() {
        for action in [Action::Create, Action::Update, Action::Delete] {
            let mut e = ev.clone();
            let op = &mut e.ops[i];
            op.action = action;
            match action {
                Action::Create => op.prev = None,
                Action::Update => {
                    op.cid = op.cid.or(op.prev);
                    op.prev = op.prev.or(Some(other));
                }
                Action::Delete => {
                    op.prev = op.cid.or(op.prev);
                    op.cid = None;
                }
            }
            out.push(e);
        }
        let mut e = ev.clone();
        e.ops.remove(i);
        out.push(e);
        let mut e = ev.clone();
        e.ops[i].cid = e.ops[i].cid.map(|_| other);
        out.push(e);
        let mut e = ev.clone();
        e.ops[i].prev = Some(other);
        out.push(e);
        for path in [
            "app.bsky.feed.like/3zzzzzzzzzzzz",
            "app.bsky.feed.post/2222222222222",
            "a/b",
        ] {
            let mut e = ev.clone();
            e.ops[i].path = path;
            out.push(e);
        }
    }
    let mut e = ev.clone();
    e.prev_data = None;
    out.push(e);
    let mut e = ev.clone();
    e.prev_data = Some(other);
    out.push(e);
    let mut e = ev.clone();
    e.ops.push(RepoOp {
        action: Action::Create,
        path: "app.bsky.feed.like/3zzzzzzzzzzzz",
        cid: Some(other),
        prev: None,
    });
    out.push(e);
    out
}

/// One [`CommitVerifier`], reused over the corpus, its semantic
/// variants and byte-level mutations of every frame (good and bad
/// events interleaved), answers exactly as the pre-verifier path: the
/// same digest when it passes, the same error when it fails.
#[test]
fn reused_verifier_matches_reference() {
    let frames = frames();
    let mut v = CommitVerifier::new();
    let (mut ok, mut rejected, mut events) = (0, 0, 0);
    let mut check = |ev: &CommitEvent<'_>, v: &mut CommitVerifier| {
        let want = reference(ev);
        let got = v.verify_parts(ev, None);
        let fresh = verify_parts(ev, None);
        match (&want, &got) {
            (Ok(a), Ok(b)) => assert_eq!(a, b),
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
            _ => panic!("reference {want:?}, reused verifier {got:?}"),
        }
        assert_eq!(format!("{got:?}"), format!("{fresh:?}"));
        events += 1;
        if got.is_ok() {
            ok += 1;
        } else {
            rejected += 1;
        }
    };
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut commits = 0;
    for f in &frames {
        let Ok(Frame::Commit(ev)) = Frame::decode(f) else {
            continue;
        };
        commits += 1;
        check(&ev, &mut v);
        assert!(
            v.verify_parts(&ev, None).is_ok(),
            "corpus commit {}",
            ev.seq
        );
        for e in variants(&ev) {
            check(&e, &mut v);
            check(&ev, &mut v);
        }
        for _ in 0..24 {
            let mut m = f.clone();
            let pos = (next() % m.len() as u64) as usize;
            m[pos] ^= 1 << (next() % 8);
            if let Ok(Frame::Commit(e)) = Frame::decode(&m) {
                check(&e, &mut v);
            }
            let cut = (next() % m.len() as u64) as usize;
            if let Ok(Frame::Commit(e)) = Frame::decode(&f[..cut]) {
                check(&e, &mut v);
            }
        }
    }
    assert_eq!(commits, 148);
    assert!(
        ok >= 148 && rejected > 1000,
        "{ok} ok, {rejected} rejected of {events}"
    );
}
