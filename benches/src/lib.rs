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
//! - [`appview_standin`]: the appview stand-in `xrpc.mix` points both PDSes
//!   at, so their proxied `app.bsky` reads have a live upstream.
//! - [`appview`]: the read-pattern groups, queries, checks and tiers that
//!   `--bench appview` and `--bench live_backends` share.
//! - [`convert_inputs`], [`alloc_policy`]: the convert inputs and allocator
//!   policy `--bench hotpath` shares with its examples.
//! - [`calibrate`]: the calibration kernels (integer, memory latency, copy,
//!   sha-256), each its own `calibrate.*` id, that
//!   [`target::BenchTarget::finish`] runs with every target, so a snapshot can tell a slower machine from a
//!   slower code path.
//! - [`floor`]: the floor probes, a baseline's statement through an
//!   independent client (python's sqlite3, pgbench, redis-benchmark,
//!   mysqlslap) as an adjacent row of the baseline's group.
//! - [`inputs`]: inputs more than one target builds the same way (and those
//!   a target shares with its peer).
//! - [`corpus`]: the real records, frames and keys of the vendored corpus.
//! - `peers` (feature `bench-internals`): the reference implementations
//!   (`peers/` under node) run after our rows under `BENCH_PEERS=1`.
//! - `official_pds` (feature `bench-internals`): the official PDS as a whole
//!   HTTP server (`peers/official-pds-server`), started and stopped for any
//!   bench that drives it through its own client.
//! - [`paired`]: the driven mode (`ATBENCH_PAIRED=1`) in which the paired
//!   re-measurement of `scripts/bench_snapshot.py` runs one id at a time.
//! - [`sidecar`]: where the harness writes what Criterion does not record
//!   (latency percentiles, run context) for `scripts/bench_snapshot.py`.

pub mod alloc_policy;
pub mod appview;
pub mod appview_standin;
pub mod calibrate;
pub mod callers;
pub mod config;
pub mod convert_inputs;
pub mod corpus;
pub mod floor;
pub mod inputs;
#[cfg(feature = "bench-internals")]
pub mod official_pds;
pub mod paired;
#[cfg(feature = "bench-internals")]
pub mod peers;
pub mod prefect;
pub mod registry;
pub mod sidecar;
pub mod target;

pub use target::{BenchTarget, Group};
