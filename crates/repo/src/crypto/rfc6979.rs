//! The RFC 6979 nonce that libsecp256k1 signs with, computed on `sha2`.
//!
//! libsecp256k1's own nonce function (`secp256k1_nonce_function_rfc6979`)
//! runs the HMAC-SHA-256 DRBG on the library's portable SHA-256: about 20
//! compressions per signature, a visible share of `repo.commit_sign`
//! (perf: `rustsecp256k1_v0_14_sha256_transform`). This module computes
//! the same nonce with `hmac` over `sha2`, which uses the CPU's SHA
//! extensions where it has them, and hands it to `secp256k1_ecdsa_sign` as
//! its nonce function.
//!
//! Same bytes, by construction: the DRBG is seeded exactly as libsecp256k1
//! seeds it for a plain ECDSA signature (no extra data, no algorithm tag):
//! with the secret key's 32 bytes, then the message reduced mod n (RFC 6979
//! `bits2octets`). Output `counter` is the DRBG's `counter + 1`-th 32-byte
//! block, libsecp256k1's retry order. `crypto_tests.rs` checks signatures
//! against libsecp256k1's own nonce function and RustCrypto, edge digests
//! and keys included, and `tests/crypto.rs` does so for random ones.

use std::ffi::{c_int, c_uchar, c_uint, c_void};

use hmac::{Hmac, Mac};
use sha2::Sha256;
use zeroize::Zeroize;

/// HMAC-SHA-256 of the concatenation of `parts` under `key`.
fn hmac(key: &[u8; 32], parts: &[&[u8]]) -> Option<[u8; 32]> {
    // An HMAC key may have any length: this never fails.
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).ok()?;
    for p in parts {
        mac.update(p);
    }
    Some(mac.finalize().into_bytes().into())
}

/// RFC 6979 section 3.2's HMAC-DRBG as libsecp256k1 steps it. Its state
/// is derived from the secret key, so it is wiped when dropped.
struct Drbg {
    k: [u8; 32],
    v: [u8; 32],
    retry: bool,
}

impl Drop for Drbg {
    fn drop(&mut self) {
        self.k.zeroize();
        self.v.zeroize();
    }
}

impl Drbg {
    /// Steps b-f of RFC 6979 3.2 over `seed` (= key || message mod n).
    fn new(seed: &[u8]) -> Option<Drbg> {
        let v = [1u8; 32];
        let k = hmac(&[0u8; 32], &[&v, &[0], seed])?;
        let v = hmac(&k, &[&v])?;
        let k = hmac(&k, &[&v, &[1], seed])?;
        let v = hmac(&k, &[&v])?;
        Some(Drbg { k, v, retry: false })
    }

    /// The next 32-byte block (step h; step h.3's reseed runs before every
    /// block but the first, as libsecp256k1 orders it).
    fn next(&mut self) -> Option<[u8; 32]> {
        if self.retry {
            self.k = hmac(&self.k, &[&self.v, &[0]])?;
            self.v = hmac(&self.k, &[&self.v])?;
        }
        self.v = hmac(&self.k, &[&self.v])?;
        self.retry = true;
        Some(self.v)
    }
}

/// The nonce for `key` and `msg` at attempt `counter` (0 first), or `None`
/// if an HMAC could not be keyed (it always can).
pub(crate) fn nonce(key: &[u8; 32], msg: &[u8; 32], counter: u32) -> Option<[u8; 32]> {
    let reduced = super::digest_mod_n(msg);
    let mut seed = [0u8; 64];
    seed[..32].copy_from_slice(key);
    seed[32..].copy_from_slice(&reduced);
    let mut drbg = Drbg::new(&seed)?;
    let mut out = drbg.next()?;
    for _ in 0..counter {
        out = drbg.next()?;
    }
    seed.zeroize();
    Some(out)
}

/// A libsecp256k1 nonce function (`secp256k1_nonce_function`) giving
/// [`nonce`]. It declines (returns 0, and libsecp256k1 then fails the
/// signature, which the caller answers with RustCrypto) for the inputs a
/// plain ECDSA signature never passes: extra data or an algorithm tag.
///
/// # Safety
///
/// libsecp256k1 calls it with `nonce32` writable for 32 bytes and `msg32`
/// and `key32` readable for 32 bytes each, as its API documents.
pub(crate) unsafe extern "C" fn nonce_function(
    nonce32: *mut c_uchar,
    msg32: *const c_uchar,
    key32: *const c_uchar,
    algo16: *const c_uchar,
    data: *mut c_void,
    counter: c_uint,
) -> c_int {
    if nonce32.is_null() || msg32.is_null() || key32.is_null() {
        return 0;
    }
    if !algo16.is_null() || !data.is_null() {
        return 0;
    }
    // SAFETY: libsecp256k1 passes 32 readable bytes behind each (see above).
    let (msg, key) = unsafe { (&*msg32.cast::<[u8; 32]>(), &*key32.cast::<[u8; 32]>()) };
    match nonce(key, msg, counter) {
        Some(n) => {
            // SAFETY: 32 writable bytes, which `n` does not overlap.
            unsafe { std::ptr::copy_nonoverlapping(n.as_ptr(), nonce32, 32) };
            1
        }
        None => 0,
    }
}
