//! crypto/signature-fixtures.json and the did:key vectors.

mod common;

use base64::Engine as _;
use repo::crypto::{Algorithm, K256Backend, Keypair, PublicKey, SignatureError};
use sha2::{Digest, Sha256};

fn b64(s: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(s.trim_end_matches('='))
        .unwrap()
}

#[test]
fn signature_fixtures() {
    let cases = common::read_json("interop/crypto/signature-fixtures.json");
    let cases = cases.as_array().unwrap();
    assert_eq!(cases.len(), 6);
    let (mut accepted, mut rejected) = (0, 0);
    for c in cases {
        let msg = b64(c["messageBase64"].as_str().unwrap());
        let sig = b64(c["signatureBase64"].as_str().unwrap());
        let alg = match c["algorithm"].as_str().unwrap() {
            "ES256K" => Algorithm::K256,
            "ES256" => Algorithm::P256,
            other => panic!("unknown algorithm {other}"),
        };
        let key = PublicKey::from_did_key(c["publicKeyDid"].as_str().unwrap()).unwrap();
        assert_eq!(key.algorithm(), alg);
        // The legacy multibase form is the same point without a multicodec.
        let legacy =
            PublicKey::from_legacy_multibase(alg, c["publicKeyMultibase"].as_str().unwrap())
                .unwrap();
        assert_eq!(legacy, key);
        assert_eq!(key.to_did_key(), c["publicKeyDid"].as_str().unwrap());
        let res = key.verify(&msg, &sig);
        let tags: Vec<&str> = c["tags"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap())
            .collect();
        if c["validSignature"].as_bool().unwrap() {
            res.unwrap_or_else(|e| panic!("{}: {e}", c["comment"]));
            accepted += 1;
        } else {
            let e = res.expect_err(c["comment"].as_str().unwrap());
            if tags.contains(&"high-s") {
                assert_eq!(e, SignatureError::HighS);
            }
            if tags.contains(&"der-encoded") {
                assert_eq!(e, SignatureError::Der);
            }
            rejected += 1;
        }
    }
    assert_eq!((accepted, rejected), (2, 4));
}

#[test]
fn did_key_k256() {
    let cases = common::read_json("interop/crypto/w3c_didkey_K256.json");
    let cases = cases.as_array().unwrap();
    assert_eq!(cases.len(), 5);
    for c in cases {
        let secret = hex(c["privateKeyBytesHex"].as_str().unwrap());
        let key = Keypair::from_bytes(Algorithm::K256, &secret).unwrap();
        let did = c["publicDidKey"].as_str().unwrap();
        assert_eq!(key.public_key().to_did_key(), did);
        assert_eq!(PublicKey::from_did_key(did).unwrap(), key.public_key());
    }
}

#[test]
fn did_key_p256() {
    let cases = common::read_json("interop/crypto/w3c_didkey_P256.json");
    let cases = cases.as_array().unwrap();
    assert_eq!(cases.len(), 1);
    for c in cases {
        let secret = bs58::decode(c["privateKeyBytesBase58"].as_str().unwrap())
            .into_vec()
            .unwrap();
        let key = Keypair::from_bytes(Algorithm::P256, &secret).unwrap();
        let did = c["publicDidKey"].as_str().unwrap();
        assert_eq!(key.public_key().to_did_key(), did);
        assert_eq!(PublicKey::from_did_key(did).unwrap(), key.public_key());
        // Round trip a signature made here through the parsed key.
        let sig = key.sign(b"atbench");
        PublicKey::from_did_key(did)
            .unwrap()
            .verify(b"atbench", &sig)
            .unwrap();
    }
}

#[test]
fn bad_keys_and_signatures_are_typed_errors() {
    assert!(PublicKey::from_did_key("did:web:example.com").is_err());
    assert!(PublicKey::from_did_key("did:key:z").is_err());
    assert!(PublicKey::from_did_key("did:key:zQ3sh0OIl").is_err());
    assert!(PublicKey::from_did_key("did:key:m123").is_err());
    let key = Keypair::from_bytes(Algorithm::K256, &[9u8; 32])
        .unwrap()
        .public_key();
    assert_eq!(
        key.verify(b"x", &[0u8; 63]),
        Err(SignatureError::Length(63))
    );
    assert_eq!(key.verify(b"x", &[0u8; 64]), Err(SignatureError::Malformed));
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// The secp256k1 order n, big-endian.
const K256_N: [u8; 32] = [
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe,
    0xba, 0xae, 0xdc, 0xe6, 0xaf, 0x48, 0xa0, 0x3b, 0xbf, 0xd2, 0x5e, 0x8c, 0xd0, 0x36, 0x41, 0x41,
];

/// `n - s` (s in [1, n-1]): the other signature for the same (r, msg).
fn negate_s(sig: &[u8; 64]) -> [u8; 64] {
    let mut out = *sig;
    let mut borrow = 0i16;
    for i in (0..32).rev() {
        let d = i16::from(K256_N[i]) - i16::from(sig[32 + i]) - borrow;
        out[32 + i] = d.rem_euclid(256) as u8;
        borrow = i16::from(d < 0);
    }
    out
}

/// Every secp256k1 backend's answer, checked identical; returns it.
fn all_backends(key: &PublicKey, digest: &[u8; 32], sig: &[u8]) -> Result<(), SignatureError> {
    let answers: Vec<_> = K256Backend::ALL
        .iter()
        .map(|&b| key.verify_digest_with(b, digest, sig))
        .collect();
    for (b, a) in K256Backend::ALL.iter().zip(&answers) {
        assert_eq!(
            a,
            &answers[0],
            "backend {} disagrees with {}",
            b.name(),
            K256Backend::ALL[0].name()
        );
    }
    assert_eq!(key.verify_digest(digest, sig), answers[0]);
    answers[0].clone()
}

#[test]
fn k256_backends_agree_on_the_fixtures() {
    let cases = common::read_json("interop/crypto/signature-fixtures.json");
    let mut k256_cases = 0;
    for c in cases.as_array().unwrap() {
        if c["algorithm"].as_str() != Some("ES256K") {
            continue;
        }
        let msg = b64(c["messageBase64"].as_str().unwrap());
        let sig = b64(c["signatureBase64"].as_str().unwrap());
        let key = PublicKey::from_did_key(c["publicKeyDid"].as_str().unwrap()).unwrap();
        let digest: [u8; 32] = Sha256::digest(&msg).into();
        let res = all_backends(&key, &digest, &sig);
        assert_eq!(res.is_ok(), c["validSignature"].as_bool().unwrap());
        // The high-S twin of every 64-byte signature is rejected as such,
        // and the low-S twin of a high-S one verifies (same r, same msg).
        if let Ok(sig64) = <[u8; 64]>::try_from(&sig[..]) {
            let twin = negate_s(&sig64);
            match res {
                Ok(()) => assert_eq!(
                    all_backends(&key, &digest, &twin),
                    Err(SignatureError::HighS)
                ),
                Err(SignatureError::HighS) => all_backends(&key, &digest, &twin).unwrap(),
                Err(_) => {}
            }
        }
        k256_cases += 1;
    }
    assert_eq!(k256_cases, 3);
    let key = Keypair::from_bytes(Algorithm::K256, &[5u8; 32])
        .unwrap()
        .public_key();
    let d = [7u8; 32];
    for bad in [
        &[0u8; 64][..],
        &[0xff; 64],
        &[0u8; 63],
        &[0u8; 65],
        &[0u8; 0],
    ] {
        assert!(all_backends(&key, &d, bad).is_err());
    }
    // r or s equal to n (out of range), and s = 0.
    let good = Keypair::from_bytes(Algorithm::K256, &[5u8; 32])
        .unwrap()
        .sign_digest(&d);
    let mut r_n = good;
    r_n[..32].copy_from_slice(&K256_N);
    let mut s_n = good;
    s_n[32..].copy_from_slice(&K256_N);
    let mut s_0 = good;
    s_0[32..].fill(0);
    for bad in [r_n, s_n, s_0] {
        assert_eq!(all_backends(&key, &d, &bad), Err(SignatureError::Malformed));
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Random keys and messages: every backend accepts the signature, and
    /// gives the same answer on a wrong message, a wrong key, a flipped
    /// byte, the high-S twin and random bytes.
    #[test]
    fn k256_backends_agree(
        secret in proptest::array::uniform32(proptest::prelude::any::<u8>()),
        other in proptest::array::uniform32(proptest::prelude::any::<u8>()),
        msg in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200),
        flip in 0usize..64,
        bit in 0u8..8,
        noise in proptest::collection::vec(proptest::prelude::any::<u8>(), 64),
    ) {
        let Ok(key) = Keypair::from_bytes(Algorithm::K256, &secret) else {
            return Ok(());
        };
        let pk = key.public_key();
        let digest: [u8; 32] = Sha256::digest(&msg).into();
        let sig = key.sign_digest(&digest);
        proptest::prop_assert_eq!(all_backends(&pk, &digest, &sig), Ok(()));
        proptest::prop_assert_eq!(
            all_backends(&pk, &digest, &negate_s(&sig)),
            Err(SignatureError::HighS)
        );
        let mut wrong = digest;
        wrong[flip % 32] ^= 1 << bit;
        proptest::prop_assert_eq!(
            all_backends(&pk, &wrong, &sig),
            Err(SignatureError::Invalid)
        );
        let mut flipped = sig;
        flipped[flip] ^= 1 << bit;
        proptest::prop_assert!(all_backends(&pk, &digest, &flipped).is_err());
        all_backends(&pk, &digest, &noise).ok();
        if let Ok(other) = Keypair::from_bytes(Algorithm::K256, &other)
            && other.public_key() != pk
        {
            proptest::prop_assert_eq!(
                all_backends(&other.public_key(), &digest, &sig),
                Err(SignatureError::Invalid)
            );
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Random secrets (invalid scalars skipped) and digests: every signing
    /// backend returns exactly the same 64 bytes, and they verify (low-S,
    /// since verification rejects high S) on every verification backend.
    #[test]
    fn k256_signing_backends_agree(
        secret in proptest::array::uniform32(proptest::prelude::any::<u8>()),
        digest in proptest::array::uniform32(proptest::prelude::any::<u8>()),
    ) {
        let Ok(key) = Keypair::from_bytes(Algorithm::K256, &secret) else {
            return Ok(());
        };
        let pk = key.public_key();
        let reference = key.sign_digest_with(K256Backend::RustCrypto, &digest);
        for &b in K256Backend::ALL {
            proptest::prop_assert_eq!(
                key.sign_digest_with(b, &digest),
                reference,
                "backend {} signs differently",
                b.name()
            );
        }
        proptest::prop_assert_eq!(key.sign_digest(&digest), reference);
        proptest::prop_assert_eq!(pk.verify_digest(&digest, &reference), Ok(()));
        proptest::prop_assert_eq!(all_backends(&pk, &digest, &reference), Ok(()));
    }
}
