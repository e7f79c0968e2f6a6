//! The roles a Rust peer plays, in one leaf module every `peer_*` module
//! imports (and nothing else here): the signatures of the functions that
//! add a peer's rows to a group (`peers.rs` and `cbor.rs` keep only the
//! lists of them), the row helpers that check a peer's result outside the
//! timing before timing it, and the shapes results are compared in. The
//! lists import the peers; the peers import only this.

use std::collections::HashMap;
use std::hint::black_box;

use benches::target::Group;
use repo::Cid;
use repo::crypto::Algorithm;

// --- the functions that add a peer's rows (the lists are in `peers.rs`) ---

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
/// equal to `want` ([`DiffRows`]).
pub type MstDiffer = fn(&mut Group<'_>, &str, &benches::inputs::MstDiffTrees);
/// Adds `repo.frame_decode/<peer>/commit` over the corpus frames.
pub type FrameDecoder = fn(&mut Group<'_>, &[Vec<u8>]);
/// Adds `repo.frame_verify/<peer>[.<variant>]/commit` over the corpus
/// frames and their authors' keys.
pub type FrameVerifier = fn(&mut Group<'_>, &[Vec<u8>], &HashMap<String, repo::crypto::PublicKey>);

// --- DAG-CBOR codecs (the list is in `cbor.rs`) ---

/// An encoder under test: writes the value it was set up with into `out`.
pub type EncodeFn<'a> = Box<dyn FnMut(&mut Vec<u8>) + 'a>;

/// A peer DAG-CBOR codec working on its own generic value type.
pub struct CborPeer {
    /// The implementation name in ids.
    pub name: &'static str,
    /// Decodes `bytes` into the peer's value (setup, untimed) and returns
    /// an encoder of that value.
    pub encoder: fn(&[u8]) -> EncodeFn<'static>,
    /// The timed decode: `bytes` into the peer's value, true when it
    /// decoded.
    pub decode: fn(&[u8]) -> bool,
    /// Decode then encode again (setup): must give `bytes` back.
    pub round_trip: fn(&[u8]) -> Vec<u8>,
}

// --- diffs ---

/// A diff in the shape every implementation's is compared in.
pub type DiffRows = Vec<(String, Option<repo::Cid>, Option<repo::Cid>)>;

/// Our CID type of a peer's CID bytes.
pub fn cid(bytes: &[u8]) -> repo::Cid {
    repo::Cid::from_bytes(bytes).expect("a peer's CID converts")
}

/// The rows of a diff made of `adds`, `updates` and `deletes` maps whose
/// entries have a `key` and a `cid` (and an update its `prev`), as
/// proto-blue-repo's and rsky-repo's `DataDiff` are (after the reference
/// implementation's); `$cid` turns their CID type into ours.
macro_rules! data_diff_rows {
    ($d:expr, $cid:expr) => {
        $d.adds
            .values()
            .map(|a| (a.key.clone(), None, Some($cid(&a.cid))))
            .chain(
                $d.updates
                    .values()
                    .map(|u| (u.key.clone(), Some($cid(&u.prev)), Some($cid(&u.cid)))),
            )
            .chain(
                $d.deletes
                    .values()
                    .map(|x| (x.key.clone(), Some($cid(&x.cid)), None)),
            )
            .collect::<$crate::peer_roles::DiffRows>()
    };
}
#[allow(unused_imports)] // its users build only with some peers' features
pub(crate) use data_diff_rows;

// --- row helpers ---

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
    rows: impl Fn(&D) -> DiffRows,
    len: impl Fn(&D) -> usize,
) {
    let d = diff().unwrap_or_else(|e| panic!("{id} does not diff the {tier} trees: {e:?}"));
    let mut got = rows(&d);
    got.sort();
    assert_eq!(got, trees.want, "{id}: the diff of the {tier} trees");
    group.bench(id, tier, |b| b.iter(|| diff().map_or(0, |d| len(&d))));
}
