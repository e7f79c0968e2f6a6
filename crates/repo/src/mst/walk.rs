//! Whole-tree walks: leaves in key order, every node CID, and the full
//! structural check.

use std::sync::Arc;

use super::loader::Loader;
use super::node::{Key, Node};
use super::source::BlockSource;
use super::tree::Mst;
use super::{MAX_LAYER, MstError, key_height};
use crate::cid::Cid;

/// Iterator over `(key, record CID)` in key order, loading nodes as it
/// goes. Stops after the first error.
pub struct Leaves<'m, S> {
    ld: &'m mut Loader<S>,
    stack: Vec<(Arc<Node>, usize)>,
    pending: Option<Cid>,
    failed: bool,
}

impl<S: BlockSource> Iterator for Leaves<'_, S> {
    type Item = Result<(String, Cid), MstError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        loop {
            if let Some(cid) = self.pending.take() {
                if self.stack.len() > MAX_LAYER as usize {
                    self.failed = true;
                    return Some(Err(MstError::malformed("tree deeper than the layer limit")));
                }
                match self.ld.node(&cid) {
                    Ok(n) => {
                        self.pending = n.left;
                        self.stack.push((n, 0));
                        continue;
                    }
                    Err(e) => {
                        self.failed = true;
                        return Some(Err(e));
                    }
                }
            }
            let (node, i) = self.stack.last_mut()?;
            if let Some(e) = node.entries.get(*i) {
                *i += 1;
                self.pending = e.right;
                return Some(Ok((e.key().to_owned(), e.value)));
            }
            self.stack.pop();
        }
    }
}

impl<S: BlockSource> Mst<S> {
    /// All leaves in key order (commits pending edits' hashes first, keeping
    /// no block bytes; call [`commit`](Self::commit) before if you need them).
    pub fn leaves(&mut self) -> Result<Leaves<'_, S>, MstError> {
        let root = self.committed_root()?;
        Ok(Leaves {
            ld: &mut self.ld,
            stack: Vec::new(),
            pending: Some(root),
            failed: false,
        })
    }

    /// All `(key, record CID)` pairs in key order.
    pub fn entries(&mut self) -> Result<Vec<(String, Cid)>, MstError> {
        self.leaves()?.collect()
    }

    /// Every node CID of the tree (pre-order), for exports.
    pub fn node_cids(&mut self) -> Result<Vec<Cid>, MstError> {
        let root = self.committed_root()?;
        let mut out = Vec::new();
        let mut todo = vec![(root, 0usize)];
        while let Some((cid, depth)) = todo.pop() {
            if depth > MAX_LAYER as usize {
                return Err(MstError::malformed("tree deeper than the layer limit"));
            }
            out.push(cid);
            let n = self.ld.node(&cid)?;
            for e in n.entries.iter().rev() {
                if let Some(r) = e.right {
                    todo.push((r, depth + 1));
                }
            }
            if let Some(l) = n.left {
                todo.push((l, depth + 1));
            }
        }
        Ok(out)
    }

    /// Checks the whole tree against the MST rules: every key's height
    /// equals its node's layer, subtrees sit exactly one layer down, keys
    /// increase across the whole walk, no empty nodes except an empty root,
    /// the root at the top key's layer. Returns the number of leaves.
    pub fn check_structure(&mut self) -> Result<usize, MstError> {
        let root = self.committed_root()?;
        let layer = self.layer()?;
        let mut last: Option<Key> = None;
        let mut count = 0;
        let top = self.ld.node(&root)?;
        if top.entries.is_empty() && top.left.is_some() {
            return Err(MstError::malformed("root has no entries (not trimmed)"));
        }
        self.check_node(root, layer, &mut last, &mut count, true)?;
        Ok(count)
    }

    fn check_node(
        &mut self,
        cid: Cid,
        layer: u8,
        last: &mut Option<Key>,
        count: &mut usize,
        is_root: bool,
    ) -> Result<(), MstError> {
        let bad = |reason| MstError::Malformed {
            cid: Some(cid),
            reason,
        };
        let n = self.ld.node(&cid)?;
        if !is_root && n.entries.is_empty() && n.left.is_none() {
            return Err(bad("empty non-root node"));
        }
        let child_layer = |has: bool| -> Result<u8, MstError> {
            if has {
                layer.checked_sub(1).ok_or(bad("subtree below layer 0"))
            } else {
                Ok(0)
            }
        };
        if let Some(l) = n.left {
            self.check_node(l, child_layer(true)?, last, count, false)?;
        }
        for e in &n.entries {
            if key_height(&e.key) != layer {
                return Err(bad("key height differs from node layer"));
            }
            if last.as_ref().is_some_and(|l| **l >= *e.key) {
                return Err(bad("keys out of order across nodes"));
            }
            *last = Some(e.key.clone());
            *count += 1;
            if let Some(r) = e.right {
                self.check_node(r, child_layer(true)?, last, count, false)?;
            }
        }
        Ok(())
    }

    /// The root CID; errors while edits are pending.
    pub(crate) fn committed_root(&mut self) -> Result<Cid, MstError> {
        match &self.root {
            super::mutnode::Link::Stored(c) => Ok(*c),
            super::mutnode::Link::Dirty(_) => Err(MstError::Uncommitted),
        }
    }
}
