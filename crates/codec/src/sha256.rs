//! sha-256 over `sha2`, with a note of which compression backend runs: the
//! `sha2` crate detects the x86 SHA extensions (SHA-NI) at run time and falls
//! back to its portable code elsewhere.

use sha2::{Digest, Sha256};

/// The sha-256 digest of `data`.
#[inline]
pub fn digest(data: &[u8]) -> [u8; 32] {
    Sha256::digest(data).into()
}

/// The sha-256 digest of several pieces, as if concatenated.
pub fn digest_parts<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> [u8; 32] {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part);
    }
    hasher.finalize().into()
}

/// Lowercase hex of a digest (or any bytes).
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 15)] as char);
    }
    out
}

/// The backend `sha2` uses on this machine: `"sha-ni"` when the CPU has the
/// x86 SHA extensions, else `"portable"`.
pub fn backend() -> &'static str {
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    {
        if std::arch::is_x86_feature_detected!("sha")
            && std::arch::is_x86_feature_detected!("sse4.1")
        {
            return "sha-ni";
        }
    }
    "portable"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_digests() {
        assert_eq!(
            hex(&digest(b"")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            hex(&digest(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(digest_parts([&b"a"[..], b"bc"]), digest(b"abc"));
    }
}
