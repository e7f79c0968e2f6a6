//! `segment`: the event archive's file format (`jss0`, version 1), modelled
//! on Bluesky's Jetstream V2 so files are interchangeable with upstream.
//!
//! - [`event`]: the archived event and its limits.
//! - `columns` (private; [`encode_block`], [`decode_block`] and the
//!   `bench-internals` facade expose it): the columnar block body, encoded
//!   into a reused buffer and decoded zero-copy with every validation.
//! - `frame` ([`Compressor`], [`Decompressor`]): zstd frames (level 3,
//!   content checksum and size, 1 GiB cap).
//! - [`bloom`]: the blocked one-hashing DID bloom (XXH3-128, CRC32C).
//! - [`format`]: header, block index, bloom region, collection index.
//! - [`writer`]: live and backfill writers, torn-tail recovery, seal.
//! - [`backfill`]: the backfill shape over a worker pool.
//! - [`compact`]: delete compaction.
//! - [`reader`]: checked and unchecked opens, block reads, DID lookup.
//! - `wire` (feature `wire`): Jetstream v1 and v2 JSON of events.
//! - `inspect` (feature `wire`): the segment inspector behind
//!   `examples/inspect.rs` (header summary, blocks, one JSON line per event).
//! - `replay` (feature `wire`): cold replay through a shared block cache.
//!
//! All integers on disk are little-endian. Every failure is a typed
//! [`Error`]; no input makes a decode or an open panic.

pub mod backfill;
pub mod bloom;
mod columns;
pub mod compact;
pub mod error;
pub mod event;
pub mod format;
mod frame;
#[cfg(feature = "wire")]
pub mod inspect;
pub mod reader;
#[cfg(feature = "wire")]
pub mod replay;
#[cfg(feature = "wire")]
pub mod wire;
pub mod writer;

pub use backfill::Backfill;
pub use bloom::Bloom;
pub use error::{Error, Result};
pub use event::{Event, EventRef, Kind};
pub use format::{BlockMeta, CollectionIndex, Header};
pub use reader::{BlockBuf, Segment};
pub use writer::{Sealed, Writer, WriterOptions};

pub use columns::{FIXED_BYTES_PER_EVENT, MAX_BLOCK_EVENTS};
pub use frame::{Compressor, Decompressor, MAX_DECODED};

/// Encodes `events` as one block: the columnar body compressed as one zstd
/// frame (no length prefix), into a new buffer.
pub fn encode_block(events: &[EventRef<'_>]) -> Result<Vec<u8>> {
    let mut body = Vec::new();
    columns::encode_events(events, &mut body)?;
    frame::compress(&body)
}

/// Decodes one block frame (no length prefix) to owned events, with every
/// validation of the frame and the body.
pub fn decode_block(frame_bytes: &[u8]) -> Result<Vec<Event>> {
    let body = frame::decompress(frame_bytes, None)?;
    Ok(columns::decode(&body)?
        .iter()
        .map(EventRef::to_event)
        .collect())
}

/// The narrow facade the benches use. Not a stable API.
#[cfg(feature = "bench-internals")]
#[doc(hidden)]
pub mod bench_internals {
    pub use crate::columns::{
        Columns, decode as decode_columns, decode_into as decode_columns_into,
        encode_events as encode_columns,
    };
}
