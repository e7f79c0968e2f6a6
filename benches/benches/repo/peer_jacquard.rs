//! jacquard-repo (with jacquard-common and jacquard-api: MPL-2.0, used as
//! a dependency only): its lazily loaded MST, commits, CAR import and
//! `#commit` frame decode and validation. Behind the `peers-rust` feature.
//!
//! Its MST spawns a task per subtree (`n0_future::task::spawn`, tokio on
//! native targets), so its rows run on one current-thread tokio runtime
//! built in setup: the same single core ours uses. Its CBOR codec is
//! serde_ipld_dagcbor 0.6 (row `serde_ipld_dagcbor-0.6`), so it has no
//! codec row of its own. Its CAR reader is iroh-car's (no block hash
//! check): `repo.car_read/jacquard-repo.nohash` is an adjacent probe.

use std::collections::{BTreeMap, HashMap};
use std::hint::black_box;
use std::sync::Arc;

use benches::target::Group;
use bytes::Bytes;
use jacquard_api::com_atproto::sync::subscribe_repos::SubscribeReposMessage;
use jacquard_common::types::crypto::{KeyCodec, PublicKey};
use jacquard_common::types::string::Did;
use jacquard_common::types::tid::Tid;
use jacquard_repo::commit::{Commit, UnsignedCommit};
use jacquard_repo::storage::{LayeredBlockStore, MemoryBlockStore};
use jacquard_repo::{BlockStore, Mst};
use repo::crypto::Algorithm;
use tokio::runtime::Runtime;

type JCid = ipld_core::cid::Cid;

/// The implementation name in ids.
pub const NAME: &str = "jacquard-repo";

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread tokio runtime")
}

fn jcid(c: &repo::Cid) -> JCid {
    JCid::try_from(&c.to_bytes()[..]).expect("CIDv1 converts")
}

/// `repo.mst_add/jacquard-repo/<tier>`: load the base tree lazily from a
/// block store, add one key, collect the new root and the new blocks
/// (`Mst::collect_blocks`: the nodes not in the store), stored into a
/// fresh layer over the base (dropped every iteration). The first pool
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
    let blocks: BTreeMap<JCid, Bytes> = base
        .iter()
        .map(|(c, b)| (jcid(c), Bytes::from(b.clone())))
        .collect();
    let base = Arc::new(MemoryBlockStore::new_from_blocks(blocks));
    let root = jcid(&root);
    let leaf = jcid(&benches::inputs::mst_leaf());
    let add = |key: &str| -> jacquard_repo::Result<JCid> {
        rt.block_on(async {
            let layer = Arc::new(LayeredBlockStore::new(
                MemoryBlockStore::new(),
                base.clone(),
            ));
            let tree = Mst::load(layer.clone(), root, None);
            let tree = tree.add(key, leaf).await?;
            let (new_root, new_blocks) = tree.collect_blocks().await?;
            layer.put_many(new_blocks).await?;
            Ok(new_root)
        })
    };
    for (key, want) in pool.iter().zip(roots) {
        let got = add(key).expect("jacquard-repo adds");
        assert_eq!(got, jcid(want), "jacquard-repo root after adding {key}");
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

/// `repo.car_write/jacquard-repo[.blockorder]/<tier>`: the body of its
/// `export_repo_car` (which takes a file path) into the cleared buffer:
/// the commit block from the store, then `Mst::write_blocks_to_car` (its
/// MST walk writing every node, then every record block) through
/// iroh-car's writer; checked against our export.
pub fn car_write(
    group: &mut Group<'_>,
    tier: &str,
    store: &repo::mst::MemoryBlockStore,
    commit: repo::Cid,
    ours: &[u8],
) {
    let rt = runtime();
    let blocks: BTreeMap<JCid, Bytes> = store
        .iter()
        .map(|(c, b)| (jcid(c), Bytes::copy_from_slice(b)))
        .collect();
    let store = Arc::new(MemoryBlockStore::new_from_blocks(blocks));
    let commit = jcid(&commit);
    let export = |out: &mut Vec<u8>| -> jacquard_repo::Result<()> {
        rt.block_on(async {
            let commit_bytes = store
                .get(&commit)
                .await?
                .ok_or_else(|| jacquard_repo::RepoError::not_found("commit", commit))?;
            let data = *Commit::<jacquard_common::DefaultStr>::from_cbor(&commit_bytes)?.data();
            let mst = Mst::load(store.clone(), data, None);
            let mut w = iroh_car::CarWriter::new(iroh_car::CarHeader::new_v1(vec![commit]), out);
            w.write(commit, &commit_bytes)
                .await
                .map_err(jacquard_repo::RepoError::car)?;
            mst.write_blocks_to_car(&mut w).await?;
            w.finish().await.map_err(jacquard_repo::RepoError::car)?;
            Ok(())
        })
    };
    crate::peer_roles::car_write_row(group, NAME, tier, ours, |out| {
        out.clear();
        export(out).expect("jacquard-repo exports");
    });
}

/// `repo.mst_diff/jacquard-repo/<tier>`: load both trees lazily over one
/// block store and `Mst::diff` them (which also serialises and collects
/// the new and removed node blocks); checked equal to `trees.want`.
pub fn mst_diff(group: &mut Group<'_>, tier: &str, trees: &benches::inputs::MstDiffTrees) {
    let rt = runtime();
    let blocks: BTreeMap<JCid, Bytes> = trees
        .blocks
        .iter()
        .map(|(c, b)| (jcid(c), Bytes::from(b.clone())))
        .collect();
    let store = Arc::new(MemoryBlockStore::new_from_blocks(blocks));
    let (old, new) = (jcid(&trees.old_root), jcid(&trees.new_root));
    let diff = || {
        rt.block_on(async {
            let a = Mst::load(store.clone(), old, None);
            let b = Mst::load(store.clone(), new, None);
            a.diff(&b).await
        })
    };
    let c = |c: &JCid| crate::peer_roles::cid(&c.to_bytes());
    crate::peer_roles::mst_diff_row(
        group,
        NAME,
        tier,
        trees,
        diff,
        |d| {
            d.creates
                .iter()
                .map(|(k, v)| (k.to_string(), None, Some(c(v))))
                .chain(
                    d.updates
                        .iter()
                        .map(|(k, new, old)| (k.to_string(), Some(c(old)), Some(c(new)))),
                )
                .chain(
                    d.deletes
                        .iter()
                        .map(|(k, v)| (k.to_string(), Some(c(v)), None)),
                )
                .collect()
        },
        |d| d.creates.len(),
    );
}

fn unsigned() -> UnsignedCommit<jacquard_common::DefaultStr> {
    let ours = benches::inputs::unsigned_commit();
    UnsignedCommit::new_unsigned(
        Did::new_owned(&ours.did).expect("did"),
        jcid(&ours.data),
        Tid::new(ours.rev.to_string()).expect("tid"),
        None,
    )
}

/// `repo.commit_sign/jacquard-repo.<alg>`: sign with the RustCrypto key
/// (its `SigningKey` impls) and encode. Named `.nonidentical` when the
/// bytes differ from ours (RustCrypto p256 does not normalise S to the
/// low half, which atproto requires and ours does).
pub fn commit_sign(group: &mut Group<'_>, alg: Algorithm, alg_name: &str, want: &[u8]) {
    let secret = benches::inputs::commit_secret();
    let sign = |u: UnsignedCommit<jacquard_common::DefaultStr>| -> Vec<u8> {
        let signed = match alg {
            Algorithm::K256 => u.sign(&k256::ecdsa::SigningKey::from_slice(&secret).expect("k256")),
            Algorithm::P256 => u.sign(&p256::ecdsa::SigningKey::from_slice(&secret).expect("p256")),
        };
        signed.and_then(|c| c.to_cbor()).unwrap_or_default()
    };
    let got = sign(unsigned());
    let name = if got == want {
        format!("{NAME}.{alg_name}")
    } else {
        let ours_accepts = repo::commit::CommitRef::decode(&got).is_ok_and(|c| {
            repo::crypto::Keypair::from_bytes(alg, &secret)
                .is_ok_and(|k| c.verify(&k.public_key()).is_ok())
        });
        eprintln!(
            "atbench: jacquard-repo signs {alg_name} differently from ours (our verify {}); adjacent probe",
            if ours_accepts {
                "accepts it"
            } else {
                "rejects it"
            }
        );
        format!("{NAME}.{alg_name}.nonidentical")
    };
    group.bench(&name, "", |b| b.iter(|| sign(black_box(unsigned())).len()));
}

/// `repo.commit_verify/jacquard-repo.<alg>`: decode our block and verify
/// it against the compressed public key (`Commit::verify` decompresses
/// the point per call: its API takes the key in its multikey form).
pub fn commit_verify(
    group: &mut Group<'_>,
    alg: Algorithm,
    alg_name: &str,
    block: &[u8],
    compressed_public: &[u8],
) {
    let key = PublicKey {
        codec: match alg {
            Algorithm::K256 => KeyCodec::Secp256k1,
            Algorithm::P256 => KeyCodec::P256,
        },
        bytes: compressed_public.to_vec().into(),
    };
    let verify = |block: &[u8]| -> bool {
        Commit::<jacquard_common::DefaultStr>::from_cbor(block)
            .is_ok_and(|c| c.verify(&key).is_ok())
    };
    crate::peer_roles::verify_row(
        group,
        "jacquard-repo",
        &format!("{NAME}.{alg_name}"),
        alg_name,
        block,
        verify,
    );
}

/// `repo.car_read/jacquard-repo.nohash/<tier>`: `parse_car_bytes` (iroh-car
/// underneath: no hash check) into its memory store, the commit decoded,
/// the MST loaded and every leaf listed; checked to list `n` records.
pub fn car_read(group: &mut Group<'_>, tier: &str, car: &[u8], n: usize) {
    let rt = runtime();
    let import = |car: &[u8]| -> jacquard_repo::Result<usize> {
        rt.block_on(async {
            let parsed = jacquard_repo::car::parse_car_bytes(car).await?;
            let store = Arc::new(MemoryBlockStore::new_from_blocks(parsed.blocks));
            let commit_bytes = store.get(&parsed.root).await?.unwrap_or_default();
            let commit = Commit::<jacquard_common::DefaultStr>::from_cbor(&commit_bytes)?;
            let mst = Mst::load(store, *commit.data(), None);
            Ok(mst.leaves().await?.len())
        })
    };
    crate::peer_roles::car_read_row(group, &format!("{NAME}.nohash"), tier, car, n, import);
}

fn decode(frame: &[u8]) -> Option<Box<jacquard_api::com_atproto::sync::subscribe_repos::Commit>> {
    match SubscribeReposMessage::<jacquard_common::DefaultStr>::decode_framed(frame) {
        Ok(SubscribeReposMessage::Commit(c)) => Some(c),
        _ => None,
    }
}

/// `repo.frame_decode/jacquard-repo/commit`: header and `#commit` body into
/// its generated lexicon types; every corpus frame checked first.
pub fn frame(group: &mut Group<'_>, frames: &[Vec<u8>]) {
    crate::peer_roles::frame_row(group, NAME, frames, |f| decode(f).is_some());
}

/// `repo.frame_verify/jacquard-repo/commit`: decode, then `validate_v1_1`
/// (CAR parsed without hash checks, commit signature against the key, ops
/// inverted on its MST back to `prevData`), each author's key in its
/// `PublicKey` form built once in setup. Checked to accept every corpus
/// frame (else the row is left out, with a line saying so); an adjacent
/// probe (no block hash check).
pub fn frame_verify(
    group: &mut Group<'_>,
    frames: &[Vec<u8>],
    keys: &HashMap<String, repo::crypto::PublicKey>,
) {
    let rt = runtime();
    let keys: HashMap<String, PublicKey<'static>> = keys
        .iter()
        .map(|(did, k)| {
            let codec = match k.algorithm() {
                Algorithm::K256 => KeyCodec::Secp256k1,
                Algorithm::P256 => KeyCodec::P256,
            };
            (
                did.clone(),
                PublicKey {
                    codec,
                    bytes: k.to_compressed().to_vec().into(),
                },
            )
        })
        .collect();
    let verify = |frame: &[u8]| -> bool {
        let Some(c) = decode(frame) else { return false };
        let Some(key) = keys.get(c.repo.as_str()) else {
            return false;
        };
        rt.block_on(jacquard_repo::commit::firehose::validate_v1_1(&c, key))
            .is_ok()
    };
    let accepted = frames.iter().filter(|f| verify(f)).count();
    if accepted != frames.len() {
        eprintln!(
            "atbench: jacquard-repo validates {accepted} of {} corpus frames; not benchmarked",
            frames.len()
        );
        return;
    }
    let mut i = 0usize;
    group.bench(&format!("{NAME}.nohash"), "commit", |b| {
        b.iter(|| {
            let f = &frames[i % frames.len()];
            i += 1;
            verify(black_box(f))
        })
    });
}
