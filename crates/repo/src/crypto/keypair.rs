//! Signing keys on both curves and signing: RFC 6979 nonces, 64-byte
//! compact low-S signatures, the same bytes on either secp256k1 backend
//! (libsecp256k1 on one context blinded once per process, through one
//! documented FFI call).

use k256::ecdsa::signature::hazmat::PrehashSigner;
use sha2::{Digest, Sha256};

use super::public_key::{K256PublicKey, PublicKey};
use super::{Algorithm, K256Backend, KeyError, digest_mod_n};

/// A secp256k1 signing key, held in the form each signing backend wants
/// (converted once, when the key is made).
///
/// Both backends sign with RFC 6979 deterministic nonces (HMAC-SHA-256,
/// no extra entropy) and return the 64-byte compact `r || s` with low S, so
/// for one key and digest they produce exactly the same bytes (held so by a
/// property test in `tests/crypto.rs`).
#[derive(Clone)]
pub struct K256Keypair {
    key: k256::ecdsa::SigningKey,
    /// The same scalar for libsecp256k1. None only if libsecp256k1 refused a
    /// scalar RustCrypto accepted (both take exactly [1, n-1], so never
    /// seen; signing then falls back to RustCrypto).
    #[cfg(feature = "libsecp256k1")]
    fast: Option<secp256k1::SecretKey>,
}

impl K256Keypair {
    /// Wraps a RustCrypto key.
    pub fn new(key: k256::ecdsa::SigningKey) -> Self {
        #[cfg(feature = "libsecp256k1")]
        let fast = secp256k1::SecretKey::from_secret_bytes(key.to_bytes().into()).ok();
        K256Keypair {
            key,
            #[cfg(feature = "libsecp256k1")]
            fast,
        }
    }

    /// The RustCrypto key.
    pub fn signing_key(&self) -> &k256::ecdsa::SigningKey {
        &self.key
    }

    /// Signs a 32-byte digest on `backend`: 64-byte compact, low-S,
    /// identical bytes on every backend.
    #[inline]
    fn sign_digest(&self, backend: K256Backend, digest: &[u8; 32]) -> [u8; 64] {
        match backend {
            #[cfg(feature = "libsecp256k1")]
            K256Backend::LibSecp256k1 => match &self.fast {
                Some(sk) => {
                    libsecp256k1_sign(sk, digest).unwrap_or_else(|| self.sign_rustcrypto(digest))
                }
                None => self.sign_rustcrypto(digest),
            },
            K256Backend::RustCrypto => self.sign_rustcrypto(digest),
        }
    }

    fn sign_rustcrypto(&self, digest: &[u8; 32]) -> [u8; 64] {
        // Signing a 32-byte prehash with a valid key cannot fail; fall back
        // to an all-zero (never-verifying) signature rather than panic.
        // RFC 6979 feeds bits2octets(h) = h mod n to the nonce DRBG, as
        // libsecp256k1 does; `k256` 0.13 feeds h unreduced, so the two
        // nonces differ for digests >= n (about 2^-128 of SHA-256 outputs).
        // Reducing first makes RustCrypto RFC-exact and byte-identical to
        // libsecp256k1; the signature equation uses h mod n either way.
        let h = digest_mod_n(digest);
        let sig: Result<k256::ecdsa::Signature, _> = self.key.sign_prehash(&h);
        sig.map(|s| {
            let s = s.normalize_s().unwrap_or(s);
            s.to_bytes().into()
        })
        .unwrap_or([0; 64])
    }
}

/// The process's libsecp256k1 signing context, blinded once when first
/// used (from the OS random source; a time-and-address seed if that
/// fails: blinding is a side-channel defence, not a source of nonces).
///
/// Why not `secp256k1::ecdsa::sign`, the crate's safe entry point: in
/// `secp256k1` 0.33 it signs on a thread-local context and re-blinds that
/// context after every signature, a second fixed-base multiplication as
/// costly as the signature's own (measured that way it was no faster than
/// RustCrypto; `repo.commit_sign/k256.libsecp256k1` beside
/// `k256.rustcrypto` shows the context kept here). A context blinded once per
/// process is what bitcoin-core itself does.
#[cfg(feature = "libsecp256k1")]
fn signing_context() -> &'static secp256k1::Secp256k1<secp256k1::SignOnly> {
    static CTX: std::sync::OnceLock<secp256k1::Secp256k1<secp256k1::SignOnly>> =
        std::sync::OnceLock::new();
    CTX.get_or_init(|| {
        let mut seed = [0u8; 32];
        if getrandom::fill(&mut seed).is_err() {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0);
            let here = &seed as *const _ as usize;
            let mut h = Sha256::new();
            h.update(now.to_le_bytes());
            h.update(here.to_le_bytes());
            h.update(std::process::id().to_le_bytes());
            seed = h.finalize().into();
        }
        let mut ctx = secp256k1::Secp256k1::signing_only();
        ctx.seeded_randomize(&seed);
        ctx
    })
}

/// ECDSA-signs `digest` with libsecp256k1 on [`signing_context`]: RFC 6979
/// nonce (no extra data) computed on `sha2` by `rfc6979.rs` (the
/// library's own nonce function hashes with portable C, slower per
/// signature on `repo.commit_sign`), 64-byte compact, low S (libsecp256k1 never
/// returns high S). `None` if libsecp256k1 reports failure (it cannot for
/// a valid key; the caller then signs with RustCrypto).
#[cfg(feature = "libsecp256k1")]
fn libsecp256k1_sign(sk: &secp256k1::SecretKey, digest: &[u8; 32]) -> Option<[u8; 64]> {
    use secp256k1::ffi;
    let ctx = signing_context();
    // SAFETY: `secp256k1_ecdsa_sign` reads a context created for signing
    // (`signing_only`, alive for the whole process), a 32-byte message and
    // a 32-byte secret key (both borrowed arrays of exactly that size), and
    // writes the 64-byte opaque signature it is given as an out-pointer,
    // zero-initialised as the FFI docs require for out-pointers. The nonce
    // function is `rfc6979::nonce_function` (the library's RFC 6979 nonce,
    // computed on sha2), which reads and writes only the 32-byte buffers
    // libsecp256k1 hands it; extra nonce data is NULL. The context is only
    // read, and libsecp256k1 documents signing contexts as safe to share
    // across threads for that.
    let (ok, sig) = unsafe {
        let mut sig = ffi::Signature::new();
        let ok = ffi::secp256k1_ecdsa_sign(
            ctx.ctx().as_ptr(),
            &mut sig,
            digest.as_ptr(),
            sk.as_secret_bytes().as_ptr(),
            Some(super::rfc6979::nonce_function),
            std::ptr::null(),
        );
        (ok, sig)
    };
    (ok == 1).then(|| secp256k1::ecdsa::Signature::from(sig).serialize_compact())
}

#[cfg(feature = "libsecp256k1")]
impl Drop for K256Keypair {
    fn drop(&mut self) {
        // The RustCrypto key zeroizes itself; the libsecp256k1 copy does not.
        if let Some(sk) = &mut self.fast {
            sk.non_secure_erase();
        }
    }
}

impl std::fmt::Debug for K256Keypair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secret: the public key only.
        write!(
            f,
            "K256Keypair({})",
            PublicKey::K256(K256PublicKey::new(*self.key.verifying_key())).to_did_key()
        )
    }
}

impl From<k256::ecdsa::SigningKey> for K256Keypair {
    fn from(key: k256::ecdsa::SigningKey) -> Self {
        K256Keypair::new(key)
    }
}

/// A private signing key on one of the two curves.
#[derive(Clone)]
pub enum Keypair {
    /// secp256k1.
    K256(K256Keypair),
    /// P-256.
    P256(p256::ecdsa::SigningKey),
}

impl std::fmt::Debug for Keypair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Keypair({:?}, {})",
            self.algorithm(),
            self.public_key().to_did_key()
        )
    }
}

impl Keypair {
    /// A key from its 32-byte big-endian secret scalar.
    pub fn from_bytes(alg: Algorithm, secret: &[u8]) -> Result<Self, KeyError> {
        if secret.len() != 32 {
            return Err(KeyError::Invalid(alg));
        }
        Ok(match alg {
            Algorithm::K256 => Keypair::K256(K256Keypair::new(
                k256::ecdsa::SigningKey::from_slice(secret).map_err(|_| KeyError::Invalid(alg))?,
            )),
            Algorithm::P256 => Keypair::P256(
                p256::ecdsa::SigningKey::from_slice(secret).map_err(|_| KeyError::Invalid(alg))?,
            ),
        })
    }

    /// The secret scalar, 32 bytes big-endian.
    pub fn to_bytes(&self) -> [u8; 32] {
        match self {
            Keypair::K256(k) => k.key.to_bytes().into(),
            Keypair::P256(k) => k.to_bytes().into(),
        }
    }

    /// The curve.
    pub fn algorithm(&self) -> Algorithm {
        match self {
            Keypair::K256(_) => Algorithm::K256,
            Keypair::P256(_) => Algorithm::P256,
        }
    }

    /// The public half.
    pub fn public_key(&self) -> PublicKey {
        match self {
            Keypair::K256(k) => PublicKey::K256(K256PublicKey::new(*k.key.verifying_key())),
            Keypair::P256(k) => PublicKey::P256(*k.verifying_key()),
        }
    }

    /// Signs SHA-256(`msg`): 64-byte compact, low-S.
    pub fn sign(&self, msg: &[u8]) -> [u8; 64] {
        self.sign_digest(&Sha256::digest(msg).into())
    }

    /// Signs a SHA-256 digest: 64-byte compact `r || s`, low-S, RFC 6979
    /// deterministic nonce; secp256k1 on [`K256Backend::DEFAULT`].
    #[inline]
    pub fn sign_digest(&self, digest: &[u8; 32]) -> [u8; 64] {
        self.sign_digest_with(K256Backend::DEFAULT, digest)
    }

    /// [`sign_digest`](Self::sign_digest) on a chosen secp256k1 backend
    /// (ignored for P-256). Every backend returns the same bytes.
    pub fn sign_digest_with(&self, backend: K256Backend, digest: &[u8; 32]) -> [u8; 64] {
        match self {
            Keypair::K256(k) => k.sign_digest(backend, digest),
            Keypair::P256(k) => {
                // As for k256: cannot fail; never panic.
                let sig: Result<p256::ecdsa::Signature, _> = k.sign_prehash(digest);
                sig.map(|s| {
                    let s = s.normalize_s().unwrap_or(s);
                    s.to_bytes().into()
                })
                .unwrap_or([0; 64])
            }
        }
    }
}
