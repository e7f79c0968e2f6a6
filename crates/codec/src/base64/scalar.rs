//! The scalar base64 oracle: a plain table-driven codec, one quantum at a
//! time, with every strictness rule of the parent module spelled out.

use super::{Base64Error, encoded_len};

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const INVALID: u8 = 0xff;
const PAD: u8 = b'=';

/// Symbol -> 6-bit value, `INVALID` for bytes outside the alphabet.
const DECODE: [u8; 256] = {
    let mut table = [INVALID; 256];
    let mut i = 0;
    while i < 64 {
        table[ALPHABET[i] as usize] = i as u8;
        i += 1;
    }
    table
};

/// Appends the padded encoding of `input` to `out`.
pub fn encode_into(input: &[u8], out: &mut Vec<u8>) {
    out.reserve(encoded_len(input.len()));
    let mut chunks = input.chunks_exact(3);
    for chunk in &mut chunks {
        let n = u32::from(chunk[0]) << 16 | u32::from(chunk[1]) << 8 | u32::from(chunk[2]);
        out.extend_from_slice(&[
            ALPHABET[(n >> 18) as usize & 63],
            ALPHABET[(n >> 12) as usize & 63],
            ALPHABET[(n >> 6) as usize & 63],
            ALPHABET[n as usize & 63],
        ]);
    }
    match *chunks.remainder() {
        [a] => {
            let n = u32::from(a) << 16;
            out.extend_from_slice(&[
                ALPHABET[(n >> 18) as usize & 63],
                ALPHABET[(n >> 12) as usize & 63],
                PAD,
                PAD,
            ]);
        }
        [a, b] => {
            let n = u32::from(a) << 16 | u32::from(b) << 8;
            out.extend_from_slice(&[
                ALPHABET[(n >> 18) as usize & 63],
                ALPHABET[(n >> 12) as usize & 63],
                ALPHABET[(n >> 6) as usize & 63],
                PAD,
            ]);
        }
        _ => {}
    }
}

/// The padded encoding of `input`.
pub fn encode(input: &[u8]) -> String {
    let mut out = Vec::with_capacity(encoded_len(input.len()));
    encode_into(input, &mut out);
    String::from_utf8(out).unwrap_or_default()
}

/// Value of the symbol at `offset`, or the error naming it.
#[inline]
fn symbol(text: &[u8], offset: usize) -> Result<u32, Base64Error> {
    let byte = text[offset];
    match DECODE[byte as usize] {
        INVALID if byte == PAD => Err(Base64Error::InvalidPadding { offset }),
        INVALID => Err(Base64Error::InvalidByte { offset, byte }),
        value => Ok(u32::from(value)),
    }
}

/// Appends the bytes `text` decodes to onto `out`; on error `out` is left as
/// it was.
pub fn decode_into(text: &[u8], out: &mut Vec<u8>) -> Result<(), Base64Error> {
    let start = out.len();
    let result = decode_append(text, out);
    if result.is_err() {
        out.truncate(start);
    }
    result
}

fn decode_append(text: &[u8], out: &mut Vec<u8>) -> Result<(), Base64Error> {
    if !text.len().is_multiple_of(4) {
        return Err(Base64Error::InvalidLength { len: text.len() });
    }
    if text.is_empty() {
        return Ok(());
    }
    out.reserve(text.len() / 4 * 3);
    let last = text.len() - 4;
    let mut at = 0;
    while at < last {
        let n = symbol(text, at)? << 18
            | symbol(text, at + 1)? << 12
            | symbol(text, at + 2)? << 6
            | symbol(text, at + 3)?;
        out.extend_from_slice(&[(n >> 16) as u8, (n >> 8) as u8, n as u8]);
        at += 4;
    }
    decode_last_quantum(text, last, out)
}

/// The last quantum: `xxxx`, `xxx=` or `xx==`, with canonical trailing bits.
fn decode_last_quantum(text: &[u8], at: usize, out: &mut Vec<u8>) -> Result<(), Base64Error> {
    let a = symbol(text, at)?;
    let b = symbol(text, at + 1)?;
    match (text[at + 2], text[at + 3]) {
        (PAD, PAD) => {
            if b & 0x0f != 0 {
                return Err(Base64Error::NonCanonicalTrailingBits { offset: at + 1 });
            }
            out.push((a << 2 | b >> 4) as u8);
        }
        (PAD, _) => return Err(Base64Error::InvalidPadding { offset: at + 2 }),
        (_, PAD) => {
            let c = symbol(text, at + 2)?;
            if c & 0x03 != 0 {
                return Err(Base64Error::NonCanonicalTrailingBits { offset: at + 2 });
            }
            let n = a << 18 | b << 12 | c << 6;
            out.extend_from_slice(&[(n >> 16) as u8, (n >> 8) as u8]);
        }
        _ => {
            let n = a << 18 | b << 12 | symbol(text, at + 2)? << 6 | symbol(text, at + 3)?;
            out.extend_from_slice(&[(n >> 16) as u8, (n >> 8) as u8, n as u8]);
        }
    }
    Ok(())
}

/// The bytes `text` decodes to.
pub fn decode(text: &[u8]) -> Result<Vec<u8>, Base64Error> {
    let mut out = Vec::new();
    decode_into(text, &mut out)?;
    Ok(out)
}
