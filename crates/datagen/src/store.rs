//! Seeded accounts and records for the record store's tests and benches:
//! realistic `app.bsky` posts, likes, follows and a profile per account, as
//! atproto JSON (`serde_json::Value`) so datagen does not depend on the
//! repo crate (a caller converts them to DAG-CBOR).
//!
//! Account `i` has DID [`did`]`(i)` and its records come from ChaCha stream
//! [`STORE_STREAM`]` + i` of the project seed, strictly in order: the first
//! `n` records of an account never change when more are asked for.
//! Record keys are TIDs with increasing timestamps (so rkey order is
//! creation order); the mix is about 40 % likes, 30 % posts, 25 % follows,
//! 5 % reposts, after one profile (`self`) first.

use rand::{Rng, RngCore};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::{SEED, stream_rng};

/// First ChaCha stream of the store generators (ASCII "STORE\0\0\0").
pub const STORE_STREAM: u64 = 0x5354_4f52_4500_0000;

/// Timestamp (µs) of the first generated record: 2024-06-01T00:00:00Z.
pub const BASE_TIME_US: u64 = 1_717_200_000_000_000;

const B32_SORT: &[u8; 32] = b"234567abcdefghijklmnopqrstuvwxyz";
const B32_LOWER: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

/// One generated record.
#[derive(Debug, Clone, PartialEq)]
pub struct GenRecord {
    /// Collection NSID.
    pub collection: &'static str,
    /// Record key.
    pub rkey: String,
    /// The record in atproto JSON.
    pub value: Value,
}

/// A `did:plc:` of 24 base32 characters derived from the account index.
pub fn did(i: u64) -> String {
    let digest = Sha256::digest(format!("atbench-store-account-{i}").as_bytes());
    let mut s = String::from("did:plc:");
    for b in digest.iter().take(24) {
        s.push(B32_LOWER[(b & 31) as usize] as char);
    }
    s
}

/// The 32-byte k256 secret of account `i` (a valid scalar for any `i`: a
/// SHA-256 output is below the curve order with overwhelming probability,
/// and the index is mixed in until it is non-zero).
pub fn signing_secret(i: u64) -> [u8; 32] {
    let mut d: [u8; 32] = Sha256::digest(format!("atbench-store-key-{i}").as_bytes()).into();
    // Keep it well below the secp256k1 order.
    d[0] &= 0x7f;
    d[31] |= 1;
    d
}

/// A TID string: 53-bit µs timestamp, 10-bit clock id.
pub fn tid(micros: u64, clock: u16) -> String {
    let v = ((micros & ((1 << 53) - 1)) << 10) | u64::from(clock & 0x3ff);
    (0..13)
        .map(|i| B32_SORT[((v >> (60 - 5 * i)) & 31) as usize] as char)
        .collect()
}

/// Fixture microseconds as RFC 3339 UTC text with milliseconds (the
/// `createdAt` of the fixtures' records; `codec::datetime` converts).
pub fn datetime(micros: u64) -> String {
    codec::datetime::rfc3339_millis((micros / 1000) as i64)
}

/// A dag-cbor CIDv1 string over sha-256 of `seed`.
fn cid_string(seed: &[u8]) -> String {
    let digest = Sha256::digest(seed);
    let mut bytes = vec![0x01, 0x71, 0x12, 0x20];
    bytes.extend_from_slice(&digest);
    let mut s = String::from("b");
    let (mut acc, mut bits) = (0u32, 0u32);
    for b in bytes {
        acc = (acc << 8) | u32::from(b);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            s.push(B32_LOWER[((acc >> bits) & 31) as usize] as char);
        }
    }
    if bits > 0 {
        s.push(B32_LOWER[((acc << (5 - bits)) & 31) as usize] as char);
    }
    s
}

const WORDS: &[&str] = &[
    "the",
    "a",
    "today",
    "just",
    "really",
    "new",
    "post",
    "thread",
    "bluesky",
    "atproto",
    "rust",
    "sqlite",
    "coffee",
    "morning",
    "working",
    "on",
    "with",
    "my",
    "this",
    "that",
    "is",
    "great",
    "weird",
    "fun",
    "ship",
    "it",
    "build",
    "benchmark",
    "fast",
    "slow",
    "data",
    "tree",
    "merkle",
    "search",
    "commit",
    "signed",
    "firehose",
    "relay",
    "feed",
    "like",
    "follow",
    "photo",
    "cat",
    "dog",
    "weekend",
    "release",
    "bug",
    "fix",
    "again",
    "finally",
    "why",
    "how",
    "love",
    "hate",
];

fn text(rng: &mut impl RngCore, min: usize, max: usize) -> String {
    let n = rng.random_range(min..=max);
    let mut s = String::new();
    for i in 0..n {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(WORDS[rng.random_range(0..WORDS.len())]);
    }
    s
}

fn strong_ref(rng: &mut impl RngCore, now: u64) -> Value {
    let author = did(rng.random_range(0..1_000_000));
    let rkey = tid(
        now - rng.random_range(0..86_400_000_000u64),
        rng.random_range(0..1024),
    );
    let uri = format!("at://{author}/app.bsky.feed.post/{rkey}");
    let cid = cid_string(uri.as_bytes());
    json!({ "uri": uri, "cid": cid })
}

/// The profile record (`app.bsky.actor.profile/self`) of account `i`.
pub fn profile(i: u64) -> GenRecord {
    let mut rng = stream_rng(SEED, STORE_STREAM + i);
    GenRecord {
        collection: "app.bsky.actor.profile",
        rkey: "self".into(),
        value: json!({
            "$type": "app.bsky.actor.profile",
            "displayName": format!("Account {i}"),
            "description": text(&mut rng, 5, 25),
            "createdAt": datetime(BASE_TIME_US),
        }),
    }
}

/// The first `n` records of account `i` after its profile.
pub fn records(i: u64, n: usize) -> Vec<GenRecord> {
    let mut rng = stream_rng(SEED, STORE_STREAM + i);
    // The profile draws first from the same stream.
    let _ = text(&mut rng, 5, 25);
    let mut now = BASE_TIME_US;
    let clock = (i % 1024) as u16;
    (0..n)
        .map(|_| {
            now += rng.random_range(1_000..60_000_000u64);
            let created = datetime(now);
            let rkey = tid(now, clock);
            let roll = rng.random_range(0..100u32);
            let (collection, value) = if roll < 40 {
                (
                    "app.bsky.feed.like",
                    json!({"$type": "app.bsky.feed.like", "subject": strong_ref(&mut rng, now), "createdAt": created}),
                )
            } else if roll < 70 {
                let mut v = json!({
                    "$type": "app.bsky.feed.post",
                    "text": text(&mut rng, 3, 40),
                    "langs": ["en"],
                    "createdAt": created,
                });
                if rng.random_range(0..4u32) == 0 {
                    let root = strong_ref(&mut rng, now);
                    let parent = strong_ref(&mut rng, now);
                    v["reply"] = json!({"root": root, "parent": parent});
                }
                ("app.bsky.feed.post", v)
            } else if roll < 95 {
                (
                    "app.bsky.graph.follow",
                    json!({"$type": "app.bsky.graph.follow", "subject": did(rng.random_range(0..1_000_000)), "createdAt": created}),
                )
            } else {
                (
                    "app.bsky.feed.repost",
                    json!({"$type": "app.bsky.feed.repost", "subject": strong_ref(&mut rng, now), "createdAt": created}),
                )
            };
            GenRecord {
                collection,
                rkey,
                value,
            }
        })
        .collect()
}

/// A single post for account `i` with an explicit rkey timestamp (for
/// write benches that need fresh keys without generating a whole list).
pub fn post(i: u64, n: u64) -> GenRecord {
    let mut rng = stream_rng(SEED, STORE_STREAM ^ (i << 20) ^ n);
    let now = BASE_TIME_US + 1_000_000_000_000 + n * 1000;
    GenRecord {
        collection: "app.bsky.feed.post",
        rkey: tid(now, (i % 1024) as u16),
        value: json!({
            "$type": "app.bsky.feed.post",
            "text": text(&mut rng, 3, 40),
            "langs": ["en"],
            "createdAt": datetime(now),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_prefix_stable() {
        let a = records(3, 50);
        assert_eq!(a, records(3, 50));
        assert_eq!(&a[..10], &records(3, 10)[..]);
        assert_ne!(records(4, 5), records(3, 5));
        let mut keys: Vec<_> = a.iter().map(|r| r.rkey.clone()).collect();
        let sorted = keys.clone();
        keys.sort();
        assert_eq!(keys, sorted, "rkeys increase");
    }

    #[test]
    fn shapes() {
        assert_eq!(did(0).len(), "did:plc:".len() + 24);
        assert_eq!(tid(0, 0), "2222222222222");
        assert_eq!(tid(BASE_TIME_US, 1).len(), 13);
        assert_eq!(datetime(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(datetime(BASE_TIME_US), "2024-06-01T00:00:00.000Z");
        assert_eq!(cid_string(b"x").len(), 59);
        assert!(cid_string(b"x").starts_with("bafyrei"));
    }
}
