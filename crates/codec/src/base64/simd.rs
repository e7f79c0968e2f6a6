//! The fast base64 path: `base64-simd` (runtime-dispatched AVX2 / SSSE3 /
//! NEON, scalar fallback inside the crate), with the scalar oracle naming
//! the fault whenever the fast path rejects an input.

use super::{Base64Error, scalar};

const ENGINE: base64_simd::Base64 = base64_simd::STANDARD;

/// Appends the padded encoding of `input` to `out`.
#[inline]
pub fn encode_into(input: &[u8], out: &mut Vec<u8>) {
    ENGINE.encode_append(input, out);
}

/// Appends the bytes `text` decodes to onto `out`; on error `out` is left as
/// it was.
#[inline]
pub fn decode_into(text: &[u8], out: &mut Vec<u8>) -> Result<(), Base64Error> {
    let start = out.len();
    match ENGINE.decode_append(text, out) {
        Ok(()) => Ok(()),
        Err(_) => {
            out.truncate(start);
            reject(text, out)
        }
    }
}

/// The cold path: base64-simd's error carries no detail, so the oracle
/// decodes the same text to say what was wrong (or, should the two ever
/// disagree, to produce the oracle's answer).
#[cold]
fn reject(text: &[u8], out: &mut Vec<u8>) -> Result<(), Base64Error> {
    scalar::decode_into(text, out)
}

/// The padded encoding of `input`.
pub fn encode(input: &[u8]) -> String {
    ENGINE.encode_to_string(input)
}

/// The bytes `text` decodes to.
pub fn decode(text: &[u8]) -> Result<Vec<u8>, Base64Error> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    decode_into(text, &mut out)?;
    Ok(out)
}
