//! Base64, standard alphabet (`A-Z a-z 0-9 + /`), padded with `=`.
//!
//! Decoding is strict: the length must be a multiple of four, padding may
//! only close the last quantum (`xx==` or `xxx=`), and the unused low bits of
//! the last symbol must be zero, so every byte string has exactly one
//! accepted encoding. Whitespace is not skipped.

pub mod scalar;
#[cfg(feature = "simd-codecs")]
pub mod simd;

/// Why a base64 text was rejected. Every decode path returns the same value
/// for the same input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Base64Error {
    /// The text is not made of whole four-symbol quanta.
    #[error("base64 length {len} is not a multiple of 4")]
    InvalidLength {
        /// Length of the rejected text in bytes.
        len: usize,
    },
    /// A byte outside the alphabet.
    #[error("invalid base64 byte 0x{byte:02x} at offset {offset}")]
    InvalidByte {
        /// Offset of the byte in the text.
        offset: usize,
        /// The byte itself.
        byte: u8,
    },
    /// `=` somewhere other than the end of the last quantum, or a last
    /// quantum padded with one `=` before a symbol.
    #[error("misplaced base64 padding at offset {offset}")]
    InvalidPadding {
        /// Offset of the offending byte.
        offset: usize,
    },
    /// The last symbol before the padding carries bits that decode to
    /// nothing; a canonical encoder writes them as zero.
    #[error("non-canonical trailing bits in the base64 symbol at offset {offset}")]
    NonCanonicalTrailingBits {
        /// Offset of the symbol with the stray bits.
        offset: usize,
    },
}

/// Length of the padded encoding of `raw_len` bytes.
pub const fn encoded_len(raw_len: usize) -> usize {
    raw_len.div_ceil(3) * 4
}

/// Appends the encoding of `input` to `out`, through the fastest path
/// compiled in.
pub fn encode_into(input: &[u8], out: &mut Vec<u8>) {
    #[cfg(feature = "simd-codecs")]
    simd::encode_into(input, out);
    #[cfg(not(feature = "simd-codecs"))]
    scalar::encode_into(input, out);
}

/// Appends the encoding of `input` to a `String`.
pub fn encode_into_string(input: &[u8], out: &mut String) {
    let mut bytes = std::mem::take(out).into_bytes();
    encode_into(input, &mut bytes);
    // Base64 output is ASCII; `from_utf8` cannot fail, but it is checked
    // rather than assumed so this stays free of `unsafe`.
    *out = String::from_utf8(bytes).unwrap_or_default();
}

/// The encoding of `input` as a new `String`.
pub fn encode(input: &[u8]) -> String {
    let mut out = String::with_capacity(encoded_len(input.len()));
    encode_into_string(input, &mut out);
    out
}

/// Appends the bytes `text` decodes to onto `out`; on error `out` is left as
/// it was.
pub fn decode_into(text: &[u8], out: &mut Vec<u8>) -> Result<(), Base64Error> {
    #[cfg(feature = "simd-codecs")]
    return simd::decode_into(text, out);
    #[cfg(not(feature = "simd-codecs"))]
    return scalar::decode_into(text, out);
}

/// The bytes `text` decodes to.
pub fn decode(text: &[u8]) -> Result<Vec<u8>, Base64Error> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    decode_into(text, &mut out)?;
    Ok(out)
}

/// Which base64 path `encode`/`decode` use in this build.
pub const fn backend() -> &'static str {
    if cfg!(feature = "simd-codecs") {
        "base64-simd"
    } else {
        "scalar"
    }
}

#[cfg(test)]
mod tests;
