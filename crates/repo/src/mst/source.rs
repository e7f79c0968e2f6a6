//! Where MST nodes come from: the [`BlockSource`] trait and an in-memory
//! block store.

use std::borrow::Cow;
use std::sync::Arc;

use crate::cid::{Cid, CidMap};

/// A failure inside a block source (I/O, SQLite, ...), boxed so any backend
/// can report its own error type.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BlockSourceError(pub Box<dyn std::error::Error + Send + Sync>);

impl BlockSourceError {
    /// Wraps any error.
    pub fn new(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        BlockSourceError(e.into())
    }
}

/// Gives block bytes by CID. Implemented by [`MemoryBlockStore`], by
/// [`CarBlocks`](crate::car::CarBlocks), and by the store crate's SQLite
/// tables. Returning `Ok(None)` means "not here" (the caller decides whether
/// that is an error).
pub trait BlockSource {
    /// The block's bytes, borrowed when the source can lend them.
    fn get_block(&self, cid: &Cid) -> Result<Option<Cow<'_, [u8]>>, BlockSourceError>;
}

impl<T: BlockSource + ?Sized> BlockSource for &T {
    fn get_block(&self, cid: &Cid) -> Result<Option<Cow<'_, [u8]>>, BlockSourceError> {
        (**self).get_block(cid)
    }
}

impl<T: BlockSource + ?Sized> BlockSource for Arc<T> {
    fn get_block(&self, cid: &Cid) -> Result<Option<Cow<'_, [u8]>>, BlockSourceError> {
        (**self).get_block(cid)
    }
}

impl<T: BlockSource + ?Sized> BlockSource for Box<T> {
    fn get_block(&self, cid: &Cid) -> Result<Option<Cow<'_, [u8]>>, BlockSourceError> {
        (**self).get_block(cid)
    }
}

/// Blocks in a hash map.
#[derive(Debug, Clone, Default)]
pub struct MemoryBlockStore {
    blocks: CidMap<Vec<u8>>,
}

impl MemoryBlockStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryBlockStore::default()
    }

    /// Stores `bytes` under `cid` (not re-hashed; see [`put_checked`](Self::put_checked)).
    pub fn put(&mut self, cid: Cid, bytes: Vec<u8>) {
        self.blocks.insert(cid, bytes);
    }

    /// Stores `bytes` if they hash to `cid`; returns whether they did.
    pub fn put_checked(&mut self, cid: Cid, bytes: Vec<u8>) -> bool {
        if cid.matches(&bytes) {
            self.blocks.insert(cid, bytes);
            true
        } else {
            false
        }
    }

    /// Stores a dag-cbor block and returns its CID.
    pub fn put_dag_cbor(&mut self, bytes: Vec<u8>) -> Cid {
        let cid = Cid::for_dag_cbor(&bytes);
        self.blocks.insert(cid, bytes);
        cid
    }

    /// Stores every `(cid, bytes)` pair.
    pub fn extend(&mut self, blocks: impl IntoIterator<Item = (Cid, Vec<u8>)>) {
        self.blocks.extend(blocks);
    }

    /// The bytes under `cid`.
    pub fn get(&self, cid: &Cid) -> Option<&[u8]> {
        self.blocks.get(cid).map(Vec::as_slice)
    }

    /// Drops every block (keeps the allocation).
    pub fn clear(&mut self) {
        self.blocks.clear();
    }

    /// Removes a block.
    pub fn remove(&mut self, cid: &Cid) -> Option<Vec<u8>> {
        self.blocks.remove(cid)
    }

    /// True when `cid` is stored.
    pub fn contains(&self, cid: &Cid) -> bool {
        self.blocks.contains_key(cid)
    }

    /// Block count.
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// All blocks, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&Cid, &[u8])> {
        self.blocks.iter().map(|(c, b)| (c, b.as_slice()))
    }
}

impl BlockSource for MemoryBlockStore {
    fn get_block(&self, cid: &Cid) -> Result<Option<Cow<'_, [u8]>>, BlockSourceError> {
        Ok(self.blocks.get(cid).map(|b| Cow::Borrowed(b.as_slice())))
    }
}
