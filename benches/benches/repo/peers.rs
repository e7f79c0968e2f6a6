//! The Rust peers of each `sync.rs` / `mst.rs` group, as lists of the
//! functions that add their rows: the `peers-rust` feature adds the heavy
//! ones, each living in its own `peer_*` module.

use std::collections::HashMap;
use std::hint::black_box;

use benches::target::Group;
use repo::Cid;
use repo::crypto::Algorithm;

/// Adds `repo.commit_sign/<peer>.<alg>`, checked byte-equal to our block.
pub type CommitSigner = fn(&mut Group<'_>, Algorithm, &str, &[u8]);
/// Adds `repo.commit_verify/<peer>.<alg>` for our block and public key.
pub type CommitVerifier = fn(&mut Group<'_>, Algorithm, &str, &[u8], &[u8]);
/// Adds `repo.car_read/<peer>/<tier>` for our CAR of `n` records.
pub type CarReader = fn(&mut Group<'_>, &str, &[u8], usize);
/// Adds `repo.mst_add/<peer>/<tier>`: the base tree's blocks and root,
/// the key pool, and our roots after each of the pool's first keys.
pub type MstAdder = fn(&mut Group<'_>, &str, &HashMap<Cid, Vec<u8>>, Cid, &[String], &[Cid]);
/// Adds `repo.car_write/<peer>[.blockorder]/<tier>`: the repo's blocks,
/// its commit CID and our export of it (`car_write_row` checks theirs).
pub type CarWriter = fn(&mut Group<'_>, &str, &repo::mst::MemoryBlockStore, Cid, &[u8]);
/// Adds `repo.mst_diff/<peer>/<tier>` for the two trees, its diff checked
/// equal to `want` (`crate::mst_diff::DiffRows`).
pub type MstDiffer = fn(&mut Group<'_>, &str, &benches::inputs::MstDiffTrees);
/// Adds `repo.frame_decode/<peer>/commit` over the corpus frames.
pub type FrameDecoder = fn(&mut Group<'_>, &[Vec<u8>]);
/// Adds `repo.frame_verify/<peer>[.<variant>]/commit` over the corpus
/// frames and their authors' keys.
pub type FrameVerifier = fn(&mut Group<'_>, &[Vec<u8>], &HashMap<String, repo::crypto::PublicKey>);

pub fn commit_signers() -> Vec<CommitSigner> {
    vec![
        crate::peer_proto_blue::commit_sign,
        #[cfg(feature = "peers-rust")]
        crate::peer_jacquard::commit_sign,
        #[cfg(feature = "peers-rust")]
        crate::peer_rsky::commit_sign,
    ]
}

pub fn commit_verifiers() -> Vec<CommitVerifier> {
    vec![
        crate::peer_proto_blue::commit_verify,
        #[cfg(feature = "peers-rust")]
        crate::peer_jacquard::commit_verify,
        #[cfg(feature = "peers-rust")]
        crate::peer_rsky::commit_verify,
    ]
}

pub fn car_readers() -> Vec<CarReader> {
    vec![
        crate::peer_proto_blue::car_read,
        #[cfg(feature = "peers-rust")]
        crate::peer_jacquard::car_read,
        #[cfg(feature = "peers-rust")]
        crate::peer_rsky::car_read,
    ]
}

pub fn frame_decoders() -> Vec<FrameDecoder> {
    vec![
        crate::peer_proto_blue::frame,
        #[cfg(feature = "peers-rust")]
        crate::peer_jacquard::frame,
    ]
}

pub fn mst_adders() -> Vec<MstAdder> {
    vec![
        crate::peer_proto_blue::mst_add,
        #[cfg(feature = "peers-rust")]
        crate::peer_jacquard::mst_add,
        #[cfg(feature = "peers-rust")]
        crate::peer_rsky::mst_add,
        #[cfg(feature = "peers-rust")]
        crate::peer_atproto_repo::mst_add,
    ]
}

pub fn car_writers() -> Vec<CarWriter> {
    vec![
        crate::peer_proto_blue::car_write,
        #[cfg(feature = "peers-rust")]
        crate::peer_jacquard::car_write,
    ]
}

pub fn mst_differs() -> Vec<MstDiffer> {
    vec![
        crate::peer_proto_blue::mst_diff,
        #[cfg(feature = "peers-rust")]
        crate::peer_jacquard::mst_diff,
        #[cfg(feature = "peers-rust")]
        crate::peer_rsky::mst_diff,
        #[cfg(feature = "peers-rust")]
        crate::peer_atproto_repo::mst_diff,
    ]
}

pub fn frame_verifiers() -> Vec<FrameVerifier> {
    vec![
        #[cfg(feature = "peers-rust")]
        crate::peer_jacquard::frame_verify,
    ]
}

/// Adds `repo.commit_verify/<id>` once `verify` (a peer's decode and
/// signature check of a signed commit block) is seen, outside the timing,
/// to accept our `alg_name` block and to refuse it with its last byte (a
/// signature byte) flipped.
pub fn verify_row(
    group: &mut Group<'_>,
    peer: &str,
    id: &str,
    alg_name: &str,
    block: &[u8],
    verify: impl Fn(&[u8]) -> bool,
) {
    assert!(verify(block), "{peer} rejects our {alg_name} commit");
    let mut bad = block.to_vec();
    if let Some(last) = bad.last_mut() {
        *last ^= 1;
    }
    assert!(!verify(&bad), "{peer} accepts a broken signature");
    group.bench(id, "", |b| b.iter(|| verify(black_box(block))));
}

/// Adds `repo.car_write/<name>/<tier>` for `write` (a peer's whole export
/// into the cleared buffer it is given) once its bytes are seen, outside
/// the timing, equal to `ours`; when they differ only in block order
/// (same roots, same set of blocks, each block's hash checked) the row is
/// the adjacent `<name>.blockorder`, with a line saying so.
pub fn car_write_row(
    group: &mut Group<'_>,
    name: &str,
    tier: &str,
    ours: &[u8],
    mut write: impl FnMut(&mut Vec<u8>),
) {
    let mut out = Vec::with_capacity(ours.len());
    write(&mut out);
    let id = if out == ours {
        name.to_owned()
    } else {
        let theirs = repo::car::CarSlice::parse(&out, true)
            .unwrap_or_else(|e| panic!("{name}: its CAR does not parse or hash-check: {e}"));
        let want = repo::car::CarSlice::parse(ours, true).expect("our CAR");
        assert_eq!(theirs.roots, want.roots, "{name}: CAR roots");
        let set = |c: &repo::car::CarSlice<'_>| {
            let mut v: Vec<(Cid, Vec<u8>)> =
                c.blocks.iter().map(|(c, d)| (*c, d.to_vec())).collect();
            v.sort();
            v
        };
        assert_eq!(set(&theirs), set(&want), "{name}: CAR blocks");
        assert_eq!(out.len(), ours.len(), "{name}: CAR length");
        eprintln!(
            "atbench: {name} writes the same roots and blocks as ours at {tier} in another \
             block order; adjacent probe"
        );
        format!("{name}.blockorder")
    };
    group.bench(&id, tier, |b| {
        b.iter(|| {
            write(&mut out);
            out.len()
        })
    });
}

/// Adds `repo.car_read/<id>/<tier>` once `import` (a peer's read of our
/// CAR down to its records, counted) is seen, outside the timing, to list
/// our `n` records.
pub fn car_read_row<E: std::fmt::Debug>(
    group: &mut Group<'_>,
    id: &str,
    tier: &str,
    car: &[u8],
    n: usize,
    import: impl Fn(&[u8]) -> Result<usize, E>,
) {
    let got = import(car).unwrap_or_else(|e| panic!("{id} does not import our CAR: {e:?}"));
    assert_eq!(got, n, "{id}: records listed from our {tier} CAR");
    group.bench(id, tier, |b| b.iter(|| import(black_box(car)).unwrap_or(0)));
}

/// Adds `repo.frame_decode/<id>/commit`, cycling over the corpus frames,
/// once `decode` (a peer's decode of one frame; true for a `#commit`) is
/// seen to take every frame as one.
pub fn frame_row(
    group: &mut Group<'_>,
    id: &str,
    frames: &[Vec<u8>],
    decode: impl Fn(&[u8]) -> bool,
) {
    for f in frames {
        assert!(decode(f), "{id} decodes every corpus #commit frame");
    }
    let mut i = 0usize;
    group.bench(id, "commit", |b| {
        b.iter(|| {
            let f = &frames[i % frames.len()];
            i += 1;
            decode(black_box(f))
        })
    });
}

/// Adds `repo.mst_diff/<id>/<tier>` timing `diff` (a peer's diff of the
/// two trees; `len` counts what it returns) once `rows` of its result (the
/// compared shape, any order) are seen, outside the timing, to equal
/// `trees.want`.
pub fn mst_diff_row<D, E: std::fmt::Debug>(
    group: &mut Group<'_>,
    id: &str,
    tier: &str,
    trees: &benches::inputs::MstDiffTrees,
    diff: impl Fn() -> Result<D, E>,
    rows: impl Fn(&D) -> crate::mst_diff::DiffRows,
    len: impl Fn(&D) -> usize,
) {
    let d = diff().unwrap_or_else(|e| panic!("{id} does not diff the {tier} trees: {e:?}"));
    let mut got = rows(&d);
    got.sort();
    assert_eq!(got, trees.want, "{id}: the diff of the {tier} trees");
    group.bench(id, tier, |b| b.iter(|| diff().map_or(0, |d| len(&d))));
}
