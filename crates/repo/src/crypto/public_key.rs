//! Public keys on both curves: SEC1, multikey, `did:key` and DID document
//! encodings, and verification under atproto's rules (64-byte compact,
//! low-S, DER refused), on either secp256k1 backend.

use k256::ecdsa::signature::hazmat::PrehashVerifier;
use sha2::{Digest, Sha256};

use super::{Algorithm, K256Backend, KeyError, SignatureError};

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
