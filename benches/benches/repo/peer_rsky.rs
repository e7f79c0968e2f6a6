//! rsky-repo (Blacksky's Rust PDS): its lazily loaded MST, commits signed
//! with libsecp256k1 (the `secp256k1` crate 0.28, bundled C) and CAR
//! import. Behind the `peers-rust` feature.
//!
//! Its async API takes a tokio `RwLock` around the store, so its rows run
//! on a current-thread tokio runtime built in setup. It has no codec of
//! its own (serde_ipld_dagcbor 0.6: that row stands for it) and no
//! firehose frame type in rsky-repo. Where it does less or more than our
//! unit the row is an adjacent variant:
//! - `repo.car_read/rsky-repo.nohash`: iroh-car underneath, no block hash
//!   check;
//! - `repo.commit_verify/rsky-repo.k256.didkey`: its only verify entry
//!   point takes the `did:key` string, decoded (and the point
//!   decompressed) on every call;
//! - `repo.mst_add/rsky-repo`: the new blocks come back in a `BlockMap`
//!   whose fields are private, so they are built (the same serialisation
//!   and hashing) and dropped rather than moved into a scratch map.

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;

use benches::target::Group;
use repo::crypto::Algorithm;
use rsky_repo::block_map::BlockMap;
use rsky_repo::mst::MST;
use rsky_repo::storage::memory_blockstore::MemoryBlockstore;
use rsky_repo::storage::types::RepoStorage;
use rsky_repo::types::{Commit, UnsignedCommit};
use tokio::runtime::Runtime;
use tokio::sync::RwLock;

type RCid = ipld_core::cid::Cid;

/// The implementation name in ids.
pub const NAME: &str = "rsky-repo";

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread tokio runtime")
}

fn rcid(c: &repo::Cid) -> RCid {
    RCid::try_from(&c.to_bytes()[..]).expect("CIDv1 converts")
}

fn store(rt: &Runtime, blocks: BlockMap) -> Arc<RwLock<dyn RepoStorage>> {
    let store = rt
        .block_on(MemoryBlockstore::new(Some(blocks)))
        .expect("memory blockstore");
    Arc::new(RwLock::new(store))
}

/// `repo.mst_add/rsky-repo/<tier>`: load lazily, add, collect the unstored
/// blocks (`get_unstored_blocks`) and read the new root. The first pool
/// keys are checked to reach `roots` (ours) before timing.
pub fn mst_add(
    group: &mut Group<'_>,
    tier: &str,
    base: &HashMap<repo::Cid, Vec<u8>>,
    root: repo::Cid,
    pool: &[String],
    roots: &[repo::Cid],
) {
    let rt = runtime();
    let mut blocks = BlockMap::new();
    for (cid, bytes) in base {
        blocks.set(rcid(cid), bytes.clone());
    }
    let storage = store(&rt, blocks);
    let root = rcid(&root);
    let leaf = rcid(&benches::inputs::mst_leaf());
    let add = |key: &str| -> anyhow::Result<RCid> {
        rt.block_on(async {
            let mut tree = MST::load(storage.clone(), root, None)?;
            let tree = tree.add(key, leaf, None).await?;
            tree.get_unstored_blocks().await?;
            tree.get_pointer().await
        })
    };
    for (key, want) in pool.iter().zip(roots) {
        let got = add(key).expect("rsky-repo adds");
        assert_eq!(got, rcid(want), "rsky-repo root after adding {key}");
    }
    let mut i = 0usize;
    group.bench(NAME, tier, |b| {
        b.iter(|| {
            let key = &pool[i % pool.len()];
            i += 1;
            add(black_box(key)).ok()
        })
    });
}

/// `repo.mst_diff/rsky-repo/<tier>`: load both trees lazily over one
/// store and `DataDiff::of` them (which also serialises the new tree's
/// node blocks into the diff); checked equal to `trees.want`.
pub fn mst_diff(group: &mut Group<'_>, tier: &str, trees: &benches::inputs::MstDiffTrees) {
    let rt = runtime();
    let mut blocks = BlockMap::new();
    for (cid, bytes) in &trees.blocks {
        blocks.set(rcid(cid), bytes.clone());
    }
    let storage = store(&rt, blocks);
    let (old, new) = (rcid(&trees.old_root), rcid(&trees.new_root));
    let diff = || -> anyhow::Result<rsky_repo::data_diff::DataDiff> {
        rt.block_on(async {
            let mut curr = MST::load(storage.clone(), new, None)?;
            let mut prev = MST::load(storage.clone(), old, None)?;
            rsky_repo::data_diff::DataDiff::of(&mut curr, Some(&mut prev)).await
        })
    };
    let c = |c: &RCid| crate::peer_roles::cid(&c.to_bytes());
    crate::peer_roles::mst_diff_row(
        group,
        NAME,
        tier,
        trees,
        diff,
        |d| crate::peer_roles::data_diff_rows!(d, c),
        |d| d.adds.len(),
    );
}

fn unsigned() -> UnsignedCommit {
    let ours = benches::inputs::unsigned_commit();
    UnsignedCommit {
        did: ours.did.clone(),
        rev: ours.rev.to_string(),
        data: rcid(&ours.data),
        prev: None,
        version: 3,
    }
}

/// `repo.commit_sign/rsky-repo.k256`: sign (libsecp256k1, low-S) and
/// encode; checked byte-equal to ours. rsky signs secp256k1 only.
pub fn commit_sign(group: &mut Group<'_>, alg: Algorithm, alg_name: &str, want: &[u8]) {
    if alg != Algorithm::K256 {
        return;
    }
    let secret = benches::inputs::commit_secret();
    let key = secp256k1_028::Keypair::from_seckey_slice(secp256k1_028::SECP256K1, &secret)
        .expect("k256 secret");
    let sign = |u: UnsignedCommit| -> Vec<u8> {
        rsky_repo::util::sign_commit(u, &key)
            .and_then(|c| Ok(serde_ipld_dagcbor_06::to_vec(&c)?))
            .unwrap_or_default()
    };
    assert_eq!(
        sign(unsigned()),
        want,
        "rsky-repo signs {alg_name} differently"
    );
    group.bench(&format!("{NAME}.{alg_name}"), "", |b| {
        b.iter(|| sign(black_box(unsigned())).len())
    });
}

/// `repo.commit_verify/rsky-repo.k256.didkey`: decode our block and verify
/// it against the key's `did:key` string (see the module docs).
pub fn commit_verify(
    group: &mut Group<'_>,
    alg: Algorithm,
    alg_name: &str,
    block: &[u8],
    compressed_public: &[u8],
) {
    if alg != Algorithm::K256 {
        return;
    }
    let did_key = repo::crypto::PublicKey::from_sec1(alg, compressed_public)
        .expect("our key")
        .to_did_key();
    let verify = |block: &[u8]| -> bool {
        serde_ipld_dagcbor_06::from_slice::<Commit>(block)
            .is_ok_and(|c| rsky_repo::util::verify_commit_sig(c, &did_key).unwrap_or(false))
    };
    crate::peer_roles::verify_row(
        group,
        "rsky-repo",
        &format!("{NAME}.{alg_name}.didkey"),
        alg_name,
        block,
        verify,
    );
}

/// `repo.car_read/rsky-repo.nohash/<tier>`: read the CAR into a block map
/// (no hash check), decode the commit, load the MST and list every leaf;
/// checked to list `n` records.
pub fn car_read(group: &mut Group<'_>, tier: &str, car: &[u8], n: usize) {
    let rt = runtime();
    let import = |car: &[u8]| -> anyhow::Result<usize> {
        rt.block_on(async {
            let read = rsky_repo::car::read_stream_car_with_root(car).await?;
            let commit_bytes = read
                .blocks
                .get(read.root)
                .ok_or_else(|| anyhow::anyhow!("no commit block"))?;
            let commit: Commit = serde_ipld_dagcbor_06::from_slice(commit_bytes)?;
            let storage = Arc::new(RwLock::new(MemoryBlockstore::new(Some(read.blocks)).await?));
            let tree = MST::load(storage, commit.data, None)?;
            Ok(tree.leaves().await?.len())
        })
    };
    crate::peer_roles::car_read_row(group, &format!("{NAME}.nohash"), tier, car, n, import);
}
