//! Tests of the signing keys on both curves and both secp256k1 backends (a
//! child module of `crypto`).

use super::*;

#[test]
fn sign_verify_both_curves() {
    for alg in [Algorithm::K256, Algorithm::P256] {
        let k = Keypair::from_bytes(alg, &[7u8; 32]).unwrap();
        let pk = k.public_key();
        let sig = k.sign(b"hello");
        pk.verify(b"hello", &sig).unwrap();
        assert_eq!(pk.verify(b"hellO", &sig), Err(SignatureError::Invalid));
        for &b in K256Backend::ALL {
            let d: [u8; 32] = Sha256::digest(b"hello").into();
            pk.verify_digest_with(b, &d, &sig).unwrap();
            let d: [u8; 32] = Sha256::digest(b"hellO").into();
            assert_eq!(
                pk.verify_digest_with(b, &d, &sig),
                Err(SignatureError::Invalid)
            );
        }
        let did = pk.to_did_key();
        assert_eq!(PublicKey::from_did_key(&did).unwrap(), pk);
        assert_eq!(
            Keypair::from_bytes(alg, &k.to_bytes())
                .unwrap()
                .public_key(),
            pk
        );
    }
    assert!(Keypair::from_bytes(Algorithm::K256, &[0u8; 32]).is_err());
    assert!(Keypair::from_bytes(Algorithm::K256, &[1u8; 31]).is_err());
}

#[test]
fn k256_signing_backends_identical() {
    // Edge digests (zero, all-ones, above the order) and edge keys
    // (1, n-1): every backend gives the same low-S bytes.
    let n_minus_1: [u8; 32] = {
        let mut n = [0xffu8; 32];
        n[15] = 0xfe;
        n[16..].copy_from_slice(&[
            0xba, 0xae, 0xdc, 0xe6, 0xaf, 0x48, 0xa0, 0x3b, 0xbf, 0xd2, 0x5e, 0x8c, 0xd0, 0x36,
            0x41, 0x40,
        ]);
        n
    };
    let mut one = [0u8; 32];
    one[31] = 1;
    for secret in [one, n_minus_1, [7u8; 32]] {
        let k = Keypair::from_bytes(Algorithm::K256, &secret).unwrap();
        let pk = k.public_key();
        for digest in [[0u8; 32], [0xff; 32], [0x42; 32]] {
            let reference = k.sign_digest_with(K256Backend::RustCrypto, &digest);
            for &b in K256Backend::ALL {
                assert_eq!(k.sign_digest_with(b, &digest), reference, "{}", b.name());
            }
            assert_eq!(k.sign_digest(&digest), reference);
            pk.verify_digest(&digest, &reference).unwrap();
        }
    }
    // n itself is not a scalar.
    let mut n = n_minus_1;
    n[31] = 0x41;
    assert!(Keypair::from_bytes(Algorithm::K256, &n).is_err());
}

#[test]
fn keypair_clone_debug_and_round_trip() {
    let k = Keypair::from_bytes(Algorithm::K256, &[3u8; 32]).unwrap();
    let c = k.clone();
    drop(k);
    let d = [9u8; 32];
    assert_eq!(c.to_bytes(), [3u8; 32]);
    assert_eq!(c.algorithm(), Algorithm::K256);
    c.public_key()
        .verify_digest(&d, &c.sign_digest(&d))
        .unwrap();
    let dbg = format!("{c:?}");
    assert!(dbg.contains(&c.public_key().to_did_key()), "{dbg}");
    let Keypair::K256(inner) = &c else {
        panic!("not k256")
    };
    let inner_dbg = format!("{inner:?}");
    assert!(!inner_dbg.contains("0303"), "{inner_dbg}");
    assert_eq!(
        K256Keypair::from(inner.signing_key().clone())
            .signing_key()
            .to_bytes(),
        inner.signing_key().to_bytes()
    );
}
