//! The difference between two trees, skipping every subtree they share.
//!
//! Two cursors walk the trees in key order. When both stand on the same
//! subtree CID they skip it whole; when they stand on different subtrees the
//! one at the higher layer is opened first; leaves are compared by key.
//! Cost is proportional to the changed paths, not to the tree size.

use std::sync::Arc;

use super::loader::Loader;
use super::node::{Key, Node};
use super::source::BlockSource;
use super::tree::Mst;
use super::{MAX_LAYER, MstError};
use crate::cid::Cid;

/// One key whose value differs between two trees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffEntry {
    /// `collection/rkey`.
    pub key: String,
    /// Value in the old tree (None: created).
    pub old: Option<Cid>,
    /// Value in the new tree (None: deleted).
    pub new: Option<Cid>,
}

#[derive(Clone)]
enum Head {
    Sub(Cid, u8),
    Leaf(Key, Cid),
    End,
}

struct Frame {
    node: Arc<Node>,
    /// Position in the sequence gap0, entry0, gap1, entry1, ..., gapN.
    pos: usize,
    layer: u8,
}

struct Cursor {
    stack: Vec<Frame>,
    head: Head,
}

impl Cursor {
    fn new(root: Cid, layer: u8) -> Self {
        Cursor {
            stack: Vec::new(),
            head: Head::Sub(root, layer),
        }
    }

    /// Moves to the next item after the current one.
    fn advance(&mut self) -> Result<(), MstError> {
        loop {
            let Some(top) = self.stack.last_mut() else {
                self.head = Head::End;
                return Ok(());
            };
            top.pos += 1;
            if top.pos > 2 * top.node.entries.len() {
                self.stack.pop();
                continue;
            }
            if top.pos % 2 == 1 {
                let e = &top.node.entries[top.pos / 2];
                self.head = Head::Leaf(e.key.clone(), e.value);
                return Ok(());
            }
            if let Some(c) = top.node.gap(top.pos / 2) {
                let layer = top
                    .layer
                    .checked_sub(1)
                    .ok_or(MstError::malformed("subtree below layer 0"))?;
                self.head = Head::Sub(c, layer);
                return Ok(());
            }
        }
    }

    /// Opens the subtree at the head.
    fn descend<S: BlockSource>(&mut self, ld: &mut Loader<S>) -> Result<(), MstError> {
        let Head::Sub(cid, layer) = self.head else {
            return Ok(());
        };
        if self.stack.len() > MAX_LAYER as usize {
            return Err(MstError::malformed("tree deeper than the layer limit"));
        }
        let node = ld.node(&cid)?;
        let left = node.left;
        self.stack.push(Frame {
            node,
            pos: 0,
            layer,
        });
        match left {
            Some(c) => {
                let layer = layer
                    .checked_sub(1)
                    .ok_or(MstError::malformed("subtree below layer 0"))?;
                self.head = Head::Sub(c, layer);
                Ok(())
            }
            None => self.advance(),
        }
    }
}

fn key_string(k: &[u8]) -> String {
    String::from_utf8_lossy(k).into_owned()
}

impl<S: BlockSource> Mst<S> {
    /// The keys whose values differ from the tree rooted at `old_root`
    /// (read through the same source) to this tree, in key order.
    pub fn diff_from(&mut self, old_root: Cid) -> Result<Vec<DiffEntry>, MstError> {
        let new_root = self.committed_root()?;
        let new_layer = self.layer()?;
        let old_layer = self.ld.layer_of(old_root)?;
        let mut a = Cursor::new(old_root, old_layer);
        let mut b = Cursor::new(new_root, new_layer);
        let mut out = Vec::new();
        let ld = &mut self.ld;
        loop {
            match (&a.head, &b.head) {
                (Head::End, Head::End) => break,
                (Head::Sub(x, _), Head::Sub(y, _)) if x == y => {
                    a.advance()?;
                    b.advance()?;
                }
                (Head::Sub(_, la), Head::Sub(_, lb)) => {
                    if la >= lb {
                        a.descend(ld)?;
                    } else {
                        b.descend(ld)?;
                    }
                }
                (Head::Sub(..), _) => a.descend(ld)?,
                (_, Head::Sub(..)) => b.descend(ld)?,
                (Head::Leaf(ka, va), Head::Leaf(kb, vb)) => match ka.cmp(kb) {
                    std::cmp::Ordering::Equal => {
                        if va != vb {
                            out.push(DiffEntry {
                                key: key_string(ka),
                                old: Some(*va),
                                new: Some(*vb),
                            });
                        }
                        a.advance()?;
                        b.advance()?;
                    }
                    std::cmp::Ordering::Less => {
                        out.push(DiffEntry {
                            key: key_string(ka),
                            old: Some(*va),
                            new: None,
                        });
                        a.advance()?;
                    }
                    std::cmp::Ordering::Greater => {
                        out.push(DiffEntry {
                            key: key_string(kb),
                            old: None,
                            new: Some(*vb),
                        });
                        b.advance()?;
                    }
                },
                (Head::Leaf(ka, va), Head::End) => {
                    out.push(DiffEntry {
                        key: key_string(ka),
                        old: Some(*va),
                        new: None,
                    });
                    a.advance()?;
                }
                (Head::End, Head::Leaf(kb, vb)) => {
                    out.push(DiffEntry {
                        key: key_string(kb),
                        old: None,
                        new: Some(*vb),
                    });
                    b.advance()?;
                }
            }
        }
        Ok(out)
    }
}
