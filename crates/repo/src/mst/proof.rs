//! Covering proofs: the nodes a `#commit` CAR slice must carry so a
//! verifier can invert each op against the new tree (Sync 1.1).
//!
//! A key's proof is the path from the root to the key and to both of its
//! neighbouring leaves in the new tree (the reference implementation's
//! choice, pinned by `commit-proof-fixtures.json`). For a key present in
//! the tree (a create or update) that is its search path plus the right
//! spine of the subtree just before it (down to its predecessor) and the
//! left spine of the subtree just after it (down to its successor); those
//! are also exactly the nodes a delete would merge. For an absent key (a
//! delete) it is the whole search path down to where the key would go,
//! which already passes both neighbours, and which an insert would split.

use super::source::BlockSource;
use super::tree::Mst;
use super::{MAX_LAYER, MstError};
use crate::cid::Cid;

impl<S: BlockSource> Mst<S> {
    /// The covering proof of `key` in the committed tree, root first.
    pub fn covering_proof(&mut self, key: &str) -> Result<Vec<Cid>, MstError> {
        Ok(self.covering_proof_and_value(key)?.0)
    }

    /// [`covering_proof`](Self::covering_proof) and the value under `key`
    /// (`None` when absent), from the same walk: a record proof checks
    /// the value without a second search down the same path.
    pub fn covering_proof_and_value(
        &mut self,
        key: &str,
    ) -> Result<(Vec<Cid>, Option<Cid>), MstError> {
        let key = key.as_bytes();
        let mut out = Vec::new();
        let mut value = None;
        let mut cur = Some(self.committed_root()?);
        while let Some(cid) = cur {
            if out.len() > 2 * MAX_LAYER as usize + 2 {
                return Err(MstError::malformed("tree deeper than the layer limit"));
            }
            out.push(cid);
            let node = self.ld.node(&cid)?;
            match node.search(key) {
                Ok(i) => {
                    value = Some(node.entries[i].value);
                    // Right spine of the subtree before the key (down to
                    // its predecessor) and left spine of the one after it
                    // (down to its successor).
                    let mut a = node.gap(i);
                    while let Some(x) = a {
                        if out.len() > 4 * MAX_LAYER as usize + 4 {
                            return Err(MstError::malformed("tree deeper than the layer limit"));
                        }
                        out.push(x);
                        let xn = self.ld.node(&x)?;
                        a = xn.gap(xn.entries.len());
                    }
                    let mut b = node.entries[i].right;
                    while let Some(y) = b {
                        if out.len() > 4 * MAX_LAYER as usize + 4 {
                            return Err(MstError::malformed("tree deeper than the layer limit"));
                        }
                        out.push(y);
                        b = self.ld.node(&y)?.left;
                    }
                    break;
                }
                Err(i) => cur = node.gap(i),
            }
        }
        Ok((out, value))
    }
}
