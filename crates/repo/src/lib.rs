//! The atproto data model, correct to the byte and built for hot paths.
//!
//! What this crate owns (one module per concept):
//! - [`cbor`]: strict DAG-CBOR (zero-copy [`cbor::ValueRef`], owned
//!   [`cbor::Value`], the item-level [`cbor::Reader`]/[`cbor::Encoder`]) and
//!   the atproto JSON form ([`cbor::json`]);
//! - [`cid`]: CIDv1 sha2-256 (dag-cbor / raw), `Copy` and hashable;
//! - [`syntax`]: TID (+ monotonic generator), record key, NSID, DID, handle,
//!   AT-URI, datetime, and the other lexicon string formats;
//! - [`mst`]: the Merkle Search Tree, lazily loaded through
//!   [`mst::BlockSource`], with O(log n) writes, commits that report new and
//!   dropped blocks, Sync 1.1 covering proofs, walks and diffs;
//! - [`crypto`]: k256 / p256 keys, `did:key`, atproto's signature rules,
//!   and two secp256k1 verifiers (libsecp256k1 by default, feature
//!   `libsecp256k1`; RustCrypto always, as signer and oracle);
//! - [`commit`]: v3 signed commits;
//! - [`car`]: CAR v1 streaming writer and reader, zero-copy slices;
//! - [`firehose`]: subscribeRepos frames and `#commit` verification.
//!
//! Crate-wide choices: every decoder and validator returns a typed
//! `thiserror` error with a byte position or a reason, and never panics on
//! input; hot paths (record decode, frame decode and verify, MST edits)
//! avoid serde and allocate only what the result keeps. Each module's docs
//! list the choices it made where the specs are silent.

pub mod car;
pub mod cbor;
pub mod cid;
pub mod commit;
pub mod crypto;
pub mod firehose;
pub mod mst;
mod sha256x2;
pub mod syntax;
pub mod varint;

#[cfg(feature = "bench-internals")]
#[doc(hidden)]
pub mod bench_internals;

pub use cid::{Cid, CidError, Codec};
