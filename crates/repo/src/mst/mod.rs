//! The Merkle Search Tree that maps `collection/rkey` keys to record CIDs.
//!
//! What this module owns: key rules and heights ([`validate_key`],
//! [`key_height`], [`common_prefix_len`]); the node block format
//! (`{"e": [{"k","p","t","v"}], "l"}`, see [`Node`]); the [`BlockSource`]
//! trait through which nodes are loaded **lazily** (with
//! [`MemoryBlockStore`] here; CAR-backed sources live in [`crate::car`]);
//! the editable tree [`Mst`] (get / insert / update / delete, each touching
//! only the O(log n) nodes on the key's path, then [`Mst::commit`] which
//! hashes the dirty nodes and reports new and no-longer-referenced blocks);
//! covering proofs for changed keys (Sync 1.1 `blocksInProof`); full walks
//! and the diff between two roots.
//!
//! Shape: a key's height is the number of leading zero 2-bit groups of
//! SHA-256(key) (fanout 4). A node at layer L holds the keys of height L in
//! its key range; the gaps between them (and before the first) point to
//! nodes at layer L-1, which exist whenever their range holds any key (so
//! nodes with no entries and only `l` appear between far-apart layers). The
//! root is at the highest key height; the empty tree is the single empty
//! node. The shape depends only on the key set, so every insertion and
//! deletion order gives the same root CID.
//!
//! Choices where the spec is silent:
//! - decoded nodes are checked for canonical CBOR, strictly increasing keys,
//!   valid key characters, and maximal prefix compression (`p` equal to the
//!   real shared prefix), because an edited node is re-encoded canonically
//!   and must hash the way other implementations hash it; key heights are
//!   **not** re-hashed on every load (that would double the cost of a
//!   lazy path) — [`Mst::check_structure`] does the full check;
//!   the decoder reads the usual byte layout of an entry directly (one-
//!   and two-byte heads, canonical links) and falls back to the general
//!   strict reader for anything else, so what it accepts and the errors it
//!   reports are unchanged; key characters are re-checked only for each
//!   key's suffix (the prefix passed with the previous key);
//! - decoded nodes are cached by CID in a [`NodeCache`] (bounded; cleared
//!   when full) that can be carried from one [`Mst`] to the next; the
//!   one-shot trees of `#commit` verification instead decode the nodes
//!   they edit straight into editable form, into nodes recycled from the
//!   previous event (same checks, same errors);
//! - a commit keeps the nodes it hashed in their edited form (the new
//!   blocks' bytes go to the caller); one is turned into a decoded [`Node`]
//!   only if something reads it, and the next edit reopens it as is, so a
//!   write followed by a commit converts no entries;
//! - every descent is bounded by the layer (at most 128), so malformed or
//!   hostile trees produce [`MstError`]s, never panics or unbounded
//!   recursion.

mod diff;
mod edit;
mod key;
mod loader;
mod mutnode;
mod node;
mod proof;
mod source;
mod tree;
mod walk;

pub use diff::DiffEntry;
pub use loader::NodeCache;
pub use node::{Entry, Node};
pub use source::{BlockSource, BlockSourceError, MemoryBlockStore};
pub use tree::{Mst, MstCommit, WriteOp, WriteResult};
pub(crate) use tree::{NodeHasher, Scratch};
pub use walk::Leaves;

use sha2::{Digest, Sha256};

use crate::cbor::DecodeError;
use crate::cid::Cid;

/// The deepest layer a key can have (256 bits / 2).
pub const MAX_LAYER: u8 = 128;

/// Why an MST operation failed.
#[derive(Debug, thiserror::Error)]
pub enum MstError {
    /// The block source failed.
    #[error("block source: {0}")]
    Source(#[from] BlockSourceError),
    /// A node the operation needs is not in the block source.
    #[error("missing MST node block {0}")]
    MissingBlock(Cid),
    /// A node block is not valid DAG-CBOR of the node shape.
    #[error("MST node {cid}: {err}")]
    Decode {
        /// The node.
        cid: Cid,
        /// What the decoder found.
        err: DecodeError,
    },
    /// A node breaks the MST rules.
    #[error("malformed MST node {cid:?}: {reason}")]
    Malformed {
        /// The node, when known.
        cid: Option<Cid>,
        /// The rule.
        reason: &'static str,
    },
    /// The operation needs a committed tree but edits are pending.
    #[error("MST has uncommitted edits; commit first")]
    Uncommitted,
    /// A key that breaks the key rules.
    #[error("invalid MST key {key:?}: {reason}")]
    InvalidKey {
        /// The key (lossy UTF-8).
        key: String,
        /// The rule.
        reason: &'static str,
    },
}

impl MstError {
    pub(crate) fn malformed(reason: &'static str) -> Self {
        MstError::Malformed { cid: None, reason }
    }
}

/// Checks the MST key rules: `collection/rkey`, exactly one `/`, both halves
/// non-empty, characters `[a-zA-Z0-9_~\-:.]`, at most 1024 bytes.
pub fn validate_key(key: &str) -> Result<(), MstError> {
    key_rule(key.as_bytes()).map_err(|reason| MstError::InvalidKey {
        key: key.to_owned(),
        reason,
    })
}

/// Characters allowed in MST keys besides `/`.
pub(crate) const KEY_CHARS: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric() || matches!(b, b'_' | b'~' | b'-' | b':' | b'.');
        c += 1;
    }
    t
};

#[inline]
pub(crate) fn key_rule(key: &[u8]) -> Result<(), &'static str> {
    if key.len() > 1024 {
        return Err("longer than 1024 bytes");
    }
    let mut slash = None;
    for (i, &c) in key.iter().enumerate() {
        if !KEY_CHARS[c as usize] {
            if c != b'/' {
                return Err("character not allowed");
            }
            if slash.is_some() {
                return Err("more than one '/'");
            }
            slash = Some(i);
        }
    }
    match slash {
        None => Err("missing '/'"),
        Some(0) => Err("empty collection"),
        Some(i) if i + 1 == key.len() => Err("empty record key"),
        Some(_) => Ok(()),
    }
}

/// The key's height: leading zero 2-bit groups of SHA-256(key).
#[inline]
pub fn key_height(key: &[u8]) -> u8 {
    let digest = Sha256::digest(key);
    let mut zeros = 0u32;
    for &b in digest.iter() {
        if b == 0 {
            zeros += 8;
        } else {
            zeros += b.leading_zeros();
            break;
        }
    }
    (zeros / 2) as u8
}

/// Length of the shared byte prefix of two keys (the `p` of node entries).
#[inline]
pub fn common_prefix_len(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    // Eight bytes at a time, then the tail.
    let mut i = 0;
    while i + 8 <= n {
        let x = u64::from_le_bytes(a[i..i + 8].try_into().unwrap_or([0; 8]));
        let y = u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
        if x != y {
            return i + ((x ^ y).trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heights() {
        assert_eq!(key_height(b""), 0);
        assert_eq!(key_height(b"blue"), 1);
        assert_eq!(key_height(b"app.bsky.feed.post/9adeb165882c"), 8);
    }

    #[test]
    fn keys() {
        assert!(validate_key("app.bsky.feed.post/3jui7kd54zh2y").is_ok());
        for bad in ["", "a", "/a", "a/", "a/b/c", "a b/c", "a/b@"] {
            assert!(validate_key(bad).is_err(), "{bad}");
        }
        assert!(validate_key(&format!("a/{}", "x".repeat(1022))).is_ok());
        assert!(validate_key(&format!("a/{}", "x".repeat(1023))).is_err());
    }

    #[test]
    fn spare_nodes_carried_across_trees_change_no_root() {
        // Commit after commit, each tree opened with the cache (and spare
        // nodes) the last one left, against one tree built in one go.
        let leaf = Cid::for_dag_cbor(b"leaf");
        let keys: Vec<String> = (0..300u32)
            .map(|i| format!("app.bsky.feed.post/{:013}", i.wrapping_mul(2_654_435_761)))
            .collect();
        let mut store = MemoryBlockStore::new();
        let mut root = {
            let mut t = Mst::empty(MemoryBlockStore::new());
            let c = t.commit().unwrap();
            store.extend(c.new_blocks);
            c.root
        };
        let mut cache = NodeCache::default();
        let mut reused = 0;
        for (i, k) in keys.iter().enumerate() {
            let mut t = Mst::with_cache(&store, root, cache);
            reused += usize::from(!t.ld.pool.is_empty());
            t.insert(k, leaf).unwrap();
            if i % 3 == 2 {
                // A delete too: merges reopen and release nodes.
                t.delete(&keys[i - 1]).unwrap();
            }
            let c = t.commit().unwrap();
            root = c.root;
            cache = if i % 2 == 0 {
                t.into_cache_with_new_nodes()
            } else {
                t.into_cache()
            };
            store.extend(c.new_blocks);
        }
        assert!(reused > 250, "spare nodes were reused in {reused} trees");
        let mut whole = Mst::empty(MemoryBlockStore::new());
        for (i, k) in keys.iter().enumerate() {
            if i % 3 != 1 {
                whole.insert(k, leaf).unwrap();
            }
        }
        assert_eq!(whole.commit().unwrap().root, root);
    }
}
