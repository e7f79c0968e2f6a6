//! `appview.apply_commit_to_index/ours/1`: one `#commit` frame of the
//! 300-run stream decoded (frame; CAR slice parsed without hashing; each
//! record block the ops name hashed against its CID, then decoded; the
//! commit and proof blocks neither hashed nor read) and applied to the
//! index (a run moved between its sets and rescored, a state added). The
//! frames cycle over the stream's last 512 commits applied to an index
//! that already holds them (so every iteration does the full
//! remove-and-reinsert of a run's keys); applied once more in order after
//! the timing, they leave the live index's state (checked).
//!
//! `appview.ordset_page/{ours,btreeset}/100k` and
//! `appview.ordset_rescore/{ours,btreeset}/100k`: the ordered set chosen
//! for the index against the standard library's `BTreeSet` at 10^5 keys
//! (why ours: `appview::OrdSet`'s docs).

use std::collections::BTreeSet;
use std::hint::black_box;

use appview::OrdSet;
use benches::inputs::Sampler;
use benches::target::BenchTarget;
use criterion::Throughput;

use crate::fixtures::Fixtures;

const KEYS: usize = 100_000;

fn apply_commit(target: &mut BenchTarget, fx: &Fixtures) {
    let store = fx.app.store();
    let mut frames = Vec::new();
    let mut cursor = 0;
    loop {
        let batch = store.events_after(cursor, 1000).expect("events");
        let Some(last) = batch.last() else { break };
        cursor = last.seq;
        frames.extend(batch.into_iter().map(|e| e.frame));
    }
    let frames: Vec<Vec<u8>> = frames.split_off(frames.len().saturating_sub(512));
    let mut index = fx.app.index().clone();
    let mut g = target.group("appview.apply_commit_to_index");
    g.throughput(Throughput::Elements(1));
    g.bench("ours", "1", |b| {
        let mut i = 0usize;
        b.iter(|| {
            i += 1;
            let n = index
                .apply_commit(&frames[i % frames.len()])
                .expect("apply");
            debug_assert!(n > 0);
            black_box(n)
        })
    });
    g.finish();
    // The timing left each run at whichever version its last frame
    // carried; the frames once more in order end at the latest.
    for f in &frames {
        index.apply_commit(f).expect("apply");
    }
    assert_eq!(
        index,
        *fx.app.index(),
        "re-applied commits changed the index"
    );
}

fn ordsets(target: &mut BenchTarget) {
    let mut s = Sampler(0x6f72_6473);
    let keys: Vec<(i64, u64)> = (0..KEYS)
        .map(|i| (s.next(1 << 40) as i64, i as u64))
        .collect();
    let mut ours = OrdSet::default();
    let mut std_set = BTreeSet::new();
    for k in &keys {
        ours.insert(*k);
        std_set.insert(*k);
    }
    let ranks: Vec<usize> = (0..1024).map(|_| s.next(KEYS - 50)).collect();
    for &r in ranks.iter().take(16) {
        let a: Vec<_> = ours.rev_from(KEYS - r).take(50).collect();
        let b: Vec<_> = std_set.iter().rev().skip(r).take(50).collect();
        assert_eq!(a, b, "pages differ at rank {r}");
    }
    let mut g = target.group("appview.ordset_page");
    g.throughput(Throughput::Elements(1));
    g.bench("ours", "100k", |b| {
        let mut i = 0usize;
        b.iter(|| {
            i += 1;
            let r = ranks[i % ranks.len()];
            black_box(ours.rev_from(KEYS - r).take(50).fold(0i64, |a, k| a ^ k.0))
        })
    });
    g.bench("btreeset", "100k", |b| {
        let mut i = 0usize;
        b.iter(|| {
            i += 1;
            let r = ranks[i % ranks.len()];
            black_box(
                std_set
                    .iter()
                    .rev()
                    .skip(r)
                    .take(50)
                    .fold(0i64, |a, k| a ^ k.0),
            )
        })
    });
    g.finish();

    let mut g = target.group("appview.ordset_rescore");
    g.throughput(Throughput::Elements(1));
    let moves: Vec<((i64, u64), (i64, u64))> = (0..1024)
        .map(|_| {
            let k = keys[s.next(KEYS)];
            (k, (k.0 + 1 + s.next(1000) as i64, k.1))
        })
        .collect();
    g.bench("ours", "100k", |b| {
        let mut i = 0usize;
        b.iter(|| {
            i += 1;
            let (old, new) = moves[i % moves.len()];
            // Move forth then back, so the set is the same every round.
            let a = ours.remove(&old) & ours.insert(new);
            let b = ours.remove(&new) & ours.insert(old);
            black_box(a & b)
        })
    });
    g.bench("btreeset", "100k", |b| {
        let mut i = 0usize;
        b.iter(|| {
            i += 1;
            let (old, new) = moves[i % moves.len()];
            let a = std_set.remove(&old) & std_set.insert(new);
            let b = std_set.remove(&new) & std_set.insert(old);
            black_box(a & b)
        })
    });
    g.finish();
    assert!(ours.iter().eq(std_set.iter()), "the sets diverged");
    assert_eq!(ours.len(), KEYS);
}

pub fn run(target: &mut BenchTarget, fx: &Fixtures) {
    apply_commit(target, fx);
    ordsets(target);
}
