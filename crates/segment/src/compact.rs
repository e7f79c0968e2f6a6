//! Delete compaction: drop creates superseded by a later delete of the same
//! record, rewriting each affected segment (temp file, fsync, rename, fsync
//! of the directory) with the same block topology and fresh blooms.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::event::{Event, Kind};
use crate::reader::{BlockBuf, Segment};
use crate::writer::{Writer, WriterOptions};

/// What a compaction did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompactStats {
    /// Segments rewritten.
    pub rewritten: usize,
    /// Events dropped.
    pub dropped: u64,
    /// Events kept, over all segments.
    pub kept: u64,
}

type Key = (String, String, String);

fn key(e: &crate::event::EventRef<'_>) -> Key {
    (e.did.to_owned(), e.collection.to_owned(), e.rkey.to_owned())
}

fn is_create(kind: Kind) -> bool {
    matches!(kind, Kind::Create | Kind::CreateResync)
}

/// Compacts the sealed segments `paths` (given in seq order): a create is
/// dropped when a delete of the same (did, collection, rkey) with a higher
/// seq exists in any of them. Segments with nothing to drop are left as
/// they are; the others are rewritten block for block (a block emptied by
/// the compaction stays, empty) and atomically replaced.
pub fn compact_deletes<P: AsRef<Path>>(paths: &[P]) -> Result<CompactStats> {
    // Pass 1: the last delete of every record.
    let mut deleted: HashMap<Key, u64> = HashMap::new();
    let mut segments = Vec::with_capacity(paths.len());
    let mut buf = BlockBuf::new()?;
    for p in paths {
        let seg = Segment::open(p)?;
        for i in 0..seg.block_count() {
            for e in seg.read_block(i, &mut buf)? {
                if e.kind == Kind::Delete {
                    deleted.insert(key(&e), e.seq);
                }
            }
        }
        segments.push(seg);
    }
    let superseded = |e: &crate::event::EventRef<'_>| {
        is_create(e.kind) && deleted.get(&key(e)).is_some_and(|&d| d > e.seq)
    };

    // Pass 2: rewrite what changes.
    let mut stats = CompactStats::default();
    for (p, seg) in paths.iter().zip(&segments) {
        let path = p.as_ref();
        let mut blocks: Vec<Vec<Event>> = Vec::with_capacity(seg.block_count());
        let mut dropped = 0u64;
        let mut largest = 1usize;
        for i in 0..seg.block_count() {
            let events = seg.read_block(i, &mut buf)?;
            largest = largest.max(events.len());
            let kept: Vec<Event> = events
                .iter()
                .filter(|e| !superseded(e))
                .map(crate::event::EventRef::to_event)
                .collect();
            dropped += (events.len() - kept.len()) as u64;
            blocks.push(kept);
        }
        stats.kept += blocks.iter().map(|b| b.len() as u64).sum::<u64>();
        if dropped == 0 {
            continue;
        }
        rewrite(path, &blocks, largest)?;
        stats.rewritten += 1;
        stats.dropped += dropped;
    }
    Ok(stats)
}

fn temp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".compact.tmp");
    path.with_file_name(name)
}

fn rewrite(path: &Path, blocks: &[Vec<Event>], block_events: usize) -> Result<()> {
    let tmp = temp_path(path);
    // A leftover from an interrupted compaction is garbage.
    let _ = std::fs::remove_file(&tmp);
    let opts = WriterOptions {
        block_events,
        sync: false,
    };
    let mut w = Writer::create(&tmp, opts)?;
    for block in blocks {
        for e in block {
            w.append(&e.as_ref())?;
        }
        w.flush_keeping_empty()?;
    }
    // Seal fsyncs the footer and the header.
    w.seal()?;
    std::fs::rename(&tmp, path).map_err(Error::io("rename compacted segment"))?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(Error::io("fsync directory"))
}
