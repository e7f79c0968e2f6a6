//! LtHash and E2 commit vectors. The expected values were computed from the
//! definitions (not from this crate) with Python: the `blake3` package's
//! XOF and `hashlib`/`hmac` of the standard library (the script is in
//! `crates/space/README.md`). The `rsky-space` crate was not taken as a
//! dev-dependency (its dependency tree would lengthen CI's cold build).

use repo::Cid;
use space::RepoState;
use space::commit::{SignedCommit, context, e2_mac};
use space::lthash::LtHash;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn lthash_vectors() {
    let c1 = Cid::for_dag_cbor(&[0xa0]);
    let c2 = Cid::for_dag_cbor(&[0xa1, 0x61, 0x61, 0x01]);
    assert_eq!(
        c1.to_string(),
        "bafyreigbtj4x7ip5legnfznufuopl4sg4knzc2cof6duas4b3q2fy6swua"
    );
    assert_eq!(
        c2.to_string(),
        "bafyreihltcnuuyqp2jm24aqydpnlj7b6w3ogwrplomrjtg5rifv44mmjey"
    );
    let mut h = LtHash::new();
    assert_eq!(
        hex(&h.digest()),
        "e5a00aa9991ac8a5ee3109844d84a55583bd20572ad3ffcd42792f3c36b183ad"
    );
    h.apply_op("app.example.post", "3m5uyqfxyw22c", Some(&c1), None);
    assert_eq!(
        hex(&h.digest()),
        "0f00031c4754b3bdf65897151dad042f76f5d95a30b55c0a6ce695ce9107cfab"
    );
    let lanes = h.to_bytes();
    assert_eq!(u16::from_le_bytes([lanes[0], lanes[1]]), 7156);
    assert_eq!(u16::from_le_bytes([lanes[2], lanes[3]]), 58234);
    h.apply_op("app.example.post", "self", Some(&c2), None);
    assert_eq!(
        hex(&h.digest()),
        "0d5bd1bfccf61f63dd0023239cfcee4f1fe80a83b09900f74ae39e7a6eaf29bd"
    );
    h.apply_op("app.example.post", "3m5uyqfxyw22c", None, Some(&c1));
    assert_eq!(
        hex(&h.digest()),
        "3f4342d863e6ff88a4ab73b83217bb94e248326da13c92a320d15b383f3a1891"
    );
    // An update is a remove of prev and an add of cid.
    h.apply_op("app.example.post", "self", Some(&c1), Some(&c2));
    h.apply_op("app.example.post", "self", Some(&c2), Some(&c1));
    assert_eq!(
        hex(&h.digest()),
        "3f4342d863e6ff88a4ab73b83217bb94e248326da13c92a320d15b383f3a1891"
    );
}

#[test]
fn e2_context_and_mac_vector() {
    let space = "at://did:plc:authority/space/app.example.group/self";
    let ikm: [u8; 32] = std::array::from_fn(|i| i as u8);
    let ctx = context(space, "did:plc:writer", "3m5uyqfxyw22c", &ikm).unwrap();
    assert_eq!(
        hex(&ctx),
        "617470726f746f2d73706163652d7631003361743a2f2f6469643a706c633a617574686f726974792f73706163652f6170702e6578616d706c652e67726f75702f73656c66000e6469643a706c633a777269746572000d336d35757971667879773232630020000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
    );
    let hash = LtHash::new().digest();
    assert_eq!(
        hex(&e2_mac(&ikm, &ctx, &hash)),
        "7a0b9abde7dad2fb6723b90e0097d46c8790005b4910adab4df52734f38aaa1f"
    );
    // The commit built from the state carries that MAC and a signature
    // over the context that verifies; a changed hash or rev does not.
    let key = repo::crypto::Keypair::from_bytes(repo::crypto::Algorithm::K256, &[7u8; 32]).unwrap();
    let state = RepoState {
        hash: LtHash::new(),
        rev: "3m5uyqfxyw22c".into(),
    };
    let c = SignedCommit::build_with_ikm(space, "did:plc:writer", &state, &key, ikm).unwrap();
    assert_eq!(
        hex(&c.mac),
        "7a0b9abde7dad2fb6723b90e0097d46c8790005b4910adab4df52734f38aaa1f"
    );
    c.verify(space, "did:plc:writer", "3m5uyqfxyw22c", &key.public_key())
        .unwrap();
    assert_eq!(SignedCommit::from_cbor(&c.to_cbor()).unwrap(), c);
    let mut bad = c.clone();
    bad.hash[0] ^= 1;
    assert!(
        bad.verify(space, "did:plc:writer", "3m5uyqfxyw22c", &key.public_key())
            .is_err()
    );
    assert!(
        c.verify(space, "did:plc:writer", "3m5uyqfxyw22d", &key.public_key())
            .is_err()
    );
    assert!(
        c.verify(space, "did:plc:other", "3m5uyqfxyw22c", &key.public_key())
            .is_err()
    );
    // DRISL key order: 3-letter keys bytewise, then "hash".
    let b = c.to_cbor();
    assert_eq!(b[0], 0xa6);
    assert_eq!(&b[1..5], b"\x63ikm");
}
