//! The one error type of the crate: every failure is a variant, none panics.

use std::io;

/// Everything reading or writing a segment can fail on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An I/O call failed.
    #[error("{op}: {source}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// An event field is longer than the format allows.
    #[error("{field} is {len} bytes, more than the limit of {limit}")]
    FieldTooLong {
        /// Which field.
        field: &'static str,
        /// Its length.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// An event kind byte outside 1..=7.
    #[error("invalid event kind {0}")]
    InvalidKind(u8),
    /// A string field is not UTF-8.
    #[error("{0} is not valid UTF-8")]
    InvalidUtf8(&'static str),
    /// An appended event's seq does not follow the previous one.
    #[error("seq {seq} does not follow {previous}")]
    SeqOrder {
        /// The last seq in the segment.
        previous: u64,
        /// The rejected seq.
        seq: u64,
    },
    /// An appended event's witnessed_at goes backwards.
    #[error("witnessed_at {witnessed_at} is before {previous}")]
    WitnessedOrder {
        /// The last witnessed_at in the segment.
        previous: i64,
        /// The rejected value.
        witnessed_at: i64,
    },
    /// A block body is malformed.
    #[error("corrupt block body: {0}")]
    Body(&'static str),
    /// A zstd frame is malformed, too large or fails its checksum.
    #[error("zstd frame: {0}")]
    Frame(String),
    /// The file header is malformed.
    #[error("header: {0}")]
    Header(&'static str),
    /// The footer (block index, blooms, collection index) is malformed.
    #[error("footer: {0}")]
    Footer(&'static str),
    /// A bloom filter is malformed.
    #[error("bloom: {0}")]
    Bloom(&'static str),
    /// The header/footer checksum does not match.
    #[error("checksum mismatch: header says {stored:#018x}, computed {computed:#018x}")]
    Checksum {
        /// The checksum stored in the header.
        stored: u64,
        /// The checksum of the bytes on disk.
        computed: u64,
    },
    /// The file is sealed, so it cannot be appended to.
    #[error("segment is sealed")]
    Sealed,
    /// The file is still active (unsealed), so it cannot be opened for reading.
    #[error("segment is not sealed")]
    NotSealed,
    /// A block index out of range.
    #[error("block {index} out of range ({count} blocks)")]
    NoSuchBlock {
        /// Requested block.
        index: usize,
        /// Blocks in the segment.
        count: usize,
    },
    /// A backfill block was committed out of order.
    #[error("block ticket {got} committed, expected {expected}")]
    CommitOrder {
        /// The ticket expected next.
        expected: u64,
        /// The ticket given.
        got: u64,
    },
    /// The segment (or a block) cannot take more events.
    #[error("limit reached: {0}")]
    Limit(&'static str),
    /// An earlier write failed; the writer refuses further work.
    #[error("writer failed earlier: {0}")]
    Sticky(String),
    /// A wire encoding failed (bad DAG-CBOR payload, bad JSON line).
    #[error("wire: {0}")]
    Wire(String),
    /// A background worker went away.
    #[error("compression worker stopped")]
    WorkerGone,
}

impl Error {
    pub(crate) fn io(op: &'static str) -> impl FnOnce(io::Error) -> Error {
        move |source| Error::Io { op, source }
    }
}

/// Result alias of the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
