//! The "realistic mix" of archive events (`docs/design/segment.md`, benchmark
//! shapes): what a Jetstream archive of the Bluesky network holds.
//!
//! Per 1000 events: 990 commits and 10 non-commit events (7 `#identity`,
//! 3 `#account`). Commits:
//!
//! | collection | per 1000 commits | record |
//! |---|---:|---|
//! | `app.bsky.feed.like` | 690 | `{$type, subject {cid, uri}, createdAt}`, ~212 bytes |
//! | `app.bsky.feed.post` | 120 | `{text (5-30 words), $type, langs, createdAt}` |
//! | `app.bsky.feed.repost` | 100 | like-shaped |
//! | `app.bsky.graph.follow` | 60 | `{$type, subject (a DID), createdAt}` |
//! | other (`graph.block`, `graph.listitem`, `actor.profile`) | 30 | 10 each |
//!
//! Operations, per 1000 commits: 955 create, 39 delete (no payload; the
//! rkey of an earlier create), 6 update (of the author's
//! `app.bsky.actor.profile/self`). DIDs are 32 bytes (`did:plc:` + 24
//! base32 characters) from a pool of [`MIX_DIDS`], half of the events by
//! the first 256 (active accounts); rkeys and revs are 13-character TIDs of
//! the event's time; records are real DAG-CBOR (keys in DAG-CBOR order).
//! Events are 50 µs apart (20 k events/s), seq from 1.
//!
//! Seeded: one ChaCha8 stream ([`MIX_STREAM`]) under the key
//! `SEED ^ RANDOM_BYTES_DOMAIN`, draws strictly in event order, so the first
//! `n` events of `realistic_mix(m)` are `realistic_mix(n)` for `n <= m`.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::segment::{BASE_TIME_US, RANDOM_PAYLOAD_STREAM, SegEvent, kind};

/// ChaCha stream of the mix (after the random payloads' and fan-out's).
pub const MIX_STREAM: u64 = RANDOM_PAYLOAD_STREAM + 2;
/// Distinct DIDs of the mix.
pub const MIX_DIDS: usize = 8192;
/// Kind code of `#identity` events.
pub const IDENTITY: u8 = 4;
/// Kind code of `#account` events.
pub const ACCOUNT: u8 = 5;
/// µs between two events.
pub const STEP_US: i64 = 50;

const B32: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
const TID_ALPHABET: &[u8; 32] = b"234567abcdefghijklmnopqrstuvwxyz";
const WORDS: [&str; 24] = [
    "the", "archive", "replays", "every", "post", "from", "a", "cursor", "while", "readers",
    "share", "one", "decoded", "block", "in", "cache", "today", "good", "morning", "bluesky",
    "what", "think", "about", "this",
];

/// The 13-character TID of `micros` with clock id `clock` (10 bits).
pub fn tid(micros: i64, clock: u16) -> String {
    let v = ((micros as u64) << 10 | (clock as u64 & 0x3ff)) & (u64::MAX >> 1);
    (0..13)
        .map(|i| TID_ALPHABET[((v >> (60 - 5 * i)) & 31) as usize] as char)
        .collect()
}

/// DID `i` of the pool: `did:plc:` + 24 base32 characters (32 bytes).
pub fn mix_did(i: usize) -> String {
    // A fixed bijective scramble so neighbouring ids do not share prefixes.
    let mut x = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5eed;
    let mut s = String::with_capacity(32);
    s.push_str("did:plc:");
    for _ in 0..24 {
        s.push(B32[(x & 31) as usize] as char);
        x = x.rotate_right(5) ^ (i as u64);
    }
    s
}

fn head(major: u8, n: u64, out: &mut Vec<u8>) {
    let m = major << 5;
    match n {
        0..=23 => out.push(m | n as u8),
        24..=0xff => out.extend_from_slice(&[m | 24, n as u8]),
        0x100..=0xffff => {
            out.push(m | 25);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(m | 26);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        }
        _ => {
            out.push(m | 27);
            out.extend_from_slice(&n.to_be_bytes());
        }
    }
}

fn text(s: &str, out: &mut Vec<u8>) {
    head(3, s.len() as u64, out);
    out.extend_from_slice(s.as_bytes());
}

fn created_at(micros: i64) -> String {
    // 2023-11-14T22:13:20Z is BASE_TIME_US; the mix spans minutes, so only
    // minutes, seconds and milliseconds move (wrapping within the hour).
    let off = (micros - BASE_TIME_US).max(0) as u64;
    let ms = (off / 1000) % 1000;
    let total_s = 20 + off / 1_000_000;
    let (m, s) = (13 + total_s / 60, total_s % 60);
    format!("2023-11-14T22:{:02}:{s:02}.{ms:03}Z", m % 60)
}

fn random_cid(rng: &mut ChaCha8Rng) -> String {
    let mut s = String::from("bafyrei");
    for _ in 0..52 {
        s.push(B32[rng.random_range(0..32)] as char);
    }
    s
}

/// `{$type, subject {cid, uri}, createdAt}` (likes and reposts).
fn subject_record(ty: &str, rng: &mut ChaCha8Rng, micros: i64) -> Vec<u8> {
    let author = mix_did(rng.random_range(0..MIX_DIDS));
    let uri = format!(
        "at://{author}/app.bsky.feed.post/{}",
        tid(micros - rng.random_range(0..86_400_000_000i64), 0)
    );
    let mut out = Vec::with_capacity(224);
    head(5, 3, &mut out);
    text("$type", &mut out);
    text(ty, &mut out);
    text("subject", &mut out);
    head(5, 2, &mut out);
    text("cid", &mut out);
    text(&random_cid(rng), &mut out);
    text("uri", &mut out);
    text(&uri, &mut out);
    text("createdAt", &mut out);
    text(&created_at(micros), &mut out);
    out
}

/// `{$type, subject (DID), createdAt}` (follows and blocks).
fn did_record(ty: &str, rng: &mut ChaCha8Rng, micros: i64) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    head(5, 3, &mut out);
    text("$type", &mut out);
    text(ty, &mut out);
    text("subject", &mut out);
    text(&mix_did(rng.random_range(0..MIX_DIDS)), &mut out);
    text("createdAt", &mut out);
    text(&created_at(micros), &mut out);
    out
}

fn post_record(rng: &mut ChaCha8Rng, micros: i64) -> Vec<u8> {
    let n = rng.random_range(5..=30);
    let words: Vec<&str> = (0..n)
        .map(|_| WORDS[rng.random_range(0..WORDS.len())])
        .collect();
    let mut out = Vec::with_capacity(256);
    head(5, 4, &mut out);
    text("text", &mut out);
    text(&words.join(" "), &mut out);
    text("$type", &mut out);
    text("app.bsky.feed.post", &mut out);
    text("langs", &mut out);
    head(4, 1, &mut out);
    text("en", &mut out);
    text("createdAt", &mut out);
    text(&created_at(micros), &mut out);
    out
}

fn listitem_record(did: &str, rng: &mut ChaCha8Rng, micros: i64) -> Vec<u8> {
    let mut out = Vec::with_capacity(192);
    head(5, 4, &mut out);
    text("list", &mut out);
    text(
        &format!("at://{did}/app.bsky.graph.list/{}", tid(BASE_TIME_US, 1)),
        &mut out,
    );
    text("$type", &mut out);
    text("app.bsky.graph.listitem", &mut out);
    text("subject", &mut out);
    text(&mix_did(rng.random_range(0..MIX_DIDS)), &mut out);
    text("createdAt", &mut out);
    text(&created_at(micros), &mut out);
    out
}

fn profile_record(rng: &mut ChaCha8Rng) -> Vec<u8> {
    let mut out = Vec::with_capacity(96);
    head(5, 3, &mut out);
    text("$type", &mut out);
    text("app.bsky.actor.profile", &mut out);
    text("description", &mut out);
    text(WORDS[rng.random_range(0..WORDS.len())], &mut out);
    text("displayName", &mut out);
    text(WORDS[rng.random_range(0..WORDS.len())], &mut out);
    out
}

/// `#identity` / `#account` bodies: `{did, seq, time, handle | active}`.
fn repo_event_body(identity: bool, did: &str, seq: u64, micros: i64) -> Vec<u8> {
    let mut out = Vec::with_capacity(96);
    head(5, 4, &mut out);
    text("did", &mut out);
    text(did, &mut out);
    text("seq", &mut out);
    head(0, seq, &mut out);
    text("time", &mut out);
    text(&created_at(micros), &mut out);
    if identity {
        text("handle", &mut out);
        text(&format!("user{}.bsky.social", &did[8..14]), &mut out);
    } else {
        text("active", &mut out);
        out.push(0xf5);
    }
    out
}

/// `n` events of the realistic mix (see the module docs).
pub fn realistic_mix(n: usize) -> Vec<SegEvent> {
    let mut rng = crate::stream_rng(crate::SEED ^ crate::RANDOM_BYTES_DOMAIN, MIX_STREAM);
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let seq = i as u64 + 1;
        let micros = BASE_TIME_US + i as i64 * STEP_US;
        let did = if rng.random_bool(0.5) {
            mix_did(rng.random_range(0..256))
        } else {
            mix_did(rng.random_range(0..MIX_DIDS))
        };
        let rev = tid(micros, 7);
        let mut e = SegEvent {
            seq,
            witnessed_at: micros,
            indexed_at: 0,
            kind: kind::CREATE,
            did,
            collection: String::new(),
            rkey: String::new(),
            rev: String::new(),
            payload: Vec::new(),
        };
        let top = rng.random_range(0..1000u32);
        if top < 10 {
            let identity = top < 7;
            e.kind = if identity { IDENTITY } else { ACCOUNT };
            e.payload = repo_event_body(identity, &e.did, seq, micros);
            out.push(e);
            continue;
        }
        e.rev = rev;
        let op = rng.random_range(0..1000u32);
        if op >= 994 {
            e.kind = kind::UPDATE;
            e.collection = "app.bsky.actor.profile".into();
            e.rkey = "self".into();
            e.payload = profile_record(&mut rng);
            out.push(e);
            continue;
        }
        let c = rng.random_range(0..1000u32);
        let collection = match c {
            0..690 => "app.bsky.feed.like",
            690..810 => "app.bsky.feed.post",
            810..910 => "app.bsky.feed.repost",
            910..970 => "app.bsky.graph.follow",
            970..980 => "app.bsky.graph.block",
            980..990 => "app.bsky.graph.listitem",
            _ => "app.bsky.actor.profile",
        };
        e.collection = collection.into();
        if op >= 955 {
            e.kind = kind::DELETE;
            // A record created up to a day earlier.
            e.rkey = tid(micros - rng.random_range(1..86_400_000_000i64), 3);
            out.push(e);
            continue;
        }
        e.rkey = if collection == "app.bsky.actor.profile" {
            "self".into()
        } else {
            tid(micros, 3)
        };
        e.payload = match collection {
            "app.bsky.feed.like" | "app.bsky.feed.repost" => {
                subject_record(collection, &mut rng, micros)
            }
            "app.bsky.feed.post" => post_record(&mut rng, micros),
            "app.bsky.graph.follow" | "app.bsky.graph.block" => {
                did_record(collection, &mut rng, micros)
            }
            "app.bsky.graph.listitem" => listitem_record(&e.did, &mut rng, micros),
            _ => profile_record(&mut rng),
        };
        out.push(e);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    #[test]
    fn proportions_match_the_spec() {
        let n = 100_000;
        let events = realistic_mix(n);
        let count = |f: &dyn Fn(&SegEvent) -> bool| events.iter().filter(|e| f(e)).count();
        let commits = count(&|e| e.kind <= 3);
        let pct = |k: usize, of: usize| k as f64 * 100.0 / of as f64;
        let near = |got: f64, want: f64, tol: f64| {
            assert!((got - want).abs() <= tol, "got {got:.2} %, want {want} %")
        };
        near(pct(n - commits, n), 1.0, 0.15);
        let coll = |c: &str| count(&|e| e.kind <= 3 && e.collection == c);
        near(pct(coll("app.bsky.feed.like"), commits), 69.0 * 0.994, 0.6);
        near(pct(coll("app.bsky.feed.post"), commits), 12.0 * 0.994, 0.4);
        near(
            pct(coll("app.bsky.feed.repost"), commits),
            10.0 * 0.994,
            0.4,
        );
        near(
            pct(coll("app.bsky.graph.follow"), commits),
            6.0 * 0.994,
            0.3,
        );
        near(pct(count(&|e| e.kind == kind::CREATE), commits), 95.5, 0.3);
        near(pct(count(&|e| e.kind == kind::DELETE), commits), 3.9, 0.2);
        near(pct(count(&|e| e.kind == kind::UPDATE), commits), 0.6, 0.1);
        assert!(events.iter().all(|e| e.did.len() == 32));
        assert!(
            events
                .iter()
                .filter(|e| e.kind <= 3)
                .all(|e| e.rev.len() == 13 && (e.rkey.len() == 13 || e.rkey == "self"))
        );
        assert!(
            events
                .iter()
                .all(|e| (e.kind == kind::DELETE) == e.payload.is_empty())
        );
        let likes: Vec<usize> = events
            .iter()
            .filter(|e| e.kind == kind::CREATE && e.collection == "app.bsky.feed.like")
            .map(|e| e.payload.len())
            .collect();
        let mean = likes.iter().sum::<usize>() / likes.len();
        assert!((205..=220).contains(&mean), "like payload {mean} bytes");
        assert!(
            events
                .windows(2)
                .all(|w| w[0].seq + 1 == w[1].seq && w[0].witnessed_at < w[1].witnessed_at)
        );
    }

    #[test]
    fn seeded_and_prefix_stable() {
        let a = realistic_mix(500);
        assert_eq!(a, realistic_mix(500));
        assert_eq!(&a[..100], &realistic_mix(100)[..]);
    }

    #[test]
    fn tids_sort_with_time_and_look_like_tids() {
        let a = tid(BASE_TIME_US, 0);
        let b = tid(BASE_TIME_US + 1, 0);
        assert_eq!(a.len(), 13);
        assert!(a < b);
        assert!(a.starts_with('3'), "{a}");
    }

    #[test]
    fn like_record_is_dag_cbor_shaped() {
        let mut rng = crate::stream_rng(1, 1);
        let r = subject_record("app.bsky.feed.like", &mut rng, BASE_TIME_US);
        assert_eq!(r[0], 0xa3);
        assert_eq!(&r[1..7], b"\x65$type");
        assert!((205..=220).contains(&r.len()), "{}", r.len());
    }

    #[test]
    fn mix_is_pinned() {
        let mut h = Sha256::new();
        for e in realistic_mix(2000) {
            h.update(e.seq.to_le_bytes());
            h.update([e.kind]);
            for s in [&e.did, &e.collection, &e.rkey, &e.rev] {
                h.update(s.as_bytes());
                h.update([0]);
            }
            h.update(&e.payload);
        }
        let digest: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(digest, PINNED_MIX);
    }

    const PINNED_MIX: &str = "1cdce55104ee516960dde3b02058fe025f1c81b256e4e6f7ea64cc40c284f994";
}
