//! `repo.mst_add` and `repo.mst_build`: ours beside atrium-repo 0.2.0.
//!
//! Keys are `app.bsky.feed.post/<TID>` with seeded random timestamps, every
//! value the same record CID. Base trees are built once by our MST; their
//! blocks seed both implementations' stores (atrium reads them through a
//! small overlay store), and both reach the same root CIDs, checked before
//! timing.
//!
//! `mst_add`: open the base tree at its root, add one key not in it, compute
//! the new root, persist the new node blocks into a scratch map (cleared
//! every iteration for both). `ours` keeps its decoded-node cache across
//! iterations, as a long-running PDS would; `ours.cold` and atrium decode
//! every node they touch from the store.
//!
//! Why the add grows from 1k to 100k, what was measured and what was
//! removed: `bench-history/notes/mst.md`.
//!
//! `mst_build`: from an empty tree, add every key in sorted order, root
//! computed. Sorted, because atrium-repo 0.2.0 loses keys when they arrive
//! out of order (found while writing this bench; ours is order-independent,
//! see crates/repo/tests/props.rs).

use std::collections::HashMap;
use std::hint::black_box;

use atrium_repo::blockstore::{
    AsyncBlockStoreRead, AsyncBlockStoreWrite, MemoryBlockStore as AtStore,
};
use benches::registry::count_tier;
use benches::target::BenchTarget;
use criterion::{SamplingMode, Throughput};
use futures::executor::block_on;
use repo::Cid;
use repo::bench_internals::mst_keys as keys;
use repo::mst::{MemoryBlockStore, Mst, NodeCache};
use sha2::Digest;

type AtCid = ipld_core::cid::Cid;

fn at_cid(c: &Cid) -> AtCid {
    AtCid::try_from(&c.to_bytes()[..]).expect("CIDv1 converts")
}

use benches::inputs::mst_leaf as leaf;

/// atrium's view of a base tree's blocks plus this iteration's writes.
struct Overlay<'a> {
    base: &'a HashMap<AtCid, Vec<u8>>,
    writes: HashMap<AtCid, Vec<u8>>,
}

impl AsyncBlockStoreRead for Overlay<'_> {
    async fn read_block_into(
        &mut self,
        cid: AtCid,
        contents: &mut Vec<u8>,
    ) -> Result<(), atrium_repo::blockstore::Error> {
        let block = self
            .writes
            .get(&cid)
            .or_else(|| self.base.get(&cid))
            .ok_or(atrium_repo::blockstore::Error::CidNotFound)?;
        contents.clear();
        contents.extend_from_slice(block);
        Ok(())
    }
}

impl AsyncBlockStoreWrite for Overlay<'_> {
    async fn write_block(
        &mut self,
        codec: u64,
        hash: u64,
        contents: &[u8],
    ) -> Result<AtCid, atrium_repo::blockstore::Error> {
        // As atrium's own MemoryBlockStore does it.
        let digest = sha2::Sha256::digest(contents);
        let mh = ipld_core::cid::multihash::Multihash::wrap(hash, digest.as_slice())
            .map_err(|_| atrium_repo::blockstore::Error::UnsupportedHash(hash))?;
        let cid = AtCid::new_v1(codec, mh);
        self.writes.insert(cid, contents.to_vec());
        Ok(cid)
    }
}

/// Registers both groups.
pub fn run(target: &mut BenchTarget) {
    add(target);
    build(target);
}

fn add(target: &mut BenchTarget) {
    let pool = benches::inputs::mst_add_pool();
    let mut group = target.group("repo.mst_add");
    group.throughput(Throughput::Elements(1));
    for n in [1_000usize, 10_000, 100_000] {
        let tier = count_tier(n);
        let base_keys = benches::inputs::mst_add_base_keys(n, &pool);
        assert_eq!(base_keys.len(), n);
        let mut m = Mst::empty(MemoryBlockStore::new());
        for k in &base_keys {
            m.insert(k, leaf()).expect("insert");
        }
        let c = m.commit().expect("commit");
        let root = c.root;
        let mut store = MemoryBlockStore::new();
        let mut at_base: HashMap<AtCid, Vec<u8>> = HashMap::new();
        for (cid, bytes) in c.new_blocks {
            at_base.insert(at_cid(&cid), bytes.clone());
            store.put(cid, bytes);
        }

        // Peers agree on the new roots before anything is timed.
        let mut agree = true;
        for k in pool.iter().take(32) {
            let mut ours = Mst::load(&store, root);
            ours.insert(k, leaf()).expect("insert");
            let want = ours.commit().expect("commit").root;
            let mut ov = Overlay {
                base: &at_base,
                writes: HashMap::new(),
            };
            let mut t = atrium_repo::mst::Tree::open(&mut ov, at_cid(&root));
            block_on(t.add(k, at_cid(&leaf()))).expect("atrium add");
            if t.root() != at_cid(&want) && agree {
                // Say whose tree is wrong: ours must be canonical and whole.
                let mut check = Mst::load(&store, root);
                check.insert(k, leaf()).expect("insert");
                check.commit().expect("commit");
                let ours_keys = check.check_structure().expect("ours is a valid MST");
                let theirs = block_on(futures::StreamExt::count(t.entries()));
                eprintln!(
                    "atbench: after adding {k} to the {tier} tree, ours has {ours_keys} keys \
                     (structure checked), atrium-repo's tree lists {theirs}"
                );
                agree = false;
            }
        }
        // Our roots after each of the first 32 pool keys: the Rust peers
        // in `peers::mst_adders` must reach the same ones.
        let roots: Vec<Cid> = pool
            .iter()
            .take(32)
            .map(|k| {
                let mut t = Mst::load(&store, root);
                t.insert(k, leaf()).expect("insert");
                t.commit().expect("commit").root
            })
            .collect();
        let base_blocks: HashMap<Cid, Vec<u8>> = at_base
            .iter()
            .map(|(c, b)| (Cid::from_bytes(&c.to_bytes()).expect("CID"), b.clone()))
            .collect();
        let atrium_name = if agree {
            "atrium-repo"
        } else {
            eprintln!("atbench: atrium-repo disagrees on mst_add roots at {tier}; adjacent probe");
            "atrium-repo.nonidentical"
        };

        let mut cache = Some(NodeCache::default());
        let mut scratch = MemoryBlockStore::new();
        let mut i = 0usize;
        group.bench("ours", &tier, |b| {
            b.iter(|| {
                let key = &pool[i % pool.len()];
                i += 1;
                let mut t = Mst::with_cache(&store, root, cache.take().unwrap_or_default());
                t.insert(black_box(key), leaf()).expect("insert");
                let c = t.commit().expect("commit");
                scratch.clear();
                scratch.extend(c.new_blocks);
                cache = Some(t.into_cache());
                c.root
            })
        });
        group.bench("ours.cold", &tier, |b| {
            b.iter(|| {
                let key = &pool[i % pool.len()];
                i += 1;
                let mut t = Mst::with_cache(&store, root, NodeCache::new(0));
                t.insert(black_box(key), leaf()).expect("insert");
                let c = t.commit().expect("commit");
                scratch.clear();
                scratch.extend(c.new_blocks);
                c.root
            })
        });
        let mut ov = Overlay {
            base: &at_base,
            writes: HashMap::new(),
        };
        let at_root = at_cid(&root);
        let at_leaf = at_cid(&leaf());
        group.bench(atrium_name, &tier, |b| {
            b.iter(|| {
                let key = &pool[i % pool.len()];
                i += 1;
                ov.writes.clear();
                let mut t = atrium_repo::mst::Tree::open(&mut ov, at_root);
                block_on(t.add(black_box(key), at_leaf)).expect("atrium add");
                t.root()
            })
        });
        for peer in crate::peers::mst_adders() {
            peer(&mut group, &tier, &base_blocks, root, &pool, &roots);
        }
    }
    group.finish();
}

fn build(target: &mut BenchTarget) {
    let mut group = target.group("repo.mst_build");
    group
        .criterion()
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10);
    for n in [1_000usize, 10_000] {
        let tier = count_tier(n);
        let ks = keys(0xb111d + n as u64, n);
        assert_eq!(ks.len(), n);
        let build_ours = || {
            let mut m = Mst::empty(MemoryBlockStore::new());
            for k in &ks {
                m.insert(k, leaf()).expect("insert");
            }
            m.commit().expect("commit")
        };
        let build_atrium = || {
            let mut t = block_on(atrium_repo::mst::Tree::create(AtStore::new())).expect("create");
            for k in &ks {
                block_on(t.add(k, at_cid(&leaf()))).expect("atrium add");
            }
            t.root()
        };
        let ours_root = build_ours().root;
        let name = if build_atrium() == at_cid(&ours_root) {
            "atrium-repo"
        } else {
            eprintln!("atbench: atrium-repo builds a different root at {tier}; adjacent probe");
            "atrium-repo.nonidentical"
        };
        group.throughput(Throughput::Elements(n as u64));
        group.bench("ours", &tier, |b| b.iter(|| build_ours().root));
        group.bench(name, &tier, |b| b.iter(build_atrium));
    }
    group.finish();
}
