//! The atbench harness: what every bench target in `benches/benches/` shares.
//!
//! - [`config`]: Criterion presets, full or quick (`BENCH_QUICK=1`), and the
//!   time budget each target prints when it starts.
//! - [`registry`]: `benches/units.toml`, the registry of units of work, and
//!   the benchmark-id grammar. Every group a target opens must be registered;
//!   a target that runs unfiltered checks that none of its entries is stale.
//! - [`target`]: [`target::BenchTarget`] and [`target::Group`], the thin
//!   wrappers over Criterion that enforce the registry and the id grammar.
//! - [`callers`]: the concurrent-callers runner: N threads, per-operation
//!   latency in an HDR histogram, fed to Criterion through `iter_custom`,
//!   with a sidecar `target/atbench/latency/<id>.json`.
//! - [`calibrate`]: the calibration kernels (integer, memory latency, copy,
//!   sha-256), each its own `calibrate.*` id, that run
//!   with every target, so a snapshot can tell a slower machine from a
//!   slower code path.
//! - [`inputs`]: inputs more than one target builds the same way (and those
//!   a target shares with its peer).
//! - [`corpus`]: the real records, frames and keys of the vendored corpus.
//! - `peers` (feature `bench-internals`): the reference implementations
//!   (`peers/` under node) run after our rows under `BENCH_PEERS=1`.
//! - [`paired`]: the driven mode (`ATBENCH_PAIRED=1`) in which the paired
//!   re-measurement of `scripts/bench_snapshot.py` runs one id at a time.
//! - [`sidecar`]: where the harness writes what Criterion does not record
//!   (latency percentiles, run context) for `scripts/bench_snapshot.py`.

pub mod calibrate;
pub mod callers;
pub mod config;
pub mod corpus;
pub mod inputs;
pub mod paired;
#[cfg(feature = "bench-internals")]
pub mod peers;
pub mod registry;
pub mod sidecar;
pub mod target;

pub use target::{BenchTarget, Group};
