//! Inputs more than one bench target builds the same way, and those a
//! target shares with the inputs of its peer (`peers`): one builder each, so
//! our rows and the peer's run on the same data.

use datagen::segment::SegEvent;
use segment::{EventRef, Kind};

/// Borrowed segment events over generated ones (`--bench segment` and
/// `--bench instructions`).
pub fn segment_refs(events: &[SegEvent]) -> Vec<EventRef<'_>> {
    events
        .iter()
        .map(|e| EventRef {
            seq: e.seq,
            witnessed_at: e.witnessed_at,
            indexed_at: e.indexed_at,
            kind: Kind::from_u8(e.kind).unwrap_or(Kind::Create),
            did: &e.did,
            collection: &e.collection,
            rkey: &e.rkey,
            rev: &e.rev,
            payload: &e.payload,
        })
        .collect()
}

/// The value every `repo.mst_*` key points at.
pub fn mst_leaf() -> repo::Cid {
    repo::Cid::for_dag_cbor(b"atbench mst leaf")
}

/// The pool of keys `repo.mst_add` adds, one per iteration, cycling.
#[cfg(feature = "bench-internals")]
pub fn mst_add_pool() -> Vec<String> {
    repo::bench_internals::mst_keys(0xadd, 4096)
}

/// The `n` keys of `repo.mst_add`'s base tree at tier `n`: none of them in
/// `pool`.
#[cfg(feature = "bench-internals")]
pub fn mst_add_base_keys(n: usize, pool: &[String]) -> Vec<String> {
    repo::bench_internals::mst_keys(0xba5e + n as u64, n + n / 10)
        .into_iter()
        .filter(|k| pool.binary_search(k).is_err())
        .take(n)
        .collect()
}

/// How many keys `repo.mst_diff` creates, updates and deletes (each).
pub const MST_DIFF_CHANGES: usize = 8;

/// The value `repo.mst_diff`'s updated keys point at in the new tree.
pub fn mst_diff_value() -> repo::Cid {
    repo::Cid::for_dag_cbor(b"atbench mst diff value")
}

/// `repo.mst_diff`'s two trees at tier `n`, as the peers see them too.
#[cfg(feature = "bench-internals")]
pub struct MstDiffTrees {
    /// Every block of both trees (the shared subtrees once).
    pub blocks: std::collections::HashMap<repo::Cid, Vec<u8>>,
    /// `repo.mst_add`'s base tree of `n` keys.
    pub old_root: repo::Cid,
    /// The base tree with [`MST_DIFF_CHANGES`] pool keys created, as many
    /// base keys updated to [`mst_diff_value`] and as many deleted, spread
    /// evenly over the key range.
    pub new_root: repo::Cid,
    /// The difference built from the edit lists (not by any diff):
    /// `(key, old value, new value)` in key order.
    pub want: Vec<(String, Option<repo::Cid>, Option<repo::Cid>)>,
}

/// Builds [`MstDiffTrees`] for tier `n` with our MST.
#[cfg(feature = "bench-internals")]
pub fn mst_diff_trees(n: usize, pool: &[String]) -> MstDiffTrees {
    use repo::mst::{MemoryBlockStore, Mst};

    let base = mst_add_base_keys(n, pool);
    let leaf = mst_leaf();
    let mut m = Mst::empty(MemoryBlockStore::new());
    for k in &base {
        m.insert(k, leaf).expect("insert");
    }
    let old = m.commit().expect("commit");
    let mut store = MemoryBlockStore::new();
    store.extend(old.new_blocks);
    let mut m = Mst::load(&store, old.root);
    let step = n / MST_DIFF_CHANGES;
    let mut want = Vec::new();
    for i in 0..MST_DIFF_CHANGES {
        let updated = &base[i * step];
        m.insert(updated, mst_diff_value()).expect("update");
        want.push((updated.clone(), Some(leaf), Some(mst_diff_value())));
        let deleted = &base[i * step + step / 2];
        m.delete(deleted).expect("delete");
        want.push((deleted.clone(), Some(leaf), None));
        let created = &pool[i * pool.len() / MST_DIFF_CHANGES];
        m.insert(created, leaf).expect("create");
        want.push((created.clone(), None, Some(leaf)));
    }
    let new = m.commit().expect("commit");
    let mut blocks: std::collections::HashMap<_, _> =
        store.iter().map(|(c, b)| (*c, b.to_vec())).collect();
    blocks.extend(new.new_blocks);
    want.sort();
    MstDiffTrees {
        blocks,
        old_root: old.root,
        new_root: new.root,
        want,
    }
}

/// A signed repo of `n` like records (the `template` like with its
/// `createdAt` varied per record, keys `app.bsky.feed.like/<TID>`): its
/// blocks and the commit CID (`repo.car_write`, `repo.car_read` and their
/// peer's CAR).
pub fn like_repo(n: usize, template: &[u8]) -> (repo::mst::MemoryBlockStore, repo::Cid) {
    use repo::cbor::{self, Value};
    use repo::commit::UnsignedCommit;
    use repo::crypto::{Algorithm, Keypair};
    use repo::mst::{MemoryBlockStore, Mst};
    use repo::syntax::Tid;

    let template = cbor::decode_owned(template).expect("like decodes");
    let mut store = MemoryBlockStore::new();
    let mut mst = Mst::empty(MemoryBlockStore::new());
    for i in 0..n {
        let mut record = template.clone();
        if let Value::Map(m) = &mut record {
            m.insert(
                "createdAt",
                Value::Text(format!("2024-01-01T00:00:{:02}.{:06}Z", i % 60, i)),
            );
        }
        let bytes = cbor::to_vec(&record);
        let cid = store.put_dag_cbor(bytes);
        let tid = Tid::from_parts(1_700_000_000_000_000 + i as u64 * 1_000, 3);
        mst.insert(&format!("app.bsky.feed.like/{tid}"), cid)
            .expect("insert");
    }
    let c = mst.commit().expect("commit");
    store.extend(c.new_blocks);
    let key = Keypair::from_bytes(Algorithm::K256, &datagen::random_bytes(0xca2, 32)).expect("key");
    let rev = Tid::from_parts(1_700_000_000_000_000 + n as u64 * 1_000, 3);
    let signed = UnsignedCommit::new("did:plc:ewvi7nxzyoun6zhxrhs64oiz", c.root, rev).sign(&key);
    let commit = store.put_dag_cbor(signed.to_bytes());
    (store, commit)
}

/// The whole export of a repo as CAR v1 into `out`: commit, every MST node,
/// every record (the unit `repo.car_write` times). Returns the record count.
pub fn export_car(
    store: &repo::mst::MemoryBlockStore,
    commit: repo::Cid,
    out: &mut Vec<u8>,
) -> usize {
    use repo::car::CarWriter;
    use repo::commit::CommitRef;
    use repo::mst::Mst;

    let mut w = CarWriter::new(out, &[commit]).expect("header");
    let commit_bytes = store.get(&commit).expect("commit block");
    w.write_block(&commit, commit_bytes).expect("write");
    let data = CommitRef::decode(commit_bytes).expect("commit").data;
    let mut mst = Mst::load(store, data);
    for cid in mst.node_cids().expect("walk") {
        w.write_block(&cid, store.get(&cid).expect("node block"))
            .expect("write");
    }
    let mut records = 0;
    for leaf in mst.leaves().expect("walk") {
        let (_, cid) = leaf.expect("leaf");
        w.write_block(&cid, store.get(&cid).expect("record block"))
            .expect("write");
        records += 1;
    }
    w.finish().expect("flush");
    records
}

/// The unsigned commit `repo.commit_sign` signs.
pub fn unsigned_commit() -> repo::commit::UnsignedCommit {
    repo::commit::UnsignedCommit::new(
        "did:plc:ewvi7nxzyoun6zhxrhs64oiz",
        repo::Cid::for_dag_cbor(b"atbench mst root"),
        repo::syntax::Tid::from_parts(1_700_000_000_000_000, 7),
    )
}

/// The secret of `repo.commit_sign`'s and `repo.commit_verify`'s keys.
pub fn commit_secret() -> Vec<u8> {
    datagen::random_bytes(0x5167, 32)
}

/// A small deterministic generator for sampling (xorshift): the store
/// benches' key and cursor samples, and their peer's.
pub struct Sampler(pub u64);

impl Sampler {
    /// The next index below `n`.
    pub fn next(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
}

/// The index of the store benches' 10k-record account (`sizes.sqlite` holds
/// accounts 1000, 1001 and 1002 with 1k, 10k and 100k records).
pub const STORE_10K_ACCOUNT: u64 = 1_001;

/// The store benches' `(collection, rkey)` sample of `records` (seeded
/// `seed`, `n` draws with repeats), in draw order.
pub fn store_sample<T: Clone>(records: &[T], n: usize, seed: u64) -> Vec<T> {
    let mut s = Sampler(seed | 1);
    (0..n)
        .map(|_| records[s.next(records.len())].clone())
        .collect()
}

/// `store.list_records`' 256 cursors: like rkeys of the account, each with
/// at least 50 older likes below it (`likes` sorted ascending).
pub fn store_list_cursors(likes: &[&str]) -> Vec<String> {
    let mut s = Sampler(99);
    (0..256)
        .map(|_| likes[50 + s.next(likes.len() - 50)].to_owned())
        .collect()
}
