//! Byte codecs of the data-gateway hot path: base64 (standard alphabet,
//! padded), CRC-32 (IEEE) and sha-256; plus the RFC 3339 timestamp text
//! ([`datetime`]) and the JSON string literal ([`json_text`]) the other
//! crates share.
//!
//! Each codec has a **scalar path that is the correctness oracle** and always
//! compiles, and a fast path behind a default feature:
//!
//! | codec  | oracle(s)                                   | fast path (feature)                  |
//! |--------|---------------------------------------------|--------------------------------------|
//! | base64 | [`base64::scalar`]                          | [`base64::simd`] (`simd-codecs`)     |
//! | CRC-32 | [`crc32::bitwise`], [`crc32::table`]        | [`crc32::fast`] (`simd-checksum`)    |
//!
//! The top-level functions ([`base64::encode`], [`base64::decode`],
//! [`crc32::checksum`]) pick the fastest path compiled in, so callers never
//! name a path. With `--no-default-features` the crate is scalar-only and has
//! no dependency beyond `sha2` and `thiserror`.
//!
//! Every path agrees byte for byte with the oracle, and invalid base64 is
//! rejected by every path with the same [`base64::Base64Error`]: the fast path
//! hands any input it rejects to the oracle to name the fault.
//!
//! Every path is public API (callers may pin one), so the crate needs no
//! `bench-internals` facade: the benches call the same functions users do.

pub mod base64;
pub mod crc32;
pub mod datetime;
pub mod json_text;
pub mod sha256;

pub use base64::Base64Error;
