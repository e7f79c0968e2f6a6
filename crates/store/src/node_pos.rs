//! Where an MST node's row sits in `repo_blocks` (schema v6): the key
//! `(did, pos, cid)` clusters each account's nodes by the part of its key
//! space they cover, instead of by their (random) CIDs.
//!
//! Why: with rows keyed `(did, cid)`, every node a commit writes or
//! releases landed on its own random b-tree page, so a commit's WAL frames
//! grew with the tree (`store.apply_commit/ours.nosync/{1k,10k,100k}`, all
//! of the growth in `repo_blocks`). Keyed by position, the nodes
//! on one key's path that replace each other share pages, and the few
//! upper nodes are on the same hot pages commit after commit.
//!
//! **The position rule.** A node's position is fixed by its parent's
//! entries, so it is known before the node is read:
//! - the root of an account's current tree is at [`ROOT_POS`];
//! - the subtree right of entry `e` is at [`key_position`]`(e)`, the
//!   leftmost subtree of a node with entries at `key_position(e0)` of its
//!   first entry, and the only subtree of a node with no entries at
//!   [`UNDER_EMPTY_POS`].
//!
//! A node whose bytes do not change can still change position (its parent
//! gains or loses the neighbouring entry, or it becomes the root); a
//! commit then moves its row ([`BlockOps::moved`]). [`key_position`] is a
//! locality key, not a unique one: the CID keeps rows apart.
//!
//! **Lookups.** [`NodePositions`] remembers, for each node of one
//! account's tree that a commit may read next, where its row is: the root,
//! the children of every node read from SQLite, and the children of every
//! node a commit wrote. It belongs to the account's lane (`lane.rs`), the
//! one owner of the account's commit state, so it is never behind the
//! rows: a node it does not know, or a row missing where it says, is a
//! corrupt store, not a cue to scan. A commit forgets the nodes it
//! releases as it plans (a commit that does not land drops the lane, which
//! reloads from the rows).

use std::cell::RefCell;

use repo::Cid;
use repo::cid::CidMap;
use repo::mst::Node;

/// Position of an account's current MST root.
pub(crate) const ROOT_POS: i64 = 0;
/// Position of the subtree of a node with no entries.
pub(crate) const UNDER_EMPTY_POS: i64 = 1;

/// The locality key of an MST key `collection/rkey`: 15 bits of a hash of
/// the collection, then 48 bits that follow the record key's order — a
/// TID's microseconds (its clock id dropped), else the key's first six
/// bytes. Keys close in one collection get close positions.
pub(crate) fn key_position(key: &[u8]) -> i64 {
    let slash = key.iter().position(|&b| b == b'/').unwrap_or(key.len());
    let (collection, rest) = key.split_at(slash);
    path_position(collection, rest.get(1..).unwrap_or_default())
}

/// [`key_position`] of the key `collection/rkey`, from its two halves.
pub(crate) fn path_position(collection: &[u8], rkey: &[u8]) -> i64 {
    // FNV-1a over the collection.
    let mut h: u32 = 0x811c_9dc5;
    for &b in collection {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    let order = tid_micros(rkey).unwrap_or_else(|| {
        (0..6).fold(0u64, |v, i| {
            (v << 8) | u64::from(rkey.get(i).copied().unwrap_or(0))
        })
    });
    ((u64::from(h & 0x7fff) << 48) | (order & ((1 << 48) - 1))) as i64
}

/// A 13-character TID's timestamp (its top 53 bits after the zero bit).
fn tid_micros(rkey: &[u8]) -> Option<u64> {
    if rkey.len() != 13 {
        return None;
    }
    let mut v = 0u64;
    for &c in rkey {
        let digit = match c {
            b'2'..=b'7' => c - b'2',
            b'a'..=b'z' => c - b'a' + 6,
            _ => return None,
        };
        v = (v << 5) | u64::from(digit);
    }
    Some(v >> 10)
}

/// Calls `f(child, position)` for each subtree of `node`.
pub(crate) fn for_each_child(node: &Node, mut f: impl FnMut(Cid, i64)) {
    if let Some(left) = node.left {
        let pos = match node.entries.first() {
            Some(e) => key_position(e.key_bytes()),
            None => UNDER_EMPTY_POS,
        };
        f(left, pos);
    }
    for e in &node.entries {
        if let Some(right) = e.right {
            f(right, key_position(e.key_bytes()));
        }
    }
}

/// What a commit does to `repo_blocks` rows besides its record rows.
#[derive(Debug, Default, Clone)]
pub(crate) struct BlockOps {
    /// Position of each new block, index for index with the commit's
    /// `new_blocks`.
    pub put: Vec<i64>,
    /// Released nodes and where their rows are (`None`: not known, which
    /// the commit refuses before writing, see [`BlockOps::unknown`]).
    pub released: Vec<(Cid, Option<i64>)>,
    /// Unchanged nodes whose position changed: from (if known), to.
    pub moved: Vec<(Cid, Option<i64>, i64)>,
}

impl BlockOps {
    /// A released or moved node whose row's position was not known.
    pub(crate) fn unknown(&self) -> Option<Cid> {
        let released = self.released.iter().find(|r| r.1.is_none()).map(|r| r.0);
        released.or_else(|| self.moved.iter().find(|m| m.1.is_none()).map(|m| m.0))
    }
}

/// Known row positions of one account's MST nodes (see the module docs),
/// bounded.
#[derive(Debug)]
pub(crate) struct NodePositions {
    map: CidMap<i64>,
    capacity: usize,
}

impl NodePositions {
    /// Remembers at most `capacity` positions.
    pub(crate) fn new(capacity: usize) -> Self {
        NodePositions {
            map: CidMap::default(),
            capacity,
        }
    }

    /// Where `cid`'s row is, if known.
    pub(crate) fn get(&self, cid: &Cid) -> Option<i64> {
        self.map.get(cid).copied()
    }

    /// True when full: the owner drops these and its decoded nodes
    /// together ([`clear`](Self::clear)), since a cached node whose
    /// children are forgotten could not be read under.
    pub(crate) fn is_full(&self) -> bool {
        self.map.len() >= self.capacity
    }

    /// Forgets every position.
    pub(crate) fn clear(&mut self) {
        self.map.clear();
    }

    /// Notes that `cid`'s row is at `pos`.
    pub(crate) fn note(&mut self, cid: Cid, pos: i64) {
        self.map.insert(cid, pos);
    }

    /// Notes the positions of the children of a node just read (bytes that
    /// do not decode are left to the MST's decoder to report).
    pub(crate) fn note_children(&mut self, bytes: &[u8]) {
        if let Ok(node) = Node::decode(bytes) {
            for_each_child(&node, |c, p| {
                self.map.insert(c, p);
            });
        }
    }

    /// The row operations of a commit from the tree rooted at `base`
    /// (`None`: none kept) to the one rooted at `root`, with `new_blocks`
    /// written and `removed` released; notes the new positions and forgets
    /// the released nodes. Walks the new nodes from the root (every
    /// ancestor of a new node is new): each child of a new node is put at
    /// its position if new, else moved there if it was elsewhere. (An
    /// import passes every block of its CAR as new, and gets each reachable
    /// node's position.)
    pub(crate) fn commit_ops(
        &mut self,
        base: Option<Cid>,
        root: Cid,
        new_blocks: &[(Cid, Vec<u8>)],
        removed: &[Cid],
    ) -> BlockOps {
        // The base tree's root is at the root's position whatever was last
        // noted for its CID (the empty tree's root is one node shared by
        // every new account).
        if let Some(base) = base {
            self.note(base, ROOT_POS);
        }
        let index: Option<CidMap<usize>> = (new_blocks.len() > 16).then(|| {
            new_blocks
                .iter()
                .enumerate()
                .map(|(i, b)| (b.0, i))
                .collect()
        });
        let find = |cid: &Cid| match &index {
            Some(m) => m.get(cid).copied(),
            None => new_blocks.iter().position(|b| b.0 == *cid),
        };
        let mut ops = BlockOps {
            // A new block the walk does not reach (none, for a commit's own
            // blocks; an import's commit block) gets the root's position.
            put: vec![ROOT_POS; new_blocks.len()],
            ..BlockOps::default()
        };
        // Every node of the new tree the walk reaches.
        let mut reached = Vec::new();
        let mut stack = vec![(root, ROOT_POS)];
        while let Some((cid, pos)) = stack.pop() {
            match find(&cid) {
                Some(i) => {
                    ops.put[i] = pos;
                    if let Ok(node) = Node::decode(&new_blocks[i].1) {
                        for_each_child(&node, |c, p| stack.push((c, p)));
                    }
                }
                None => {
                    let was = self.get(&cid);
                    if was != Some(pos) {
                        ops.moved.push((cid, was, pos));
                    }
                }
            }
            self.map.insert(cid, pos);
            reached.push(cid);
        }
        // A released node goes from the map too, unless the commit also
        // reached it (a node that left and came back in one commit):
        // otherwise the map would fill with every node ever released.
        for cid in removed {
            ops.released.push((*cid, self.get(cid)));
            if !reached.contains(cid) {
                self.map.remove(cid);
            }
        }
        ops
    }
}

/// A [`NodePositions`] shared by the block source that reads and the plan
/// that writes.
pub(crate) type SharedPositions = RefCell<NodePositions>;

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use repo::mst::{MemoryBlockStore, Mst};

    use super::*;

    #[test]
    fn tid_positions_follow_time_within_a_collection() {
        let a = key_position(b"app.bsky.feed.post/3kaaaaaaaaaa2");
        let b = key_position(b"app.bsky.feed.post/3kaaaaaaaab22");
        let c = key_position(b"app.bsky.feed.like/3kaaaaaaaaaa2");
        assert!(a < b);
        assert_eq!(path_position(b"app.bsky.feed.post", b"3kaaaaaaaaaa2"), a);
        assert_eq!(a >> 48, b >> 48);
        assert_ne!(a >> 48, c >> 48);
        // Clock ids do not move a TID's position.
        assert_eq!(
            key_position(b"a.b.c/3kaaaaaaaaaa2"),
            key_position(b"a.b.c/3kaaaaaaaaaa7")
        );
        // Other record keys: their first bytes.
        assert!(key_position(b"a.b.c/aa") < key_position(b"a.b.c/ab"));
        assert!(key_position(b"a.b.c/self") >= 0);
    }

    /// Where every node of the tree at `root` belongs, by a full walk.
    fn expected(store: &MemoryBlockStore, root: Cid) -> HashMap<Cid, i64> {
        let mut out = HashMap::new();
        let mut stack = vec![(root, ROOT_POS)];
        while let Some((cid, pos)) = stack.pop() {
            let node = Node::decode(store.get(&cid).expect("node stored")).expect("node decodes");
            for_each_child(&node, |c, p| stack.push((c, p)));
            assert!(out.insert(cid, pos).is_none(), "a node reached twice");
        }
        out
    }

    #[test]
    fn commit_ops_keep_every_row_at_its_position() {
        // Rows as `repo_blocks` would hold them, kept by nothing but the
        // ops of each commit, against a full walk after each one. Keys from
        // a small space with many deletes, so roots grow and shrink, entries
        // come and go beside unchanged subtrees, and nodes move.
        let mut blocks = MemoryBlockStore::new();
        let mut rows: HashMap<Cid, i64> = HashMap::new();
        let mut positions = NodePositions::new(usize::MAX);
        let mut root = {
            let mut t = Mst::empty(MemoryBlockStore::new());
            let c = t.commit().unwrap();
            for (cid, bytes) in c.new_blocks {
                rows.insert(cid, ROOT_POS);
                blocks.put(cid, bytes);
            }
            c.root
        };
        let leaf = Cid::for_dag_cbor(b"leaf");
        let mut rng: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut moved = 0;
        for step in 0..1500 {
            let mut t = Mst::load(&blocks, root);
            // One to three writes per commit (applyWrites).
            for _ in 0..1 + next() % 3 {
                let r = next();
                let key = if r % 5 == 0 {
                    format!("app.bsky.actor.profile/k{}", r % 40)
                } else {
                    format!("app.bsky.feed.post/3k{:011}", (r >> 8) % 400)
                };
                if step > 200 && r % 2 == 0 {
                    t.delete(&key).unwrap();
                } else {
                    t.insert(&key, leaf).unwrap();
                }
            }
            let c = t.commit().unwrap();
            drop(t);
            let ops = positions.commit_ops(Some(root), c.root, &c.new_blocks, &c.removed);
            for (cid, at) in &ops.released {
                assert_eq!(rows.remove(cid), *at, "released row where noted");
            }
            for (cid, from, to) in &ops.moved {
                assert_eq!(rows.insert(*cid, *to), *from, "moved row where noted");
                moved += 1;
            }
            for ((cid, bytes), pos) in c.new_blocks.iter().zip(&ops.put) {
                assert!(rows.insert(*cid, *pos).is_none(), "new row already there");
                blocks.put(*cid, bytes.clone());
            }
            root = c.root;
            assert_eq!(rows, expected(&blocks, root), "rows after commit {step}");
            if step > 0 {
                for (cid, pos) in &rows {
                    assert_eq!(
                        positions.get(cid),
                        Some(*pos),
                        "positions after commit {step}"
                    );
                }
                // Released nodes are forgotten: nothing but the live rows
                // stays noted.
                assert_eq!(
                    positions.map.len(),
                    rows.len(),
                    "positions size after {step}"
                );
            }
        }
        assert!(
            moved > 0,
            "no commit moved a node: the test lost its edge cases"
        );
    }
}
