//! `datagen` owns every seeded generator atbench uses: the hot-path NDJSON
//! datasets ([`hotpath`]), the appview's orchestration workload
//! ([`appview`], the spec's seed 1337 on a stream of its own), the seeded
//! byte buffers the codec benches feed ([`random_bytes`]), and the
//! `datagen` CLI that writes the dataset to `data/` with its
//! `MANIFEST.json` ([`manifest`]).
//!
//! # Seeding
//!
//! * The project seed is [`SEED`] = `20260602`. The CLI accepts `--seed` for
//!   experiments; everything in-process ([`hotpath::lines`],
//!   [`hotpath::load_sample`], [`random_bytes`]) uses [`SEED`].
//! * Every generator is a [`rand_chacha::ChaCha8Rng`] (ChaCha with 8 rounds:
//!   statistically ample for benchmark data and the fastest of the family, so
//!   writing 512 MB is bound by base64 and I/O, not by the RNG). A generator
//!   is keyed with `ChaCha8Rng::seed_from_u64(key)` and then moved to its own
//!   ChaCha *stream* with `set_stream(id)`; distinct streams of one key are
//!   independent 2^64-block sequences.
//! * Dataset streams (key = seed): one per [`hotpath::Kind`], so the kinds do
//!   not shift each other when one of them changes length:
//!
//!   | stream | kind                     | file                    |
//!   |--------|--------------------------|-------------------------|
//!   | 1      | [`hotpath::Kind::Records`]        | `records.ndjson`         |
//!   | 2      | [`hotpath::Kind::ObjectDispatch`] | `object_dispatch.ndjson` |
//!   | 3      | [`hotpath::Kind::Blobs`]          | `blobs.ndjson`           |
//!   | 4      | [`hotpath::Kind::SqlDispatch`]    | `sql_dispatch.ndjson`    |
//!   | 5      | [`hotpath::Kind::RestDispatch`]   | `rest_dispatch.ndjson`   |
//!
//! * Byte buffers ([`random_bytes`]) use a separate key,
//!   `SEED ^ RANDOM_BYTES_DOMAIN`, with the caller's stream id as the ChaCha
//!   stream, so no caller-chosen stream id can collide with a dataset stream.
//! * A kind's lines are produced strictly in order from its one stream, so
//!   the first N lines generated in memory are byte-identical to the first N
//!   lines of the file the CLI writes with the same seed.
//!
//! # Values must not change
//!
//! Benchmark history compares runs over "the same data". Any change to a
//! generator (vocabulary, weights, order of draws, formatting) or to the
//! pinned `rand`/`rand_chacha` versions changes the data: the tests pin a
//! sha-256 of the first 100 lines of every kind and of a [`random_bytes`]
//! buffer, so an accidental change fails `cargo test -p datagen`. A
//! deliberate change must bump [`GENERATOR_VERSION`] (which makes every
//! existing `data/` stale) and update the pinned digests.
//!
//! Numbers are written from integers (fixed decimals, no float formatting),
//! so the text does not depend on a float printer.

pub mod appview;
pub mod hotpath;
mod json;
// The manifest describes the hot-path dataset's files: a child of `hotpath`
// (which its sample loader reads), at its old path too.
pub use hotpath::manifest;
pub mod segment;
pub mod segment_mix;
pub mod store;

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The project seed: every dataset, sample and seeded buffer derives from it.
pub const SEED: u64 = 20260602;

/// Version of the generators' output. Bump it on any deliberate change to
/// the generated values; `data/MANIFEST.json` records it and
/// [`hotpath::load_sample`] ignores a `data/` written by another version.
pub const GENERATOR_VERSION: u32 = 1;

/// XOR-ed into the seed to key [`random_bytes`] apart from the datasets
/// (ASCII `"RANDBYTE"`).
pub const RANDOM_BYTES_DOMAIN: u64 = 0x5241_4e44_4259_5445;

/// The generator of one dataset stream: `ChaCha8Rng` keyed from `seed`,
/// positioned on ChaCha stream `stream`.
pub(crate) fn stream_rng(seed: u64, stream: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    rng
}

/// `len` seeded bytes from stream `stream` of the byte-buffer key (see the
/// crate docs). The same `(stream, len)` always gives the same bytes, and a
/// shorter buffer is a prefix of a longer one from the same stream.
///
/// Benches use it for codec inputs (base64, CRC-32, sha-256 buffers); pick a
/// distinct stream per purpose.
pub fn random_bytes(stream: u64, len: usize) -> Vec<u8> {
    let mut rng = stream_rng(SEED ^ RANDOM_BYTES_DOMAIN, stream);
    let mut out = vec![0u8; len];
    rng.fill_bytes(&mut out);
    out
}

/// Everything the CLI and the dataset writer can fail on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file or directory could not be created, written or renamed.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done (`"create directory"`, `"write"`, ...).
        action: &'static str,
        /// The path it was done to.
        path: std::path::PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The manifest could not be serialised.
    #[error("serialise manifest: {0}")]
    Manifest(#[from] serde_json::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_bytes_is_deterministic_and_prefix_stable() {
        let a = random_bytes(7, 1000);
        assert_eq!(a, random_bytes(7, 1000));
        assert_eq!(&a[..100], &random_bytes(7, 100)[..]);
        assert_ne!(a, random_bytes(8, 1000));
        assert!(random_bytes(7, 0).is_empty());
    }

    #[test]
    fn random_bytes_differs_from_dataset_stream_of_same_id() {
        let mut rng = stream_rng(SEED, 1);
        let mut ds = vec![0u8; 64];
        rng.fill_bytes(&mut ds);
        assert_ne!(ds, random_bytes(1, 64));
    }
}
