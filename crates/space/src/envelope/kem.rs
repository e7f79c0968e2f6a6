//! The E4 KEM: DHKEM(P-256, HKDF-SHA256) of RFC 9180 §4.1, the reading of
//! "a shared secret from a P-256 KEM" this crate chose (the E4 `kem.ts`
//! is not published).
//!
//! - `dh` = the x-coordinate of ECDH(skR, pkE) (32 bytes);
//! - `kem_context = enc || pkRm`, both uncompressed SEC1 (65 bytes each);
//! - `suite_id = "KEM" || I2OSP(0x0010, 2)`;
//! - `eae_prk = LabeledExtract("", "eae_prk", dh)`;
//! - `shared_secret = LabeledExpand(eae_prk, "shared_secret", kem_context, 32)`.
//!
//! On the wire the key share is the ephemeral public key as a P-256
//! `did:key` (the E4 tests call it a did:key string).

use hkdf::Hkdf;
use p256::elliptic_curve::sec1::ToEncodedPoint;
use p256::{PublicKey, SecretKey};
use repo::crypto::PublicKey as AtKey;
use sha2::Sha256;

use crate::error::{Result, SpaceError};

const SUITE_ID: &[u8] = b"KEM\x00\x10";

fn labeled_ikm(label: &[u8], ikm: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(7 + SUITE_ID.len() + label.len() + ikm.len());
    v.extend_from_slice(b"HPKE-v1");
    v.extend_from_slice(SUITE_ID);
    v.extend_from_slice(label);
    v.extend_from_slice(ikm);
    v
}

fn extract_and_expand(dh: &[u8], kem_context: &[u8]) -> [u8; 32] {
    let (_, hk) = Hkdf::<Sha256>::extract(Some(&[]), &labeled_ikm(b"eae_prk", dh));
    let mut info = Vec::with_capacity(2 + 7 + SUITE_ID.len() + 13 + kem_context.len());
    info.extend_from_slice(&32u16.to_be_bytes());
    info.extend_from_slice(&labeled_ikm(b"shared_secret", kem_context));
    let mut out = [0u8; 32];
    // 32 bytes is below HKDF-SHA256's output cap.
    let _ = hk.expand(&info, &mut out);
    out
}

fn uncompressed(pk: &PublicKey) -> [u8; 65] {
    let p = pk.to_encoded_point(false);
    let mut out = [0u8; 65];
    out.copy_from_slice(p.as_bytes());
    out
}

fn did_key(pk: &PublicKey) -> String {
    AtKey::P256(p256::ecdsa::VerifyingKey::from(*pk)).to_did_key()
}

/// The host's KEM key pair (published as the DID document's
/// `#atproto_kem` key).
#[derive(Clone)]
pub struct KemKey {
    secret: SecretKey,
}

impl KemKey {
    /// A fresh key.
    pub fn generate() -> Result<KemKey> {
        loop {
            let mut b = [0u8; 32];
            getrandom::fill(&mut b)
                .map_err(|e| SpaceError::Io(std::io::Error::other(e.to_string())))?;
            if let Ok(secret) = SecretKey::from_slice(&b) {
                return Ok(KemKey { secret });
            }
        }
    }

    /// The key from its 32 secret bytes.
    pub fn from_bytes(b: &[u8]) -> Result<KemKey> {
        SecretKey::from_slice(b)
            .map(|secret| KemKey { secret })
            .map_err(|_| SpaceError::InvalidKeyShare("not a P-256 secret key".into()))
    }

    /// The public key.
    pub fn public(&self) -> PublicKey {
        self.secret.public_key()
    }

    /// The public key as a `did:key`.
    pub fn did_key(&self) -> String {
        did_key(&self.public())
    }

    /// The shared secret of a syncer's key share.
    pub fn decapsulate(&self, key_share: &str) -> Result<[u8; 32]> {
        let pk_e = match AtKey::from_did_key(key_share) {
            Ok(AtKey::P256(vk)) => PublicKey::from(vk),
            Ok(_) => return Err(SpaceError::InvalidKeyShare("not a P-256 key".into())),
            Err(e) => return Err(SpaceError::InvalidKeyShare(e.to_string())),
        };
        let dh = p256::ecdh::diffie_hellman(self.secret.to_nonzero_scalar(), pk_e.as_affine());
        let mut ctx = Vec::with_capacity(130);
        ctx.extend_from_slice(&uncompressed(&pk_e));
        ctx.extend_from_slice(&uncompressed(&self.public()));
        Ok(extract_and_expand(dh.raw_secret_bytes(), &ctx))
    }
}

/// The syncer's half: a key share for `host` and the shared secret.
pub fn encapsulate(host: &PublicKey) -> Result<(String, [u8; 32])> {
    let eph = KemKey::generate()?;
    encapsulate_with(host, &eph)
}

/// [`encapsulate`] with a given ephemeral key (test vectors).
pub fn encapsulate_with(host: &PublicKey, eph: &KemKey) -> Result<(String, [u8; 32])> {
    let dh = p256::ecdh::diffie_hellman(eph.secret.to_nonzero_scalar(), host.as_affine());
    let mut ctx = Vec::with_capacity(130);
    ctx.extend_from_slice(&uncompressed(&eph.public()));
    ctx.extend_from_slice(&uncompressed(host));
    Ok((
        eph.did_key(),
        extract_and_expand(dh.raw_secret_bytes(), &ctx),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_sides_agree_and_bad_shares_are_refused() {
        let host = KemKey::generate().unwrap();
        let (share, ss) = encapsulate(&host.public()).unwrap();
        assert_eq!(host.decapsulate(&share).unwrap(), ss);
        let other = KemKey::generate().unwrap();
        assert_ne!(other.decapsulate(&share).unwrap(), ss);
        for bad in [
            "",
            "did:key:z",
            "did:plc:abc",
            "did:key:zQ3shokFTS3brHcDQrn82RUDfCZESWL1ZdCEJwekUDPQiYBme",
        ] {
            assert!(host.decapsulate(bad).is_err(), "{bad}");
        }
    }
}
