//! `repo.cbor_encode`, `repo.cbor_decode`, `repo.cbor_to_json`, `repo.cid`.
//!
//! Every codec works on the same real record (like, post, profile) in its
//! own generic value type: ours `Value`/`ValueRef`, serde_ipld_dagcbor
//! `Ipld`, serde_cbor `Value` (with its `tags` feature, so links keep tag
//! 42), ciborium `Value` (maps kept in canonical order). Before timing, every
//! encoder is checked to produce exactly the record's bytes and every decoded
//! value to encode back to them; a peer that could not would be benchmarked
//! under a `.nonidentical` variant, which units.toml leaves out of the
//! comparison. Encoders append to a cleared, reused buffer.
//!
//! The later codec peers (one module each: `peer_dagcbor06`, `peer_dasl`,
//! `peer_proto_blue`; jacquard-repo and rsky-repo encode with
//! serde_ipld_dagcbor 0.6, atproto-repo with atproto-dasl, so those rows
//! stand for them) plug in as [`CborPeer`]s: each decodes
//! the record with its own decoder in setup (checked to re-encode to the
//! record's bytes) and encodes that value when timed.

use std::hint::black_box;

use benches::registry::size_tier;
use benches::target::BenchTarget;
use criterion::Throughput;
use repo::Cid;
use repo::cbor::{self, Value, ValueRef};
use sha2::Digest;

use benches::corpus::Corpus;

use crate::peer_roles::{CborPeer, EncodeFn};

/// Registers the four groups.
pub fn run(target: &mut BenchTarget, corpus: &Corpus) {
    encode(target, &corpus.records);
    decode(target, &corpus.records);
    to_json(target, &corpus.records);
    cid(target, &corpus.records[0].1);
}

fn to_ipld(v: &ValueRef<'_>) -> ipld_core::ipld::Ipld {
    use ipld_core::ipld::Ipld;
    match v {
        ValueRef::Null => Ipld::Null,
        ValueRef::Bool(b) => Ipld::Bool(*b),
        ValueRef::Int(i) => Ipld::Integer(i128::from(*i)),
        ValueRef::Text(s) => Ipld::String((*s).to_owned()),
        ValueRef::Bytes(b) => Ipld::Bytes(b.to_vec()),
        ValueRef::List(l) => Ipld::List(l.iter().map(to_ipld).collect()),
        ValueRef::Map(m) => Ipld::Map(
            m.entries()
                .iter()
                .map(|(k, v)| ((*k).to_owned(), to_ipld(v)))
                .collect(),
        ),
        ValueRef::Link(c) => {
            Ipld::Link(ipld_core::cid::Cid::try_from(&c.to_bytes()[..]).expect("CIDv1 converts"))
        }
    }
}

fn link_bytes(c: &Cid) -> Vec<u8> {
    let mut b = vec![0u8];
    b.extend_from_slice(&c.to_bytes());
    b
}

fn to_ciborium(v: &ValueRef<'_>) -> ciborium::Value {
    use ciborium::Value as C;
    match v {
        ValueRef::Null => C::Null,
        ValueRef::Bool(b) => C::Bool(*b),
        ValueRef::Int(i) => C::Integer((*i).into()),
        ValueRef::Text(s) => C::Text((*s).to_owned()),
        ValueRef::Bytes(b) => C::Bytes(b.to_vec()),
        ValueRef::List(l) => C::Array(l.iter().map(to_ciborium).collect()),
        ValueRef::Map(m) => C::Map(
            m.entries()
                .iter()
                .map(|(k, v)| (C::Text((*k).to_owned()), to_ciborium(v)))
                .collect(),
        ),
        ValueRef::Link(c) => C::Tag(42, Box::new(C::Bytes(link_bytes(c)))),
    }
}

fn to_serde_cbor(v: &ValueRef<'_>) -> serde_cbor::Value {
    use serde_cbor::Value as S;
    match v {
        ValueRef::Null => S::Null,
        ValueRef::Bool(b) => S::Bool(*b),
        ValueRef::Int(i) => S::Integer(i128::from(*i)),
        ValueRef::Text(s) => S::Text((*s).to_owned()),
        ValueRef::Bytes(b) => S::Bytes(b.to_vec()),
        ValueRef::List(l) => S::Array(l.iter().map(to_serde_cbor).collect()),
        ValueRef::Map(m) => S::Map(
            m.entries()
                .iter()
                .map(|(k, v)| (S::Text((*k).to_owned()), to_serde_cbor(v)))
                .collect(),
        ),
        ValueRef::Link(c) => S::Tag(42, Box::new(S::Bytes(link_bytes(c)))),
    }
}

/// The peers of both codec groups beyond the four wired in this module.
fn peers() -> Vec<CborPeer> {
    vec![
        crate::peer_dagcbor06::CBOR,
        crate::peer_dasl::CBOR,
        crate::peer_proto_blue::CBOR,
    ]
}

/// The implementation name: itself if it reproduces `want`, else marked.
fn name_for(name: &str, got: &[u8], want: &[u8]) -> String {
    if got == want {
        name.to_owned()
    } else {
        eprintln!(
            "atbench: {name} does not reproduce the record bytes; benchmarked as an adjacent probe"
        );
        format!("{name}.nonidentical")
    }
}

fn encode(target: &mut BenchTarget, records: &[(&'static str, Vec<u8>)]) {
    let mut group = target.group("repo.cbor_encode");
    for (tier, bytes) in records {
        let borrowed = cbor::decode(bytes).expect("corpus record is strict DAG-CBOR");
        let ours: Value = borrowed.to_owned_value();
        let ipld = to_ipld(&borrowed);
        let cib = to_ciborium(&borrowed);
        let scbor = to_serde_cbor(&borrowed);
        let mut encoders: Vec<(&str, EncodeFn<'_>)> = vec![
            (
                "ours",
                Box::new(|out: &mut Vec<u8>| cbor::encode(black_box(&ours), out)),
            ),
            (
                "serde_ipld_dagcbor",
                Box::new(|out: &mut Vec<u8>| {
                    serde_ipld_dagcbor::to_writer(&mut *out, black_box(&ipld)).expect("encodes")
                }),
            ),
            (
                "serde_cbor",
                Box::new(|out: &mut Vec<u8>| {
                    serde_cbor::to_writer(&mut *out, black_box(&scbor)).expect("encodes")
                }),
            ),
            (
                "ciborium",
                Box::new(|out: &mut Vec<u8>| {
                    ciborium::into_writer(black_box(&cib), &mut *out).expect("encodes")
                }),
            ),
        ];
        for peer in peers() {
            encoders.push((peer.name, (peer.encoder)(bytes)));
        }
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        for (name, mut enc) in encoders {
            let mut out = Vec::with_capacity(bytes.len() * 2);
            enc(&mut out);
            let name = name_for(name, &out, bytes);
            group.bench(&name, tier, |b| {
                b.iter(|| {
                    out.clear();
                    enc(&mut out);
                })
            });
            assert_eq!(out.len(), bytes.len(), "{name} drifted while timed");
        }
    }
    group.finish();
}

fn decode(target: &mut BenchTarget, records: &[(&'static str, Vec<u8>)]) {
    let mut group = target.group("repo.cbor_decode");
    for (tier, bytes) in records {
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        let bytes = bytes.as_slice();

        let v = cbor::decode(bytes).expect("strict DAG-CBOR");
        assert_eq!(cbor::to_vec_ref(&v), bytes);
        group.bench("ours.borrowed", tier, |b| {
            b.iter(|| cbor::decode(black_box(bytes)).map(|v| matches!(v, ValueRef::Map(_))))
        });

        let v = cbor::decode_owned(bytes).expect("strict DAG-CBOR");
        assert_eq!(cbor::to_vec(&v), bytes);
        group.bench("ours.owned", tier, |b| {
            b.iter(|| cbor::decode_owned(black_box(bytes)).map(|v| matches!(v, Value::Map(_))))
        });

        let v: ipld_core::ipld::Ipld = serde_ipld_dagcbor::from_slice(bytes).expect("decodes");
        let back = serde_ipld_dagcbor::to_vec(&v).expect("encodes");
        let name = name_for("serde_ipld_dagcbor", &back, bytes);
        group.bench(&name, tier, |b| {
            b.iter(|| {
                serde_ipld_dagcbor::from_slice::<ipld_core::ipld::Ipld>(black_box(bytes)).is_ok()
            })
        });

        let v: serde_cbor::Value = serde_cbor::from_slice(bytes).expect("decodes");
        let back = serde_cbor::to_vec(&v).expect("encodes");
        let name = name_for("serde_cbor", &back, bytes);
        group.bench(&name, tier, |b| {
            b.iter(|| serde_cbor::from_slice::<serde_cbor::Value>(black_box(bytes)).is_ok())
        });

        let v: ciborium::Value = ciborium::from_reader(bytes).expect("decodes");
        let mut back = Vec::new();
        ciborium::into_writer(&v, &mut back).expect("encodes");
        let name = name_for("ciborium", &back, bytes);
        group.bench(&name, tier, |b| {
            b.iter(|| ciborium::from_reader::<ciborium::Value, _>(black_box(bytes)).is_ok())
        });

        for peer in peers() {
            assert!((peer.decode)(bytes), "{} decodes the record", peer.name);
            let name = name_for(peer.name, &(peer.round_trip)(bytes), bytes);
            group.bench(&name, tier, |b| b.iter(|| (peer.decode)(black_box(bytes))));
        }
    }
    group.finish();
}

fn to_json(target: &mut BenchTarget, records: &[(&'static str, Vec<u8>)]) {
    let mut group = target.group("repo.cbor_to_json");
    for (tier, bytes) in records.iter().filter(|r| r.0 != "profile") {
        let expected = cbor::json::value_to_json(&cbor::decode_owned(bytes).expect("decodes"));
        let parsed = cbor::json::from_json_str(&expected).expect("our JSON parses back");
        assert_eq!(cbor::to_vec(&parsed), *bytes, "JSON round trip");
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench("ours", tier, |b| {
            b.iter(|| {
                let v = cbor::decode(black_box(bytes)).expect("decodes");
                let text = cbor::json::to_json(&v);
                debug_assert_eq!(text, expected);
                text.len()
            })
        });
    }
    group.finish();
}

/// A peer's CID of a block, as bytes.
type CidFn = fn(&[u8]) -> Vec<u8>;

fn cid(target: &mut BenchTarget, like: &[u8]) {
    let mut group = target.group("repo.cid");
    let inputs = [
        like.to_vec(),
        datagen::random_bytes(0xc1d, 4 * 1024),
        datagen::random_bytes(0xc1d, 1 << 20),
    ];
    for input in &inputs {
        let expected = Cid::for_dag_cbor(input);
        assert!(expected.matches(input));
        group.throughput(Throughput::Bytes(input.len() as u64));
        let tier = size_tier(input.len());
        group.bench("ours", &tier, |b| {
            b.iter(|| Cid::for_dag_cbor(black_box(input)))
        });
        // Peers: the same CIDv1 (dag-cbor, sha2-256) as bytes, checked equal.
        let peers: [(&str, CidFn); 2] = [
            ("atproto-dasl", crate::peer_dasl::cid),
            ("proto-blue-repo", crate::peer_proto_blue::cid),
        ];
        for (name, peer) in peers {
            assert_eq!(peer(input), expected.to_bytes(), "{name}: CID differs");
            group.bench(name, &tier, |b| b.iter(|| peer(black_box(input))));
        }
        // The floor: the SHA-256 compression function alone over the same
        // message, padded in setup (what every row above runs, one call
        // per 64-byte block, minus the buffering, padding and CID header
        // of a digest); a CID is that digest plus four header bytes.
        let blocks = sha256_padded(input);
        let digest = sha256_of_padded(&blocks);
        assert_eq!(&expected.to_bytes()[4..], digest.as_slice());
        assert_eq!(digest.as_slice(), sha2::Sha256::digest(input).as_slice());
        group.bench("sha256-floor", &tier, |b| {
            b.iter(|| sha256_of_padded(black_box(&blocks)))
        });
    }
    group.finish();
}

type Block = sha2::digest::generic_array::GenericArray<u8, sha2::digest::consts::U64>;

/// `data` with SHA-256's padding, as 64-byte blocks.
fn sha256_padded(data: &[u8]) -> Vec<Block> {
    let mut m = data.to_vec();
    m.push(0x80);
    while m.len() % 64 != 56 {
        m.push(0);
    }
    m.extend_from_slice(&((data.len() as u64) * 8).to_be_bytes());
    m.chunks_exact(64).map(|c| *Block::from_slice(c)).collect()
}

/// SHA-256 of a message padded by `sha256_padded`: one `compress256` call
/// over all its blocks (sha2's SHA-NI path where the CPU has it).
fn sha256_of_padded(blocks: &[Block]) -> [u8; 32] {
    let mut state: [u32; 8] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
        0x5be0cd19,
    ];
    sha2::compress256(&mut state, blocks);
    let mut out = [0u8; 32];
    for (o, w) in out.chunks_exact_mut(4).zip(state) {
        o.copy_from_slice(&w.to_be_bytes());
    }
    out
}
