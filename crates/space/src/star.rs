//! STAR v1 framing (DASL STAR draft; E4's getRepo body):
//!
//! ```text
//! 2a 6c 01 00 | varint(len) | meta | ( 01 | varint(klen) | key | varint(vlen) | value )* | 00
//! ```
//!
//! Varints are minimal unsigned LEB128; `meta` is a DRISL map with a text
//! `$type`. The writer streams (one entry at a time, nothing buffered);
//! the reader checks the framing, minimal varints and the space repo
//! profile's limits (meta ≤ 64 KiB, key ≤ 4 KiB, value ≤ 1 MiB).

use std::io::Write;

/// The four magic bytes (`*l`, version 1, flags 0).
pub const MAGIC: [u8; 4] = [0x2a, 0x6c, 0x01, 0x00];
/// The space repo profile's `$type`.
pub const REPO_STAR_TYPE: &str = "atproto-space-repo";
/// Largest meta.
pub const MAX_META: u64 = 64 << 10;
/// Largest key.
pub const MAX_KEY: u64 = 4 << 10;
/// Largest value.
pub const MAX_VALUE: u64 = 1 << 20;

/// A framing error, with the byte offset it was found at.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("STAR: {reason} at byte {pos}")]
pub struct StarError {
    /// Offset.
    pub pos: usize,
    /// What was wrong.
    pub reason: String,
}

/// A streaming STAR writer.
pub struct StarWriter<W: Write> {
    out: W,
}

impl<W: Write> StarWriter<W> {
    /// Writes the magic and the meta.
    pub fn new(mut out: W, meta: &[u8]) -> std::io::Result<Self> {
        out.write_all(&MAGIC)?;
        let (v, n) = repo::varint::encode(meta.len() as u64);
        out.write_all(&v[..n])?;
        out.write_all(meta)?;
        Ok(StarWriter { out })
    }

    /// Writes one entry.
    pub fn entry(&mut self, key: &[u8], value: &[u8]) -> std::io::Result<()> {
        self.out.write_all(&[0x01])?;
        let (v, n) = repo::varint::encode(key.len() as u64);
        self.out.write_all(&v[..n])?;
        self.out.write_all(key)?;
        let (v, n) = repo::varint::encode(value.len() as u64);
        self.out.write_all(&v[..n])?;
        self.out.write_all(value)
    }

    /// Writes the end marker.
    pub fn finish(mut self) -> std::io::Result<W> {
        self.out.write_all(&[0x00])?;
        Ok(self.out)
    }
}

/// A parsed archive, borrowing the input.
#[derive(Debug)]
pub struct Star<'a> {
    /// The meta's DRISL bytes.
    pub meta: &'a [u8],
    /// The entries, in archive order.
    pub entries: Vec<(&'a [u8], &'a [u8])>,
}

fn varint_at(buf: &[u8], pos: usize, max: u64, what: &str) -> Result<(usize, usize), StarError> {
    let rest = buf.get(pos..).unwrap_or_default();
    let (v, n) = repo::varint::read(rest).map_err(|e| StarError {
        pos,
        reason: format!("{what} length: {e}"),
    })?;
    if v > max {
        return Err(StarError {
            pos,
            reason: format!("{what} of {v} bytes (max {max})"),
        });
    }
    Ok((v as usize, pos + n))
}

fn take<'a>(
    buf: &'a [u8],
    pos: usize,
    len: usize,
    what: &str,
) -> Result<(&'a [u8], usize), StarError> {
    match pos.checked_add(len).and_then(|end| buf.get(pos..end)) {
        Some(s) => Ok((s, pos + len)),
        None => Err(StarError {
            pos,
            reason: format!("{what} runs past the end"),
        }),
    }
}

/// Parses a whole archive; its meta must be a DRISL map whose `$type` is
/// a text string.
pub fn parse(buf: &[u8]) -> Result<Star<'_>, StarError> {
    if buf.get(..4) != Some(&MAGIC[..]) {
        return Err(StarError {
            pos: 0,
            reason: "not a STAR v1 archive (magic)".into(),
        });
    }
    let (mlen, pos) = varint_at(buf, 4, MAX_META, "meta")?;
    let (meta, mut pos) = take(buf, pos, mlen, "meta")?;
    match repo::cbor::decode(meta) {
        Ok(repo::cbor::ValueRef::Map(m))
            if matches!(m.get("$type"), Some(repo::cbor::ValueRef::Text(_))) => {}
        Ok(_) => {
            return Err(StarError {
                pos: 4,
                reason: "meta is not a map with a text $type".into(),
            });
        }
        Err(e) => {
            return Err(StarError {
                pos: 4,
                reason: format!("meta: {e}"),
            });
        }
    }
    let mut entries = Vec::new();
    loop {
        match buf.get(pos) {
            Some(0x00) => {
                pos += 1;
                break;
            }
            Some(0x01) => {
                let (klen, p) = varint_at(buf, pos + 1, MAX_KEY, "key")?;
                let (key, p) = take(buf, p, klen, "key")?;
                let (vlen, p) = varint_at(buf, p, MAX_VALUE, "value")?;
                let (value, p) = take(buf, p, vlen, "value")?;
                entries.push((key, value));
                pos = p;
            }
            Some(b) => {
                return Err(StarError {
                    pos,
                    reason: format!("entry tag {b:#04x}"),
                });
            }
            None => {
                return Err(StarError {
                    pos,
                    reason: "no end marker".into(),
                });
            }
        }
    }
    if pos != buf.len() {
        return Err(StarError {
            pos,
            reason: format!("{} trailing bytes", buf.len() - pos),
        });
    }
    Ok(Star { meta, entries })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framing_bytes() {
        // meta {"$type": "x"}: a1 65 "$type" 61 "x" (9 bytes).
        let meta = [0xa1, 0x65, b'$', b't', b'y', b'p', b'e', 0x61, b'x'];
        let mut w = StarWriter::new(Vec::new(), &meta).unwrap();
        w.entry(b"k", b"vv").unwrap();
        let out = w.finish().unwrap();
        let mut want = vec![0x2a, 0x6c, 0x01, 0x00, 9];
        want.extend_from_slice(&meta);
        want.extend_from_slice(&[0x01, 1, b'k', 2, b'v', b'v', 0x00]);
        assert_eq!(out, want);
        let s = parse(&out).unwrap();
        assert_eq!(s.entries, vec![(&b"k"[..], &b"vv"[..])]);
        // Truncations and trailing bytes are refused, never a panic.
        for n in 0..out.len() {
            assert!(parse(&out[..n]).is_err(), "prefix {n}");
        }
        let mut extra = out.clone();
        extra.push(0);
        assert!(parse(&extra).is_err());
        // A non-minimal varint (0x89 0x00 for 9).
        let mut nm = vec![0x2a, 0x6c, 0x01, 0x00, 0x89, 0x00];
        nm.extend_from_slice(&meta);
        nm.push(0);
        assert!(parse(&nm).is_err());
    }
}
