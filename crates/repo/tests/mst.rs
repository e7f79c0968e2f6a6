//! MST vectors: key heights, common prefixes, example keys, the known-map
//! roots, and the Sync 1.1 commit-proof fixtures (exact proof block sets).

mod common;

use std::collections::BTreeSet;

use repo::Cid;
use repo::mst::{MemoryBlockStore, Mst, WriteOp, common_prefix_len, key_height};

fn cid(s: &serde_json::Value) -> Cid {
    s.as_str().unwrap().parse().unwrap()
}

fn strs(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn key_heights() {
    let cases = common::read_json("interop/mst/key_heights.json");
    let cases = cases.as_array().unwrap();
    assert_eq!(cases.len(), 9);
    for c in cases {
        let key = c["key"].as_str().unwrap();
        assert_eq!(
            u64::from(key_height(key.as_bytes())),
            c["height"].as_u64().unwrap(),
            "{key}"
        );
    }
}

#[test]
fn common_prefix() {
    let cases = common::read_json("interop/mst/common_prefix.json");
    let cases = cases.as_array().unwrap();
    assert_eq!(cases.len(), 13);
    for c in cases {
        let (l, r) = (c["left"].as_str().unwrap(), c["right"].as_str().unwrap());
        assert_eq!(
            common_prefix_len(l.as_bytes(), r.as_bytes()) as u64,
            c["len"].as_u64().unwrap(),
            "{l:?} {r:?}"
        );
    }
}

#[test]
fn example_keys() {
    let text = common::read_string("interop/mst/example_keys.txt");
    let keys: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(keys.len(), 156);
    for k in keys {
        repo::mst::validate_key(k).unwrap();
        let want: u8 = k[1..2].parse().unwrap();
        assert_eq!(key_height(k.as_bytes()), want, "{k}");
    }
}

fn build(keys: &[String], leaf: Cid) -> (Mst<MemoryBlockStore>, Cid) {
    let mut mst = Mst::empty(MemoryBlockStore::new());
    for k in keys {
        mst.insert(k, leaf).unwrap();
    }
    let c = mst.commit().unwrap();
    mst.source_mut().extend(c.new_blocks);
    (mst, c.root)
}

#[test]
fn known_maps() {
    let cases = common::read_json("interop/from-atproto-repo/repo/mst-known-maps.json");
    let cases = cases.as_array().unwrap();
    assert_eq!(cases.len(), 11);
    for c in cases {
        let name = c["comment"].as_str().unwrap();
        let keys = strs(&c["keys"]);
        let leaf = cid(&c["leafValue"]);
        let want = cid(&c["root"]);
        for order in 0..3 {
            let mut ks = keys.clone();
            match order {
                1 => ks.reverse(),
                2 => {
                    let n = ks.len().max(1);
                    ks.rotate_left(n / 2);
                }
                _ => {}
            }
            let (mut mst, root) = build(&ks, leaf);
            assert_eq!(root, want, "{name} (order {order})");
            assert_eq!(
                mst.node_cids().unwrap().len() as u64,
                c["nodeCount"].as_u64().unwrap(),
                "{name} node count"
            );
            assert_eq!(
                u64::from(mst.layer().unwrap()),
                c["rootLayer"].as_u64().unwrap(),
                "{name}"
            );
            assert_eq!(mst.check_structure().unwrap(), keys.len(), "{name}");
            // Reload lazily from the blocks alone.
            let mut again = Mst::load(mst.source().clone(), root);
            let mut got: Vec<String> = again.entries().unwrap().into_iter().map(|e| e.0).collect();
            let mut sorted = keys.clone();
            sorted.sort();
            got.sort();
            assert_eq!(got, sorted);
        }
    }
}

#[test]
fn trim_top_on_delete() {
    let cases = common::read_json("interop/from-atproto-repo/repo/mst-known-maps.json");
    let cases = cases.as_array().unwrap();
    let before = &cases[4];
    let after = &cases[5];
    let leaf = cid(&before["leafValue"]);
    let (mut mst, _) = build(&strs(&before["keys"]), leaf);
    mst.delete("com.example.record/3jqfcqzm3fs2j")
        .unwrap()
        .unwrap();
    let c = mst.commit().unwrap();
    assert_eq!(c.root, cid(&after["root"]));
    assert_eq!(mst.layer().unwrap(), 0);
}

#[test]
fn commit_proofs() {
    let cases = common::read_json("interop/firehose/commit-proof-fixtures.json");
    let cases = cases.as_array().unwrap();
    assert_eq!(cases.len(), 6);
    for c in cases {
        let name = c["comment"].as_str().unwrap();
        let leaf = cid(&c["leafValue"]);
        let (mst, before) = build(&strs(&c["keys"]), leaf);
        assert_eq!(before, cid(&c["rootBeforeCommit"]), "{name}: before");
        let store = mst.source().clone();

        // Apply dels then adds to a lazily loaded copy.
        let mut ops: Vec<WriteOp> = strs(&c["dels"])
            .into_iter()
            .map(|key| WriteOp::Delete { key })
            .collect();
        ops.extend(
            strs(&c["adds"])
                .into_iter()
                .map(|key| WriteOp::Put { key, cid: leaf }),
        );
        let mut tree = Mst::load(store.clone(), before);
        let res = tree.apply(&ops).unwrap();
        assert_eq!(res.commit.root, cid(&c["rootAfterCommit"]), "{name}: after");
        let got: BTreeSet<Cid> = res.proof.iter().copied().collect();
        let want: BTreeSet<Cid> = c["blocksInProof"]
            .as_array()
            .unwrap()
            .iter()
            .map(cid)
            .collect();
        assert_eq!(got, want, "{name}: proof blocks");

        // The proof alone is enough to invert the ops back to the old root.
        let mut proof_only = MemoryBlockStore::new();
        for b in &res.commit.new_blocks {
            if got.contains(&b.0) {
                proof_only.put(b.0, b.1.clone());
            }
        }
        for p in &got {
            if !proof_only.contains(p) {
                proof_only.put(*p, store.get(p).unwrap().to_vec());
            }
        }
        let mut inv = Mst::with_cache(proof_only, res.commit.root, repo::mst::NodeCache::new(0));
        for key in strs(&c["adds"]) {
            inv.delete(&key).unwrap().unwrap();
        }
        for key in strs(&c["dels"]) {
            assert!(inv.insert(&key, leaf).unwrap().is_none());
        }
        assert_eq!(inv.root().unwrap(), before, "{name}: inversion");

        // And the diff between the two roots is exactly the ops.
        let mut all = store.clone();
        all.extend(res.commit.new_blocks.clone());
        let mut after_tree = Mst::load(all, res.commit.root);
        let diff = after_tree.diff_from(before).unwrap();
        let mut want_keys: Vec<String> = strs(&c["adds"]);
        want_keys.extend(strs(&c["dels"]));
        want_keys.sort();
        want_keys.dedup();
        let got_keys: Vec<String> = diff.iter().map(|d| d.key.clone()).collect();
        assert_eq!(got_keys, want_keys, "{name}: diff");
    }
}

/// A commit's `new_blocks` and `removed` are exactly the node-set
/// differences between the trees, for one write and for a batch (the two
/// bookkeeping paths of `Mst::commit`).
#[test]
fn commit_reports_exact_block_differences() {
    let leaf = Cid::for_dag_cbor(b"leaf");
    let keys: Vec<String> = (0..300).map(|i| format!("com.example.k/{i:05}")).collect();
    let mut m = Mst::empty(MemoryBlockStore::new());
    for k in &keys {
        m.insert(k, leaf).unwrap();
    }
    let c = m.commit().unwrap();
    let mut store = MemoryBlockStore::new();
    store.extend(c.new_blocks);
    let mut root = c.root;
    for batch in [1usize, 2, 40] {
        let before: BTreeSet<Cid> = Mst::load(&store, root)
            .node_cids()
            .unwrap()
            .into_iter()
            .collect();
        let mut t = Mst::load(&store, root);
        for i in 0..batch {
            t.insert(&format!("com.example.n/{batch}-{i}"), leaf)
                .unwrap();
            t.delete(&keys[(batch * 7 + i * 13) % keys.len()]).unwrap();
        }
        let c = t.commit().unwrap();
        let made: BTreeSet<Cid> = c.new_blocks.iter().map(|b| b.0).collect();
        let mut next = store.clone();
        next.extend(c.new_blocks.clone());
        let after: BTreeSet<Cid> = Mst::load(&next, c.root)
            .node_cids()
            .unwrap()
            .into_iter()
            .collect();
        assert_eq!(made, &after - &before, "batch {batch}: new blocks");
        let removed: Vec<Cid> = (&before - &after).into_iter().collect();
        let mut got = c.removed.clone();
        got.sort();
        assert_eq!(got, removed, "batch {batch}: removed");
        assert!(
            c.removed.windows(2).all(|w| w[0] < w[1]),
            "sorted, no duplicates"
        );
        store = next;
        root = c.root;
    }
}
