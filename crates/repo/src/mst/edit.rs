//! The editing algorithms: insert, delete, split and merge on a tree whose
//! nodes are either stored (a CID, loaded on demand) or dirty (edited in
//! memory, re-hashed at commit).
//!
//! Every function takes the layer of the node it works on; a descent below
//! layer 0 means the stored tree is malformed and is reported, not followed.

use super::MstError;
use super::loader::Loader;
use super::mutnode::{Link, MutEntry, MutNode};
use super::node::Key;
use super::source::BlockSource;
use crate::cid::Cid;

fn below(layer: u8) -> Result<u8, MstError> {
    layer
        .checked_sub(1)
        .ok_or(MstError::malformed("subtree below layer 0"))
}

/// A subtree at `layer` holding only `key` (at layer `height`), with empty
/// intermediate nodes for the layers between.
pub(crate) fn chain(layer: u8, height: u8, key: Key, value: Cid) -> Link {
    let mut link = Link::Dirty(Box::new(MutNode {
        origin: None,
        left: None,
        entries: vec![MutEntry {
            key,
            value,
            right: None,
        }],
    }));
    for _ in height..layer {
        link = wrap(link);
    }
    link
}

/// One empty node above `link`.
pub(crate) fn wrap(link: Link) -> Link {
    Link::Dirty(Box::new(MutNode {
        origin: None,
        left: Some(link),
        entries: Vec::new(),
    }))
}

/// Inserts or updates `key` (height `height`) in the subtree `link` at
/// `layer` (`height <= layer`). Returns the previous value.
pub(crate) fn insert<S: BlockSource>(
    ld: &mut Loader<S>,
    link: &mut Link,
    layer: u8,
    key: Key,
    height: u8,
    value: Cid,
) -> Result<Option<Cid>, MstError> {
    let node = ld.open(link)?;
    match node.search(&key) {
        Ok(i) => {
            if height != layer {
                return Err(MstError::malformed("key found on the wrong layer"));
            }
            Ok(Some(std::mem::replace(&mut node.entries[i].value, value)))
        }
        Err(i) if height == layer => {
            let (lo, hi) = match node.gap_mut(i).take() {
                Some(gap) => split(ld, gap, below(layer)?, &key)?,
                None => (None, None),
            };
            *node.gap_mut(i) = lo;
            node.entries.insert(
                i,
                MutEntry {
                    key,
                    value,
                    right: hi,
                },
            );
            Ok(None)
        }
        Err(i) => {
            let child_layer = below(layer)?;
            let slot = node.gap_mut(i);
            match slot {
                Some(child) => insert(ld, child, child_layer, key, height, value),
                None => {
                    *slot = Some(chain(child_layer, height, key, value));
                    Ok(None)
                }
            }
        }
    }
}

/// Splits the subtree `link` at `layer` around `key` (which it must not
/// hold) into the parts below and above it. Empty parts are `None`.
pub(crate) fn split<S: BlockSource>(
    ld: &mut Loader<S>,
    link: Link,
    layer: u8,
    key: &[u8],
) -> Result<(Option<Link>, Option<Link>), MstError> {
    let mut node = ld.take(link)?;
    let i = match node.search(key) {
        Ok(_) => return Err(MstError::malformed("split key already in a lower layer")),
        Err(i) => i,
    };
    let (glo, ghi) = match node.gap_mut(i).take() {
        Some(gap) => split(ld, gap, below(layer)?, key)?,
        None => (None, None),
    };
    let right_entries = node.entries.split_off(i);
    *node.gap_mut(i) = glo;
    let hi = MutNode {
        origin: None,
        left: ghi,
        entries: right_entries,
    };
    let lo = if node.is_empty() {
        None
    } else {
        Some(Link::Dirty(node))
    };
    let hi = if hi.is_empty() {
        None
    } else {
        Some(Link::Dirty(Box::new(hi)))
    };
    Ok((lo, hi))
}

/// Removes `key` (height `height`, known to be present) from the subtree
/// `link` at `layer`. Returns the removed value (None if it was not found
/// after all).
pub(crate) fn delete<S: BlockSource>(
    ld: &mut Loader<S>,
    link: &mut Link,
    layer: u8,
    key: &[u8],
    height: u8,
) -> Result<Option<Cid>, MstError> {
    let node = ld.open(link)?;
    match node.search(key) {
        Ok(i) => {
            if height != layer {
                return Err(MstError::malformed("key found on the wrong layer"));
            }
            let entry = node.entries.remove(i);
            let left = node.gap_mut(i).take();
            let merged = if left.is_some() && entry.right.is_some() {
                merge(ld, left, entry.right, below(layer)?)?
            } else {
                left.or(entry.right)
            };
            *node.gap_mut(i) = merged;
            Ok(Some(entry.value))
        }
        Err(_) if height >= layer => Ok(None),
        Err(i) => {
            let child_layer = below(layer)?;
            let slot = node.gap_mut(i);
            let Some(child) = slot else {
                return Ok(None);
            };
            let removed = delete(ld, child, child_layer, key, height)?;
            if matches!(child, Link::Dirty(n) if n.is_empty()) {
                *slot = None;
            }
            Ok(removed)
        }
    }
}

/// Joins two adjacent subtrees at `layer` (every key of `a` below every
/// key of `b`).
pub(crate) fn merge<S: BlockSource>(
    ld: &mut Loader<S>,
    a: Option<Link>,
    b: Option<Link>,
    layer: u8,
) -> Result<Option<Link>, MstError> {
    let (a, b) = match (a, b) {
        (Some(a), Some(b)) => (a, b),
        (a, b) => return Ok(a.or(b)),
    };
    let mut an = ld.take(a)?;
    let mut bn = ld.take(b)?;
    let last = an.entries.len();
    let a_last = an.gap_mut(last).take();
    let b_left = bn.left.take();
    let mid = if a_last.is_some() && b_left.is_some() {
        merge(ld, a_last, b_left, below(layer)?)?
    } else {
        a_last.or(b_left)
    };
    *an.gap_mut(last) = mid;
    an.entries.append(&mut bn.entries);
    Ok(Some(Link::Dirty(an)))
}
