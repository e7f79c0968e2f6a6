//! Generators for the segment (event archive) benches and tests, in the
//! shapes of the upstream Jetstream V2 benchmarks (see `docs/design/segment.md`).
//!
//! Events are plain data ([`SegEvent`]) so datagen does not depend on the
//! segment crate; a bench converts them to the segment's borrowed events.
//! Random payloads come from [`crate::random_bytes`] on stream
//! [`RANDOM_PAYLOAD_STREAM`], so the same `(n, payload)` always gives the
//! same events.

/// The single DID of the "bench events".
pub const BENCH_DID: &str = "did:plc:abcdefghijklmnopqrstuvwx";
/// The collection of the "bench events" and "seal events".
pub const BENCH_COLLECTION: &str = "app.bsky.feed.post";
/// The rkey of the "bench events".
pub const BENCH_RKEY: &str = "3l3qo2vuowo2b";
/// The rev of the "bench events".
pub const BENCH_REV: &str = "3l3qo2vutsw2b";
/// Bytes of a "bench event" payload (random or identical).
pub const BENCH_PAYLOAD_LEN: usize = 512;
/// Bytes of an "ingest event" payload.
pub const INGEST_PAYLOAD_LEN: usize = 200;
/// `random_bytes` stream of the random payloads (ASCII "SEGP").
pub const RANDOM_PAYLOAD_STREAM: u64 = 0x5345_4750;
/// witnessed_at of event 1 (µs): 2023-11-14T22:13:20Z.
pub const BASE_TIME_US: i64 = 1_700_000_000_000_000;

/// Event kinds, as the segment format numbers them.
pub mod kind {
    /// A record was created.
    pub const CREATE: u8 = 1;
    /// A record was updated.
    pub const UPDATE: u8 = 2;
    /// A record was deleted.
    pub const DELETE: u8 = 3;
}

/// One generated archive event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegEvent {
    /// Sequence number, from 1.
    pub seq: u64,
    /// µs since the epoch, monotonic with seq.
    pub witnessed_at: i64,
    /// µs; 0 = use witnessed_at.
    pub indexed_at: i64,
    /// 1 create, 2 update, 3 delete, ...
    pub kind: u8,
    /// Repo DID.
    pub did: String,
    /// Collection NSID.
    pub collection: String,
    /// Record key.
    pub rkey: String,
    /// Commit revision.
    pub rev: String,
    /// Record bytes.
    pub payload: Vec<u8>,
}

/// The payload of the "bench events".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BenchPayload {
    /// 512 seeded random bytes per event (distinct per event).
    Random,
    /// 512 x `0xAB`.
    Identical,
    /// No payload.
    Empty,
}

impl BenchPayload {
    /// The tier suffix used in benchmark ids.
    pub fn name(self) -> &'static str {
        match self {
            BenchPayload::Random => "random",
            BenchPayload::Identical => "identical",
            BenchPayload::Empty => "zero",
        }
    }
}

/// `n` "bench events": one DID, `app.bsky.feed.post`, fixed rkey and rev,
/// creates with seq 1..=n and witnessed_at one µs apart.
pub fn bench_events(n: usize, payload: BenchPayload) -> Vec<SegEvent> {
    let random = match payload {
        BenchPayload::Random => crate::random_bytes(RANDOM_PAYLOAD_STREAM, n * BENCH_PAYLOAD_LEN),
        _ => Vec::new(),
    };
    (0..n)
        .map(|i| SegEvent {
            seq: i as u64 + 1,
            witnessed_at: BASE_TIME_US + i as i64,
            indexed_at: 0,
            kind: kind::CREATE,
            did: BENCH_DID.to_owned(),
            collection: BENCH_COLLECTION.to_owned(),
            rkey: BENCH_RKEY.to_owned(),
            rev: BENCH_REV.to_owned(),
            payload: match payload {
                BenchPayload::Random => {
                    random[i * BENCH_PAYLOAD_LEN..(i + 1) * BENCH_PAYLOAD_LEN].to_vec()
                }
                BenchPayload::Identical => vec![0xAB; BENCH_PAYLOAD_LEN],
                BenchPayload::Empty => Vec::new(),
            },
        })
        .collect()
}

/// `n` "seal events": DID `did:plc:` + one of 26 letters in turn, rkey `k`,
/// rev `rev`, 512 zero bytes.
pub fn seal_events(n: usize) -> Vec<SegEvent> {
    (0..n)
        .map(|i| SegEvent {
            seq: i as u64 + 1,
            witnessed_at: BASE_TIME_US + i as i64,
            indexed_at: 0,
            kind: kind::CREATE,
            did: format!("did:plc:{}", (b'a' + (i % 26) as u8) as char),
            collection: BENCH_COLLECTION.to_owned(),
            rkey: "k".to_owned(),
            rev: "rev".to_owned(),
            payload: vec![0; 512],
        })
        .collect()
}

/// The payload of every "ingest event": byte `j` is `(j * 7) as u8`.
pub fn ingest_payload() -> Vec<u8> {
    (0..INGEST_PAYLOAD_LEN).map(|j| (j * 7) as u8).collect()
}

/// "Ingest event" `i` (seq `i + 1`): the bench DID, collection, rkey and
/// rev with the 200-byte [`ingest_payload`].
pub fn ingest_event(i: u64) -> SegEvent {
    SegEvent {
        seq: i + 1,
        witnessed_at: BASE_TIME_US + i as i64,
        indexed_at: 0,
        kind: kind::CREATE,
        did: BENCH_DID.to_owned(),
        collection: BENCH_COLLECTION.to_owned(),
        rkey: BENCH_RKEY.to_owned(),
        rev: BENCH_REV.to_owned(),
        payload: ingest_payload(),
    }
}

/// `n` ingest events, seq 1..=n.
pub fn ingest_events(n: usize) -> Vec<SegEvent> {
    (0..n as u64).map(ingest_event).collect()
}

/// `n` ingest events each with its own DID (`did:plc:` + 24 digits of
/// its index), for blooms sized by many distinct DIDs.
pub fn distinct_did_events(n: usize) -> Vec<SegEvent> {
    (0..n as u64)
        .map(|i| SegEvent {
            did: format!("did:plc:{i:024}"),
            ..ingest_event(i)
        })
        .collect()
}

/// DIDs of the "fan-out events".
pub const FANOUT_DIDS: usize = 64;

const WORDS: [&str; 16] = [
    "the", "archive", "replays", "every", "post", "from", "a", "cursor", "while", "readers",
    "share", "one", "decoded", "block", "in", "cache",
];

fn cbor_text(s: &str, out: &mut Vec<u8>) {
    let n = s.len();
    if n < 24 {
        out.push(0x60 | n as u8);
    } else if n < 256 {
        out.extend_from_slice(&[0x78, n as u8]);
    } else {
        out.push(0x79);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    }
    out.extend_from_slice(s.as_bytes());
}

/// A DAG-CBOR `app.bsky.feed.post` record (keys in DAG-CBOR order: `text`,
/// `$type`, `createdAt`).
pub fn post_record(text: &str, created_at: &str) -> Vec<u8> {
    let mut out = vec![0xa3];
    cbor_text("text", &mut out);
    cbor_text(text, &mut out);
    cbor_text("$type", &mut out);
    cbor_text("app.bsky.feed.post", &mut out);
    cbor_text("createdAt", &mut out);
    cbor_text(created_at, &mut out);
    out
}

/// `n` "fan-out events": creates of real DAG-CBOR post records by 64 DIDs
/// in turn, texts of 6-16 seeded words, 13-character rkeys and revs.
pub fn fanout_events(n: usize) -> Vec<SegEvent> {
    use rand::Rng;
    let mut rng = crate::stream_rng(
        crate::SEED ^ crate::RANDOM_BYTES_DOMAIN,
        RANDOM_PAYLOAD_STREAM + 1,
    );
    (0..n)
        .map(|i| {
            let words = rng.random_range(6..=16);
            let text: Vec<&str> = (0..words)
                .map(|_| WORDS[rng.random_range(0..WORDS.len())])
                .collect();
            let secs = i % 60;
            SegEvent {
                seq: i as u64 + 1,
                witnessed_at: BASE_TIME_US + i as i64,
                indexed_at: 0,
                kind: kind::CREATE,
                did: format!("did:plc:fanout{:018}", i % FANOUT_DIDS),
                collection: BENCH_COLLECTION.to_owned(),
                rkey: format!("3l{:011}", i),
                rev: format!("3r{:011}", i),
                payload: post_record(&text.join(" "), &format!("2024-01-01T00:00:{secs:02}.000Z")),
            }
        })
        .collect()
}

/// `n` events for delete compaction: ingest-event creates with unique
/// rkeys, where every 10th event (i % 10 == 9) instead deletes the record
/// created 5 events earlier. `n / 10` creates are superseded.
pub fn compaction_events(n: usize) -> Vec<SegEvent> {
    (0..n)
        .map(|i| {
            let base = ingest_event(i as u64);
            if i % 10 == 9 {
                SegEvent {
                    kind: kind::DELETE,
                    rkey: format!("k{:012}", i - 5),
                    payload: Vec::new(),
                    ..base
                }
            } else {
                SegEvent {
                    rkey: format!("k{i:012}"),
                    ..base
                }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    #[test]
    fn bench_events_shapes() {
        let r = bench_events(4, BenchPayload::Random);
        assert_eq!(r.len(), 4);
        assert!(
            r.iter()
                .all(|e| e.payload.len() == 512 && e.did == BENCH_DID)
        );
        assert_ne!(r[0].payload, r[1].payload);
        assert_eq!(r, bench_events(4, BenchPayload::Random));
        assert_eq!(&r[..2], &bench_events(2, BenchPayload::Random)[..]);
        assert!(
            bench_events(3, BenchPayload::Identical)
                .iter()
                .all(|e| e.payload == [0xAB; 512])
        );
        assert!(
            bench_events(3, BenchPayload::Empty)
                .iter()
                .all(|e| e.payload.is_empty())
        );
        let seqs: Vec<u64> = r.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [1, 2, 3, 4]);
    }

    #[test]
    fn seal_and_ingest_shapes() {
        let s = seal_events(30);
        assert_eq!(s[0].did, "did:plc:a");
        assert_eq!(s[25].did, "did:plc:z");
        assert_eq!(s[26].did, "did:plc:a");
        assert_eq!(s[0].payload, vec![0; 512]);
        let e = ingest_event(9);
        assert_eq!(e.seq, 10);
        assert_eq!(e.payload.len(), 200);
        assert_eq!(e.payload[3], 21);
        assert_eq!(e.payload[100], 188);
        let d = distinct_did_events(3);
        assert_eq!(d[2].did, "did:plc:000000000000000000000002");
        assert_eq!(d[2].seq, 3);
    }

    #[test]
    fn fanout_events_are_seeded_posts() {
        let a = fanout_events(100);
        assert_eq!(a, fanout_events(100));
        assert_eq!(a[0].did, a[64].did);
        assert_ne!(a[0].did, a[1].did);
        assert_eq!(a[0].payload[0], 0xa3);
        assert_eq!(a[5].rkey.len(), 13);
        let p = post_record("hi", "t");
        assert_eq!(
            p,
            b"\xa3\x64text\x62hi\x65$type\x72app.bsky.feed.post\x69createdAt\x61t"
        );
    }

    #[test]
    fn compaction_events_delete_earlier_creates() {
        let c = compaction_events(20);
        assert_eq!(c[9].kind, kind::DELETE);
        assert_eq!(c[9].rkey, c[4].rkey);
        assert_eq!(c[4].kind, kind::CREATE);
        assert_eq!(c.iter().filter(|e| e.kind == kind::DELETE).count(), 2);
    }

    #[test]
    fn random_payloads_are_pinned() {
        let r = bench_events(8, BenchPayload::Random);
        let mut h = Sha256::new();
        for e in &r {
            h.update(&e.payload);
        }
        let digest: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(digest, PINNED);
    }

    const PINNED: &str = "5e3f55e3fec82b831b3f4fd304f9a5d016aa84f31289c3027ca00e8c89abae37";
}
