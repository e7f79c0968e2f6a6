//! `repo.mst_diff`: the records that differ between two trees, ours beside
//! every peer crate that has a diff (`peers::mst_differs`).
//!
//! Inputs (`benches::inputs::mst_diff_trees`): `repo.mst_add`'s base tree
//! at 1k, 10k and 100k keys, and the same tree with a fixed number of keys
//! created, updated and deleted (`MST_DIFF_CHANGES` each), spread over the
//! key range; both trees' blocks in one store. The unit: open both trees
//! at their roots over that store and list every changed key with its old
//! and new value. Every implementation's list is checked, outside the
//! timing, against the one built from the edit lists (not by a diff).
//!
//! `ours` opens the new tree with a fresh node cache every iteration
//! (`Mst::load`), so it decodes every node it visits from the store, as
//! the peers do. atrium-repo 0.2.0 has no tree diff (its `DiffBlockStore`
//! records written blocks) and has no row.

use std::hint::black_box;

use benches::inputs::MstDiffTrees;
use benches::registry::count_tier;
use benches::target::BenchTarget;
use criterion::Throughput;
use repo::mst::{DiffEntry, MemoryBlockStore, Mst};

use crate::peer_roles::DiffRows;

fn rows(d: &[DiffEntry]) -> DiffRows {
    d.iter().map(|e| (e.key.clone(), e.old, e.new)).collect()
}

/// Registers the group.
pub fn run(target: &mut BenchTarget) {
    // The 100k trees take a while to build: not when filtered out.
    if !target.may_run("repo.mst_diff") {
        return;
    }
    let pool = benches::inputs::mst_add_pool();
    let mut group = target.group("repo.mst_diff");
    group.throughput(Throughput::Elements(1));
    for n in [1_000usize, 10_000, 100_000] {
        let tier = count_tier(n);
        let trees: MstDiffTrees = benches::inputs::mst_diff_trees(n, &pool);
        let mut store = MemoryBlockStore::new();
        store.extend(trees.blocks.iter().map(|(c, b)| (*c, b.clone())));
        let (old, new) = (trees.old_root, trees.new_root);
        let diff = |store: &MemoryBlockStore| Mst::load(store, new).diff_from(old);
        assert_eq!(
            rows(&diff(&store).expect("ours diffs")),
            trees.want,
            "ours: the diff of the {tier} trees"
        );
        group.bench("ours", &tier, |b| {
            b.iter(|| diff(black_box(&store)).map_or(0, |d| d.len()))
        });
        for peer in crate::peers::mst_differs() {
            peer(&mut group, &tier, &trees);
        }
    }
    group.finish();
}
