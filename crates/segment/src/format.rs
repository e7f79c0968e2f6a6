//! The file's fixed structures: the 256-byte header, block index entries,
//! the per-block bloom region header and the collection index.
//!
//! # Limits a reader enforces before it sizes any allocation
//!
//! Every count, length and offset below comes from the file, so each is
//! checked against the format's limits and against the bytes the file
//! holds before it decides how much memory to ask for:
//!
//! | structure | bound |
//! |---|---|
//! | blocks | at most [`MAX_BLOCKS`] (2^20); the block index is exactly 52 B each, so at most 52 MiB |
//! | events per block | at most [`crate::MAX_BLOCK_EVENTS`] (2^18), each taking at least 34 body bytes |
//! | a block frame | `compressed_size` at most zstd's compress bound of `uncompressed_size`, which is at most [`crate::MAX_DECODED`] (1 GiB); the frame must lie before the footer |
//! | segment DID bloom | at most the size [`crate::bloom::sizing`] gives for the header's `event_count` (a writer sizes it for the unique DIDs, never more than the events) |
//! | one block's DID bloom | at most [`MAX_BLOCK_BLOOM_BYTES`], the size for `MAX_BLOCK_EVENTS` keys; the region is exactly `8 + count x size` bytes |
//! | collection index | its decoded body at most `260 x collections + blocks x mask_len` bytes, its frame at most zstd's bound of that; nothing may follow it |
//!
//! A checked open therefore holds at most the block index, the segment
//! bloom and the collection index in memory at once (the per-block bloom
//! region is hashed in 1 MiB pieces and not kept), each within its bound
//! above and never larger than the file; it reads nothing past the
//! collection index's bound, so junk appended to a sealed file is refused
//! before it is read. `Segment::events` grows its output block by block
//! as blocks decode, never from the header's `event_count`.

use std::collections::HashMap;

use crate::error::{Error, Result};
use crate::frame::{Compressor, Decompressor};

/// `"jss0"`.
pub const MAGIC: [u8; 4] = *b"jss0";
/// The only version.
pub const VERSION: u16 = 1;
/// Bytes of the header.
pub const HEADER_LEN: usize = 256;
/// Bytes of one block index entry.
pub const INDEX_ENTRY_LEN: usize = 52;
/// Most blocks (and collections) a segment may hold.
pub const MAX_BLOCKS: u32 = 1 << 20;
/// Most collections in the collection index.
pub const MAX_COLLECTIONS: u32 = 1 << 20;
/// Bytes of the collection index header.
pub const COLLECTION_HEADER_LEN: usize = 16;
/// Largest serialized per-block DID bloom: the size for
/// [`crate::MAX_BLOCK_EVENTS`] keys.
pub const MAX_BLOCK_BLOOM_BYTES: u64 = 534_809;
/// Largest bytes of one collection-index entry: a length byte, the count
/// (`u32`) and a name of at most 255 bytes.
const MAX_COLLECTION_ENTRY: u64 = 1 + 4 + 255;

/// Little-endian field reader over a slice whose length the caller checked.
pub(crate) struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Cursor { bytes, pos: 0 }
    }
    pub(crate) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.bytes.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }
    pub(crate) fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    pub(crate) fn u16(&mut self) -> Option<u16> {
        let s = self.take(2)?;
        Some(u16::from_le_bytes([s[0], s[1]]))
    }
    pub(crate) fn u32(&mut self) -> Option<u32> {
        let s = self.take(4)?;
        Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }
    pub(crate) fn u64(&mut self) -> Option<u64> {
        let s = self.take(8)?;
        let mut b = [0u8; 8];
        b.copy_from_slice(s);
        Some(u64::from_le_bytes(b))
    }
    pub(crate) fn rest(&self) -> &'a [u8] {
        &self.bytes[self.pos.min(self.bytes.len())..]
    }
}

/// The decoded header of a sealed file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Header {
    /// XXH3-64 over `header[12..256] ‖ footer`; 0 while the file is active.
    pub checksum: u64,
    /// Blocks in the file.
    pub block_count: u32,
    /// Events in the file.
    pub event_count: u32,
    /// Distinct non-empty DIDs.
    pub unique_did_count: u32,
    /// Lowest seq (0 when empty).
    pub min_seq: u64,
    /// Highest seq.
    pub max_seq: u64,
    /// Lowest witnessed_at.
    pub min_witnessed_at: i64,
    /// Highest witnessed_at.
    pub max_witnessed_at: i64,
    /// Start of the footer (= block index).
    pub footer_offset: u64,
    /// Start of the segment DID bloom.
    pub did_bloom_offset: u64,
    /// Start of the per-block bloom region.
    pub block_did_bloom_offset: u64,
    /// Start of the collection index.
    pub collection_index_offset: u64,
    /// Start of the block index (= footer_offset).
    pub block_index_offset: u64,
}

impl Header {
    /// The 256 bytes on disk.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut out = [0u8; HEADER_LEN];
        let mut v = Vec::with_capacity(HEADER_LEN);
        v.extend_from_slice(&MAGIC);
        v.extend_from_slice(&self.checksum.to_le_bytes());
        v.extend_from_slice(&VERSION.to_le_bytes());
        v.extend_from_slice(&self.block_count.to_le_bytes());
        v.extend_from_slice(&self.event_count.to_le_bytes());
        v.extend_from_slice(&self.unique_did_count.to_le_bytes());
        v.extend_from_slice(&self.min_seq.to_le_bytes());
        v.extend_from_slice(&self.max_seq.to_le_bytes());
        v.extend_from_slice(&self.min_witnessed_at.to_le_bytes());
        v.extend_from_slice(&self.max_witnessed_at.to_le_bytes());
        v.extend_from_slice(&self.footer_offset.to_le_bytes());
        v.extend_from_slice(&self.did_bloom_offset.to_le_bytes());
        v.extend_from_slice(&self.block_did_bloom_offset.to_le_bytes());
        v.extend_from_slice(&self.collection_index_offset.to_le_bytes());
        v.extend_from_slice(&self.block_index_offset.to_le_bytes());
        out[..v.len()].copy_from_slice(&v);
        out
    }

    /// The header of an active file: the magic and zeros.
    pub fn active_bytes() -> [u8; HEADER_LEN] {
        let mut out = [0u8; HEADER_LEN];
        out[..4].copy_from_slice(&MAGIC);
        out
    }

    /// Decodes a sealed header: magic, non-zero checksum, version 1, zero
    /// padding. Offsets are checked against the file by the reader.
    pub fn decode(bytes: &[u8]) -> Result<Header> {
        if bytes.len() < HEADER_LEN {
            return Err(Error::Header("shorter than 256 bytes"));
        }
        let mut c = Cursor::new(&bytes[..HEADER_LEN]);
        let short = Error::Header("truncated");
        if c.take(4) != Some(&MAGIC[..]) {
            return Err(Error::Header("bad magic"));
        }
        let checksum = c.u64().ok_or(Error::Header("truncated"))?;
        if checksum == 0 {
            return Err(Error::NotSealed);
        }
        if c.u16() != Some(VERSION) {
            return Err(Error::Header("unsupported version"));
        }
        let h = (|| {
            Some(Header {
                checksum,
                block_count: c.u32()?,
                event_count: c.u32()?,
                unique_did_count: c.u32()?,
                min_seq: c.u64()?,
                max_seq: c.u64()?,
                min_witnessed_at: c.u64()? as i64,
                max_witnessed_at: c.u64()? as i64,
                footer_offset: c.u64()?,
                did_bloom_offset: c.u64()?,
                block_did_bloom_offset: c.u64()?,
                collection_index_offset: c.u64()?,
                block_index_offset: c.u64()?,
            })
        })()
        .ok_or(short)?;
        if c.rest().iter().any(|&b| b != 0) {
            return Err(Error::Header("non-zero padding"));
        }
        Ok(h)
    }

    /// Checks the offsets against a file of `file_len` bytes: in range and
    /// in order, the block index where the footer starts and of the right size.
    pub fn check_layout(&self, file_len: u64) -> Result<()> {
        if self.block_count > MAX_BLOCKS {
            return Err(Error::Header("more than 2^20 blocks"));
        }
        if self.block_index_offset != self.footer_offset {
            return Err(Error::Header("block index is not at the footer offset"));
        }
        let index_end = self
            .footer_offset
            .checked_add(self.block_count as u64 * INDEX_ENTRY_LEN as u64)
            .ok_or(Error::Header("footer offset overflows"))?;
        let ordered = (HEADER_LEN as u64) <= self.footer_offset
            && index_end == self.did_bloom_offset
            && self.did_bloom_offset < self.block_did_bloom_offset
            && self.block_did_bloom_offset < self.collection_index_offset
            && self.collection_index_offset < file_len;
        if !ordered || self.footer_offset > file_len {
            return Err(Error::Header("footer offsets out of range or order"));
        }
        if self.event_count > 0 && self.min_seq > self.max_seq {
            return Err(Error::Header("seq bounds reversed"));
        }
        if self.event_count > 0 && self.min_witnessed_at > self.max_witnessed_at {
            return Err(Error::Header("witnessed_at bounds reversed"));
        }
        if self.unique_did_count > self.event_count {
            return Err(Error::Header("more DIDs than events"));
        }
        Ok(())
    }
}

/// One block index entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BlockMeta {
    /// File offset of the block's length prefix.
    pub offset: u64,
    /// Bytes of the zstd frame.
    pub compressed_size: u32,
    /// Bytes of the decoded body.
    pub uncompressed_size: u32,
    /// Events in the block.
    pub event_count: u32,
    /// Lowest seq.
    pub min_seq: u64,
    /// Highest seq.
    pub max_seq: u64,
    /// Lowest witnessed_at.
    pub min_witnessed_at: i64,
    /// Highest witnessed_at.
    pub max_witnessed_at: i64,
}

impl BlockMeta {
    /// Appends the 52-byte entry.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.offset.to_le_bytes());
        out.extend_from_slice(&self.compressed_size.to_le_bytes());
        out.extend_from_slice(&self.uncompressed_size.to_le_bytes());
        out.extend_from_slice(&self.event_count.to_le_bytes());
        out.extend_from_slice(&self.min_seq.to_le_bytes());
        out.extend_from_slice(&self.max_seq.to_le_bytes());
        out.extend_from_slice(&self.min_witnessed_at.to_le_bytes());
        out.extend_from_slice(&self.max_witnessed_at.to_le_bytes());
    }

    /// Decodes one 52-byte entry.
    pub fn decode(bytes: &[u8]) -> Result<BlockMeta> {
        if bytes.len() != INDEX_ENTRY_LEN {
            return Err(Error::Footer("block index entry is not 52 bytes"));
        }
        let mut c = Cursor::new(bytes);
        (|| {
            Some(BlockMeta {
                offset: c.u64()?,
                compressed_size: c.u32()?,
                uncompressed_size: c.u32()?,
                event_count: c.u32()?,
                min_seq: c.u64()?,
                max_seq: c.u64()?,
                min_witnessed_at: c.u64()? as i64,
                max_witnessed_at: c.u64()? as i64,
            })
        })()
        .ok_or(Error::Footer("block index entry truncated"))
    }

    /// The first byte after the block (saturating: a hostile offset near
    /// `u64::MAX` lands past any file).
    pub fn end(&self) -> u64 {
        self.offset
            .saturating_add(8)
            .saturating_add(self.compressed_size as u64)
    }
}

/// Decodes and checks a whole block index: blocks inside
/// `[256, footer_offset)`, ascending, not overlapping, bounds ordered,
/// non-empty blocks seq-disjoint and increasing.
pub fn decode_block_index(bytes: &[u8], footer_offset: u64) -> Result<Vec<BlockMeta>> {
    if !bytes.len().is_multiple_of(INDEX_ENTRY_LEN) {
        return Err(Error::Footer("block index length is not a multiple of 52"));
    }
    let mut out = Vec::with_capacity(bytes.len() / INDEX_ENTRY_LEN);
    let mut next_free = HEADER_LEN as u64;
    let mut last_seq: Option<u64> = None;
    for chunk in bytes.chunks_exact(INDEX_ENTRY_LEN) {
        let m = BlockMeta::decode(chunk)?;
        check_block_meta(&m, next_free, last_seq, footer_offset)?;
        next_free = m.end();
        if m.event_count > 0 {
            last_seq = Some(m.max_seq);
        }
        out.push(m);
    }
    Ok(out)
}

/// Checks one entry given the end of the previous block and the last seq.
pub fn check_block_meta(
    m: &BlockMeta,
    next_free: u64,
    last_seq: Option<u64>,
    footer_offset: u64,
) -> Result<()> {
    if m.offset < next_free {
        return Err(Error::Footer("blocks overlap or are out of order"));
    }
    if m.compressed_size == 0 || m.end() > footer_offset {
        return Err(Error::Footer("block outside the data region"));
    }
    if m.uncompressed_size < 4
        || m.uncompressed_size as usize > crate::frame::MAX_DECODED
        || m.compressed_size as u64 > crate::frame::frame_bound(m.uncompressed_size as u64)
        || m.event_count as usize > crate::columns::MAX_BLOCK_EVENTS
        || (m.uncompressed_size as u64) < 4 + 34 * m.event_count as u64
    {
        return Err(Error::Footer("block sizes inconsistent"));
    }
    if m.event_count > 0 {
        if m.min_seq > m.max_seq || m.min_witnessed_at > m.max_witnessed_at {
            return Err(Error::Footer("block bounds reversed"));
        }
        if m.max_seq - m.min_seq < m.event_count as u64 - 1 {
            return Err(Error::Footer("block seq range smaller than its events"));
        }
        if let Some(prev) = last_seq
            && m.min_seq <= prev
        {
            return Err(Error::Footer("block seqs not increasing"));
        }
    }
    Ok(())
}

/// The per-block bloom region header.
pub fn decode_bloom_region_header(bytes: &[u8]) -> Result<(u32, u32)> {
    let mut c = Cursor::new(bytes);
    let count = c.u32().ok_or(Error::Footer("bloom region truncated"))?;
    let size = c.u32().ok_or(Error::Footer("bloom region truncated"))?;
    Ok((count, size))
}

/// One collection of the collection index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectionEntry {
    /// NSID (or a `$identity` / `$account` / `$sync` sentinel).
    pub nsid: String,
    /// Events of the collection (0 for sentinels).
    pub count: u32,
}

/// Which collections each block holds.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CollectionIndex {
    /// Collections in first-seen order; the position is the id.
    pub entries: Vec<CollectionEntry>,
    /// One bitmask per block, `ceil(entries / 8)` bytes each.
    pub bitmasks: Vec<Vec<u8>>,
    ids: HashMap<String, u32>,
}

/// The collection index header, checked against the limits and
/// `block_count`: (collections, blocks, bitmask bytes, decoded body bytes).
fn checked_head(bytes: &[u8], block_count: u32) -> Result<(u32, u32, u32, u32)> {
    let mut c = Cursor::new(bytes);
    let mut field = || c.u32().ok_or(Error::Footer("collection index truncated"));
    let (count, blocks, mask_len, size) = (field()?, field()?, field()?, field()?);
    if count > MAX_COLLECTIONS || blocks > MAX_BLOCKS {
        return Err(Error::Footer("collection index counts past 2^20"));
    }
    if blocks != block_count {
        return Err(Error::Footer("collection index block count differs"));
    }
    if mask_len as usize != (count as usize).div_ceil(8) {
        return Err(Error::Footer("collection bitmask length wrong"));
    }
    // Each entry takes at least 5 bytes and at most MAX_COLLECTION_ENTRY.
    let masks = blocks as u64 * mask_len as u64;
    if (size as u64) < 5 * count as u64 + masks {
        return Err(Error::Footer("collection index smaller than its counts"));
    }
    if size as u64 > MAX_COLLECTION_ENTRY * count as u64 + masks {
        return Err(Error::Footer(
            "collection index larger than its counts allow",
        ));
    }
    Ok((count, blocks, mask_len, size))
}

/// The most bytes a collection index (header and frame) whose body is
/// `size` bytes can take.
fn max_index_len(size: u32) -> u64 {
    COLLECTION_HEADER_LEN as u64 + crate::frame::frame_bound(size as u64)
}

impl CollectionIndex {
    /// Starts a new block.
    pub fn start_block(&mut self) {
        self.bitmasks.push(Vec::new());
    }

    fn id_of(&mut self, nsid: &str) -> Result<u32> {
        if let Some(&id) = self.ids.get(nsid) {
            return Ok(id);
        }
        if self.entries.len() >= MAX_COLLECTIONS as usize {
            return Err(Error::Limit("more than 2^20 collections"));
        }
        let id = self.entries.len() as u32;
        self.entries.push(CollectionEntry {
            nsid: nsid.to_owned(),
            count: 0,
        });
        self.ids.insert(nsid.to_owned(), id);
        Ok(id)
    }

    fn set_bit(&mut self, id: u32) {
        if let Some(mask) = self.bitmasks.last_mut() {
            let byte = (id / 8) as usize;
            if mask.len() <= byte {
                mask.resize(byte + 1, 0);
            }
            mask[byte] |= 1 << (id % 8);
        }
    }

    /// Records one event of the current block.
    pub fn add(&mut self, kind: crate::event::Kind, collection: &str) -> Result<()> {
        if !collection.is_empty() {
            let id = self.id_of(collection)?;
            self.entries[id as usize].count = self.entries[id as usize].count.saturating_add(1);
            self.set_bit(id);
        }
        if let Some(sentinel) = kind.sentinel() {
            let id = self.id_of(sentinel)?;
            self.set_bit(id);
        }
        Ok(())
    }

    /// The blocks whose bitmask has collection `nsid`.
    pub fn blocks_with(&self, nsid: &str) -> Vec<usize> {
        let Some(id) = self.entries.iter().position(|e| e.nsid == nsid) else {
            return Vec::new();
        };
        self.bitmasks
            .iter()
            .enumerate()
            .filter(|(_, m)| m.get(id / 8).is_some_and(|b| b & (1 << (id % 8)) != 0))
            .map(|(i, _)| i)
            .collect()
    }

    /// Appends the 16-byte header and the zstd frame.
    pub fn write_to(&self, out: &mut Vec<u8>, zc: &mut Compressor) -> Result<()> {
        let count = self.entries.len();
        let mask_len = count.div_ceil(8);
        let mut body = Vec::new();
        for e in &self.entries {
            body.push(e.nsid.len() as u8);
            body.extend_from_slice(&e.count.to_le_bytes());
            body.extend_from_slice(e.nsid.as_bytes());
        }
        for m in &self.bitmasks {
            let start = body.len();
            body.extend_from_slice(m);
            body.resize(start + mask_len, 0);
        }
        out.extend_from_slice(&(count as u32).to_le_bytes());
        out.extend_from_slice(&(self.bitmasks.len() as u32).to_le_bytes());
        out.extend_from_slice(&(mask_len as u32).to_le_bytes());
        let size =
            u32::try_from(body.len()).map_err(|_| Error::Limit("collection index too large"))?;
        out.extend_from_slice(&size.to_le_bytes());
        zc.compress_append(&body, out)?;
        Ok(())
    }

    /// Checks the 16-byte collection index header against the limits and
    /// returns the most bytes the whole index (header and frame) can take.
    pub fn max_len(head: &[u8], block_count: u32) -> Result<u64> {
        let (_, _, _, size) = checked_head(head, block_count)?;
        Ok(max_index_len(size))
    }

    /// Decodes a collection index occupying all of `bytes`, for a segment
    /// of `block_count` blocks.
    pub fn decode(bytes: &[u8], block_count: u32, zd: &mut Decompressor) -> Result<Self> {
        let (count, blocks, mask_len, size) = checked_head(bytes, block_count)?;
        if bytes.len() as u64 > max_index_len(size) {
            return Err(Error::Footer("bytes after the collection index"));
        }
        let trunc = || Error::Footer("collection index truncated");
        let frame = bytes.get(COLLECTION_HEADER_LEN..).ok_or_else(trunc)?;
        let mut body = Vec::new();
        zd.decompress_into(frame, Some(size as usize), &mut body)?;
        let mut b = Cursor::new(&body);
        let mut idx = CollectionIndex::default();
        for _ in 0..count {
            let len = b.u8().ok_or_else(trunc)?;
            let n = b.u32().ok_or_else(trunc)?;
            let name = b.take(len as usize).ok_or_else(trunc)?;
            let nsid = std::str::from_utf8(name)
                .map_err(|_| Error::Footer("collection name not UTF-8"))?
                .to_owned();
            if idx
                .ids
                .insert(nsid.clone(), idx.entries.len() as u32)
                .is_some()
            {
                return Err(Error::Footer("duplicate collection"));
            }
            idx.entries.push(CollectionEntry { nsid, count: n });
        }
        for _ in 0..blocks {
            let m = b.take(mask_len as usize).ok_or_else(trunc)?;
            if !count.is_multiple_of(8)
                && let Some(&last) = m.last()
                && last >> (count % 8) != 0
            {
                return Err(Error::Footer("bitmask bit past the last collection"));
            }
            idx.bitmasks.push(m.to_vec());
        }
        if !b.rest().is_empty() {
            return Err(Error::Footer("trailing bytes in the collection index"));
        }
        Ok(idx)
    }
}
