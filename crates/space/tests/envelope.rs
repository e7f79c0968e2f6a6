//! getRepo in both eras against the byte layout: the E2 CAR's roots,
//! block order and index key order, its signed commit; the E4 STAR
//! framing, meta and MAC. Each archive is verified as a syncer would:
//! fold the entries into an LtHash and compare with the commit.

mod common;

use std::sync::Arc;

use common::*;
use repo::Cid;
use repo::car::CarReader;
use repo::cbor::{Value, ValueRef};
use space::commit::SignedCommit;
use space::envelope::{E2, E4, Envelope, Era, RequestAuth, kem};
use space::lthash::LtHash;

fn seeded() -> (tempfile::TempDir, space::SpaceStore, space::SpaceRef) {
    let dir = tempfile::tempdir().unwrap();
    let s = open(&dir);
    let sp = space(&s);
    // Keys of different lengths, so length-first and bytewise orders differ.
    for (c, r) in [
        ("app.example.post", "zz"),
        ("app.example.post", "a"),
        ("app.example.like", "bbb"),
        ("app.ex.x", "q"),
    ] {
        put(&s, &sp, WRITER, c, r, &format!("{c}/{r}"));
    }
    (dir, s, sp)
}

fn key() -> repo::crypto::Keypair {
    repo::crypto::Keypair::from_bytes(repo::crypto::Algorithm::K256, &[9u8; 32]).unwrap()
}

#[test]
fn e2_car_layout() {
    let (_d, s, sp) = seeded();
    let env = E2::new(Arc::new(key()));
    assert_eq!(env.era(), Era::E2);
    let mut out = Vec::new();
    env.get_repo(&s, &sp, WRITER, false, &RequestAuth::default(), &mut out)
        .unwrap();
    let mut car = CarReader::new(&out[..]).unwrap().verify(true);
    let roots = car.roots().to_vec();
    assert_eq!(roots.len(), 2);
    let blocks: Vec<(Cid, Vec<u8>)> = car.by_ref().map(|b| b.unwrap()).collect();
    assert_eq!(blocks.len(), 6);
    assert_eq!(blocks[0].0, roots[0], "block 1 is the commit");
    assert_eq!(blocks[1].0, roots[1], "block 2 is the index");
    let commit = SignedCommit::from_cbor(&blocks[0].1).unwrap();
    let st = s.repo_state(&sp, WRITER).unwrap();
    commit
        .verify(&sp.to_uri(), WRITER, &st.rev, &key().public_key())
        .unwrap();
    let index = repo::cbor::decode(&blocks[1].1).unwrap();
    let ValueRef::Map(index) = index else {
        panic!("index is not a map")
    };
    let keys: Vec<&str> = index.entries().iter().map(|(k, _)| *k).collect();
    // Shortest first, then bytewise.
    assert_eq!(
        keys,
        [
            "app.ex.x/q",
            "app.example.post/a",
            "app.example.post/zz",
            "app.example.like/bbb"
        ]
    );
    let mut h = LtHash::new();
    for ((k, v), (cid, bytes)) in index.entries().iter().zip(&blocks[2..]) {
        let ValueRef::Link(link) = v else {
            panic!("not a link")
        };
        assert_eq!(link, cid, "records follow in index order");
        assert_eq!(*cid, Cid::for_dag_cbor(bytes));
        let (c, r) = k.split_once('/').unwrap();
        h.apply_op(c, r, Some(link), None);
    }
    assert_eq!(h.digest(), commit.hash);
    // excludeValues: only the two roots.
    let mut out = Vec::new();
    env.get_repo(&s, &sp, WRITER, true, &RequestAuth::default(), &mut out)
        .unwrap();
    let car = CarReader::new(&out[..]).unwrap();
    assert_eq!(car.count(), 2);
    // Each response signs afresh: a new ikm.
    let a = env
        .commit(&sp, WRITER, &st, &RequestAuth::default())
        .unwrap();
    let b = env
        .commit(&sp, WRITER, &st, &RequestAuth::default())
        .unwrap();
    assert_ne!(a.commit.get("ikm"), b.commit.get("ikm"));
}

#[test]
fn e4_star_layout_and_mac() {
    let (_d, s, sp) = seeded();
    let host = Arc::new(kem::KemKey::generate().unwrap());
    let env = E4::new(host.clone());
    let (share, secret) = kem::encapsulate(&host.public()).unwrap();
    let req = RequestAuth {
        key_share: Some(share.clone()),
    };
    let mut out = Vec::new();
    let authed = env
        .get_repo(&s, &sp, WRITER, false, &req, &mut out)
        .unwrap();
    assert_eq!(&out[..4], &[0x2a, 0x6c, 0x01, 0x00]);
    assert_eq!(*out.last().unwrap(), 0x00);
    let star = space::star::parse(&out).unwrap();
    let meta = repo::cbor::decode_owned(star.meta).unwrap();
    assert_eq!(
        meta.get("$type").and_then(Value::as_text),
        Some("atproto-space-repo")
    );
    let commit = meta.get("commit").unwrap();
    assert_eq!(commit, &authed.commit);
    let st = s.repo_state(&sp, WRITER).unwrap();
    assert_eq!(
        commit.get("data"),
        Some(&Value::Bytes(st.hash.digest().to_vec()))
    );
    assert_eq!(
        commit.get("rev").and_then(Value::as_text),
        Some(st.rev.as_str())
    );
    // Bytewise key order (the stream order), values are the records.
    let keys: Vec<&[u8]> = star.entries.iter().map(|(k, _)| *k).collect();
    assert_eq!(
        keys,
        [
            &b"app.ex.x/q"[..],
            b"app.example.like/bbb",
            b"app.example.post/a",
            b"app.example.post/zz"
        ]
    );
    let mut h = LtHash::new();
    for (k, v) in &star.entries {
        let (c, r) = std::str::from_utf8(k).unwrap().split_once('/').unwrap();
        h.apply_op(c, r, Some(&Cid::for_dag_cbor(v)), None);
    }
    assert_eq!(h, st.hash);
    // The MAC: the syncer recomputes it from its own shared secret.
    let (name, value) = &authed.headers[0];
    assert_eq!(name, space::envelope::MAC_HEADER);
    let want = space::envelope::mac(&secret, "commit", &share, &[&repo::cbor::to_vec(commit)]);
    assert_eq!(
        value,
        &format!(
            "profile=commit;mac=:{}:",
            data_encoding::BASE64.encode(&want)
        )
    );
    // Without a key share, or with a bad one, E4 refuses.
    for bad in [
        RequestAuth::default(),
        RequestAuth {
            key_share: Some("did:key:zzz".into()),
        },
    ] {
        assert!(
            env.get_repo(&s, &sp, WRITER, false, &bad, &mut Vec::new())
                .is_err()
        );
    }
    let rec = env
        .record("at://x", &Cid::for_dag_cbor(&[0xa0]), &req)
        .unwrap();
    assert!(rec[0].1.starts_with("profile=record;mac=:"));
}
