//! The editable form of an MST node: a node whose links are either
//! stored (a CID, loaded on demand) or dirty (edited in memory, re-hashed
//! at commit). The loader fills it from stored bytes, the editing
//! algorithms (`edit.rs`) change it, the tree hashes it.

use super::MstError;
use super::node::{Entry, Key, Node};
use crate::cid::Cid;

/// A pointer to a subtree.
#[derive(Debug)]
pub(crate) enum Link {
    /// Unchanged: the node's CID.
    Stored(Cid),
    /// Edited in memory.
    Dirty(Box<MutNode>),
}

/// An editable node.
#[derive(Debug, Default)]
pub(crate) struct MutNode {
    pub left: Option<Link>,
    pub entries: Vec<MutEntry>,
    /// The stored node this one was opened from, if any: only a hint for
    /// hashing (its re-encoding often starts with the same bytes; see
    /// [`NodeHasher`](super::tree::NodeHasher)), never trusted for content.
    pub origin: Option<Cid>,
}

/// An editable entry.
#[derive(Debug)]
pub(crate) struct MutEntry {
    pub key: Key,
    pub value: Cid,
    pub right: Option<Link>,
}

impl MutNode {
    /// Makes this node an editable copy of `n`, reusing its entry list.
    pub fn fill_from(&mut self, n: &Node) {
        self.origin = None;
        self.left = n.left.map(Link::Stored);
        self.entries.clear();
        self.entries.extend(n.entries.iter().map(|e| MutEntry {
            key: e.key.clone(),
            value: e.value,
            right: e.right.map(Link::Stored),
        }));
    }

    /// The decoded form of a node whose links are all stored (as a commit
    /// leaves them); an edited link is reported, not dropped.
    pub fn to_node(&self) -> Result<Node, MstError> {
        let cid = |l: &Option<Link>| match l {
            None => Ok(None),
            Some(Link::Stored(c)) => Ok(Some(*c)),
            Some(Link::Dirty(_)) => Err(MstError::malformed("unreachable: uncommitted link")),
        };
        Ok(Node {
            left: cid(&self.left)?,
            entries: self
                .entries
                .iter()
                .map(|e| {
                    Ok(Entry {
                        key: e.key.clone(),
                        value: e.value,
                        right: cid(&e.right)?,
                    })
                })
                .collect::<Result<_, MstError>>()?,
        })
    }

    /// Decodes a stored node straight into editable form, overwriting
    /// this one and reusing its entry list (the checks and errors of
    /// [`Node::decode`], without the intermediate [`Node`]).
    pub fn decode_from(&mut self, bytes: &[u8]) -> Result<(), MstError> {
        self.left = None;
        let left =
            super::node::decode_into(bytes, &mut self.entries, |key, value, right| MutEntry {
                key,
                value,
                right: right.map(Link::Stored),
            })?;
        self.left = left.map(Link::Stored);
        Ok(())
    }

    #[inline]
    pub fn search(&self, key: &[u8]) -> Result<usize, usize> {
        self.entries.binary_search_by(|e| (*e.key).cmp(key))
    }

    /// The subtree slot of gap `i` (0 = left, else right of entry i-1).
    #[inline]
    pub fn gap_mut(&mut self, i: usize) -> &mut Option<Link> {
        if i == 0 {
            &mut self.left
        } else {
            &mut self.entries[i - 1].right
        }
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.left.is_none()
    }
}
