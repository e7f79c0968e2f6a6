//! Cold replay (feature `wire`): consumers read from a cursor in batches
//! across sealed segments (opened unchecked, blocks below the cursor
//! skipped) through a byte-bounded LRU block cache with single-flight
//! decoding. A cached block holds each event's v1 line, computed once and
//! shared by every consumer; the zstd v1 frames (with the v1 dictionary)
//! are computed once per block on first demand.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use crate::error::{Error, Result};
use crate::format::BlockMeta;
use crate::reader::{BlockBuf, Segment};
use crate::wire::encode_v1;

/// Events per batch handed to a consumer.
pub const BATCH: usize = 512;
/// Default cache budget.
pub const DEFAULT_CACHE_BYTES: usize = 64 << 20;

/// One decoded block: its events' seqs and v1 lines.
#[derive(Debug)]
pub struct CachedBlock {
    seqs: Vec<u64>,
    lines: Vec<String>,
    zstd: OnceLock<std::result::Result<Vec<Vec<u8>>, String>>,
    bytes: usize,
}

impl CachedBlock {
    /// The v1 line of event `i`.
    pub fn line(&self, i: usize) -> &str {
        &self.lines[i]
    }

    /// The v1 lines compressed with the v1 dictionary, computed once.
    pub fn zstd_frames(&self, dict: &V1Dictionary) -> Result<&[Vec<u8>]> {
        let frames = self.zstd.get_or_init(|| {
            let mut c = zstd::bulk::Compressor::with_prepared_dictionary(&dict.encoder)
                .map_err(|e| e.to_string())?;
            self.lines
                .iter()
                .map(|l| c.compress(l.as_bytes()).map_err(|e| e.to_string()))
                .collect()
        });
        frames.as_deref().map_err(|e| Error::Wire(e.clone()))
    }
}

/// The Jetstream v1 zstd dictionary, prepared once.
pub struct V1Dictionary {
    encoder: zstd::dict::EncoderDictionary<'static>,
}

impl std::fmt::Debug for V1Dictionary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("V1Dictionary")
    }
}

impl V1Dictionary {
    /// Prepares `dict` (the bytes of `legacy_subscribe.zdict`) at level 3.
    pub fn new(dict: &[u8]) -> Self {
        V1Dictionary {
            encoder: zstd::dict::EncoderDictionary::copy(dict, crate::frame::LEVEL),
        }
    }
}

/// A run of events of one cached block.
#[derive(Debug, Clone)]
pub struct Slice {
    /// The block.
    pub block: Arc<CachedBlock>,
    /// Which of its events.
    pub range: std::ops::Range<usize>,
}

enum Slot {
    Loading(Arc<(Mutex<bool>, Condvar)>),
    Ready(Arc<CachedBlock>, u64),
}

struct Lru {
    slots: HashMap<(usize, usize), Slot>,
    bytes: usize,
    tick: u64,
}

/// Sealed segments plus the shared block cache.
pub struct Archive {
    segments: Vec<(Segment, Vec<BlockMeta>)>,
    cache: Mutex<Lru>,
    budget: usize,
}

impl std::fmt::Debug for Archive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Archive")
            .field("segments", &self.segments.len())
            .finish()
    }
}

impl Archive {
    /// Opens `paths` (in seq order) unchecked, with a cache of `budget` bytes.
    pub fn open<P: AsRef<Path>>(paths: &[P], budget: usize) -> Result<Archive> {
        let mut segments = Vec::with_capacity(paths.len());
        for p in paths {
            let seg = Segment::open_unchecked(p)?;
            let metas = (0..seg.block_count())
                .map(|i| seg.block_meta(i))
                .collect::<Result<Vec<_>>>()?;
            segments.push((seg, metas));
        }
        Ok(Archive {
            segments,
            cache: Mutex::new(Lru {
                slots: HashMap::new(),
                bytes: 0,
                tick: 0,
            }),
            budget,
        })
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Lru>> {
        self.cache
            .lock()
            .map_err(|_| Error::Wire("block cache poisoned".into()))
    }

    /// The cached block `(segment, block)`, decoding it once however many
    /// consumers ask at the same time.
    pub fn block(&self, key: (usize, usize)) -> Result<Arc<CachedBlock>> {
        loop {
            let waiter = {
                let mut lru = self.lock()?;
                lru.tick += 1;
                let tick = lru.tick;
                match lru.slots.get_mut(&key) {
                    Some(Slot::Ready(b, used)) => {
                        *used = tick;
                        return Ok(Arc::clone(b));
                    }
                    Some(Slot::Loading(w)) => Some(Arc::clone(w)),
                    None => {
                        let w = Arc::new((Mutex::new(false), Condvar::new()));
                        lru.slots.insert(key, Slot::Loading(Arc::clone(&w)));
                        drop(lru);
                        return self.load(key, w);
                    }
                }
            };
            if let Some(w) = waiter {
                let (done, cv) = &*w;
                let mut d = done
                    .lock()
                    .map_err(|_| Error::Wire("cache waiter poisoned".into()))?;
                while !*d {
                    d = cv
                        .wait(d)
                        .map_err(|_| Error::Wire("cache waiter poisoned".into()))?;
                }
            }
        }
    }

    fn load(
        &self,
        key: (usize, usize),
        w: Arc<(Mutex<bool>, Condvar)>,
    ) -> Result<Arc<CachedBlock>> {
        let decoded = self.decode(key);
        // Publish (or forget) the block, then always wake the waiters, even
        // if the cache lock is unusable.
        let out = self.lock().and_then(|mut lru| match decoded {
            Ok(block) => {
                lru.tick += 1;
                let tick = lru.tick;
                lru.bytes += block.bytes;
                lru.slots.insert(key, Slot::Ready(Arc::clone(&block), tick));
                evict(&mut lru, self.budget, key);
                Ok(block)
            }
            Err(e) => {
                lru.slots.remove(&key);
                Err(e)
            }
        });
        let (done, cv) = &*w;
        if let Ok(mut d) = done.lock() {
            *d = true;
        }
        cv.notify_all();
        out
    }

    fn decode(&self, (s, b): (usize, usize)) -> Result<Arc<CachedBlock>> {
        let (seg, _) = &self.segments[s];
        let mut buf = BlockBuf::new()?;
        let events = seg.read_block(b, &mut buf)?;
        let mut seqs = Vec::with_capacity(events.len());
        let mut lines = Vec::with_capacity(events.len());
        let mut bytes = 0;
        for e in &events {
            let mut line = String::new();
            if encode_v1(e, &mut line)? {
                bytes += line.len() + 8;
                seqs.push(e.seq);
                lines.push(line);
            }
        }
        Ok(Arc::new(CachedBlock {
            seqs,
            lines,
            zstd: OnceLock::new(),
            bytes,
        }))
    }

    /// Up to [`BATCH`] v1-visible events with seq >= `cursor`, as slices
    /// of cached blocks, appended to `out`. Returns the cursor after them
    /// (unchanged when the archive is exhausted).
    pub fn read_batch(&self, cursor: u64, out: &mut Vec<Slice>) -> Result<u64> {
        let mut want = BATCH;
        let mut next = cursor;
        for (s, (_, metas)) in self.segments.iter().enumerate() {
            for (b, m) in metas.iter().enumerate() {
                if want == 0 {
                    return Ok(next);
                }
                if m.event_count == 0 || m.max_seq < next {
                    continue;
                }
                let block = self.block((s, b))?;
                let start = block.seqs.partition_point(|&q| q < next);
                let end = (start + want).min(block.seqs.len());
                if start < end {
                    next = block.seqs[end - 1] + 1;
                    want -= end - start;
                    out.push(Slice {
                        block: Arc::clone(&block),
                        range: start..end,
                    });
                } else {
                    next = next.max(m.max_seq + 1);
                }
            }
        }
        Ok(next)
    }
}

/// Drops least-recently-used ready blocks (never `keep`) until the cache
/// fits its budget.
fn evict(lru: &mut Lru, budget: usize, keep: (usize, usize)) {
    while lru.bytes > budget {
        let victim = lru
            .slots
            .iter()
            .filter_map(|(k, s)| match s {
                Slot::Ready(b, used) if *k != keep => Some((*used, *k, b.bytes)),
                _ => None,
            })
            .min();
        let Some((_, k, bytes)) = victim else { break };
        lru.slots.remove(&k);
        lru.bytes -= bytes;
    }
}
