//! getRecord / listRecords rendering: a record's DAG-CBOR bytes straight
//! to atproto JSON, without building a value tree.
//!
//! The streaming path (`Stream`) reads the bytes once, as strictly as the
//! repo crate's decoder (minimal heads, canonical key order, no duplicate
//! keys, depth limit, no trailing bytes), and writes JSON as it goes: text
//! that needs no escaping is copied whole after a word-at-a-time scan, CIDs
//! are base32-encoded straight into the output. Anything it does not render
//! itself (byte strings, and every malformed input) makes it give up and
//! the record is rendered by the reference path, `repo::cbor::decode` +
//! `write_json`, which also produces the typed error. The output is
//! byte-identical to the reference path (tested below and in
//! `tests/read_list.rs`).

use repo::Cid;
use repo::cbor::MAX_DEPTH;
use repo::cbor::Reader;
use repo::cbor::json::push_json_str;

use crate::error::{Result, StoreError};

/// `{"uri":..,"cid":..,"value":..}` as a new string. The whole record is
/// written as bytes into one buffer (text that needs no escaping is copied
/// without a per-string UTF-8 check) and checked as UTF-8 once, at the end.
pub(crate) fn render_record(
    did: &str,
    collection: &str,
    rkey: &str,
    cid: &Cid,
    bytes: &[u8],
) -> Result<String> {
    let mut out = Vec::with_capacity(bytes.len() * 2 + 160);
    out.extend_from_slice(b"{\"uri\":\"at://");
    out.extend_from_slice(did.as_bytes());
    out.push(b'/');
    out.extend_from_slice(collection.as_bytes());
    out.push(b'/');
    out.extend_from_slice(rkey.as_bytes());
    out.extend_from_slice(b"\",\"cid\":\"");
    out.extend_from_slice(&cid_chars(cid));
    out.extend_from_slice(b"\",\"value\":");
    let value_start = out.len();
    let mut st = Stream { buf: bytes, pos: 0 };
    let streamed = st.value(&mut out, 0).is_some() && st.pos == bytes.len();
    if !streamed {
        out.truncate(value_start);
    }
    // Only `&str` pieces, base32, and text that is plain ASCII or was
    // checked as UTF-8 (`push_text`) went in.
    let mut json = String::from_utf8(out)
        .map_err(|_| StoreError::Corrupt("rendered record JSON is not UTF-8".into()))?;
    if !streamed {
        reference_value(bytes, &mut json)?;
    }
    json.push('}');
    Ok(json)
}

/// Reference path for the value: byte strings, or input the strict
/// decoder rejects (its error is the answer).
fn reference_value(bytes: &[u8], out: &mut String) -> Result<()> {
    let value = repo::cbor::decode(bytes)?;
    repo::cbor::json::write_json(&value, out);
    Ok(())
}

/// A strict DAG-CBOR cursor for the streaming renderer. It accepts a subset
/// of what `repo::cbor::decode` accepts (minimal heads, UTF-8 text, keys
/// strictly in DAG-CBOR order, tag-42 links, ints in `i64`, no floats, no
/// byte strings) and renders it exactly as `write_json` would; anything else
/// makes it give up (`None`) and the reference path decides.
struct Stream<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Stream<'a> {
    /// One head (major type, argument), minimal encoding only; major type 7
    /// is left to the caller.
    #[inline]
    fn head(&mut self) -> Option<(u8, u64)> {
        let b = *self.buf.get(self.pos)?;
        let (major, ai) = (b >> 5, b & 0x1f);
        if major == 7 {
            return None;
        }
        let p = self.pos + 1;
        let (arg, len, min) = match ai {
            0..=23 => (u64::from(ai), 1, 0),
            24 => (u64::from(*self.buf.get(p)?), 2, 24),
            25 => (be_uint(self.buf.get(p..p + 2)?), 3, 0x100),
            26 => (be_uint(self.buf.get(p..p + 4)?), 5, 0x1_0000),
            27 => (be_uint(self.buf.get(p..p + 8)?), 9, 0x1_0000_0000),
            _ => return None,
        };
        if arg < min {
            return None;
        }
        self.pos += len;
        Some((major, arg))
    }

    #[inline]
    fn take(&mut self, len: u64) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(usize::try_from(len).ok()?)?;
        let s = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }

    fn remaining(&self) -> u64 {
        (self.buf.len() - self.pos) as u64
    }

    /// Renders one value.
    fn value(&mut self, out: &mut Vec<u8>, depth: usize) -> Option<()> {
        let b = *self.buf.get(self.pos)?;
        match b >> 5 {
            0 | 1 => {
                let mut r = Reader::new(self.buf.get(self.pos..)?);
                repo::cbor::json::push_int_bytes(r.read_int().ok()?, out);
                self.pos += r.position();
            }
            3 => {
                let (_, len) = self.head()?;
                push_text(self.take(len)?, out)?;
            }
            4 => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                let (_, n) = self.head()?;
                if n > self.remaining() {
                    return None;
                }
                out.push(b'[');
                for i in 0..n {
                    if i > 0 {
                        out.push(b',');
                    }
                    self.value(out, depth + 1)?;
                }
                out.push(b']');
            }
            5 => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                let (_, n) = self.head()?;
                if n.saturating_mul(2) > self.remaining() {
                    return None;
                }
                let mut prev: &[u8] = &[];
                out.push(b'{');
                for i in 0..n {
                    if i > 0 {
                        out.push(b',');
                    }
                    let (major, len) = self.head()?;
                    if major != 3 {
                        return None;
                    }
                    let key = self.take(len)?;
                    // DAG-CBOR key order: shorter first, then bytewise.
                    if i > 0 && (prev.len(), prev) >= (key.len(), key) {
                        return None;
                    }
                    prev = key;
                    push_text(key, out)?;
                    out.push(b':');
                    self.value(out, depth + 1)?;
                }
                out.push(b'}');
            }
            6 => {
                let mut r = Reader::new(self.buf.get(self.pos..)?);
                let c = r.read_link().ok()?;
                self.pos += r.position();
                out.extend_from_slice(b"{\"$link\":\"");
                out.extend_from_slice(&cid_chars(&c));
                out.extend_from_slice(b"\"}");
            }
            7 => {
                out.extend_from_slice(match b {
                    0xf4 => b"false",
                    0xf5 => b"true",
                    0xf6 => b"null",
                    _ => return None, // floats, undefined, simple values
                });
                self.pos += 1;
            }
            _ => return None, // byte strings
        }
        Some(())
    }
}

fn be_uint(s: &[u8]) -> u64 {
    s.iter().fold(0, |acc, &b| (acc << 8) | u64::from(b))
}

/// A CBOR text string as a JSON string literal. Text that is ASCII with
/// nothing to escape (nearly all keys and most values) is copied whole
/// after one word-at-a-time scan, unchecked as UTF-8 here (the caller
/// checks the finished value once); anything else is checked as UTF-8
/// (`None` when it is not) and goes through the repo crate's escaper, so
/// both give the reference path's bytes.
fn push_text(bytes: &[u8], out: &mut Vec<u8>) -> Option<()> {
    if plain_ascii(bytes) {
        out.reserve(bytes.len() + 2);
        out.push(b'"');
        out.extend_from_slice(bytes);
        out.push(b'"');
    } else {
        let s = std::str::from_utf8(bytes).ok()?;
        let mut escaped = String::with_capacity(bytes.len() + 8);
        push_json_str(s, &mut escaped);
        out.extend_from_slice(escaped.as_bytes());
    }
    Some(())
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// Whether `w` has a byte below 0x20, a `"` or a `\\`. The tests are the
/// classic exact "has a zero byte" / "has a byte less than n" (n <= 128)
/// word tricks, so there are no false negatives.
#[inline]
fn word_needs_escape(w: u64) -> bool {
    let has_zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let below_space = w.wrapping_sub(ONES * 0x20) & !w & HIGH;
    (below_space | has_zero(w ^ (ONES * u64::from(b'"'))) | has_zero(w ^ (ONES * u64::from(b'\\'))))
        != 0
}

/// Whether every byte of `s` is ASCII and needs no escaping in a JSON
/// string.
fn plain_ascii(s: &[u8]) -> bool {
    let clean = |w: u64| w & HIGH == 0 && !word_needs_escape(w);
    let mut chunks = s.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        if !clean(u64::from_le_bytes(w)) {
            return false;
        }
    }
    let rest = chunks.remainder();
    // Padding with a byte that never needs escaping.
    let mut w = [b'a'; 8];
    w[..rest.len()].copy_from_slice(rest);
    clean(u64::from_le_bytes(w))
}

const BASE32: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

/// Every 10-bit value as its two base32 symbols.
static BASE32_PAIRS: [[u8; 2]; 1024] = {
    let mut t = [[0u8; 2]; 1024];
    let mut i = 0;
    while i < 1024 {
        t[i] = [BASE32[i >> 5], BASE32[i & 31]];
        i += 1;
    }
    t
};

/// The CID's string form (`b` + lowercase unpadded base32 of its 36
/// bytes) as ASCII bytes, the same bytes as `Cid::push_str`.
fn cid_chars(cid: &Cid) -> [u8; Cid::STR_LEN] {
    let b = cid.to_bytes();
    let mut buf = [0u8; Cid::STR_LEN];
    buf[0] = b'b';
    for (c, dst) in b.chunks_exact(5).zip(buf[1..57].chunks_exact_mut(8)) {
        let v = c.iter().fold(0u64, |acc, &x| (acc << 8) | u64::from(x));
        for (k, pair) in dst.chunks_exact_mut(2).enumerate() {
            pair.copy_from_slice(&BASE32_PAIRS[((v >> (30 - 10 * k)) & 1023) as usize]);
        }
    }
    let last = b[35];
    buf[57] = BASE32[usize::from(last >> 3)];
    buf[58] = BASE32[usize::from((last & 7) << 2)];
    buf
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(bytes: &[u8]) -> String {
        let v = repo::cbor::decode(bytes).unwrap();
        let mut s = String::new();
        repo::cbor::json::write_json(&v, &mut s);
        s
    }

    fn streamed(bytes: &[u8]) -> String {
        let cid = Cid::for_dag_cbor(bytes);
        let full = render_record("did:plc:x", "a.b.c", "k", &cid, bytes).unwrap();
        let prefix = format!("{{\"uri\":\"at://did:plc:x/a.b.c/k\",\"cid\":\"{cid}\",\"value\":");
        assert!(full.starts_with(&prefix) && full.ends_with('}'), "{full}");
        full[prefix.len()..full.len() - 1].to_owned()
    }

    #[test]
    fn matches_reference_on_datagen_records() {
        for i in 0..3u64 {
            for rec in datagen::store::records(i, 300) {
                let v = repo::cbor::json::from_json_value(&rec.value).unwrap();
                let bytes = repo::cbor::to_vec(&v);
                assert_eq!(streamed(&bytes), reference(&bytes));
            }
        }
    }

    #[test]
    fn datagen_records_take_the_streaming_path() {
        let (mut total, mut streamed) = (0, 0);
        for rec in datagen::store::records(5, 300) {
            let v = repo::cbor::json::from_json_value(&rec.value).unwrap();
            let bytes = repo::cbor::to_vec(&v);
            let mut st = Stream {
                buf: &bytes,
                pos: 0,
            };
            let mut out = Vec::new();
            total += 1;
            if st.value(&mut out, 0).is_some() && st.pos == bytes.len() {
                streamed += 1;
                assert_eq!(String::from_utf8(out).unwrap(), reference(&bytes));
            }
        }
        // Only records holding byte strings fall back.
        assert!(streamed * 10 >= total * 9, "{streamed} of {total}");
    }

    #[test]
    fn escapes_bytes_ints_and_nesting_match_reference() {
        let json = serde_json::json!({
            "$type": "x.y.z",
            "text": "quote \" back \\ nl \n tab \t ctl \u{1} é 😀 and a long tail past sixteen bytes",
            "neg": -9_007_199_254_740_991i64,
            "zero": 0,
            "big": 9_007_199_254_740_991i64,
            "flags": [true, false, null],
            "blob": {"$bytes": "AAECAwQ"},
            "link": {"$link": "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm"},
            "deep": {"a": [{"b": [1, 2, {"c": "d"}]}]},
            "ints": [23, 24, 255, 256, 65535, 65536, 4294967295u64, 4294967296u64, -24, -25, -257],
            "keys": {"b": 1, "aa": 2, "ab": 3, "é": 4, "z\"q": 5}
        });
        let v = repo::cbor::json::from_json_value(&json).unwrap();
        let bytes = repo::cbor::to_vec(&v);
        assert_eq!(streamed(&bytes), reference(&bytes));
    }

    #[test]
    fn cid_chars_match_cid_display() {
        for i in 0..2000u32 {
            let cid = Cid::for_dag_cbor(&i.to_le_bytes());
            let mut theirs = String::new();
            cid.push_str(&mut theirs);
            assert_eq!(&cid_chars(&cid)[..], theirs.as_bytes());
        }
    }

    #[test]
    fn plain_ascii_is_exact() {
        let naive = |s: &[u8]| {
            s.iter()
                .all(|&b| b.is_ascii() && b >= 0x20 && b != b'"' && b != b'\\')
        };
        for len in 0..20 {
            for pos in 0..len {
                for b in 0..=255u8 {
                    let mut s = vec![b'x'; len];
                    s[pos] = b;
                    assert_eq!(plain_ascii(&s), naive(&s), "{s:?}");
                    s.iter_mut().for_each(|c| *c = 0xc3);
                    s[pos] = b;
                    assert_eq!(plain_ascii(&s), naive(&s), "{s:?}");
                }
            }
        }
    }

    #[test]
    fn malformed_input_gives_the_decoders_error() {
        let cid = Cid::for_dag_cbor(b"x");
        // A float, trailing bytes, unsorted keys, truncation.
        for bad in [
            &[0xa1, 0x61, 0x61, 0xfb, 0, 0, 0, 0, 0, 0, 0, 0][..],
            &[0xa0, 0x00][..],
            &[0xa2, 0x61, 0x62, 0x01, 0x61, 0x61, 0x02][..],
            &[0xa1, 0x61, 0x61][..],
            // Non-minimal int and length, duplicate key, non-text key,
            // tag 43, int past i64, bad UTF-8, indefinite list, undefined,
            // longer key first.
            &[0xa1, 0x61, 0x61, 0x18, 0x05][..],
            &[0xa1, 0x78, 0x01, 0x61, 0x01][..],
            &[0xa2, 0x61, 0x61, 0x01, 0x61, 0x61, 0x02][..],
            &[0xa1, 0x01, 0x01][..],
            &[0xa1, 0x61, 0x61, 0xd8, 0x2b, 0x40][..],
            &[
                0xa1, 0x61, 0x61, 0x1b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
            ][..],
            &[0xa1, 0x61, 0x61, 0x61, 0xff][..],
            &[0xa1, 0x61, 0x61, 0x9f, 0xff][..],
            &[0xa1, 0x61, 0x61, 0xf7][..],
            &[0xa2, 0x62, 0x61, 0x61, 0x01, 0x61, 0x62, 0x02][..],
        ] {
            let want = crate::StoreError::from(repo::cbor::decode(bad).unwrap_err());
            let got = render_record("did:plc:x", "a.b.c", "k", &cid, bad).unwrap_err();
            assert_eq!(got.to_string(), want.to_string(), "{bad:x?}");
        }
    }
}
