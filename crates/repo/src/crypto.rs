//! Signing keys for repo commits: secp256k1 (k256, "ES256K") and NIST P-256
//! (p256, "ES256"), their `did:key` / multikey forms, and atproto's
//! signature rules.
//!
//! Signatures are ECDSA over the SHA-256 of the message, 64 bytes compact
//! `r || s`, low-S. Verification rejects DER-encoded signatures, any length
//! other than 64, and high-S signatures (for both curves, checked before
//! the curve arithmetic). Signing normalises to low-S (RFC 6979 nonces).
//!
//! Key encodings: `did:key:z` + base58btc(multicodec varint || compressed
//! SEC1 point), multicodec 0xe7 (secp256k1-pub) or 0x1200 (p256-pub). Parsing
//! also accepts uncompressed points inside a multikey; encoding always
//! compresses. DID documents: the `#atproto` verification method, either
//! `Multikey` or the legacy `EcdsaSecp256k1VerificationKey2019` /
//! `EcdsaSecp256r1VerificationKey2019` types whose `publicKeyMultibase` is
//! `z` + base58btc(point) with no multicodec prefix.
//!
//! Two secp256k1 backends ([`K256Backend`]), for verifying and signing:
//! RustCrypto `k256` (always built; it also parses keys and is the test
//! oracle) and, with the default-on `libsecp256k1` feature, bitcoin-core's
//! libsecp256k1 (bundled C through the `secp256k1` crate), the default for
//! both. Verification: both sit behind the same pre-checks (length, DER,
//! scalar range, low-S), so they reject exactly the same signatures with
//! the same [`SignatureError`]; only the final curve equation is delegated,
//! and libsecp256k1 is faster (`repo.commit_verify/k256.libsecp256k1`
//! against `k256.rustcrypto`). Signing: both use RFC 6979
//! nonces over h mod n and return 64-byte compact low-S, so they produce
//! the same bytes; libsecp256k1 signs on one context blinded once per
//! process, through one documented `unsafe` FFI call (the crate's safe
//! entry point re-blinds after every signature, a second multiplication
//! as costly as the signature), with
//! its RFC 6979 nonce computed on `sha2` (`crypto_rfc6979.rs`). Property
//! tests (`tests/crypto.rs`) hold the backends to identical answers and
//! bytes.

use k256::ecdsa::signature::hazmat::{PrehashSigner, PrehashVerifier};
use sha2::{Digest, Sha256};

/// The two curves atproto allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// secp256k1, JWT "ES256K".
    K256,
    /// NIST P-256, JWT "ES256".
    P256,
}

impl Algorithm {
    /// The multicodec code of this curve's public keys.
    pub fn multicodec(self) -> u64 {
        match self {
            Algorithm::K256 => 0xe7,
            Algorithm::P256 => 0x1200,
        }
    }
}

/// Why a key could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// Not a `did:key:z...` string.
    #[error("not a did:key with a base58btc ('z') multibase")]
    NotDidKey,
    /// Multibase prefix other than `z`.
    #[error("multibase must be base58btc ('z')")]
    Multibase,
    /// Invalid base58.
    #[error("invalid base58btc")]
    Base58,
    /// A multicodec that is not a supported public key type.
    #[error("unsupported key multicodec 0x{0:x}")]
    Multicodec(u64),
    /// Bytes that are not a point (or scalar) on the curve.
    #[error("invalid {0:?} key bytes")]
    Invalid(Algorithm),
    /// A DID document without a usable `#atproto` key.
    #[error("DID document: {0}")]
    DidDocument(&'static str),
}

/// Why a signature was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// DER encoding (atproto requires 64-byte compact).
    #[error("DER-encoded signature (compact r||s required)")]
    Der,
    /// Not 64 bytes.
    #[error("signature must be 64 bytes, got {0}")]
    Length(usize),
    /// r or s zero or not below the curve order.
    #[error("malformed signature scalars")]
    Malformed,
    /// s in the upper half of the order.
    #[error("high-S signature")]
    HighS,
    /// Well-formed but does not verify.
    #[error("signature does not verify")]
    Invalid,
}

/// Which implementation checks secp256k1 signatures (the rules around it
/// are the same for both; see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum K256Backend {
    /// RustCrypto `k256` (precomputed tables).
    RustCrypto,
    /// bitcoin-core's libsecp256k1 (feature `libsecp256k1`).
    #[cfg(feature = "libsecp256k1")]
    LibSecp256k1,
}

impl K256Backend {
    /// The backend [`PublicKey::verify_digest`] uses: libsecp256k1 when
    /// built, else RustCrypto.
    #[cfg(feature = "libsecp256k1")]
    pub const DEFAULT: K256Backend = K256Backend::LibSecp256k1;
    /// The backend [`PublicKey::verify_digest`] uses: libsecp256k1 when
    /// built, else RustCrypto.
    #[cfg(not(feature = "libsecp256k1"))]
    pub const DEFAULT: K256Backend = K256Backend::RustCrypto;

    /// Every backend compiled in.
    pub const ALL: &'static [K256Backend] = &[
        K256Backend::RustCrypto,
        #[cfg(feature = "libsecp256k1")]
        K256Backend::LibSecp256k1,
    ];

    /// A short name (`rustcrypto`, `libsecp256k1`).
    pub fn name(self) -> &'static str {
        match self {
            K256Backend::RustCrypto => "rustcrypto",
            #[cfg(feature = "libsecp256k1")]
            K256Backend::LibSecp256k1 => "libsecp256k1",
        }
    }
}

/// A secp256k1 public key, held in the form each verification backend
/// wants (converted once, when the key is made).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct K256PublicKey {
    key: k256::ecdsa::VerifyingKey,
    /// None only if libsecp256k1 refused a point RustCrypto accepted (never
    /// seen; verification then falls back to RustCrypto).
    #[cfg(feature = "libsecp256k1")]
    fast: Option<secp256k1::PublicKey>,
}

impl K256PublicKey {
    /// Wraps a RustCrypto key.
    pub fn new(key: k256::ecdsa::VerifyingKey) -> Self {
        #[cfg(feature = "libsecp256k1")]
        let fast = {
            let point = key.to_encoded_point(false);
            <&[u8; 65]>::try_from(point.as_bytes())
                .ok()
                .and_then(|b| secp256k1::PublicKey::from_byte_array_uncompressed(*b).ok())
        };
        K256PublicKey {
            key,
            #[cfg(feature = "libsecp256k1")]
            fast,
        }
    }

    /// The RustCrypto key.
    pub fn verifying_key(&self) -> &k256::ecdsa::VerifyingKey {
        &self.key
    }

    /// Verifies a signature that already passed the atproto pre-checks.
    #[inline]
    fn verify_checked(
        &self,
        backend: K256Backend,
        digest: &[u8; 32],
        sig: &k256::ecdsa::Signature,
        raw: &[u8],
    ) -> Result<(), SignatureError> {
        match backend {
            #[cfg(feature = "libsecp256k1")]
            K256Backend::LibSecp256k1 => {
                if let Some(fast) = &self.fast {
                    // Cannot fail after k256's range check (r, s in
                    // [1, n-1]); libsecp256k1 rejects only r or s >= n.
                    let s = secp256k1::ecdsa::Signature::from_compact(raw)
                        .map_err(|_| SignatureError::Malformed)?;
                    let msg = secp256k1::Message::from_digest(*digest);
                    return secp256k1::ecdsa::verify(&s, msg, fast)
                        .map_err(|_| SignatureError::Invalid);
                }
                self.key
                    .verify_prehash(digest, sig)
                    .map_err(|_| SignatureError::Invalid)
            }
            K256Backend::RustCrypto => {
                let _ = raw;
                self.key
                    .verify_prehash(digest, sig)
                    .map_err(|_| SignatureError::Invalid)
            }
        }
    }
}

impl From<k256::ecdsa::VerifyingKey> for K256PublicKey {
    fn from(key: k256::ecdsa::VerifyingKey) -> Self {
        K256PublicKey::new(key)
    }
}

/// A public key on one of the two curves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PublicKey {
    /// secp256k1.
    K256(K256PublicKey),
    /// P-256.
    P256(p256::ecdsa::VerifyingKey),
}

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

/// A digest reduced mod the secp256k1 order n (RFC 6979 `bits2octets`),
/// the form both signing backends feed to the nonce DRBG.
fn digest_mod_n(digest: &[u8; 32]) -> [u8; 32] {
    use k256::elliptic_curve::ops::Reduce;
    <k256::Scalar as Reduce<k256::U256>>::reduce_bytes(&(*digest).into())
        .to_bytes()
        .into()
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
/// nonce (no extra data) computed on `sha2` by `crypto_rfc6979.rs` (the
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
            Some(rfc6979::nonce_function),
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

fn looks_der(sig: &[u8]) -> bool {
    sig.len() >= 8 && sig.len() <= 72 && sig[0] == 0x30 && usize::from(sig[1]) == sig.len() - 2
}

impl PublicKey {
    /// The curve.
    pub fn algorithm(&self) -> Algorithm {
        match self {
            PublicKey::K256(_) => Algorithm::K256,
            PublicKey::P256(_) => Algorithm::P256,
        }
    }

    /// A key from SEC1 bytes (compressed or uncompressed).
    pub fn from_sec1(alg: Algorithm, bytes: &[u8]) -> Result<Self, KeyError> {
        Ok(match alg {
            Algorithm::K256 => PublicKey::K256(K256PublicKey::new(
                k256::ecdsa::VerifyingKey::from_sec1_bytes(bytes)
                    .map_err(|_| KeyError::Invalid(alg))?,
            )),
            Algorithm::P256 => PublicKey::P256(
                p256::ecdsa::VerifyingKey::from_sec1_bytes(bytes)
                    .map_err(|_| KeyError::Invalid(alg))?,
            ),
        })
    }

    /// The 33-byte compressed SEC1 point.
    pub fn to_compressed(&self) -> [u8; 33] {
        let mut out = [0u8; 33];
        match self {
            PublicKey::K256(k) => out.copy_from_slice(k.key.to_encoded_point(true).as_bytes()),
            PublicKey::P256(k) => out.copy_from_slice(k.to_encoded_point(true).as_bytes()),
        }
        out
    }

    /// Parses a multikey: `z` + base58btc(multicodec varint || point).
    pub fn from_multikey(s: &str) -> Result<Self, KeyError> {
        let body = s.strip_prefix('z').ok_or(KeyError::Multibase)?;
        let bytes = bs58::decode(body)
            .into_vec()
            .map_err(|_| KeyError::Base58)?;
        let (code, n) = crate::varint::read(&bytes).map_err(|_| KeyError::Multicodec(0))?;
        let alg = match code {
            0xe7 => Algorithm::K256,
            0x1200 => Algorithm::P256,
            other => return Err(KeyError::Multicodec(other)),
        };
        PublicKey::from_sec1(alg, &bytes[n..])
    }

    /// The multikey form (`z...`, compressed point).
    pub fn to_multikey(&self) -> String {
        let (prefix, n) = crate::varint::encode(self.algorithm().multicodec());
        let mut bytes = Vec::with_capacity(n + 33);
        bytes.extend_from_slice(&prefix[..n]);
        bytes.extend_from_slice(&self.to_compressed());
        format!("z{}", bs58::encode(bytes).into_string())
    }

    /// Parses `did:key:z...`.
    pub fn from_did_key(s: &str) -> Result<Self, KeyError> {
        let mk = s.strip_prefix("did:key:").ok_or(KeyError::NotDidKey)?;
        PublicKey::from_multikey(mk)
    }

    /// The `did:key:z...` form.
    pub fn to_did_key(&self) -> String {
        format!("did:key:{}", self.to_multikey())
    }

    /// Parses a legacy `publicKeyMultibase` (no multicodec prefix).
    pub fn from_legacy_multibase(alg: Algorithm, s: &str) -> Result<Self, KeyError> {
        let body = s.strip_prefix('z').ok_or(KeyError::Multibase)?;
        let bytes = bs58::decode(body)
            .into_vec()
            .map_err(|_| KeyError::Base58)?;
        PublicKey::from_sec1(alg, &bytes)
    }

    /// The atproto signing key of a DID document (`#atproto` method).
    pub fn from_did_document(doc: &serde_json::Value) -> Result<Self, KeyError> {
        let methods = doc
            .get("verificationMethod")
            .and_then(|m| m.as_array())
            .ok_or(KeyError::DidDocument("no verificationMethod list"))?;
        let method = methods
            .iter()
            .find(|m| {
                m.get("id")
                    .and_then(|i| i.as_str())
                    .is_some_and(|id| id.ends_with("#atproto"))
            })
            .ok_or(KeyError::DidDocument("no #atproto verification method"))?;
        let mb = method
            .get("publicKeyMultibase")
            .and_then(|v| v.as_str())
            .ok_or(KeyError::DidDocument("no publicKeyMultibase"))?;
        match method.get("type").and_then(|t| t.as_str()) {
            Some("Multikey") => PublicKey::from_multikey(mb),
            Some("EcdsaSecp256k1VerificationKey2019") => {
                PublicKey::from_legacy_multibase(Algorithm::K256, mb)
            }
            Some("EcdsaSecp256r1VerificationKey2019") => {
                PublicKey::from_legacy_multibase(Algorithm::P256, mb)
            }
            _ => Err(KeyError::DidDocument(
                "unsupported verification method type",
            )),
        }
    }

    /// Verifies `sig` over SHA-256(`msg`).
    pub fn verify(&self, msg: &[u8], sig: &[u8]) -> Result<(), SignatureError> {
        self.verify_digest(&Sha256::digest(msg).into(), sig)
    }

    /// Verifies `sig` over a SHA-256 digest (atproto rules: 64-byte compact,
    /// low-S), secp256k1 on [`K256Backend::DEFAULT`].
    #[inline]
    pub fn verify_digest(&self, digest: &[u8; 32], sig: &[u8]) -> Result<(), SignatureError> {
        self.verify_digest_with(K256Backend::DEFAULT, digest, sig)
    }

    /// [`verify_digest`](Self::verify_digest) on a chosen secp256k1
    /// backend (ignored for P-256). Every backend gives the same answer.
    pub fn verify_digest_with(
        &self,
        backend: K256Backend,
        digest: &[u8; 32],
        sig: &[u8],
    ) -> Result<(), SignatureError> {
        if sig.len() != 64 {
            return Err(if looks_der(sig) {
                SignatureError::Der
            } else {
                SignatureError::Length(sig.len())
            });
        }
        match self {
            PublicKey::K256(k) => {
                let s = k256::ecdsa::Signature::from_slice(sig)
                    .map_err(|_| SignatureError::Malformed)?;
                if s.normalize_s().is_some() {
                    return Err(SignatureError::HighS);
                }
                k.verify_checked(backend, digest, &s, sig)
            }
            PublicKey::P256(k) => {
                let s = p256::ecdsa::Signature::from_slice(sig)
                    .map_err(|_| SignatureError::Malformed)?;
                if s.normalize_s().is_some() {
                    return Err(SignatureError::HighS);
                }
                k.verify_prehash(digest, &s)
                    .map_err(|_| SignatureError::Invalid)
            }
        }
    }
}

#[cfg(feature = "libsecp256k1")]
#[path = "crypto_rfc6979.rs"]
mod rfc6979;

#[cfg(test)]
#[path = "crypto_tests.rs"]
mod tests;
