//! The hot-path datasets of `docs/design/hotpath.md` ("Data"): five NDJSON kinds,
//! one JSON object per line, each drawn from its own ChaCha stream (see the
//! crate docs).
//!
//! | kind | file | share of `--target-mb` | mean line |
//! |---|---|---|---|
//! | [`Kind::Records`] | `records.ndjson` | 60 % | ~550 B |
//! | [`Kind::ObjectDispatch`] | `object_dispatch.ndjson` | 18 % | ~2.9 KB |
//! | [`Kind::Blobs`] | `blobs.ndjson` | 10 % | 16 B/256 B/4 KiB/64 KiB payloads, cycled |
//! | [`Kind::SqlDispatch`] | `sql_dispatch.ndjson` | 6 % | ~146 B |
//! | [`Kind::RestDispatch`] | `rest_dispatch.ndjson` | 6 % | ~265 B |
//!
//! This module owns the line generators ([`LineGen`], [`lines`]), the
//! streaming file writer the CLI uses ([`write_kind`]) and the benches'
//! bounded sample ([`load_sample`]). A megabyte here is a MiB (2^20 bytes).

mod generate;
pub mod manifest;
mod sample;

use std::io::{self, Write};

use rand_chacha::ChaCha8Rng;
use sha2::{Digest, Sha256};

pub use sample::{
    Sample, SampleSizes, SampleSource, data_dir, load_sample, load_sample_with, read_sample,
    sample_source,
};

/// Bytes in one `--target-mb` unit.
pub const MIB: u64 = 1 << 20;

/// One hot-path dataset kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `records.ndjson`: rows touching every JSON value kind.
    Records,
    /// `object_dispatch.ndjson`: object-store requests with inline payloads.
    ObjectDispatch,
    /// `blobs.ndjson`: base64 blobs of 16 B, 256 B, 4 KiB and 64 KiB.
    Blobs,
    /// `sql_dispatch.ndjson`: `{"sql", "params"}` dispatch lines.
    SqlDispatch,
    /// `rest_dispatch.ndjson`: `{"path", "method", "body"}` dispatch lines.
    RestDispatch,
}

impl Kind {
    /// Every kind, in stream-id order.
    pub const ALL: [Kind; 5] = [
        Kind::Records,
        Kind::ObjectDispatch,
        Kind::Blobs,
        Kind::SqlDispatch,
        Kind::RestDispatch,
    ];

    /// The file name under `data/`.
    pub fn file_name(self) -> &'static str {
        match self {
            Kind::Records => "records.ndjson",
            Kind::ObjectDispatch => "object_dispatch.ndjson",
            Kind::Blobs => "blobs.ndjson",
            Kind::SqlDispatch => "sql_dispatch.ndjson",
            Kind::RestDispatch => "rest_dispatch.ndjson",
        }
    }

    /// Share of `--target-mb`, in percent (the five add up to 100).
    pub fn share_percent(self) -> u64 {
        match self {
            Kind::Records => 60,
            Kind::ObjectDispatch => 18,
            Kind::Blobs => 10,
            Kind::SqlDispatch | Kind::RestDispatch => 6,
        }
    }

    /// The ChaCha stream id of this kind (fixed forever; see the crate docs).
    pub fn stream_id(self) -> u64 {
        match self {
            Kind::Records => 1,
            Kind::ObjectDispatch => 2,
            Kind::Blobs => 3,
            Kind::SqlDispatch => 4,
            Kind::RestDispatch => 5,
        }
    }

    /// Byte budget of this kind's file for `target_mb` MiB in total. The
    /// writer stops after the first line that reaches it.
    pub fn target_bytes(self, target_mb: u64) -> u64 {
        target_mb * MIB * self.share_percent() / 100
    }

    fn generator(self) -> fn(&mut ChaCha8Rng, u64, &mut Vec<u8>, &mut String) {
        match self {
            Kind::Records => generate::record,
            Kind::ObjectDispatch => generate::object,
            Kind::Blobs => generate::blob,
            Kind::SqlDispatch => generate::sql,
            Kind::RestDispatch => generate::rest,
        }
    }
}

/// An endless, in-order generator of one kind's lines (no trailing newline).
///
/// Line `i` of `LineGen::new(kind, seed)` is line `i` of the file the CLI
/// writes for `kind` with `--seed seed`.
pub struct LineGen {
    rng: ChaCha8Rng,
    generate: fn(&mut ChaCha8Rng, u64, &mut Vec<u8>, &mut String),
    index: u64,
    scratch: Vec<u8>,
}

impl LineGen {
    /// Starts at line 0 of `kind` for `seed` (use [`crate::SEED`]).
    pub fn new(kind: Kind, seed: u64) -> Self {
        LineGen {
            rng: crate::stream_rng(seed, kind.stream_id()),
            generate: kind.generator(),
            index: 0,
            scratch: Vec::new(),
        }
    }

    /// Appends the next line to `out` without allocating a new string.
    pub fn push_next(&mut self, out: &mut String) {
        (self.generate)(&mut self.rng, self.index, &mut self.scratch, out);
        self.index += 1;
    }
}

impl Iterator for LineGen {
    type Item = String;

    /// Never returns `None`: take as many lines as needed.
    fn next(&mut self) -> Option<String> {
        let mut line = String::new();
        self.push_next(&mut line);
        Some(line)
    }
}

/// The first `count` lines of `kind` for [`crate::SEED`], in memory.
pub fn lines(kind: Kind, count: usize) -> Vec<String> {
    LineGen::new(kind, crate::SEED).take(count).collect()
}

/// What [`write_kind`] wrote: what `MANIFEST.json` records per file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSummary {
    /// Lines written (each ends in `\n`).
    pub lines: u64,
    /// Bytes written, newlines included.
    pub bytes: u64,
    /// Lowercase hex sha-256 of the bytes written.
    pub sha256: String,
}

/// Writes `kind`'s lines for `seed`, each followed by `\n`, until at least
/// `target_bytes` are written (so a non-zero target gets at least one line),
/// hashing as it goes. `progress` is called with the bytes of each line.
///
/// Writes in one pass through `out`; wrap a file in a `BufWriter`.
pub fn write_kind<W: Write>(
    kind: Kind,
    seed: u64,
    target_bytes: u64,
    mut out: W,
    mut progress: impl FnMut(u64),
) -> io::Result<FileSummary> {
    let mut lines = LineGen::new(kind, seed);
    let mut hasher = Sha256::new();
    let mut line = String::with_capacity(128 * 1024);
    let (mut count, mut bytes) = (0u64, 0u64);
    while bytes < target_bytes {
        line.clear();
        lines.push_next(&mut line);
        line.push('\n');
        out.write_all(line.as_bytes())?;
        hasher.update(line.as_bytes());
        count += 1;
        bytes += line.len() as u64;
        progress(line.len() as u64);
    }
    out.flush()?;
    Ok(FileSummary {
        lines: count,
        bytes,
        sha256: hex(&hasher.finalize()),
    })
}

/// Lowercase hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up_and_streams_are_distinct() {
        let total: u64 = Kind::ALL.iter().map(|k| k.share_percent()).sum();
        assert_eq!(total, 100);
        let mut ids: Vec<u64> = Kind::ALL.iter().map(|k| k.stream_id()).collect();
        ids.dedup();
        assert_eq!(ids, vec![1, 2, 3, 4, 5]);
        assert_eq!(Kind::Records.target_bytes(512), 322_122_547);
    }

    #[test]
    fn write_kind_matches_lines_and_stops_at_target() {
        let mut buf = Vec::new();
        let mut seen = 0u64;
        let sum = write_kind(Kind::SqlDispatch, crate::SEED, 10_000, &mut buf, |n| {
            seen += n
        })
        .unwrap();
        assert_eq!(sum.bytes, buf.len() as u64);
        assert_eq!(seen, sum.bytes);
        assert!(sum.bytes >= 10_000);
        let text = String::from_utf8(buf).unwrap();
        let written: Vec<&str> = text.lines().collect();
        assert_eq!(written.len() as u64, sum.lines);
        // Stops at the first line reaching the target, not later.
        let last = written.last().unwrap().len() as u64 + 1;
        assert!(sum.bytes - last < 10_000);
        let expected = lines(Kind::SqlDispatch, written.len());
        assert_eq!(
            written,
            expected.iter().map(String::as_str).collect::<Vec<_>>()
        );
        assert_eq!(sum.sha256, hex(&Sha256::digest(text.as_bytes())));
    }

    #[test]
    fn zero_target_writes_nothing() {
        let mut buf = Vec::new();
        let sum = write_kind(Kind::Blobs, crate::SEED, 0, &mut buf, |_| {}).unwrap();
        assert_eq!((sum.lines, sum.bytes), (0, 0));
        assert!(buf.is_empty());
    }

    #[test]
    fn seeds_differ() {
        let a: Vec<String> = LineGen::new(Kind::Records, 1).take(3).collect();
        let b: Vec<String> = LineGen::new(Kind::Records, 2).take(3).collect();
        assert_ne!(a, b);
    }
}
