//! Opening sealed segments, checked or unchecked, reading blocks and
//! looking DIDs up through the blooms.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use xxhash_rust::xxh3::Xxh3;

use crate::bloom::{Bloom, KeyHash};
use crate::columns;
use crate::error::{Error, Result};
use crate::event::{Event, EventRef};
use crate::format::{self, BlockMeta, CollectionIndex, HEADER_LEN, Header, INDEX_ENTRY_LEN};
use crate::frame::Decompressor;

/// Reusable buffers for reading blocks.
#[derive(Debug)]
pub struct BlockBuf {
    frame: Vec<u8>,
    body: Vec<u8>,
    zd: Decompressor,
}

impl BlockBuf {
    /// Empty buffers and a fresh decompression context.
    pub fn new() -> Result<Self> {
        Ok(BlockBuf {
            frame: Vec::new(),
            body: Vec::new(),
            zd: Decompressor::new()?,
        })
    }
}

/// What a checked open verified and keeps.
#[derive(Debug)]
struct Footer {
    index: Vec<BlockMeta>,
    bloom: Bloom,
    region_size: u32,
    collections: CollectionIndex,
}

/// A sealed segment open for reading.
#[derive(Debug)]
pub struct Segment {
    file: File,
    header: Header,
    footer: Option<Footer>,
}

fn read_at(file: &File, buf: &mut [u8], off: u64, op: &'static str) -> Result<()> {
    file.read_exact_at(buf, off).map_err(Error::io(op))
}

impl Segment {
    fn open_header(path: &Path) -> Result<(File, Header, u64)> {
        let file = File::open(path).map_err(Error::io("open segment"))?;
        let len = file.metadata().map_err(Error::io("stat segment"))?.len();
        if len < HEADER_LEN as u64 {
            return Err(Error::Header("shorter than 256 bytes"));
        }
        let mut head = [0u8; HEADER_LEN];
        read_at(&file, &mut head, 0, "read header")?;
        let header = Header::decode(&head)?;
        header.check_layout(len)?;
        Ok((file, header, len))
    }

    /// Opens without reading the footer or verifying the checksum: the
    /// header is decoded and its offsets checked against the file size.
    /// Block index entries are read (and checked) when a block is read.
    pub fn open_unchecked(path: impl AsRef<Path>) -> Result<Segment> {
        let (file, header, _) = Segment::open_header(path.as_ref())?;
        Ok(Segment {
            file,
            header,
            footer: None,
        })
    }

    /// Opens and verifies everything the footer holds: the block index
    /// (blocks in the data region, ascending, seq-disjoint), the segment
    /// bloom, the bloom region header, the checksum over header and footer,
    /// and the collection index. Every section's length is checked against
    /// its bound (`format`'s module docs) before it is read; a footer past
    /// 16 MiB is read section by section and its per-block bloom region
    /// hashed in pieces, not held.
    pub fn open(path: impl AsRef<Path>) -> Result<Segment> {
        Segment::open_checked(path.as_ref(), WHOLE_FOOTER_READ)
    }

    /// [`Segment::open`] reading the footer whole when it is at most
    /// `whole_read` bytes.
    fn open_checked(path: &Path, whole_read: u64) -> Result<Segment> {
        let (file, header, len) = Segment::open_header(path)?;
        let footer_len = len - header.footer_offset;
        // A footer of ordinary size is read in one go; a larger one section
        // by section once each length has passed its bound.
        let whole = if footer_len <= whole_read {
            let mut bytes = vec![0u8; footer_len as usize];
            read_at(&file, &mut bytes, header.footer_offset, "read footer")?;
            Some(bytes)
        } else {
            None
        };
        let peek = |off: u64, buf: &mut [u8], op: &'static str| -> Result<()> {
            match &whole {
                Some(bytes) => {
                    let start = (off - header.footer_offset) as usize;
                    let src = bytes
                        .get(start..start + buf.len())
                        .ok_or(Error::Footer("footer section truncated"))?;
                    buf.copy_from_slice(src);
                    Ok(())
                }
                None => read_at(&file, buf, off, op),
            }
        };
        let bloom_len = did_bloom_len(&header)?;
        let region_len = header.collection_index_offset - header.block_did_bloom_offset;
        let mut region_head = [0u8; 8];
        if region_len < 8 {
            return Err(Error::Footer("bloom region truncated"));
        }
        peek(
            header.block_did_bloom_offset,
            &mut region_head,
            "read bloom region",
        )?;
        let (count, region_size) = format::decode_bloom_region_header(&region_head)?;
        check_region_shape(region_len, count, region_size, header.block_count)?;
        let coll_len = len - header.collection_index_offset;
        let mut coll_head = [0u8; format::COLLECTION_HEADER_LEN];
        if coll_len < coll_head.len() as u64 {
            return Err(Error::Footer("collection index truncated"));
        }
        peek(
            header.collection_index_offset,
            &mut coll_head,
            "read collection index",
        )?;
        if coll_len > CollectionIndex::max_len(&coll_head, header.block_count)? {
            return Err(Error::Footer("bytes after the collection index"));
        }

        let mut head = header.encode();
        head[4..12].copy_from_slice(&[0; 8]);
        let mut hasher = Xxh3::new();
        hasher.update(&head[12..]);
        let index_len = header.did_bloom_offset - header.footer_offset;
        let sections;
        let (index_bytes, bloom_bytes, coll_bytes): (&[u8], &[u8], &[u8]) = match &whole {
            Some(bytes) => {
                hasher.update(bytes);
                let rel = |off: u64| (off - header.footer_offset) as usize;
                (
                    &bytes[..rel(header.did_bloom_offset)],
                    &bytes[rel(header.did_bloom_offset)..rel(header.block_did_bloom_offset)],
                    &bytes[rel(header.collection_index_offset)..],
                )
            }
            None => {
                let index = read_hashed(&file, header.footer_offset, index_len, &mut hasher)?;
                let bloom = read_hashed(&file, header.did_bloom_offset, bloom_len, &mut hasher)?;
                hash_range(
                    &file,
                    header.block_did_bloom_offset,
                    region_len,
                    &mut hasher,
                )?;
                let coll =
                    read_hashed(&file, header.collection_index_offset, coll_len, &mut hasher)?;
                sections = (index, bloom, coll);
                (&sections.0, &sections.1, &sections.2)
            }
        };

        let index = format::decode_block_index(index_bytes, header.footer_offset)?;
        if index.len() != header.block_count as usize {
            return Err(Error::Footer("block index size differs from block_count"));
        }
        check_totals(&header, &index)?;
        let bloom = Bloom::decode(bloom_bytes)?;
        let computed = hasher.digest();
        let computed = if computed == 0 { 1 } else { computed };
        if computed != header.checksum {
            return Err(Error::Checksum {
                stored: header.checksum,
                computed,
            });
        }
        let mut zd = Decompressor::new()?;
        let collections = CollectionIndex::decode(coll_bytes, header.block_count, &mut zd)?;
        Ok(Segment {
            file,
            header,
            footer: Some(Footer {
                index,
                bloom,
                region_size,
                collections,
            }),
        })
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Blocks in the segment.
    pub fn block_count(&self) -> usize {
        self.header.block_count as usize
    }

    /// Whether the footer was verified at open.
    pub fn is_checked(&self) -> bool {
        self.footer.is_some()
    }

    /// The collection index (checked opens only).
    pub fn collections(&self) -> Option<&CollectionIndex> {
        self.footer.as_ref().map(|f| &f.collections)
    }

    /// The index entry of block `i`.
    pub fn block_meta(&self, i: usize) -> Result<BlockMeta> {
        if i >= self.block_count() {
            return Err(Error::NoSuchBlock {
                index: i,
                count: self.block_count(),
            });
        }
        if let Some(f) = &self.footer {
            return Ok(f.index[i]);
        }
        let mut entry = [0u8; INDEX_ENTRY_LEN];
        let off = self.header.block_index_offset + (i * INDEX_ENTRY_LEN) as u64;
        read_at(&self.file, &mut entry, off, "read block index")?;
        let m = BlockMeta::decode(&entry)?;
        format::check_block_meta(&m, HEADER_LEN as u64, None, self.header.footer_offset)?;
        Ok(m)
    }

    /// Reads block `i` (one frame), decompresses and decodes it; the
    /// events borrow `buf`.
    pub fn read_block<'b>(&self, i: usize, buf: &'b mut BlockBuf) -> Result<Vec<EventRef<'b>>> {
        let m = self.block_meta(i)?;
        let total = 8 + m.compressed_size as usize;
        buf.frame.resize(total, 0);
        read_at(&self.file, &mut buf.frame, m.offset, "read block")?;
        let mut l = [0u8; 8];
        l.copy_from_slice(&buf.frame[..8]);
        if u64::from_le_bytes(l) != m.compressed_size as u64 {
            return Err(Error::Footer("block length prefix differs from the index"));
        }
        buf.zd.decompress_into(
            &buf.frame[8..],
            Some(m.uncompressed_size as usize),
            &mut buf.body,
        )?;
        let events = columns::decode(&buf.body)?;
        if events.len() != m.event_count as usize {
            return Err(Error::Footer("block event count differs from the index"));
        }
        if let (Some(first), Some(last)) = (events.first(), events.last())
            && (first.seq != m.min_seq || last.seq != m.max_seq)
        {
            return Err(Error::Footer("block seqs differ from the index"));
        }
        Ok(events)
    }

    /// Block `i` as owned events.
    pub fn decode_block(&self, i: usize) -> Result<Vec<Event>> {
        let mut buf = BlockBuf::new()?;
        Ok(self
            .read_block(i, &mut buf)?
            .iter()
            .map(EventRef::to_event)
            .collect())
    }

    /// Every event, in order.
    pub fn events(&self) -> Result<Vec<Event>> {
        let mut buf = BlockBuf::new()?;
        // Grown as blocks decode: the header's event_count is a claim, and
        // sizing from it would let a crafted header ask for any amount.
        let mut out = Vec::new();
        for i in 0..self.block_count() {
            let block = self.read_block(i, &mut buf)?;
            out.reserve(block.len());
            out.extend(block.iter().map(EventRef::to_event));
        }
        Ok(out)
    }

    fn region_size(&self) -> Result<u32> {
        if let Some(f) = &self.footer {
            return Ok(f.region_size);
        }
        let len = self.header.collection_index_offset - self.header.block_did_bloom_offset;
        let mut head = [0u8; 8];
        read_at(
            &self.file,
            &mut head,
            self.header.block_did_bloom_offset,
            "read bloom region",
        )?;
        let (count, size) = format::decode_bloom_region_header(&head)?;
        check_region_shape(len, count, size, self.header.block_count)?;
        Ok(size)
    }

    /// Loads and decodes the DID bloom of block `i`.
    pub fn block_bloom(&self, i: usize) -> Result<Bloom> {
        if i >= self.block_count() {
            return Err(Error::NoSuchBlock {
                index: i,
                count: self.block_count(),
            });
        }
        let size = self.region_size()? as usize;
        let mut bytes = vec![0u8; size];
        let off = self.header.block_did_bloom_offset + 8 + (i * size) as u64;
        read_at(&self.file, &mut bytes, off, "read block bloom")?;
        Bloom::decode(&bytes)
    }

    /// The segment-wide DID bloom.
    pub fn did_bloom(&self) -> Result<Bloom> {
        if let Some(f) = &self.footer {
            return Ok(f.bloom.clone());
        }
        let len = usize::try_from(did_bloom_len(&self.header)?)
            .map_err(|_| Error::Footer("bloom too large"))?;
        let mut bytes = vec![0u8; len];
        read_at(
            &self.file,
            &mut bytes,
            self.header.did_bloom_offset,
            "read DID bloom",
        )?;
        Bloom::decode(&bytes)
    }

    /// The blocks whose blooms may hold `did` (none when the segment bloom
    /// rules it out).
    pub fn blocks_for_did(&self, did: &str) -> Result<Vec<usize>> {
        if did.is_empty() {
            return Ok(Vec::new());
        }
        let h = KeyHash::of(did.as_bytes());
        let seg = match &self.footer {
            Some(f) => f.bloom.contains_hash(h),
            None => self.did_bloom()?.contains_hash(h),
        };
        if !seg {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for i in 0..self.block_count() {
            if self.block_bloom(i)?.contains_hash(h) {
                out.push(i);
            }
        }
        Ok(out)
    }

    /// Every event of `did`, found through the blooms.
    pub fn find_did(&self, did: &str) -> Result<Vec<Event>> {
        let mut buf = BlockBuf::new()?;
        let mut out = Vec::new();
        for i in self.blocks_for_did(did)? {
            out.extend(
                self.read_block(i, &mut buf)?
                    .iter()
                    .filter(|e| e.did == did)
                    .map(EventRef::to_event),
            );
        }
        Ok(out)
    }
}

fn check_totals(header: &Header, index: &[BlockMeta]) -> Result<()> {
    let events: u64 = index.iter().map(|m| m.event_count as u64).sum();
    if events != header.event_count as u64 {
        return Err(Error::Footer("block event counts differ from the header"));
    }
    let mut nonempty = index.iter().filter(|m| m.event_count > 0);
    if let Some(first) = nonempty.next() {
        let last = nonempty.next_back().unwrap_or(first);
        if first.min_seq != header.min_seq
            || last.max_seq != header.max_seq
            || first.min_witnessed_at != header.min_witnessed_at
            || last.max_witnessed_at != header.max_witnessed_at
        {
            return Err(Error::Footer("block bounds differ from the header"));
        }
    }
    Ok(())
}

/// Footers up to this size are read with one `pread`; larger ones section
/// by section (the per-block bloom region streamed through the checksum).
const WHOLE_FOOTER_READ: u64 = 16 << 20;

/// The segment DID bloom's length, checked against the most a writer can
/// need for the header's events (`format`'s limits).
fn did_bloom_len(header: &Header) -> Result<u64> {
    let len = header.block_did_bloom_offset - header.did_bloom_offset;
    let most = crate::bloom::serialized_size(crate::bloom::sizing(header.event_count as u64).1);
    if len > most {
        return Err(Error::Footer("DID bloom larger than its events need"));
    }
    Ok(len)
}

/// Reads `len` bytes at `off` (a length checked by the caller against its
/// bound) and feeds them to the checksum.
fn read_hashed(file: &File, off: u64, len: u64, hasher: &mut Xxh3) -> Result<Vec<u8>> {
    let len = usize::try_from(len).map_err(|_| Error::Footer("footer section too large"))?;
    let mut bytes = vec![0u8; len];
    read_at(file, &mut bytes, off, "read footer")?;
    hasher.update(&bytes);
    Ok(bytes)
}

/// Feeds `len` bytes at `off` to the checksum, 1 MiB at a time.
fn hash_range(file: &File, off: u64, len: u64, hasher: &mut Xxh3) -> Result<()> {
    let mut piece = vec![0u8; (1usize << 20).min(len as usize)];
    let mut done = 0u64;
    while done < len {
        let n = (len - done).min(piece.len() as u64) as usize;
        read_at(file, &mut piece[..n], off + done, "read bloom region")?;
        hasher.update(&piece[..n]);
        done += n as u64;
    }
    Ok(())
}

fn check_region_shape(len: u64, count: u32, size: u32, block_count: u32) -> Result<()> {
    if size as u64 > format::MAX_BLOCK_BLOOM_BYTES {
        return Err(Error::Footer(
            "block bloom larger than a block's events need",
        ));
    }
    if count != block_count {
        return Err(Error::Footer("bloom region count differs from block_count"));
    }
    if count == 0 && size != 0 {
        return Err(Error::Footer("empty bloom region with a size"));
    }
    let expected = (size as u64)
        .checked_mul(count as u64)
        .and_then(|v| v.checked_add(8));
    if expected != Some(len) {
        return Err(Error::Footer(
            "bloom region length differs from count x size",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-read and the section-by-section footer paths agree, on a
    /// good segment and on a corrupted one.
    #[test]
    fn both_footer_paths_read_the_same() {
        let golden =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/golden_seal.bin");
        let whole = Segment::open_checked(&golden, u64::MAX).expect("opens");
        let pieces = Segment::open_checked(&golden, 0).expect("opens");
        assert_eq!(
            whole.footer.as_ref().map(|f| &f.index),
            pieces.footer.as_ref().map(|f| &f.index)
        );
        assert_eq!(whole.did_bloom().ok(), pieces.did_bloom().ok());
        assert_eq!(whole.collections(), pieces.collections());
        assert_eq!(whole.events().ok(), pieces.events().ok());

        let dir = tempfile::tempdir().expect("temp dir");
        let mut bytes = std::fs::read(&golden).expect("golden");
        let last = bytes.len() - 1;
        bytes[last] ^= 0x40;
        let bad = dir.path().join("bad.jss");
        std::fs::write(&bad, &bytes).expect("write");
        let a = Segment::open_checked(&bad, u64::MAX)
            .map(|_| ())
            .map_err(|e| e.to_string());
        let b = Segment::open_checked(&bad, 0)
            .map(|_| ())
            .map_err(|e| e.to_string());
        assert!(a.is_err());
        assert_eq!(a, b);
    }
}
