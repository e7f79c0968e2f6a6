//! The inputs of `peers/atproto-repo/probe.js`, built with the same
//! builders and seeds as `--bench repo`'s rows, each with what ours
//! computed from it (bytes, CIDs, roots, counts) for the probe to check the
//! peer against:
//!
//! | manifest key | files | the probe checks |
//! |---|---|---|
//! | `cbor` | the corpus like, post and profile (DAG-CBOR) | decode then encode gives the same bytes |
//! | `cid` | the like, 4 KiB and 1 MiB seeded bytes, with our CIDs | the same CID |
//! | `mst_add` | each base tree as a CAR (root = the MST root) | 32 adds reach our roots |
//! | `mst_diff` | both trees' blocks as one CAR (root = the new tree), the old root | the diff equals the edit lists |
//! | `commit` | our k256-signed commit, the secret, the `did:key` | signing gives our bytes; it verifies |
//! | `car_read` | our CAR export of the like repo | the same record count, every block hash-checked |
//!
//! Smoke mode keeps the smallest tier of each group.

use std::path::PathBuf;

use repo::Cid;
use repo::car::CarWriter;
use repo::crypto::{Algorithm, Keypair};
use repo::mst::{MemoryBlockStore, Mst};
use serde_json::json;

use super::{Inputs, Mode};
use crate::corpus::Corpus;
use crate::inputs::{
    commit_secret, export_car, like_repo, mst_add_base_keys, mst_add_pool, mst_diff_trees,
    mst_leaf, unsigned_commit,
};
use crate::registry::{count_tier, size_tier};

/// How many pool keys' roots the probe checks per tier.
const CHECKED_ADDS: usize = 32;

fn car_of(root: Cid, blocks: &[(Cid, Vec<u8>)]) -> Vec<u8> {
    let mut w = CarWriter::new(Vec::new(), &[root]).expect("CAR header into a Vec");
    for (cid, bytes) in blocks {
        w.write_block(cid, bytes).expect("CAR block into a Vec");
    }
    w.finish().expect("CAR into a Vec")
}

/// Writes the inputs into `dir`; returns it.
pub fn build(dir: PathBuf, mode: Mode, corpus: &Corpus) -> std::io::Result<PathBuf> {
    let smoke = mode == Mode::Smoke;
    let mut inputs = Inputs::new(dir)?;
    inputs.set("mode", json!(mode.name()));

    let mut cbor = Vec::new();
    for (tier, bytes) in &corpus.records {
        let value = repo::cbor::decode_owned(bytes).expect("corpus record decodes");
        assert_eq!(
            &repo::cbor::to_vec(&value),
            bytes,
            "{tier}: ours round-trips"
        );
        let file = inputs.file(&format!("cbor-{tier}.bin"), bytes)?;
        cbor.push(json!({"tier": tier, "file": file}));
    }
    inputs.set("cbor", json!(cbor));

    let like = &corpus.records[0].1;
    let mut cid = Vec::new();
    for bytes in [
        like.clone(),
        datagen::random_bytes(0xc1d, 4 * 1024),
        datagen::random_bytes(0xc1d, 1 << 20),
    ] {
        let tier = size_tier(bytes.len());
        let file = inputs.file(&format!("cid-{tier}.bin"), &bytes)?;
        cid.push(json!({"tier": tier, "file": file, "cid": Cid::for_dag_cbor(&bytes).to_string()}));
    }
    inputs.set("cid", json!(cid));

    let pool = mst_add_pool();
    let leaf = mst_leaf();
    let mut mst_add = Vec::new();
    let sizes: &[usize] = if smoke {
        &[1_000]
    } else {
        &[1_000, 10_000, 100_000]
    };
    for &n in sizes {
        let mut m = Mst::empty(MemoryBlockStore::new());
        for k in mst_add_base_keys(n, &pool) {
            m.insert(&k, leaf).expect("insert");
        }
        let base = m.commit().expect("commit");
        let mut store = MemoryBlockStore::new();
        store.extend(base.new_blocks.iter().cloned());
        let expected: Vec<_> = pool
            .iter()
            .take(CHECKED_ADDS)
            .map(|k| {
                let mut t = Mst::load(&store, base.root);
                t.insert(k, leaf).expect("insert");
                json!({"key": k, "root": t.commit().expect("commit").root.to_string()})
            })
            .collect();
        let tier = count_tier(n);
        let file = inputs.file(
            &format!("mst-{tier}.car"),
            &car_of(base.root, &base.new_blocks),
        )?;
        mst_add.push(json!({
            "tier": tier, "file": file, "root": base.root.to_string(), "expected": expected,
        }));
    }
    inputs.set("mst_add", json!(mst_add));
    inputs.set("mst_pool", json!(pool));
    inputs.set("mst_leaf", json!(leaf.to_string()));

    let mut mst_diff = Vec::new();
    for &n in sizes {
        let trees = mst_diff_trees(n, &pool);
        let blocks: Vec<(Cid, Vec<u8>)> = trees.blocks.into_iter().collect();
        let tier = count_tier(n);
        let file = inputs.file(
            &format!("mst-diff-{tier}.car"),
            &car_of(trees.new_root, &blocks),
        )?;
        let cid = |c: Option<Cid>| c.map(|c| c.to_string());
        let want: Vec<_> = trees
            .want
            .iter()
            .map(|(k, old, new)| json!([k, cid(*old), cid(*new)]))
            .collect();
        mst_diff.push(json!({
            "tier": tier, "file": file, "old_root": trees.old_root.to_string(),
            "new_root": trees.new_root.to_string(), "want": want,
        }));
    }
    inputs.set("mst_diff", json!(mst_diff));

    let key = Keypair::from_bytes(Algorithm::K256, &commit_secret()).expect("valid secret");
    let signed = unsigned_commit().sign(&key).to_bytes();
    let file = inputs.file("commit-k256.bin", &signed)?;
    let secret: String = commit_secret().iter().map(|b| format!("{b:02x}")).collect();
    inputs.set(
        "commit",
        json!({"file": file, "secret_hex": secret, "did_key": key.public_key().to_did_key()}),
    );

    let mut car_read = Vec::new();
    let sizes: &[usize] = if smoke { &[1_000] } else { &[1_000, 10_000] };
    for &n in sizes {
        let (store, commit) = like_repo(n, like);
        let mut car = Vec::new();
        assert_eq!(export_car(&store, commit, &mut car), n);
        let tier = count_tier(n);
        let file = inputs.file(&format!("car-{tier}.car"), &car)?;
        car_read
            .push(json!({"tier": tier, "file": file, "records": n, "root": commit.to_string()}));
    }
    inputs.set("car_read", json!(car_read));
    inputs.finish()
}
