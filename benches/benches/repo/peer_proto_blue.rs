//! proto-blue (the `proto-blue-*` crates, a Rust port of the official
//! TypeScript SDK): its DAG-CBOR codec (`proto-blue-lex-cbor`: ciborium
//! underneath, decode strict by re-encoding and comparing), CIDs, commits
//! signed and verified through `proto-blue-crypto`, CAR import, the MST
//! and firehose event decode.
//!
//! Where its API does more than our unit (it has no lazily loaded MST:
//! `MstNode::load` reads the whole tree, and the new root comes from
//! re-serialising every node) the rows say so in units.toml; the results
//! are still checked equal to ours before timing.

use std::collections::HashMap;
use std::hint::black_box;

use benches::target::Group;
use proto_blue_crypto::{K256Keypair, Keypair as _, P256Keypair, Signer, Verifier};
use proto_blue_lex_data::{Cid as PbCid, LexValue};
use proto_blue_repo::{BlockMap, MstNode, SignedCommit, UnsignedCommit};

use crate::peer_roles::{CborPeer, EncodeFn};

/// The implementation name in ids.
pub const NAME: &str = "proto-blue-repo";

/// The codec's rows in `repo.cbor_encode` and `repo.cbor_decode`.
pub const CBOR: CborPeer = CborPeer {
    name: NAME,
    encoder,
    decode,
    round_trip,
};

fn encoder(bytes: &[u8]) -> EncodeFn<'static> {
    let v = proto_blue_lex_cbor::decode(bytes).expect("proto-blue decodes the record");
    // Its encoder returns a fresh vector; appending it to `out` is one
    // copy of the record's bytes.
    Box::new(move |out: &mut Vec<u8>| {
        let bytes = proto_blue_lex_cbor::encode(black_box(&v)).expect("encodes");
        out.extend_from_slice(&bytes);
    })
}

fn decode(bytes: &[u8]) -> bool {
    proto_blue_lex_cbor::decode(bytes).is_ok()
}

fn round_trip(bytes: &[u8]) -> Vec<u8> {
    let v = proto_blue_lex_cbor::decode(bytes).expect("decodes");
    proto_blue_lex_cbor::encode(&v).expect("encodes")
}

/// The CID of `block` as the peer computes it, in bytes (`repo.cid`).
pub fn cid(block: &[u8]) -> Vec<u8> {
    PbCid::for_cbor(block).to_bytes()
}

fn pb_cid(c: &repo::Cid) -> PbCid {
    PbCid::from_bytes(&c.to_bytes()).expect("CIDv1 converts")
}

/// The peer's key pair for `alg`, from the same secret as ours.
fn keypair(alg: repo::crypto::Algorithm, secret: &[u8]) -> Box<dyn Signer> {
    match alg {
        repo::crypto::Algorithm::K256 => {
            Box::new(K256Keypair::from_private_key(secret).expect("k256 secret"))
        }
        repo::crypto::Algorithm::P256 => {
            Box::new(P256Keypair::from_private_key(secret).expect("p256 secret"))
        }
    }
}

/// The unsigned commit of `benches::inputs::unsigned_commit`, in the
/// peer's type.
fn unsigned(ours: &repo::commit::UnsignedCommit) -> UnsignedCommit {
    UnsignedCommit::new(
        ours.did.clone(),
        pb_cid(&ours.data),
        ours.rev.to_string(),
        None,
    )
}

/// `repo.commit_sign/proto-blue-repo.<alg>`: sign and encode; checked
/// byte-equal to our signed block (`want`).
pub fn commit_sign(
    group: &mut Group<'_>,
    alg: repo::crypto::Algorithm,
    alg_name: &str,
    want: &[u8],
) {
    let secret = benches::inputs::commit_secret();
    let key = keypair(alg, &secret);
    let commit = unsigned(&benches::inputs::unsigned_commit());
    let signed = proto_blue_repo::sign_commit(&commit, key.as_ref()).expect("signs");
    assert_eq!(
        signed.to_cbor().expect("encodes"),
        want,
        "proto-blue-repo signs {alg_name} differently"
    );
    group.bench(&format!("{NAME}.{alg_name}"), "", |b| {
        b.iter(|| {
            proto_blue_repo::sign_commit(black_box(&commit), key.as_ref())
                .and_then(|s| s.to_cbor())
                .map(|v| v.len())
        })
    });
}

/// `repo.commit_verify/proto-blue-repo.<alg>`: decode our signed block
/// (strict) and verify its signature with a verifier built once from the
/// public key (as ours holds a parsed key); checked to accept ours.
pub fn commit_verify(
    group: &mut Group<'_>,
    alg: repo::crypto::Algorithm,
    alg_name: &str,
    block: &[u8],
    compressed_public: &[u8],
) {
    assert_eq!(
        public_key(alg, &benches::inputs::commit_secret()),
        compressed_public,
        "proto-blue-repo derives another {alg_name} public key"
    );
    let verifier: Box<dyn Verifier> = match alg {
        repo::crypto::Algorithm::K256 => {
            Box::new(K256Keypair::verifier_from_compressed(compressed_public).expect("k256 key"))
        }
        repo::crypto::Algorithm::P256 => {
            Box::new(P256Keypair::verifier_from_compressed(compressed_public).expect("p256 key"))
        }
    };
    let verify = |block: &[u8]| -> bool {
        let Ok(v) = proto_blue_lex_cbor::decode(block) else {
            return false;
        };
        let Ok(c) = SignedCommit::from_lex_value(&v) else {
            return false;
        };
        c.unsigned()
            .to_signing_bytes()
            .is_ok_and(|m| verifier.verify(&m, &c.sig).unwrap_or(false))
    };
    crate::peer_roles::verify_row(
        group,
        "proto-blue-repo",
        &format!("{NAME}.{alg_name}"),
        alg_name,
        block,
        verify,
    );
}

/// The public key of the peer's own key pair for `alg` (compressed SEC1),
/// which must equal ours.
pub fn public_key(alg: repo::crypto::Algorithm, secret: &[u8]) -> Vec<u8> {
    match alg {
        repo::crypto::Algorithm::K256 => K256Keypair::from_private_key(secret)
            .expect("k256")
            .public_key_compressed(),
        repo::crypto::Algorithm::P256 => P256Keypair::from_private_key(secret)
            .expect("p256")
            .public_key_compressed(),
    }
}

/// The whole import, as `repo.car_read`'s unit: CAR read with every
/// block's hash checked, the commit decoded, the MST loaded and every
/// record listed. Returns the record count.
fn import(car: &[u8]) -> Result<usize, proto_blue_repo::RepoError> {
    let (root, blocks) = proto_blue_repo::read_car_with_root(car)?;
    let commit_block = blocks
        .get(&root)
        .ok_or_else(|| proto_blue_repo::RepoError::MissingBlock(root.clone()))?;
    let commit = SignedCommit::from_lex_value(&proto_blue_lex_cbor::decode(commit_block)?)?;
    let mst = MstNode::load(&commit.data, &blocks)?;
    Ok(mst.leaves().len())
}

/// `repo.car_read/proto-blue-repo/<tier>`; checked to list `n` records.
pub fn car_read(group: &mut Group<'_>, tier: &str, car: &[u8], n: usize) {
    crate::peer_roles::car_read_row(group, NAME, tier, car, n, import);
}

/// `repo.mst_add/proto-blue-repo/<tier>`: load the base tree (all of it:
/// the crate has no lazy load), add one key, re-serialise for the new root
/// and its blocks. The first 32 pool keys are checked to reach `roots`
/// (ours) before timing.
pub fn mst_add(
    group: &mut Group<'_>,
    tier: &str,
    base: &HashMap<repo::Cid, Vec<u8>>,
    root: repo::Cid,
    pool: &[String],
    roots: &[repo::Cid],
) {
    let mut blocks = BlockMap::new();
    for (cid, bytes) in base {
        blocks.set(pb_cid(cid), bytes.clone());
    }
    let root = pb_cid(&root);
    let leaf = pb_cid(&benches::inputs::mst_leaf());
    let add = |key: &str| -> Result<(PbCid, BlockMap), proto_blue_repo::RepoError> {
        let tree = MstNode::load(&root, &blocks)?;
        tree.add(key, leaf.clone())?.get_all_blocks()
    };
    for (key, want) in pool.iter().zip(roots) {
        let (got, _) = add(key).expect("proto-blue-repo adds");
        assert_eq!(
            got.to_bytes(),
            want.to_bytes(),
            "proto-blue-repo root after adding {key}"
        );
    }
    let mut i = 0usize;
    group.bench(NAME, tier, |b| {
        b.iter(|| {
            let key = &pool[i % pool.len()];
            i += 1;
            add(black_box(key)).map(|(root, _)| root)
        })
    });
}

/// The whole export as its API allows: the commit decoded, the MST loaded
/// whole and every node re-serialised (`get_all_blocks`, its only way to
/// the node blocks), every record block fetched, all into one `BlockMap`
/// written by `blocks_to_car` (in the map's order). Returns the CAR.
fn export(blocks: &BlockMap, commit: &PbCid) -> Result<Vec<u8>, proto_blue_repo::RepoError> {
    let commit_block = blocks
        .get(commit)
        .ok_or_else(|| proto_blue_repo::RepoError::MissingBlock(commit.clone()))?;
    let c = SignedCommit::from_lex_value(&proto_blue_lex_cbor::decode(commit_block)?)?;
    let mst = MstNode::load(&c.data, blocks)?;
    let (_, mut out) = mst.get_all_blocks()?;
    out.set(commit.clone(), commit_block.to_vec());
    for leaf in mst.leaves() {
        let record = blocks
            .get(&leaf.value)
            .ok_or_else(|| proto_blue_repo::RepoError::MissingBlock(leaf.value.clone()))?;
        out.set(leaf.value, record.to_vec());
    }
    proto_blue_repo::blocks_to_car(Some(commit), &out)
}

/// `repo.car_write/proto-blue-repo[.blockorder]/<tier>` over the repo's
/// blocks in its `BlockMap` (`export`); checked against our export.
pub fn car_write(
    group: &mut Group<'_>,
    tier: &str,
    store: &repo::mst::MemoryBlockStore,
    commit: repo::Cid,
    ours: &[u8],
) {
    let mut blocks = BlockMap::new();
    for (cid, bytes) in store.iter() {
        blocks.set(pb_cid(cid), bytes.to_vec());
    }
    let commit = pb_cid(&commit);
    crate::peer_roles::car_write_row(group, NAME, tier, ours, |out| {
        *out = export(black_box(&blocks), &commit).expect("proto-blue-repo exports");
    });
}

/// `repo.mst_diff/proto-blue-repo/<tier>`: load both trees whole (no
/// lazy load) and `DataDiff::of` them (which also collects the new tree's
/// node blocks and the removed CIDs); checked equal to `trees.want`.
pub fn mst_diff(group: &mut Group<'_>, tier: &str, trees: &benches::inputs::MstDiffTrees) {
    let mut blocks = BlockMap::new();
    for (cid, bytes) in &trees.blocks {
        blocks.set(pb_cid(cid), bytes.clone());
    }
    let (old, new) = (pb_cid(&trees.old_root), pb_cid(&trees.new_root));
    let diff = || -> Result<proto_blue_repo::DataDiff, proto_blue_repo::RepoError> {
        let curr = MstNode::load(&new, &blocks)?;
        let prev = MstNode::load(&old, &blocks)?;
        proto_blue_repo::DataDiff::of(&curr, Some(&prev))
    };
    let c = |c: &PbCid| crate::peer_roles::cid(&c.to_bytes());
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

/// Decodes one frame (header, body, event fields); true for a `#commit`.
fn frame_decode(frame: &[u8]) -> bool {
    let Ok(values) = proto_blue_lex_cbor::decode_all(frame) else {
        return false;
    };
    let [header, body] = values.as_slice() else {
        return false;
    };
    let t = header
        .as_map()
        .and_then(|m| m.get("t"))
        .and_then(LexValue::as_str);
    matches!(
        proto_blue_repo::decode_event(t, body),
        Ok(proto_blue_repo::FirehoseEvent::Commit(_))
    )
}

/// `repo.frame_decode/proto-blue-repo/commit`: every corpus frame checked
/// to decode to a `#commit` first.
pub fn frame(group: &mut Group<'_>, frames: &[Vec<u8>]) {
    crate::peer_roles::frame_row(group, NAME, frames, frame_decode);
}
