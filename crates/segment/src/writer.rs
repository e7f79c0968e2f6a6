//! The single-threaded writer: live appends with inline flush, the split
//! prepare / compress / commit path for backfill, torn-tail recovery and
//! sealing.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use xxhash_rust::xxh3::Xxh3;

use crate::bloom::{Bloom, KeyHash};
use crate::columns::{self, Columns};
use crate::error::{Error, Result};
use crate::event::EventRef;
use crate::format::{BlockMeta, CollectionIndex, HEADER_LEN, Header, MAGIC, MAX_BLOCKS};
use crate::frame::{Compressor, Decompressor};

/// Events per block by default.
pub const DEFAULT_BLOCK_EVENTS: usize = 4096;

/// How a writer behaves.
#[derive(Debug, Clone, Copy)]
pub struct WriterOptions {
    /// Events per block (1..=262,144).
    pub block_events: usize,
    /// Whether each block commit is followed by an fsync.
    pub sync: bool,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            block_events: DEFAULT_BLOCK_EVENTS,
            sync: true,
        }
    }
}

/// A block taken from the writer, encoded, waiting for compression.
#[derive(Debug)]
pub struct PreparedBlock {
    ticket: u64,
    body: Vec<u8>,
    out: Vec<u8>,
}

impl PreparedBlock {
    /// Compresses the block (on any thread) into `[u64 len][zstd frame]`.
    pub fn compress(mut self, zc: &mut Compressor) -> Result<CompressedBlock> {
        self.out.clear();
        self.out.extend_from_slice(&[0u8; 8]);
        let n = zc.compress_append(&self.body, &mut self.out)?;
        self.out[..8].copy_from_slice(&(n as u64).to_le_bytes());
        Ok(CompressedBlock {
            ticket: self.ticket,
            body: self.body,
            bytes: self.out,
        })
    }

    /// The order in which the block must be committed.
    pub fn ticket(&self) -> u64 {
        self.ticket
    }
}

/// A compressed block, committed by [`Writer::commit`] in ticket order.
#[derive(Debug)]
pub struct CompressedBlock {
    ticket: u64,
    body: Vec<u8>,
    bytes: Vec<u8>,
}

impl CompressedBlock {
    /// The order in which the block must be committed.
    pub fn ticket(&self) -> u64 {
        self.ticket
    }
}

/// What [`Writer::seal`] produced.
#[derive(Debug, Clone)]
pub struct Sealed {
    /// The file.
    pub path: PathBuf,
    /// Its header.
    pub header: Header,
}

/// Appends events to an active segment file.
#[derive(Debug)]
pub struct Writer {
    file: File,
    path: PathBuf,
    opts: WriterOptions,
    pending: Columns,
    zc: Compressor,
    spare: Vec<(Vec<u8>, Vec<u8>)>,
    end: u64,
    blocks: u32,
    events: u64,
    last_seq: u64,
    last_witnessed: Option<i64>,
    next_ticket: u64,
    next_commit: u64,
    failed: Option<String>,
}

fn sync_dir(path: &Path) -> Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(Error::io("fsync directory"))
}

impl Writer {
    fn with_file(file: File, path: &Path, opts: WriterOptions) -> Result<Self> {
        if opts.block_events == 0 || opts.block_events > columns::MAX_BLOCK_EVENTS {
            return Err(Error::Limit("block_events must be in 1..=262,144"));
        }
        Ok(Writer {
            file,
            path: path.to_owned(),
            opts,
            pending: Columns::with_capacity(opts.block_events),
            zc: Compressor::new()?,
            spare: Vec::new(),
            end: HEADER_LEN as u64,
            blocks: 0,
            events: 0,
            last_seq: 0,
            last_witnessed: None,
            next_ticket: 0,
            next_commit: 0,
            failed: None,
        })
    }

    /// Creates a new active file (the magic plus zeros, fsynced with its
    /// directory). Fails if the file exists.
    pub fn create(path: impl AsRef<Path>, opts: WriterOptions) -> Result<Self> {
        let path = path.as_ref();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(Error::io("create segment"))?;
        file.write_all_at(&Header::active_bytes(), 0)
            .map_err(Error::io("write header"))?;
        file.sync_all().map_err(Error::io("fsync segment"))?;
        sync_dir(path)?;
        Writer::with_file(file, path, opts)
    }

    /// Reopens an active file, truncating (and fsyncing) a torn tail: the
    /// length prefixes are walked from byte 256 and the file is cut after
    /// the last complete frame. The last block is then decoded to learn
    /// where seq and witnessed_at stand.
    pub fn open(path: impl AsRef<Path>, opts: WriterOptions) -> Result<Self> {
        let path = path.as_ref();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(Error::io("open segment"))?;
        let len = file.metadata().map_err(Error::io("stat segment"))?.len();
        if len < HEADER_LEN as u64 {
            return Err(Error::Header("shorter than 256 bytes"));
        }
        let mut head = [0u8; HEADER_LEN];
        file.read_exact_at(&mut head, 0)
            .map_err(Error::io("read header"))?;
        if head[..4] != MAGIC {
            return Err(Error::Header("bad magic"));
        }
        if head[4..12] != [0u8; 8] {
            return Err(Error::Sealed);
        }
        let mut blocks: Vec<(u64, u64)> = Vec::new();
        let mut pos = HEADER_LEN as u64;
        loop {
            let mut prefix = [0u8; 12];
            if pos + 12 > len || file.read_exact_at(&mut prefix, pos).is_err() {
                break;
            }
            let mut l = [0u8; 8];
            l.copy_from_slice(&prefix[..8]);
            let frame_len = u64::from_le_bytes(l);
            let complete = frame_len >= 4
                && prefix[8..12] == [0x28, 0xb5, 0x2f, 0xfd]
                && pos
                    .checked_add(8)
                    .and_then(|p| p.checked_add(frame_len))
                    .is_some_and(|e| e <= len);
            if !complete || blocks.len() >= MAX_BLOCKS as usize {
                break;
            }
            blocks.push((pos, frame_len));
            pos += 8 + frame_len;
        }
        let mut w = Writer::with_file(file, path, opts)?;
        // The last complete-looking frame may still hold garbage (a torn
        // write of a file the kernel had already extended): decode it, and
        // drop it as torn if it does not decode.
        let mut zd = Decompressor::new()?;
        let mut frame = Vec::new();
        let mut body = Vec::new();
        while let Some(&(off, flen)) = blocks.last() {
            frame.resize(flen as usize, 0);
            let ok = w.file.read_exact_at(&mut frame, off + 8).is_ok()
                && zd.decompress_into(&frame, None, &mut body).is_ok();
            let last = if ok {
                columns::decode(&body).ok().map(|evs| {
                    (
                        evs.last().map(|e| (e.seq, e.witnessed_at)),
                        evs.len() as u64,
                    )
                })
            } else {
                None
            };
            match last {
                Some((bounds, _)) => {
                    if let Some((seq, wat)) = bounds {
                        w.last_seq = seq;
                        w.last_witnessed = Some(wat);
                    }
                    break;
                }
                None => {
                    pos = off;
                    blocks.pop();
                }
            }
        }
        // Earlier blocks' events are counted again at seal; the writer's
        // own count only guards the u32 limit of events appended now.
        w.blocks = blocks.len() as u32;
        if pos < len {
            w.file
                .set_len(pos)
                .map_err(Error::io("truncate torn tail"))?;
            w.file.sync_all().map_err(Error::io("fsync segment"))?;
        }
        w.end = pos;
        Ok(w)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Blocks committed to the file.
    pub fn block_count(&self) -> u32 {
        self.blocks
    }

    /// Events waiting in the pending block.
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// The last seq appended (0 before any).
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    fn check_ok(&self) -> Result<()> {
        match &self.failed {
            Some(msg) => Err(Error::Sticky(msg.clone())),
            None => Ok(()),
        }
    }

    fn fail<T>(&mut self, e: Error) -> Result<T> {
        if self.failed.is_none() {
            self.failed = Some(e.to_string());
        }
        Err(e)
    }

    /// Validates and buffers one event; returns `true` when the pending
    /// block is full and should be flushed (or prepared).
    pub fn append(&mut self, event: &EventRef<'_>) -> Result<bool> {
        self.check_ok()?;
        event.validate()?;
        if event.seq <= self.last_seq {
            return Err(Error::SeqOrder {
                previous: self.last_seq,
                seq: event.seq,
            });
        }
        if let Some(prev) = self.last_witnessed
            && event.witnessed_at < prev
        {
            return Err(Error::WitnessedOrder {
                previous: prev,
                witnessed_at: event.witnessed_at,
            });
        }
        if self.events >= u32::MAX as u64 {
            return Err(Error::Limit("segment holds 2^32-1 events"));
        }
        if self.pending.len() >= self.opts.block_events {
            return Err(Error::Limit("pending block is full: flush first"));
        }
        self.pending.push(event)?;
        self.events += 1;
        self.last_seq = event.seq;
        self.last_witnessed = Some(event.witnessed_at);
        Ok(self.pending.len() >= self.opts.block_events)
    }

    /// The live shape: append, and flush inline (fsync included) when the
    /// append fills the block.
    pub fn append_live(&mut self, event: &EventRef<'_>) -> Result<()> {
        if self.append(event)? {
            self.flush()?;
        }
        Ok(())
    }

    /// Takes the pending block (if any) and encodes it for compression.
    pub fn prepare(&mut self) -> Result<Option<PreparedBlock>> {
        self.prepare_block(false)
    }

    fn prepare_block(&mut self, allow_empty: bool) -> Result<Option<PreparedBlock>> {
        self.check_ok()?;
        if self.pending.is_empty() && !allow_empty {
            return Ok(None);
        }
        if self.blocks as u64 + (self.next_ticket - self.next_commit) >= MAX_BLOCKS as u64 {
            return Err(Error::Limit("segment holds 2^20 blocks"));
        }
        let (mut body, out) = self.spare.pop().unwrap_or_default();
        self.pending.encode_into(&mut body);
        self.pending.clear();
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        Ok(Some(PreparedBlock { ticket, body, out }))
    }

    /// Writes a compressed block at the end of the file (fsynced when the
    /// writer syncs). Blocks must be committed in ticket order.
    pub fn commit(&mut self, block: CompressedBlock) -> Result<()> {
        self.check_ok()?;
        if block.ticket != self.next_commit {
            return self.fail(Error::CommitOrder {
                expected: self.next_commit,
                got: block.ticket,
            });
        }
        if let Err(e) = self.file.write_all_at(&block.bytes, self.end) {
            return self.fail(Error::Io {
                op: "write block",
                source: e,
            });
        }
        if self.opts.sync
            && let Err(e) = self.file.sync_data()
        {
            return self.fail(Error::Io {
                op: "fsync block",
                source: e,
            });
        }
        self.end += block.bytes.len() as u64;
        self.blocks += 1;
        self.next_commit += 1;
        self.spare.push((block.body, block.bytes));
        Ok(())
    }

    /// Tickets committed so far (the next ticket to commit).
    pub fn committed_tickets(&self) -> u64 {
        self.next_commit
    }

    /// Records a failure that happened off the writer (a worker's).
    pub fn poison(&mut self, e: Error) -> Error {
        if self.failed.is_none() {
            self.failed = Some(e.to_string());
        }
        e
    }

    /// Encodes, compresses, writes and (when syncing) fsyncs the pending
    /// block, if any. Every block prepared earlier must be committed first.
    pub fn flush(&mut self) -> Result<()> {
        self.flush_block(false)
    }

    /// Like [`Writer::flush`], but writes a block even when none is pending
    /// (an empty block, `event_count` 0): rewrites that keep a file's block
    /// topology use it.
    pub fn flush_keeping_empty(&mut self) -> Result<()> {
        self.flush_block(true)
    }

    fn flush_block(&mut self, allow_empty: bool) -> Result<()> {
        if self.next_ticket != self.next_commit {
            return Err(Error::Limit("prepared blocks not yet committed"));
        }
        let Some(prepared) = self.prepare_block(allow_empty)? else {
            return Ok(());
        };
        let compressed = match prepared.compress(&mut self.zc) {
            Ok(c) => c,
            Err(e) => return self.fail(e),
        };
        self.commit(compressed)
    }

    /// Flushes, then seals: walks the blocks on disk, builds the block
    /// index, blooms and collection index, writes the footer, fsyncs,
    /// writes the header, fsyncs. If the header write fails the footer is
    /// truncated again.
    pub fn seal(mut self) -> Result<Sealed> {
        self.flush()?;
        let built = build_footer(&self.file, self.end, self.blocks)?;
        let Footer { mut header, bytes } = built;
        let mut head = header.encode();
        let mut hasher = Xxh3::new();
        hasher.update(&head[12..]);
        hasher.update(&bytes);
        let mut checksum = hasher.digest();
        if checksum == 0 {
            // 0 means "active"; a sealed file never stores it.
            checksum = 1;
        }
        header.checksum = checksum;
        head[4..12].copy_from_slice(&checksum.to_le_bytes());
        if let Err(e) = self.file.write_all_at(&bytes, self.end) {
            let _ = self.file.set_len(self.end);
            return self.fail(Error::Io {
                op: "write footer",
                source: e,
            });
        }
        if let Err(e) = self.file.sync_all() {
            return self.fail(Error::Io {
                op: "fsync footer",
                source: e,
            });
        }
        let written = self
            .file
            .write_all_at(&head, 0)
            .and_then(|()| self.file.sync_all());
        if let Err(e) = written {
            // Best effort: put the file back to its active shape.
            let _ = self.file.write_all_at(&Header::active_bytes(), 0);
            let _ = self.file.set_len(self.end);
            let _ = self.file.sync_all();
            return self.fail(Error::Io {
                op: "write header",
                source: e,
            });
        }
        Ok(Sealed {
            path: self.path.clone(),
            header,
        })
    }
}

struct Footer {
    header: Header,
    bytes: Vec<u8>,
}

/// Walks the `blocks` blocks in `[256, end)` and builds the footer and the
/// header (checksum not yet set).
fn build_footer(file: &File, end: u64, blocks: u32) -> Result<Footer> {
    let mut zd = Decompressor::new()?;
    let mut zc = Compressor::new()?;
    let mut frame = Vec::new();
    let mut body = Vec::new();
    let mut metas: Vec<BlockMeta> = Vec::with_capacity(blocks as usize);
    let mut block_dids: Vec<Vec<KeyHash>> = Vec::with_capacity(blocks as usize);
    let mut all_dids: HashSet<KeyHash> = HashSet::new();
    let mut collections = CollectionIndex::default();
    let mut header = Header::default();
    let mut total_events: u64 = 0;
    let mut pos = HEADER_LEN as u64;
    while pos < end {
        let mut l = [0u8; 8];
        file.read_exact_at(&mut l, pos)
            .map_err(Error::io("read block prefix"))?;
        let flen = u64::from_le_bytes(l);
        if flen > u32::MAX as u64 || pos + 8 + flen > end {
            return Err(Error::Frame("block frame runs past the data".into()));
        }
        frame.resize(flen as usize, 0);
        file.read_exact_at(&mut frame, pos + 8)
            .map_err(Error::io("read block"))?;
        zd.decompress_into(&frame, None, &mut body)?;
        let events = columns::decode(&body)?;
        let mut meta = BlockMeta {
            offset: pos,
            compressed_size: flen as u32,
            uncompressed_size: u32::try_from(body.len())
                .map_err(|_| Error::Limit("block body past 4 GiB"))?,
            event_count: events.len() as u32,
            ..BlockMeta::default()
        };
        collections.start_block();
        let mut dids = Vec::new();
        for (i, e) in events.iter().enumerate() {
            if i == 0 {
                meta.min_seq = e.seq;
                meta.max_seq = e.seq;
                meta.min_witnessed_at = e.witnessed_at;
                meta.max_witnessed_at = e.witnessed_at;
            } else {
                meta.min_seq = meta.min_seq.min(e.seq);
                meta.max_seq = meta.max_seq.max(e.seq);
                meta.min_witnessed_at = meta.min_witnessed_at.min(e.witnessed_at);
                meta.max_witnessed_at = meta.max_witnessed_at.max(e.witnessed_at);
            }
            if !e.did.is_empty() {
                dids.push(KeyHash::of(e.did.as_bytes()));
            }
            collections.add(e.kind, e.collection)?;
        }
        dids.sort_unstable_by_key(|h| h.0);
        dids.dedup();
        all_dids.extend(dids.iter().copied());
        block_dids.push(dids);
        if meta.event_count > 0 {
            if total_events == 0 {
                header.min_seq = meta.min_seq;
                header.min_witnessed_at = meta.min_witnessed_at;
            }
            header.max_seq = meta.max_seq;
            header.max_witnessed_at = meta.max_witnessed_at;
        }
        total_events += meta.event_count as u64;
        metas.push(meta);
        pos += 8 + flen;
    }
    if metas.len() != blocks as usize {
        return Err(Error::Frame(
            "block count on disk differs from the writer's".into(),
        ));
    }
    header.block_count = blocks;
    header.event_count =
        u32::try_from(total_events).map_err(|_| Error::Limit("segment holds 2^32-1 events"))?;
    header.unique_did_count = all_dids.len() as u32;

    let mut bytes = Vec::new();
    for m in &metas {
        m.write_to(&mut bytes);
    }
    let mut seg_bloom = Bloom::with_capacity(all_dids.len() as u64);
    for h in &all_dids {
        seg_bloom.insert_hash(*h);
    }
    let did_bloom_rel = bytes.len() as u64;
    seg_bloom.write_to(&mut bytes);
    let region_rel = bytes.len() as u64;
    let cap = block_dids.iter().map(Vec::len).max().unwrap_or(0).max(1) as u64;
    if block_dids.is_empty() {
        bytes.extend_from_slice(&0u32.to_le_bytes());
        bytes.extend_from_slice(&0u32.to_le_bytes());
    } else {
        let size = crate::bloom::serialized_size(crate::bloom::sizing(cap).1);
        let size = u32::try_from(size).map_err(|_| Error::Limit("bloom too large"))?;
        bytes.extend_from_slice(&(block_dids.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&size.to_le_bytes());
        for dids in &block_dids {
            let mut b = Bloom::with_capacity(cap);
            for h in dids {
                b.insert_hash(*h);
            }
            b.write_to(&mut bytes);
        }
    }
    let coll_rel = bytes.len() as u64;
    collections.write_to(&mut bytes, &mut zc)?;

    header.footer_offset = end;
    header.block_index_offset = end;
    header.did_bloom_offset = end + did_bloom_rel;
    header.block_did_bloom_offset = end + region_rel;
    header.collection_index_offset = end + coll_rel;
    Ok(Footer { header, bytes })
}
