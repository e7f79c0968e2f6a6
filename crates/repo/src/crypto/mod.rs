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
//! its RFC 6979 nonce computed on `sha2` (`rfc6979.rs`). Property
//! tests (`tests/crypto.rs`) hold the backends to identical answers and
//! bytes.
//!
//! | concept | module (private) |
//! |---|---|
//! | the curves, the errors, the secp256k1 backends | this file |
//! | public keys: encodings (SEC1, multikey, `did:key`, DID documents) and verification | `public_key` |
//! | signing keys and signing, on both backends | `keypair` |
//! | libsecp256k1's RFC 6979 nonce on `sha2` | `rfc6979` |

mod keypair;
mod public_key;
#[cfg(feature = "libsecp256k1")]
mod rfc6979;

pub use keypair::{K256Keypair, Keypair};
pub use public_key::{K256PublicKey, PublicKey};

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

/// A digest reduced mod the secp256k1 order n (RFC 6979 `bits2octets`),
/// the form both signing backends feed to the nonce DRBG.
pub(crate) fn digest_mod_n(digest: &[u8; 32]) -> [u8; 32] {
    use k256::elliptic_curve::ops::Reduce;
    <k256::Scalar as Reduce<k256::U256>>::reduce_bytes(&(*digest).into())
        .to_bytes()
        .into()
}

#[cfg(test)]
#[path = "crypto_tests.rs"]
mod tests;
