//! atproto-repo (ngerakines' atproto-crates, over atproto-dasl's DRISL
//! codec and block storage): its MST. Behind the `peers-rust` feature
//! (atproto-identity and its DNS resolver come with it). Its codec row is
//! `atproto-dasl`'s.
//!
//! `repo.mst_add/atproto-repo[.nonidentical]/<tier>`: `Mst::from_root` over a storage
//! that reads the base tree's blocks and keeps this iteration's writes
//! (cleared every iteration, as ours), `insert` (loads the path's nodes,
//! writes the new ones, returns the new root). Its futures never wait, so
//! `futures::executor::block_on` drives them.

use std::collections::HashMap;
use std::hint::black_box;

use atproto_dasl::errors::StorageError;
use atproto_dasl::storage::BlockStorage;
use atproto_repo::{Mst, MstDiff, RepoConfig};
use benches::target::Group;
use futures::executor::block_on;

type ACid = ipld_core::cid::Cid;

/// The implementation name in ids.
pub const NAME: &str = "atproto-repo";

fn acid(c: &repo::Cid) -> ACid {
    ACid::try_from(&c.to_bytes()[..]).expect("CIDv1 converts")
}

/// The base tree's blocks plus this iteration's writes.
struct Overlay<'a> {
    base: &'a HashMap<ACid, Vec<u8>>,
    writes: HashMap<ACid, Vec<u8>>,
}

impl BlockStorage for Overlay<'_> {
    async fn put(&mut self, cid: &ACid, data: Vec<u8>) -> Result<(), StorageError> {
        self.writes.insert(*cid, data);
        Ok(())
    }

    async fn get(&self, cid: &ACid) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(self.writes.get(cid).or_else(|| self.base.get(cid)).cloned())
    }

    async fn contains(&self, cid: &ACid) -> Result<bool, StorageError> {
        Ok(self.writes.contains_key(cid) || self.base.contains_key(cid))
    }

    async fn remove(&mut self, cid: &ACid) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(self.writes.remove(cid))
    }

    fn memory_usage(&self) -> usize {
        self.writes.values().map(Vec::len).sum()
    }

    fn block_count(&self) -> usize {
        self.base.len() + self.writes.len()
    }

    fn cids(&self) -> Box<dyn Iterator<Item = ACid> + '_> {
        Box::new(self.base.keys().chain(self.writes.keys()).copied())
    }

    async fn clear(&mut self) -> Result<(), StorageError> {
        self.writes.clear();
        Ok(())
    }
}

/// `repo.mst_add/atproto-repo/<tier>`; the first pool keys are checked to
/// reach `roots` (ours) before timing.
pub fn mst_add(
    group: &mut Group<'_>,
    tier: &str,
    base: &HashMap<repo::Cid, Vec<u8>>,
    root: repo::Cid,
    pool: &[String],
    roots: &[repo::Cid],
) {
    let base: HashMap<ACid, Vec<u8>> = base.iter().map(|(c, b)| (acid(c), b.clone())).collect();
    let root = acid(&root);
    let leaf = atproto_dasl::Cid::new(acid(&benches::inputs::mst_leaf()));
    let mut writes = Some(HashMap::new());
    let mut add = |key: &str| -> Option<ACid> {
        let mut w = writes.take().unwrap_or_default();
        w.clear();
        let mut tree = Mst::from_root(
            root,
            Overlay {
                base: &base,
                writes: w,
            },
            RepoConfig::default(),
        );
        let new_root = block_on(tree.insert(key, leaf.clone())).ok();
        writes = Some(tree.into_storage().writes);
        new_root
    };
    // A tree it builds differently from ours (and from the reference
    // implementation's roots our tests pin) is benchmarked as an adjacent
    // probe, as atrium-repo's are in mst.rs.
    let mut name = NAME.to_owned();
    for (key, want) in pool.iter().zip(roots) {
        let got = add(key);
        if got != Some(acid(want)) {
            eprintln!(
                "atbench: atproto-repo reaches root {got:?} after adding {key} to the {tier} tree, ours {want}; adjacent probe"
            );
            name = format!("{NAME}.nonidentical");
            break;
        }
    }
    let mut i = 0usize;
    group.bench(&name, tier, |b| {
        b.iter(|| {
            let key = &pool[i % pool.len()];
            i += 1;
            add(black_box(key))
        })
    });
}

/// `repo.mst_diff/atproto-repo/<tier>`: its diff API is `diff_entries` over
/// two sorted key lists, so the unit lists both trees whole
/// (`Mst::entries`) and diffs the lists; checked equal to `trees.want`.
pub fn mst_diff(group: &mut Group<'_>, tier: &str, trees: &benches::inputs::MstDiffTrees) {
    let base: HashMap<ACid, Vec<u8>> = trees
        .blocks
        .iter()
        .map(|(c, b)| (acid(c), b.clone()))
        .collect();
    let (old, new) = (acid(&trees.old_root), acid(&trees.new_root));
    let entries = |root: ACid| {
        let tree = Mst::from_root(
            root,
            Overlay {
                base: &base,
                writes: HashMap::new(),
            },
            RepoConfig::default(),
        );
        block_on(tree.entries())
    };
    let diff = || -> Result<Vec<MstDiff>, atproto_repo::errors::MstError> {
        Ok(atproto_repo::mst::diff_entries(
            &entries(old)?,
            &entries(new)?,
        ))
    };
    let c = |c: &atproto_dasl::Cid| crate::peer_roles::cid(&c.to_bytes());
    let rows = |d: &Vec<MstDiff>| -> crate::peer_roles::DiffRows {
        d.iter()
            .map(|d| match d {
                MstDiff::Add { key, cid } => (key.clone(), None, Some(c(cid))),
                MstDiff::Update {
                    key,
                    old_cid,
                    new_cid,
                } => (key.clone(), Some(c(old_cid)), Some(c(new_cid))),
                MstDiff::Delete { key, cid } => (key.clone(), Some(c(cid)), None),
            })
            .collect()
    };
    crate::peer_roles::mst_diff_row(group, NAME, tier, trees, diff, rows, Vec::len);
}
