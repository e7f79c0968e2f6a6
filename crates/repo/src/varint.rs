//! Unsigned LEB128 varints, as used by multiformats (CID prefixes, multicodec
//! key prefixes) and by CAR section lengths.
//!
//! Choice where the multiformats spec leaves room: we accept at most 9 bytes
//! (63 bits, the multiformats "practical maximum") and reject non-minimal
//! encodings (a trailing `0x00` continuation group), so that one value has
//! exactly one byte form.

/// Why a varint could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum VarintError {
    /// The input ended inside the varint.
    #[error("varint truncated")]
    Truncated,
    /// More than 9 bytes, or a value past 2^63 - 1.
    #[error("varint too long")]
    Overflow,
    /// The last byte was 0x00 after a continuation byte (not minimal).
    #[error("varint not minimally encoded")]
    NotMinimal,
}

/// Reads one varint from the front of `buf`; returns the value and the
/// number of bytes it took.
#[inline]
pub fn read(buf: &[u8]) -> Result<(u64, usize), VarintError> {
    // Fast path: single byte.
    match buf.first() {
        None => return Err(VarintError::Truncated),
        Some(&b) if b < 0x80 => return Ok((u64::from(b), 1)),
        Some(_) => {}
    }
    let mut value: u64 = 0;
    for (i, &b) in buf.iter().enumerate() {
        if i >= 9 {
            return Err(VarintError::Overflow);
        }
        value |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            if b == 0 {
                return Err(VarintError::NotMinimal);
            }
            return Ok((value, i + 1));
        }
    }
    Err(VarintError::Truncated)
}

/// Appends the varint form of `value` to `out`.
#[inline]
pub fn write(mut value: u64, out: &mut Vec<u8>) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// The varint form of `value` in a fixed buffer, with its length.
#[inline]
pub fn encode(mut value: u64) -> ([u8; 10], usize) {
    let mut buf = [0u8; 10];
    let mut i = 0;
    while value >= 0x80 {
        buf[i] = (value as u8) | 0x80;
        value >>= 7;
        i += 1;
    }
    buf[i] = value as u8;
    (buf, i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for v in [
            0u64,
            1,
            0x7f,
            0x80,
            0x71,
            0xe7,
            0x1200,
            300,
            u32::MAX as u64,
            (1 << 63) - 1,
        ] {
            let mut out = Vec::new();
            write(v, &mut out);
            assert_eq!(read(&out), Ok((v, out.len())));
            let (buf, n) = encode(v);
            assert_eq!(&buf[..n], &out[..]);
        }
    }

    #[test]
    fn rejects_bad() {
        assert_eq!(read(&[]), Err(VarintError::Truncated));
        assert_eq!(read(&[0x80]), Err(VarintError::Truncated));
        assert_eq!(read(&[0x80, 0x00]), Err(VarintError::NotMinimal));
        assert_eq!(read(&[0xff; 12]), Err(VarintError::Overflow));
    }
}
