//! Where a tree's nodes come from: the [`Loader`] (nodes the tree hashed
//! itself, then the [`NodeCache`], then the block source) and the editable
//! nodes it opens from them.

use std::sync::Arc;

use super::mutnode::{Link, MutNode};
use super::node::Node;
use super::source::BlockSource;
use super::{MAX_LAYER, MstError, key_height};
use crate::cid::{Cid, CidMap};

/// Decoded nodes by CID, bounded (cleared when full). Carry one from one
/// [`Mst`](super::Mst) to the next with
/// [`Mst::with_cache`](super::Mst::with_cache) /
/// [`Mst::into_cache`](super::Mst::into_cache) to keep hot paths decoded
/// across writes.
#[derive(Debug)]
pub struct NodeCache {
    map: CidMap<Arc<Node>>,
    capacity: usize,
    /// Emptied editable nodes, kept from one tree to the next (see
    /// [`Mst::into_cache`](super::Mst::into_cache)): opening a path node
    /// for an edit refills one instead of allocating a node and its entry
    /// list. A 100k-key tree's path nodes hold more entries, and their
    /// lists outgrew glibc's per-thread cache (1 KiB), so allocating them
    /// fresh took its slower bins on every add.
    #[allow(clippy::vec_box)] // the boxes are what is reused
    pub(crate) spare: Vec<Box<MutNode>>,
}

impl Clone for NodeCache {
    /// The cached nodes (shared); the spare nodes stay with the original.
    fn clone(&self) -> Self {
        NodeCache {
            map: self.map.clone(),
            capacity: self.capacity,
            spare: Vec::new(),
        }
    }
}

impl Default for NodeCache {
    fn default() -> Self {
        NodeCache::new(1 << 16)
    }
}

impl NodeCache {
    /// A cache holding at most `capacity` nodes (0 disables caching).
    pub fn new(capacity: usize) -> Self {
        NodeCache {
            map: CidMap::default(),
            capacity,
            spare: Vec::new(),
        }
    }

    /// Like [`new`](Self::new), with room for `expected` nodes before the
    /// map first grows.
    pub fn with_capacity(capacity: usize, expected: usize) -> Self {
        NodeCache {
            map: CidMap::with_capacity_and_hasher(expected.min(capacity), Default::default()),
            capacity,
            spare: Vec::new(),
        }
    }

    /// Number of cached nodes.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Drops every cached node.
    pub fn clear(&mut self) {
        self.map.clear();
    }

    pub(crate) fn insert(&mut self, cid: Cid, node: Arc<Node>) {
        if self.capacity == 0 {
            return;
        }
        if self.map.len() >= self.capacity {
            self.map.clear();
        }
        self.map.insert(cid, node);
    }
}

/// Loads nodes: nodes made by this tree first, then the cache, then the
/// source. Records which stored nodes edits replaced.
pub(crate) struct Loader<S> {
    pub source: S,
    pub cache: NodeCache,
    /// Nodes this tree hashed and has not replaced since (not evictable:
    /// the source may not hold them yet).
    pub fresh: CidMap<Fresh>,
    /// Stored nodes replaced by edits since the last commit.
    pub replaced: Vec<Cid>,
    /// Emptied editable nodes to decode into (one-shot trees only; see
    /// [`Scratch`](super::Scratch)). Boxed because the boxes are what is
    /// reused: an opened node goes into its [`Link`] as is.
    #[allow(clippy::vec_box)]
    pub pool: Vec<Box<MutNode>>,
    /// Whether a node opened for editing that is in neither `fresh` nor
    /// the cache goes through the cache (true) or is decoded straight into
    /// editable form (false: a one-shot tree, as in verification, where
    /// the stored form would never be read again).
    pub cache_opened: bool,
}

/// A node hashed by a commit of this tree, kept as it was edited until
/// something reads it (most are never read again, or only reopened for
/// the next edit, which takes the edited form back as is).
pub(crate) enum Fresh {
    /// The edited node, every link in it stored.
    Edited(Box<MutNode>),
    /// Its decoded form, once read.
    Decoded(Arc<Node>),
}

impl Fresh {
    /// The decoded form (made from the edited one on first use).
    pub(crate) fn decoded(&mut self) -> Result<Arc<Node>, MstError> {
        match self {
            Fresh::Decoded(n) => Ok(n.clone()),
            Fresh::Edited(m) => {
                let n = Arc::new(m.to_node()?);
                *self = Fresh::Decoded(n.clone());
                Ok(n)
            }
        }
    }
}

impl<S: BlockSource> Loader<S> {
    pub fn node(&mut self, cid: &Cid) -> Result<Arc<Node>, MstError> {
        if let Some(f) = self.fresh.get_mut(cid) {
            return f.decoded();
        }
        if let Some(n) = self.cache.map.get(cid) {
            return Ok(n.clone());
        }
        let bytes = self
            .source
            .get_block(cid)?
            .ok_or(MstError::MissingBlock(*cid))?;
        let node = Arc::new(Node::decode(&bytes)?);
        self.cache.insert(*cid, node.clone());
        Ok(node)
    }

    /// The layer of the tree rooted at `root`: its first key's height, or
    /// (for untrimmed roots with only a left subtree) one more than the
    /// subtree's; 0 for the empty tree.
    pub fn layer_of(&mut self, root: Cid) -> Result<u8, MstError> {
        let mut extra = 0u8;
        let mut cur = root;
        let l = loop {
            let node = self.node(&cur)?;
            if let Some(e) = node.entries.first() {
                break key_height(&e.key).saturating_add(extra);
            }
            match node.left {
                Some(l) => cur = l,
                None => break extra,
            }
            extra += 1;
            if extra > MAX_LAYER {
                return Err(MstError::malformed("tree deeper than the layer limit"));
            }
        };
        if l > MAX_LAYER {
            return Err(MstError::malformed("root layer past the limit"));
        }
        Ok(l)
    }

    /// Makes `link` editable (loading it if stored) and returns the node.
    pub fn open<'l>(&mut self, link: &'l mut Link) -> Result<&'l mut MutNode, MstError> {
        if let Link::Stored(cid) = *link {
            let mut node = match self.fresh.remove(&cid) {
                Some(Fresh::Edited(n)) => n,
                Some(Fresh::Decoded(n)) => self.refilled(&n),
                None if self.cache_opened => {
                    let n = self.node(&cid)?;
                    self.refilled(&n)
                }
                None => match self.cache.map.get(&cid).cloned() {
                    Some(n) => self.refilled(&n),
                    None => {
                        let bytes = self
                            .source
                            .get_block(&cid)?
                            .ok_or(MstError::MissingBlock(cid))?;
                        let mut node = self.pool.pop().unwrap_or_default();
                        node.decode_from(&bytes)?;
                        node
                    }
                },
            };
            node.origin = Some(cid);
            self.replaced.push(cid);
            *link = Link::Dirty(node);
        }
        match link {
            Link::Dirty(n) => Ok(n),
            Link::Stored(_) => Err(MstError::malformed("unreachable: link not opened")),
        }
    }

    /// An editable copy of `n`, in a pooled node when there is one.
    fn refilled(&mut self, n: &Node) -> Box<MutNode> {
        let mut m = self.pool.pop().unwrap_or_default();
        m.fill_from(n);
        m
    }

    /// Takes ownership of a subtree's root node as editable.
    pub fn take(&mut self, mut link: Link) -> Result<Box<MutNode>, MstError> {
        self.open(&mut link)?;
        match link {
            Link::Dirty(n) => Ok(n),
            Link::Stored(_) => Err(MstError::malformed("unreachable: link not opened")),
        }
    }
}
