//! Tests of the signing keys on both curves and both secp256k1 backends (a
//! child module of `crypto`).

use sha2::{Digest, Sha256};

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

/// A libsecp256k1 nonce function's C signature.
#[cfg(feature = "libsecp256k1")]
type RawNonceFn = unsafe extern "C" fn(
    *mut u8,
    *const u8,
    *const u8,
    *const u8,
    *mut std::ffi::c_void,
    u32,
) -> i32;

/// Calls nonce function `f` as libsecp256k1 would: (its answer, the nonce).
#[cfg(feature = "libsecp256k1")]
fn call_nonce(
    f: RawNonceFn,
    key: &[u8; 32],
    msg: &[u8; 32],
    algo16: Option<&[u8; 16]>,
    data: Option<&mut [u8; 32]>,
    counter: u32,
) -> (i32, [u8; 32]) {
    let mut out = [0u8; 32];
    // SAFETY: a nonce function reads 32-byte `msg` and `key`, a 16-byte
    // algorithm tag and 32 bytes of data when given, and writes 32 bytes.
    let ok = unsafe {
        f(
            out.as_mut_ptr(),
            msg.as_ptr(),
            key.as_ptr(),
            algo16.map_or(std::ptr::null(), |a| a.as_ptr()),
            data.map_or(std::ptr::null_mut(), |d| d.as_mut_ptr().cast()),
            counter,
        )
    };
    (ok, out)
}

#[cfg(feature = "libsecp256k1")]
#[test]
fn rfc6979_nonce_is_libsecp256k1s_own() {
    // SAFETY: reading an immutable extern static the library initialises.
    let theirs_fn = unsafe { secp256k1::ffi::secp256k1_nonce_function_rfc6979 }
        .expect("libsecp256k1 exports its RFC 6979 nonce function");
    // Keys 1, 7..7 and a random-looking one; digests zero, all-ones (above
    // the order, so reduced first), and others; the first retries too.
    let mut one = [0u8; 32];
    one[31] = 1;
    let other: [u8; 32] = Sha256::digest(b"key").into();
    for key in [one, [7u8; 32], other] {
        for seed in [&b""[..], b"a", b"commit"] {
            let digest: [u8; 32] = Sha256::digest(seed).into();
            for msg in [[0u8; 32], [0xff; 32], digest] {
                for counter in 0..4 {
                    let (ok, theirs) = call_nonce(theirs_fn, &key, &msg, None, None, counter);
                    assert_eq!(ok, 1);
                    assert_eq!(rfc6979::nonce(&key, &msg, counter), Some(theirs));
                    let ours = call_nonce(rfc6979::nonce_function, &key, &msg, None, None, counter);
                    assert_eq!(ours, (1, theirs));
                }
            }
        }
    }
    // Extra data or an algorithm tag are declined, never misread.
    let (key, msg) = ([7u8; 32], [1u8; 32]);
    let with_data = call_nonce(
        rfc6979::nonce_function,
        &key,
        &msg,
        None,
        Some(&mut [2; 32]),
        0,
    );
    let with_algo = call_nonce(
        rfc6979::nonce_function,
        &key,
        &msg,
        Some(b"0123456789abcdef"),
        None,
        0,
    );
    assert_eq!((with_data.0, with_algo.0), (0, 0));
}
