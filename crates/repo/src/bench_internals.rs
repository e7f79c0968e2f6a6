//! The narrow facade the central `benches` crate measures below the public
//! API. Not a stable interface.

use crate::firehose::{CommitEvent, CommitVerifier, VerifyError};

/// Runs every check of [`verify_commit`](crate::firehose::verify_commit)
/// except the ECDSA verification (CAR parse and block hashes, commit decode,
/// unsigned-commit digest, op checks and MST inversion). Returns the digest
/// the signature would be checked against, so a bench can time the ECDSA
/// step alone with [`PublicKey::verify_digest`](crate::crypto::PublicKey::verify_digest).
pub fn verify_commit_without_signature(ev: &CommitEvent<'_>) -> Result<[u8; 32], VerifyError> {
    crate::firehose::verify::verify_parts(ev, None)
}

/// [`verify_commit_without_signature`] on a reused [`CommitVerifier`] (what
/// a firehose consumer verifying event after event runs).
pub fn verify_commit_without_signature_with(
    verifier: &mut CommitVerifier,
    ev: &CommitEvent<'_>,
) -> Result<[u8; 32], VerifyError> {
    verifier.verify_parts(ev, None)
}

/// The MST benches' keys: `n` or fewer distinct `app.bsky.feed.post/<TID>`
/// keys from an xorshift stream seeded with `seed`, sorted (shared by
/// `--bench repo` and the `profile_hot` example so both add the same keys).
pub fn mst_keys(seed: u64, n: usize) -> Vec<String> {
    let mut x = seed | 1;
    let mut out: Vec<String> = (0..n)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let ts = 1_600_000_000_000_000 + x % 200_000_000_000_000;
            format!(
                "app.bsky.feed.post/{}",
                crate::syntax::Tid::from_parts(ts, (i % 1024) as u16)
            )
        })
        .collect();
    out.sort();
    out.dedup();
    out
}
