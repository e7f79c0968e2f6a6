//! The strict, zero-copy CBOR item reader every decoder in the crate uses.

use super::{DecodeError, DecodeErrorKind as K, MAX_DEPTH, key_cmp};
use crate::cid::Cid;

/// `bytes` as UTF-8. Record text is nearly all ASCII: [`is_ascii`] ORs
/// eight bytes at a time and costs a fraction of a full validation on
/// short strings; anything else goes through `std::str::from_utf8`.
#[inline(always)]
fn utf8(bytes: &[u8]) -> Result<&str, std::str::Utf8Error> {
    if is_ascii(bytes) {
        // SAFETY: every byte is below 0x80, and ASCII is valid UTF-8.
        Ok(unsafe { std::str::from_utf8_unchecked(bytes) })
    } else {
        std::str::from_utf8(bytes)
    }
}

/// Whether every byte is below 0x80: the bytes ORed together a word at a
/// time (the last word overlapping the one before it; under eight bytes,
/// two overlapping halves or the bytes one by one), no alignment
/// prologue and no early exit, which suits the short strings of a record
/// better than `<[u8]>::is_ascii`.
#[inline(always)]
fn is_ascii(bytes: &[u8]) -> bool {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let word = |at: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&bytes[at..at + 8]);
        u64::from_ne_bytes(w)
    };
    let n = bytes.len();
    if n < 8 {
        if n >= 4 {
            // Two overlapping four-byte reads.
            let half = |at: usize| {
                let mut w = [0u8; 4];
                w.copy_from_slice(&bytes[at..at + 4]);
                u32::from_ne_bytes(w)
            };
            return (half(0) | half(n - 4)) & 0x8080_8080 == 0;
        }
        return bytes.iter().fold(0u8, |acc, &b| acc | b) < 0x80;
    }
    let mut acc = word(n - 8);
    let mut at = 0;
    while at + 8 < n {
        acc |= word(at);
        at += 8;
    }
    acc & HIGH == 0
}

/// The data-model type of the next item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool,
    /// An integer (either sign).
    Int,
    /// A byte string.
    Bytes,
    /// A text string.
    Text,
    /// A list.
    List,
    /// A map.
    Map,
    /// A tag-42 CID link.
    Link,
}

impl Type {
    /// A short name for error messages.
    pub fn name(self) -> &'static str {
        match self {
            Type::Null => "null",
            Type::Bool => "bool",
            Type::Int => "integer",
            Type::Bytes => "bytes",
            Type::Text => "text",
            Type::List => "list",
            Type::Map => "map",
            Type::Link => "link",
        }
    }
}

/// A cursor over a DAG-CBOR buffer. Every read is strict (see the module
/// docs) and errors carry the offset of the failing item.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `buf`.
    #[inline]
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// Current byte offset.
    #[inline]
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes not yet read.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The unread rest of the buffer.
    #[inline]
    pub fn rest(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }

    /// Skips `n` bytes a caller has already parsed out of [`rest`](Self::rest)
    /// (clamped to the end).
    #[inline]
    pub(crate) fn advance(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.buf.len());
    }

    /// Errors unless every byte has been read.
    #[inline]
    pub fn finish(&self) -> Result<(), DecodeError> {
        if self.pos == self.buf.len() {
            Ok(())
        } else {
            Err(self.err(self.pos, K::TrailingBytes(self.remaining())))
        }
    }

    #[cold]
    #[inline(never)]
    pub(crate) fn err(&self, pos: usize, kind: K) -> DecodeError {
        DecodeError { pos, kind }
    }

    #[inline]
    fn byte_at(&self, i: usize) -> Result<u8, DecodeError> {
        match self.buf.get(i) {
            Some(&b) => Ok(b),
            None => Err(self.err(i, K::UnexpectedEof)),
        }
    }

    /// Reads one head; returns (major type, argument). For major type 7 the
    /// argument is 20, 21 or 22 (false, true, null); everything else in major
    /// type 7 is rejected here.
    #[inline]
    pub(crate) fn head(&mut self) -> Result<(u8, u64), DecodeError> {
        let start = self.pos;
        let b = self.byte_at(start)?;
        let major = b >> 5;
        let ai = b & 0x1f;
        if ai < 24 {
            if major == 7 && !(20..=22).contains(&ai) {
                return Err(self.err(
                    start,
                    if ai == 23 {
                        K::Simple(23)
                    } else {
                        K::Simple(ai)
                    },
                ));
            }
            self.pos = start + 1;
            return Ok((major, u64::from(ai)));
        }
        if major == 7 {
            return Err(self.err(
                start,
                match ai {
                    24 => K::Simple(self.byte_at(start + 1).unwrap_or(24)),
                    25..=27 => K::Float,
                    31 => K::UnexpectedBreak,
                    other => K::Reserved(other),
                },
            ));
        }
        let (arg, len, min) = match ai {
            24 => (u64::from(self.byte_at(start + 1)?), 2, 24u64),
            25 => {
                let s = self.slice_at(start + 1, 2)?;
                (u64::from(u16::from_be_bytes([s[0], s[1]])), 3, 0x100)
            }
            26 => {
                let s = self.slice_at(start + 1, 4)?;
                (
                    u64::from(u32::from_be_bytes([s[0], s[1], s[2], s[3]])),
                    5,
                    0x1_0000,
                )
            }
            27 => {
                let s = self.slice_at(start + 1, 8)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(s);
                (u64::from_be_bytes(a), 9, 0x1_0000_0000)
            }
            31 => return Err(self.err(start, K::Indefinite)),
            other => return Err(self.err(start, K::Reserved(other))),
        };
        if arg < min {
            return Err(self.err(start, K::NonMinimal));
        }
        self.pos = start + len;
        Ok((major, arg))
    }

    #[inline]
    fn slice_at(&self, at: usize, len: usize) -> Result<&'a [u8], DecodeError> {
        match self.buf.get(at..at + len) {
            Some(s) => Ok(s),
            None => Err(self.err(self.buf.len(), K::UnexpectedEof)),
        }
    }

    /// Takes `len` bytes after a head that started at `start`.
    #[inline]
    pub(crate) fn take(&mut self, len: u64, start: usize) -> Result<&'a [u8], DecodeError> {
        if len > self.remaining() as u64 {
            return Err(self.err(start, K::LengthPastEnd(len)));
        }
        let len = len as usize;
        let s = &self.buf[self.pos..self.pos + len];
        self.pos += len;
        Ok(s)
    }

    #[inline]
    pub(crate) fn take_str(&mut self, len: u64, start: usize) -> Result<&'a str, DecodeError> {
        let content = self.pos;
        let bytes = self.take(len, start)?;
        match utf8(bytes) {
            Ok(s) => Ok(s),
            Err(e) => Err(self.err(content + e.valid_up_to(), K::Utf8)),
        }
    }

    /// Fast path for the commonest item of a record, a text string under
    /// 256 bytes (head `0x60..=0x78`) that lies wholly inside the input:
    /// `None` (nothing consumed) for anything else, which the general path
    /// then reads and reports exactly as before.
    #[inline(always)]
    pub(crate) fn short_text(&mut self) -> Option<Result<&'a str, DecodeError>> {
        let start = self.pos;
        let (len, at) = match *self.buf.get(start)? {
            b @ 0x60..=0x77 => (usize::from(b - 0x60), start + 1),
            0x78 => match *self.buf.get(start + 1)? {
                n if n >= 24 => (usize::from(n), start + 2),
                _ => return None,
            },
            _ => return None,
        };
        let bytes = self.buf.get(at..at + len)?;
        self.pos = at + len;
        Some(match utf8(bytes) {
            Ok(s) => Ok(s),
            Err(e) => Err(self.err(at + e.valid_up_to(), K::Utf8)),
        })
    }

    /// Checks a container length against the remaining input (every element
    /// takes at least `min_item` bytes), so callers can preallocate safely.
    #[inline]
    pub(crate) fn container_len(
        &self,
        n: u64,
        min_item: u64,
        start: usize,
    ) -> Result<usize, DecodeError> {
        if n.saturating_mul(min_item) > self.remaining() as u64 {
            return Err(self.err(start, K::LengthPastEnd(n)));
        }
        Ok(n as usize)
    }

    /// Consumes `token` if the input continues with exactly these bytes
    /// (fast path for fixed keys of known shapes).
    #[inline]
    pub fn eat(&mut self, token: &[u8]) -> bool {
        if self.buf[self.pos..].starts_with(token) {
            self.pos += token.len();
            true
        } else {
            false
        }
    }

    /// Reads the CID inside tag 42 (the tag head already consumed).
    #[inline]
    pub(crate) fn link_body(&mut self, start: usize) -> Result<Cid, DecodeError> {
        // Fast path: bytes(37) 0x00 0x01 codec 0x12 0x20 digest.
        if let Some(b) = self.buf.get(self.pos..self.pos + 39)
            && b[..4] == [0x58, 0x25, 0x00, 0x01]
            && b[5..7] == [0x12, 0x20]
            && (b[4] == 0x71 || b[4] == 0x55)
        {
            let codec = if b[4] == 0x71 {
                crate::cid::Codec::DagCbor
            } else {
                crate::cid::Codec::Raw
            };
            let mut digest = [0u8; 32];
            digest.copy_from_slice(&b[7..39]);
            self.pos += 39;
            return Ok(Cid::new(codec, digest));
        }
        let inner = self.pos;
        let (major, len) = self.head()?;
        if major != 2 {
            return Err(self.err(inner, K::LinkNotBytes));
        }
        let bytes = self.take(len, inner)?;
        match bytes.split_first() {
            Some((0, cid)) => Cid::from_bytes(cid).map_err(|e| self.err(start, K::Link(e))),
            _ => Err(self.err(start, K::LinkPrefix)),
        }
    }

    /// Converts integer heads to i64.
    #[inline]
    pub(crate) fn int_from(&self, major: u8, arg: u64, start: usize) -> Result<i64, DecodeError> {
        if arg > i64::MAX as u64 {
            return Err(self.err(start, K::IntRange));
        }
        Ok(if major == 0 {
            arg as i64
        } else {
            -1 - arg as i64
        })
    }

    /// The type of the next item, without consuming it.
    pub fn peek_type(&self) -> Result<Type, DecodeError> {
        let b = self.byte_at(self.pos)?;
        Ok(match b >> 5 {
            0 | 1 => Type::Int,
            2 => Type::Bytes,
            3 => Type::Text,
            4 => Type::List,
            5 => Type::Map,
            6 => Type::Link,
            _ => match b & 0x1f {
                20 | 21 => Type::Bool,
                _ => Type::Null,
            },
        })
    }

    #[cold]
    fn unexpected(&self, start: usize, expected: &'static str) -> DecodeError {
        let found = self
            .clone_at(start)
            .peek_type()
            .map(Type::name)
            .unwrap_or("end");
        self.err(start, K::Unexpected { expected, found })
    }

    fn clone_at(&self, pos: usize) -> Reader<'a> {
        Reader { buf: self.buf, pos }
    }

    /// Reads an integer.
    #[inline]
    pub fn read_int(&mut self) -> Result<i64, DecodeError> {
        let start = self.pos;
        let (major, arg) = self.head()?;
        if major > 1 {
            self.pos = start;
            return Err(self.unexpected(start, "integer"));
        }
        self.int_from(major, arg, start)
    }

    /// Reads a bool.
    #[inline]
    pub fn read_bool(&mut self) -> Result<bool, DecodeError> {
        match self.buf.get(self.pos) {
            Some(0xf4) => {
                self.pos += 1;
                Ok(false)
            }
            Some(0xf5) => {
                self.pos += 1;
                Ok(true)
            }
            _ => Err(self.unexpected(self.pos, "bool")),
        }
    }

    /// Consumes a `null` if one is next; returns whether it did.
    #[inline]
    pub fn read_null(&mut self) -> bool {
        if self.buf.get(self.pos) == Some(&0xf6) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// Reads a text string (borrowed from the input).
    #[inline]
    pub fn read_text(&mut self) -> Result<&'a str, DecodeError> {
        let start = self.pos;
        let (major, len) = self.head()?;
        if major != 3 {
            self.pos = start;
            return Err(self.unexpected(start, "text"));
        }
        self.take_str(len, start)
    }

    /// Reads a byte string (borrowed from the input).
    #[inline]
    pub fn read_bytes(&mut self) -> Result<&'a [u8], DecodeError> {
        let start = self.pos;
        let (major, len) = self.head()?;
        if major != 2 {
            self.pos = start;
            return Err(self.unexpected(start, "bytes"));
        }
        self.take(len, start)
    }

    /// Reads a tag-42 CID link.
    #[inline]
    pub fn read_link(&mut self) -> Result<Cid, DecodeError> {
        let start = self.pos;
        let (major, tag) = self.head()?;
        if major != 6 {
            self.pos = start;
            return Err(self.unexpected(start, "link"));
        }
        if tag != 42 {
            return Err(self.err(start, K::Tag(tag)));
        }
        self.link_body(start)
    }

    /// Reads a link or `null`.
    #[inline]
    pub fn read_link_or_null(&mut self) -> Result<Option<Cid>, DecodeError> {
        if self.read_null() {
            Ok(None)
        } else {
            self.read_link().map(Some)
        }
    }

    /// Reads a list head; returns the element count (checked against the
    /// remaining input).
    #[inline]
    pub fn read_list_len(&mut self) -> Result<usize, DecodeError> {
        let start = self.pos;
        let (major, n) = self.head()?;
        if major != 4 {
            self.pos = start;
            return Err(self.unexpected(start, "list"));
        }
        self.container_len(n, 1, start)
    }

    /// Reads a map head; returns the entry count (checked against the
    /// remaining input).
    #[inline]
    pub fn read_map_len(&mut self) -> Result<usize, DecodeError> {
        let start = self.pos;
        let (major, n) = self.head()?;
        if major != 5 {
            self.pos = start;
            return Err(self.unexpected(start, "map"));
        }
        self.container_len(n, 2, start)
    }

    /// Reads a map key and checks it sorts strictly after `prev` (which it
    /// then updates).
    #[inline(always)]
    pub fn read_key(&mut self, prev: &mut Option<&'a str>) -> Result<&'a str, DecodeError> {
        let start = self.pos;
        let key = match self.short_text() {
            Some(key) => key?,
            None => {
                let (major, len) = self.head()?;
                if major != 3 {
                    return Err(self.err(start, K::NonTextKey));
                }
                self.take_str(len, start)?
            }
        };
        if let Some(p) = *prev
            // Canonical order is shorter first, so a longer key needs no
            // byte comparison.
            && (p.len() >= key.len() && key_cmp(p, key) != std::cmp::Ordering::Less)
        {
            return Err(self.key_order_err(start, p, key));
        }
        *prev = Some(key);
        Ok(key)
    }

    /// The error for `key` at `start` not sorting strictly after `prev`.
    #[cold]
    #[inline(never)]
    fn key_order_err(&self, start: usize, prev: &str, key: &str) -> DecodeError {
        let kind = if prev == key {
            K::DuplicateKey(key.to_owned())
        } else {
            K::UnsortedKey(key.to_owned())
        };
        self.err(start, kind)
    }

    /// Skips one complete item, checking it as strictly as a full decode.
    pub fn skip(&mut self) -> Result<(), DecodeError> {
        self.skip_at(0)
    }

    fn skip_at(&mut self, depth: usize) -> Result<(), DecodeError> {
        let start = self.pos;
        let (major, arg) = self.head()?;
        match major {
            0 | 1 => {
                self.int_from(major, arg, start)?;
            }
            2 => {
                self.take(arg, start)?;
            }
            3 => {
                self.take_str(arg, start)?;
            }
            4 => {
                if depth >= MAX_DEPTH {
                    return Err(self.err(start, K::TooDeep));
                }
                let n = self.container_len(arg, 1, start)?;
                for _ in 0..n {
                    self.skip_at(depth + 1)?;
                }
            }
            5 => {
                if depth >= MAX_DEPTH {
                    return Err(self.err(start, K::TooDeep));
                }
                let n = self.container_len(arg, 2, start)?;
                let mut prev = None;
                for _ in 0..n {
                    self.read_key(&mut prev)?;
                    self.skip_at(depth + 1)?;
                }
            }
            6 => {
                if arg != 42 {
                    return Err(self.err(start, K::Tag(arg)));
                }
                self.link_body(start)?;
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    /// The word-at-a-time ASCII check agrees with the standard library's
    /// at every length a short string can have, with one high byte at
    /// every position (and none).
    #[test]
    fn is_ascii_matches_std() {
        for n in 0..=40usize {
            let clean: Vec<u8> = (0..n).map(|i| b'a' + (i % 26) as u8).collect();
            assert!(super::is_ascii(&clean), "{n} ASCII bytes");
            for at in 0..n {
                for high in [0x80u8, 0xc3, 0xff] {
                    let mut b = clean.clone();
                    b[at] = high;
                    assert_eq!(
                        super::is_ascii(&b),
                        b.is_ascii(),
                        "{n} bytes, {high:#x} at {at}"
                    );
                }
            }
        }
    }
}
