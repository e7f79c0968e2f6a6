//! [`Mst`]: a lazily loaded, editable tree over a [`BlockSource`].

use std::collections::HashSet;
use std::sync::Arc;

use super::edit;
use super::loader::{Fresh, Loader, NodeCache};
use super::mutnode::{Link, MutEntry, MutNode};
use super::node::{Key, Node, encode_node};
use super::source::BlockSource;
use super::{MAX_LAYER, MstError, key_height, validate_key};
use crate::cid::{Cid, CidBuildHasher, CidMap};

/// What a commit of the edits produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MstCommit {
    /// The new root CID.
    pub root: Cid,
    /// Node blocks the new tree has that the previous one did not.
    pub new_blocks: Vec<(Cid, Vec<u8>)>,
    /// Node CIDs the previous tree had that the new one does not.
    pub removed: Vec<Cid>,
}

/// One change for [`Mst::apply`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteOp {
    /// Create or update `key` to point at `cid`.
    Put {
        /// `collection/rkey`.
        key: String,
        /// The record CID.
        cid: Cid,
    },
    /// Remove `key`.
    Delete {
        /// `collection/rkey`.
        key: String,
    },
}

impl WriteOp {
    /// The key it touches.
    pub fn key(&self) -> &str {
        match self {
            WriteOp::Put { key, .. } | WriteOp::Delete { key } => key,
        }
    }
}

/// The result of [`Mst::apply`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteResult {
    /// Root, new blocks and removed CIDs.
    pub commit: MstCommit,
    /// Each op's previous value (None: the key was absent).
    pub previous: Vec<Option<Cid>>,
    /// The covering proof of every changed key in the new tree: the node
    /// CIDs a `#commit` CAR slice must carry so the ops can be inverted.
    pub proof: Vec<Cid>,
}

/// An MST loaded lazily from a block source and edited in memory.
pub struct Mst<S> {
    pub(crate) ld: Loader<S>,
    pub(crate) root: Link,
    layer: Option<u8>,
}

impl<S: BlockSource> Mst<S> {
    /// The tree rooted at `root`; nothing is read until needed.
    pub fn load(source: S, root: Cid) -> Self {
        Mst::with_cache(source, root, NodeCache::default())
    }

    /// Like [`load`](Self::load), reusing a node cache.
    pub fn with_cache(source: S, root: Cid, mut cache: NodeCache) -> Self {
        Mst {
            ld: Loader {
                source,
                pool: std::mem::take(&mut cache.spare),
                cache,
                fresh: CidMap::default(),
                replaced: Vec::new(),
                cache_opened: true,
            },
            root: Link::Stored(root),
            layer: None,
        }
    }

    /// A one-shot tree for verification: like
    /// [`with_cache`](Self::with_cache) with `scratch`'s cache (cleared),
    /// and nodes opened for editing are decoded straight into editable form
    /// (into `scratch`'s emptied nodes, not through the cache).
    pub(crate) fn one_shot(source: S, root: Cid, scratch: Scratch) -> Self {
        let Scratch {
            mut cache,
            mut replaced,
            pool,
        } = scratch;
        cache.clear();
        replaced.clear();
        let mut m = Mst::with_cache(source, root, cache);
        m.ld.replaced = replaced;
        m.ld.pool = pool;
        m.ld.cache_opened = false;
        m
    }

    /// Ends a [`one_shot`](Self::one_shot) tree, giving its scratch space
    /// back: the cache, and the edited nodes emptied for reuse.
    pub(crate) fn into_scratch(self) -> Scratch {
        let Mst { ld, root, .. } = self;
        let mut pool = ld.pool;
        recycle(root, &mut pool);
        Scratch {
            cache: ld.cache,
            replaced: ld.replaced,
            pool,
        }
    }

    /// An empty tree.
    pub fn empty(source: S) -> Self {
        let mut m = Mst::load(source, Cid::new(crate::cid::Codec::DagCbor, [0; 32]));
        m.root = Link::Dirty(Box::default());
        m.layer = Some(0);
        m
    }

    /// Gives back the node cache (for the next tree over the same source).
    pub fn into_cache(self) -> NodeCache {
        self.into_cache_keeping(false)
    }

    /// Like [`into_cache`](Self::into_cache), with the nodes this tree's
    /// commits made (and did not replace since) added to the cache,
    /// decoded: a tree opened next at this tree's committed root, as a
    /// repository's next commit is, then finds its path in the cache
    /// instead of reading it back from the source it was just written to.
    /// Only for a source that stores what the commits return (a node that
    /// never reached the source stays reachable only through CIDs that
    /// name its exact content, so it is never wrong, merely unused).
    pub fn into_cache_with_new_nodes(self) -> NodeCache {
        self.into_cache_keeping(true)
    }

    /// The cache, with this tree's edited nodes emptied into its spare
    /// nodes (for the next tree's edits), after adding each committed one
    /// to it decoded when `keep_new`.
    fn into_cache_keeping(self, keep_new: bool) -> NodeCache {
        let Mst { ld, root, .. } = self;
        let Loader {
            mut cache,
            fresh,
            pool,
            ..
        } = ld;
        let mut spare = pool;
        for (cid, f) in fresh {
            match f {
                Fresh::Decoded(node) if keep_new => cache.insert(cid, node),
                Fresh::Decoded(_) => {}
                Fresh::Edited(m) => {
                    if keep_new && let Ok(node) = m.to_node() {
                        cache.insert(cid, Arc::new(node));
                    }
                    recycle(Link::Dirty(m), &mut spare);
                }
            }
        }
        recycle(root, &mut spare);
        cache.spare = spare;
        cache
    }

    /// The block source.
    pub fn source(&self) -> &S {
        &self.ld.source
    }

    /// Mutable access to the block source (for example to store committed
    /// blocks).
    pub fn source_mut(&mut self) -> &mut S {
        &mut self.ld.source
    }

    /// The record CID under `key`.
    pub fn get(&mut self, key: &str) -> Result<Option<Cid>, MstError> {
        let key = key.as_bytes();
        let mut cur = match &self.root {
            Link::Stored(c) => Some(*c),
            Link::Dirty(n) => match get_dirty(n, key) {
                DirtyHit::Found(v) => return Ok(Some(v)),
                DirtyHit::Absent => return Ok(None),
                DirtyHit::Stored(c) => Some(c),
            },
        };
        let mut depth = 0;
        while let Some(cid) = cur {
            let node = self.ld.node(&cid)?;
            match node.search(key) {
                Ok(i) => return Ok(Some(node.entries[i].value)),
                Err(i) => cur = node.gap(i),
            }
            depth += 1;
            if depth > MAX_LAYER as usize + 1 {
                return Err(MstError::malformed("tree deeper than the layer limit"));
            }
        }
        Ok(None)
    }

    /// The root node's layer.
    pub fn layer(&mut self) -> Result<u8, MstError> {
        if let Some(l) = self.layer {
            return Ok(l);
        }
        let root = match &self.root {
            Link::Stored(c) => *c,
            Link::Dirty(_) => return Err(MstError::malformed("unknown layer of edited root")),
        };
        if !self.ld.cache_opened {
            // A one-shot tree edits its root anyway: decode it once, in
            // editable form, and read the layer off its first key.
            if let Some(e) = self.ld.open(&mut self.root)?.entries.first() {
                let l = key_height(&e.key);
                self.layer = Some(l);
                return Ok(l);
            }
        }
        let l = self.ld.layer_of(root)?;
        self.layer = Some(l);
        Ok(l)
    }

    /// Creates or updates `key`; returns the previous value.
    pub fn insert(&mut self, key: &str, value: Cid) -> Result<Option<Cid>, MstError> {
        validate_key(key)?;
        let height = key_height(key.as_bytes());
        let layer = self.layer()?;
        let k = Key::new(key.as_bytes());
        if height <= layer {
            return edit::insert(&mut self.ld, &mut self.root, layer, k, height, value);
        }
        // The key goes above the current root: split the whole tree.
        let old = std::mem::replace(&mut self.root, Link::Dirty(Box::default()));
        let (mut lo, mut hi) = if self.is_empty_tree(&old)? {
            if let Link::Stored(c) = old {
                self.ld.fresh.remove(&c);
                self.ld.replaced.push(c);
            }
            (None, None)
        } else {
            edit::split(&mut self.ld, old, layer, &k)?
        };
        for _ in layer + 1..height {
            lo = lo.map(edit::wrap);
            hi = hi.map(edit::wrap);
        }
        self.root = Link::Dirty(Box::new(MutNode {
            origin: None,
            left: lo,
            entries: vec![MutEntry {
                key: k,
                value,
                right: hi,
            }],
        }));
        self.layer = Some(height);
        Ok(None)
    }

    fn is_empty_tree(&mut self, link: &Link) -> Result<bool, MstError> {
        Ok(match link {
            Link::Dirty(n) => n.is_empty(),
            Link::Stored(c) => {
                let n = self.ld.node(c)?;
                n.entries.is_empty() && n.left.is_none()
            }
        })
    }

    /// Removes `key`; returns its value (None when it was absent).
    pub fn delete(&mut self, key: &str) -> Result<Option<Cid>, MstError> {
        validate_key(key)?;
        if self.get(key)?.is_none() {
            return Ok(None);
        }
        let height = key_height(key.as_bytes());
        let layer = self.layer()?;
        if height > layer {
            return Err(MstError::malformed("key found above the root layer"));
        }
        let removed = edit::delete(&mut self.ld, &mut self.root, layer, key.as_bytes(), height)?;
        self.trim_top()?;
        Ok(removed)
    }

    /// [`delete`](Self::delete) with its lookup run only when the key is
    /// not removed (to give the same answer or error as `delete`): the
    /// present key, the common case, is found and removed in one descent.
    /// An absent key may leave nodes on its path opened for editing
    /// (re-encoded unchanged), so this is for callers that treat an absent
    /// key as a failure (verification).
    pub(crate) fn delete_present(&mut self, key: &str) -> Result<Option<Cid>, MstError> {
        validate_key(key)?;
        let height = key_height(key.as_bytes());
        let layer = self.layer()?;
        if height <= layer {
            let removed =
                edit::delete(&mut self.ld, &mut self.root, layer, key.as_bytes(), height)?;
            if removed.is_some() {
                self.trim_top()?;
                return Ok(removed);
            }
        }
        match self.get(key)? {
            Some(_) if height > layer => Err(MstError::malformed("key found above the root layer")),
            _ => Ok(None),
        }
    }

    /// Drops root nodes left with no entries (the root is always at the
    /// highest key's layer).
    fn trim_top(&mut self) -> Result<(), MstError> {
        loop {
            let left = match &mut self.root {
                Link::Dirty(n) if n.entries.is_empty() => n.left.take(),
                Link::Dirty(_) => return Ok(()),
                Link::Stored(c) => {
                    let c = *c;
                    let n = self.ld.node(&c)?;
                    if !n.entries.is_empty() || n.left.is_none() {
                        return Ok(());
                    }
                    self.ld.fresh.remove(&c);
                    self.ld.replaced.push(c);
                    n.left.map(Link::Stored)
                }
            };
            match left {
                Some(l) => {
                    self.root = l;
                    let layer = self.layer()?;
                    self.layer = Some(
                        layer
                            .checked_sub(1)
                            .ok_or(MstError::malformed("subtree below layer 0"))?,
                    );
                }
                None => {
                    self.root = Link::Dirty(Box::default());
                    self.layer = Some(0);
                    return Ok(());
                }
            }
        }
    }

    /// Applies `ops` in order, commits, and computes the covering proof of
    /// every touched key.
    pub fn apply(&mut self, ops: &[WriteOp]) -> Result<WriteResult, MstError> {
        let mut previous = Vec::with_capacity(ops.len());
        for op in ops {
            previous.push(match op {
                WriteOp::Put { key, cid } => self.insert(key, *cid)?,
                WriteOp::Delete { key } => self.delete(key)?,
            });
        }
        let commit = self.commit()?;
        let mut proof = Vec::new();
        // Keyed like every CID map (CidBuildHasher), not by SipHash.
        let mut seen = HashSet::with_hasher(CidBuildHasher::default());
        for op in ops {
            for cid in self.covering_proof(op.key())? {
                if seen.insert(cid) {
                    proof.push(cid);
                }
            }
        }
        Ok(WriteResult {
            commit,
            previous,
            proof,
        })
    }

    /// The root CID with the pending edits applied, computed without
    /// committing: edited nodes are hashed but stay edited and no block
    /// bytes are kept (for verification, where nothing will be stored).
    pub fn root(&self) -> Result<Cid, MstError> {
        let mut buf = Vec::with_capacity(1024);
        self.root_with(&mut buf, &PlainHasher)
    }

    /// [`root`](Self::root) encoding into a caller's scratch buffer and
    /// hashing each edited node with `hasher`.
    pub(crate) fn root_with(
        &self,
        buf: &mut Vec<u8>,
        hasher: &impl NodeHasher,
    ) -> Result<Cid, MstError> {
        Ok(hash_link(&self.root, buf, hasher))
    }

    /// Hashes every edited node; returns the new root, the node blocks to
    /// add and the node CIDs no longer referenced since the last commit (or
    /// the load). Committed nodes stay readable from this tree even before
    /// the caller stores the new blocks.
    pub fn commit(&mut self) -> Result<MstCommit, MstError> {
        // One write dirties about one node per layer: size for that.
        let expect = self.ld.replaced.len() + 4;
        let mut blocks = Vec::with_capacity(expect);
        self.ld.fresh.reserve(expect);
        let root = {
            let mut ctx = Finalize {
                out: &mut blocks,
                fresh: &mut self.ld.fresh,
            };
            ctx.link(&mut self.root)
        };
        let mut replaced = std::mem::take(&mut self.ld.replaced);
        let removed = if replaced.len().saturating_mul(blocks.len()) <= 256 {
            // One write: about one CID per layer on each side. Linear
            // scans with inlined equality beat hashing or sorting them.
            let mut removed: Vec<Cid> = Vec::with_capacity(replaced.len());
            for c in &replaced {
                if !removed.contains(c) && !blocks.iter().any(|b| b.0 == *c) {
                    removed.push(*c);
                }
            }
            if !replaced.is_empty() {
                blocks.retain(|b| !replaced.contains(&b.0));
            }
            removed.sort_unstable();
            removed
        } else {
            // Batches: sorted vectors, no hashing.
            replaced.sort_unstable();
            replaced.dedup();
            let mut made: Vec<Cid> = blocks.iter().map(|b| b.0).collect();
            made.sort_unstable();
            blocks.retain(|b| replaced.binary_search(&b.0).is_err());
            replaced.retain(|c| made.binary_search(c).is_err());
            replaced
        };
        Ok(MstCommit {
            root,
            new_blocks: blocks,
            removed,
        })
    }

    /// The canonical bytes of the node `cid` (from this tree's fresh nodes,
    /// the cache or the source).
    pub fn node_bytes(&mut self, cid: &Cid) -> Result<Vec<u8>, MstError> {
        Ok(self.ld.node(cid)?.to_block().1)
    }

    /// The decoded node `cid`.
    pub fn node(&mut self, cid: &Cid) -> Result<Arc<Node>, MstError> {
        self.ld.node(cid)
    }
}

/// Scratch space a one-shot tree ([`Mst::one_shot`]) borrows and gives
/// back ([`Mst::into_scratch`]), so a verifier reuses it call after call.
pub(crate) struct Scratch {
    cache: NodeCache,
    replaced: Vec<Cid>,
    #[allow(clippy::vec_box)] // the boxes are what is reused
    pool: Vec<Box<MutNode>>,
}

impl Scratch {
    /// Empty scratch with this node cache.
    pub(crate) fn new(cache: NodeCache) -> Self {
        Scratch {
            cache,
            replaced: Vec::new(),
            pool: Vec::new(),
        }
    }
}

/// At most this many emptied nodes are kept for reuse (a frame edits about
/// one node per layer).
const POOL_MAX: usize = 64;
/// Entry lists longer than this are freed rather than kept.
const POOL_ENTRIES_MAX: usize = 256;

/// Empties every edited node under `link` into `pool` (children first);
/// stored links and nodes past [`POOL_MAX`] are just dropped.
#[allow(clippy::vec_box)] // the boxes are what is reused
fn recycle(link: Link, pool: &mut Vec<Box<MutNode>>) {
    let Link::Dirty(mut node) = link else {
        return;
    };
    if let Some(l) = node.left.take() {
        recycle(l, pool);
    }
    for e in node.entries.drain(..) {
        if let Some(r) = e.right {
            recycle(r, pool);
        }
    }
    if pool.len() < POOL_MAX {
        // An outsized node (hostile or rare) does not pin its list.
        if node.entries.capacity() > POOL_ENTRIES_MAX {
            node.entries = Vec::new();
        }
        pool.push(node);
    }
}

enum DirtyHit {
    Found(Cid),
    Absent,
    Stored(Cid),
}

fn get_dirty(mut n: &MutNode, key: &[u8]) -> DirtyHit {
    loop {
        let next = match n.search(key) {
            Ok(i) => return DirtyHit::Found(n.entries[i].value),
            Err(0) => n.left.as_ref(),
            Err(i) => n.entries[i - 1].right.as_ref(),
        };
        match next {
            None => return DirtyHit::Absent,
            Some(Link::Stored(c)) => return DirtyHit::Stored(*c),
            Some(Link::Dirty(d)) => n = d,
        }
    }
}

/// Turns an edited node's canonical bytes into its CID.
pub(crate) trait NodeHasher {
    /// The dag-cbor CID of `bytes`, the encoding of an edited node that was
    /// opened from the stored node `origin` (None: made by the edit). Must
    /// equal `Cid::for_dag_cbor(bytes)`; `origin` only lets an
    /// implementation reuse work done on the stored node's bytes.
    fn node_cid(&self, origin: Option<&Cid>, bytes: &[u8]) -> Cid;
}

/// [`NodeHasher`] that hashes every byte.
pub(crate) struct PlainHasher;

impl NodeHasher for PlainHasher {
    #[inline]
    fn node_cid(&self, _origin: Option<&Cid>, bytes: &[u8]) -> Cid {
        Cid::for_dag_cbor(bytes)
    }
}

/// The CID of a subtree, hashing edited nodes without changing them.
fn hash_link(link: &Link, buf: &mut Vec<u8>, hasher: &impl NodeHasher) -> Cid {
    let node = match link {
        Link::Stored(c) => return *c,
        Link::Dirty(n) => n,
    };
    let left = node.left.as_ref().map(|l| hash_link(l, buf, hasher));
    // Child CIDs first (most nodes are small: no allocation for <= 16).
    let mut small = [None; 16];
    let mut large = Vec::new();
    let rights: &mut [Option<Cid>] = if node.entries.len() <= small.len() {
        &mut small[..node.entries.len()]
    } else {
        large.resize(node.entries.len(), None);
        &mut large
    };
    for (slot, e) in rights.iter_mut().zip(&node.entries) {
        *slot = e.right.as_ref().map(|r| hash_link(r, buf, hasher));
    }
    buf.clear();
    encode_node(
        buf,
        left.as_ref(),
        node.entries.len(),
        node.entries
            .iter()
            .zip(rights.iter())
            .map(|(e, r)| (&*e.key, &e.value, r.as_ref())),
    );
    hasher.node_cid(node.origin.as_ref(), buf)
}

/// Post-order hashing of dirty nodes for a commit: each becomes stored,
/// its bytes are kept, and it stays readable (as [`Fresh`]).
struct Finalize<'a> {
    out: &'a mut Vec<(Cid, Vec<u8>)>,
    fresh: &'a mut CidMap<Fresh>,
}

impl Finalize<'_> {
    fn link(&mut self, link: &mut Link) -> Cid {
        let node = match link {
            Link::Stored(c) => return *c,
            Link::Dirty(n) => n,
        };
        // Children first: each edited child link becomes stored.
        if let Some(l) = &mut node.left {
            self.link(l);
        }
        for e in &mut node.entries {
            if let Some(r) = &mut e.right {
                self.link(r);
            }
        }
        // An entry with both links is ~95 bytes plus its key suffix: 128
        // per entry covers that and a ~30-byte suffix.
        let mut bytes = Vec::with_capacity(16 + 128 * node.entries.len());
        encode_node(
            &mut bytes,
            stored(&node.left),
            node.entries.len(),
            node.entries
                .iter()
                .map(|e| (&*e.key, &e.value, stored(&e.right))),
        );
        let cid = Cid::for_dag_cbor(&bytes);
        self.out.push((cid, bytes));
        if let Link::Dirty(n) = std::mem::replace(link, Link::Stored(cid)) {
            self.fresh.insert(cid, Fresh::Edited(n));
        }
        cid
    }
}

/// The CID of a link [`Finalize`] has stored (every link it leaves is).
#[inline]
fn stored(link: &Option<Link>) -> Option<&Cid> {
    match link {
        Some(Link::Stored(c)) => Some(c),
        _ => None,
    }
}
