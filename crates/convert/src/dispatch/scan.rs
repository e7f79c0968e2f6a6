//! A strict single-pass JSON cursor for the dispatch fast paths.
//!
//! [`super::object`] reads the fields of an object line straight off the
//! text with this cursor, without building a DOM or running serde's
//! visitor machinery: keys are compared as borrowed slices, a string
//! without escapes is found with a block scan and borrowed from the line,
//! and the value of an unknown field is validated and skipped.
//!
//! # Strictness and the fallback
//!
//! The cursor accepts exactly RFC 8259 JSON as `serde_json` reads it
//! (whitespace is space, tab, CR and LF; no trailing commas; numbers with
//! no leading zeros; escapes `\" \\ \/ \b \f \n \r \t \uXXXX`; no raw
//! control characters inside strings), and it declines (returns `None`)
//! whenever it meets anything else: malformed JSON, a value of a type the
//! field does not take, an escaped lone surrogate, nesting deeper than
//! [`MAX_DEPTH`]. Declining is not an error: the caller then parses the
//! line again with its serde visitor, which is the reference and produces
//! the typed error (or, for the few inputs the cursor is stricter about
//! than it needs to be, the request). So a fast path built on the cursor
//! never decides an error itself, and every line it accepts is one the
//! visitor accepts with the same result; `scan_tests.rs` checks both
//! properties on generated and mutated lines.

use std::borrow::Cow;

/// Nesting the cursor follows inside a skipped value before it declines
/// (the serde visitor has no such limit for skipped values, so deeper
/// lines still parse, on the slow path).
pub(crate) const MAX_DEPTH: u32 = 64;

/// Whether `b` ends a plain run inside a JSON string: the closing quote,
/// an escape, or a control character (not allowed raw).
#[inline(always)]
fn stops_run(b: u8) -> bool {
    (b == b'"') | (b == b'\\') | (b < 0x20)
}

/// The index of the first byte at or after `from` that ends a plain run
/// ([`stops_run`]), or `bytes.len()`: 32-byte blocks with SSE2 (part of
/// the x86-64 baseline), the rest byte by byte.
#[cfg(target_arch = "x86_64")]
#[inline]
fn plain_run_end(bytes: &[u8], from: usize) -> usize {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };

    /// How far ahead of the scan the prefetch reaches.
    const PREFETCH_AHEAD: usize = 1024;

    /// Lanes of `v` that stop a run, as a 16-bit mask.
    #[inline(always)]
    fn stops(v: __m128i) -> u32 {
        // SAFETY: SSE2 is part of the x86-64 baseline, so every x86-64
        // target has these register-only intrinsics.
        unsafe {
            let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
            let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
            // v <= 0x1f (unsigned) exactly when min(v, 0x1f) == v.
            let control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);
            _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), control)) as u32
        }
    }

    let mut i = from;
    while let Some(block) = bytes.get(i..).and_then(<[u8]>::first_chunk::<32>) {
        let p = block.as_ptr();
        // Long strings (an inline payload) are read ahead of the scan
        // (`wrapping_add` keeps the address defined past the text's end;
        // a prefetch never faults).
        crate::value::prefetch(p.wrapping_add(PREFETCH_AHEAD));
        // SAFETY: `block` is 32 readable bytes; `_mm_loadu_si128` reads 16
        // bytes at any alignment, here at offsets 0 and 16 of it.
        let (lo, hi) = unsafe {
            (
                _mm_loadu_si128(p.cast::<__m128i>()),
                _mm_loadu_si128(p.add(16).cast::<__m128i>()),
            )
        };
        let mask = stops(lo) | stops(hi) << 16;
        if mask != 0 {
            return i + mask.trailing_zeros() as usize;
        }
        i += 32;
    }
    plain_run_end_bytewise(bytes, i)
}

/// [`plain_run_end`] off x86-64: whole blocks checked without an early
/// exit inside (so they vectorise where the target can), then the block
/// that stops, byte by byte.
#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn plain_run_end(bytes: &[u8], from: usize) -> usize {
    let mut i = from;
    while let Some(block) = bytes.get(i..).and_then(<[u8]>::first_chunk::<16>) {
        if block.iter().fold(false, |hit, &b| hit | stops_run(b)) {
            break;
        }
        i += 16;
    }
    plain_run_end_bytewise(bytes, i)
}

/// The first byte at or after `from` that stops a run, one at a time.
#[inline]
fn plain_run_end_bytewise(bytes: &[u8], from: usize) -> usize {
    let mut i = from;
    while let Some(&b) = bytes.get(i) {
        if stops_run(b) {
            return i;
        }
        i += 1;
    }
    i
}

/// The value of one hex digit.
#[inline]
fn hex(b: u8) -> Option<u16> {
    match b {
        b'0'..=b'9' => Some(u16::from(b - b'0')),
        b'a'..=b'f' => Some(u16::from(b - b'a' + 10)),
        b'A'..=b'F' => Some(u16::from(b - b'A' + 10)),
        _ => None,
    }
}

/// A read position in one JSON text.
pub(crate) struct Cursor<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `text`.
    pub(crate) fn new(text: &'a str) -> Self {
        Cursor { text, pos: 0 }
    }

    /// The text as bytes.
    #[inline(always)]
    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// Skips JSON whitespace.
    #[inline]
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes().get(self.pos) {
            self.pos += 1;
        }
    }

    /// The next byte that is not whitespace, consumed.
    #[inline]
    fn next_token(&mut self) -> Option<u8> {
        self.skip_ws();
        let b = *self.bytes().get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    /// Consumes `expected` (after whitespace), or declines.
    #[inline]
    pub(crate) fn expect(&mut self, expected: u8) -> Option<()> {
        (self.next_token()? == expected).then_some(())
    }

    /// Consumes `b` (after whitespace) when it comes next; `false` (and
    /// nothing consumed but whitespace) otherwise.
    #[inline]
    pub(crate) fn eat(&mut self, b: u8) -> bool {
        self.skip_ws();
        let hit = self.bytes().get(self.pos) == Some(&b);
        self.pos += usize::from(hit);
        hit
    }

    /// Consumes the literal `word` (`null`, `true`, `false`) when it comes
    /// next (after whitespace).
    #[inline]
    pub(crate) fn eat_literal(&mut self, word: &[u8]) -> bool {
        self.skip_ws();
        let hit = self.bytes().get(self.pos..self.pos + word.len()) == Some(word);
        if hit {
            self.pos += word.len();
        }
        hit
    }

    /// After a member of an array or object (after whitespace): `,`
    /// (another member follows: `true`) or the `close` that ends it
    /// (`false`); declines anything else.
    #[inline]
    pub(crate) fn more(&mut self, close: u8) -> Option<bool> {
        match self.next_token()? {
            b',' => Some(true),
            b if b == close => Some(false),
            _ => None,
        }
    }

    /// Whether only whitespace is left.
    pub(crate) fn at_end(&mut self) -> bool {
        self.skip_ws();
        self.pos == self.bytes().len()
    }

    /// A string value (after whitespace): borrowed from the text when it
    /// has no escapes, unescaped into a new `String` otherwise.
    pub(crate) fn string(&mut self) -> Option<Cow<'a, str>> {
        self.expect(b'"')?;
        let start = self.pos;
        let stop = plain_run_end(self.bytes(), start);
        match self.bytes().get(stop) {
            Some(b'"') => {
                self.pos = stop + 1;
                // Quotes are ASCII, so both ends are char boundaries.
                self.text.get(start..stop).map(Cow::Borrowed)
            }
            Some(b'\\') => {
                // One allocation: the escaped text is at least as long as
                // the string it spells.
                let mut out = String::with_capacity(self.escaped_end(stop)? - start);
                out.push_str(self.text.get(start..stop)?);
                self.pos = stop;
                self.escaped_tail(&mut out)?;
                Some(Cow::Owned(out))
            }
            // A raw control character, or the text ends inside the string.
            _ => None,
        }
    }

    /// The index of the closing quote of a string whose first escape is
    /// at `at`, escapes skipped unchecked (`escaped_tail` checks them);
    /// `None` when the text ends first or holds a raw control character.
    fn escaped_end(&self, mut at: usize) -> Option<usize> {
        loop {
            match self.bytes().get(at)? {
                b'"' => return Some(at),
                b'\\' => at = plain_run_end(self.bytes(), at + 2),
                _ => return None,
            }
        }
    }

    /// The rest of a string whose plain start is in `out`, the cursor on
    /// a backslash: escapes and plain runs up to the closing quote.
    fn escaped_tail(&mut self, out: &mut String) -> Option<()> {
        loop {
            self.pos += 1; // the backslash
            self.unescape(out)?;
            let start = self.pos;
            let stop = plain_run_end(self.bytes(), start);
            out.push_str(self.text.get(start..stop)?);
            self.pos = stop;
            match self.bytes().get(stop) {
                Some(b'"') => {
                    self.pos += 1;
                    return Some(());
                }
                Some(b'\\') => {}
                _ => return None,
            }
        }
    }

    /// One escape (the cursor after its backslash), appended to `out`.
    fn unescape(&mut self, out: &mut String) -> Option<()> {
        let b = *self.bytes().get(self.pos)?;
        self.pos += 1;
        let c = match b {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let unit = self.hex4()?;
                match unit {
                    0xD800..=0xDBFF => {
                        // A high surrogate must be followed by an escaped
                        // low one; anything else is declined.
                        if self.bytes().get(self.pos..self.pos + 2) != Some(b"\\u") {
                            return None;
                        }
                        self.pos += 2;
                        let low = self.hex4()?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return None;
                        }
                        let scalar = 0x1_0000
                            + ((u32::from(unit) - 0xD800) << 10)
                            + (u32::from(low) - 0xDC00);
                        char::from_u32(scalar)?
                    }
                    0xDC00..=0xDFFF => return None,
                    _ => char::from_u32(u32::from(unit))?,
                }
            }
            _ => return None,
        };
        out.push(c);
        Some(())
    }

    /// Four hex digits as a UTF-16 code unit.
    fn hex4(&mut self) -> Option<u16> {
        let digits = self.bytes().get(self.pos..self.pos + 4)?;
        let unit = digits
            .iter()
            .try_fold(0u16, |acc, &d| Some(acc << 4 | hex(d)?))?;
        self.pos += 4;
        Some(unit)
    }

    /// A number (after whitespace), validated against JSON's grammar and
    /// skipped.
    fn skip_number(&mut self) -> Option<()> {
        let b = self.bytes();
        let digits = |mut i: usize| {
            while let Some(b'0'..=b'9') = b.get(i) {
                i += 1;
            }
            i
        };
        let mut i = self.pos;
        if b.get(i) == Some(&b'-') {
            i += 1;
        }
        i = match b.get(i) {
            Some(b'0') => i + 1,
            Some(b'1'..=b'9') => digits(i + 1),
            _ => return None,
        };
        if b.get(i) == Some(&b'.') {
            let end = digits(i + 1);
            if end == i + 1 {
                return None;
            }
            i = end;
        }
        if let Some(b'e' | b'E') = b.get(i) {
            i += 1;
            if let Some(b'+' | b'-') = b.get(i) {
                i += 1;
            }
            let end = digits(i);
            if end == i {
                return None;
            }
            i = end;
        }
        self.pos = i;
        Some(())
    }

    /// Validates and skips any JSON value (after whitespace), following at
    /// most `depth` levels of arrays and objects.
    pub(crate) fn skip_value(&mut self, depth: u32) -> Option<()> {
        self.skip_ws();
        match *self.bytes().get(self.pos)? {
            b'"' => self.string().map(drop),
            b'-' | b'0'..=b'9' => self.skip_number(),
            b't' => self.eat_literal(b"true").then_some(()),
            b'f' => self.eat_literal(b"false").then_some(()),
            b'n' => self.eat_literal(b"null").then_some(()),
            open @ (b'[' | b'{') => {
                let depth = depth.checked_sub(1)?;
                let (close, keyed) = if open == b'{' {
                    (b'}', true)
                } else {
                    (b']', false)
                };
                self.pos += 1;
                let mut more = !self.eat(close);
                while more {
                    if keyed {
                        self.string()?;
                        self.expect(b':')?;
                    }
                    self.skip_value(depth)?;
                    more = self.more(close)?;
                }
                Some(())
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string(text: &str) -> Option<String> {
        let mut c = Cursor::new(text);
        let s = c.string()?;
        c.at_end().then(|| s.into_owned())
    }

    fn skips(text: &str) -> bool {
        let mut c = Cursor::new(text);
        c.skip_value(MAX_DEPTH).is_some() && c.at_end()
    }

    #[test]
    fn strings_agree_with_serde_json() {
        let long = format!("\"{}\"", "ab/c+=".repeat(40));
        let long_escaped = format!("\"{}\\n{}\"", "x".repeat(37), "é".repeat(20));
        for text in [
            r#""""#,
            r#""plain""#,
            r#"  "padded"  "#,
            r#""a\"b\\c\/d\be\ff\ng\rh\ti""#,
            r#""\u0041\u00e9\u65e5\ud83e\udd80""#,
            r#""café 日本語 🦀""#,
            long.as_str(),
            long_escaped.as_str(),
        ] {
            let expected: String = serde_json::from_str(text).unwrap();
            assert_eq!(string(text).as_deref(), Some(expected.as_str()), "{text}");
        }
        // Borrowed exactly when there is no escape.
        let mut c = Cursor::new(r#""no escapes here""#);
        assert!(matches!(c.string(), Some(Cow::Borrowed("no escapes here"))));
    }

    #[test]
    fn malformed_strings_are_declined() {
        for text in [
            "\"unterminated",
            "\"raw\ttab\"",
            "\"raw\u{1}\"",
            r#""bad \x escape""#,
            r#""short \u12""#,
            r#""bad hex \u12g4""#,
            r#""lone high \ud800""#,
            r#""high then text \ud800x""#,
            r#""high then high \ud800\ud800""#,
            r#""lone low \udc00""#,
            "\"ends in backslash\\",
            "plain",
            "",
        ] {
            assert_eq!(string(text), None, "{text}");
            assert!(serde_json::from_str::<String>(text).is_err(), "{text}");
        }
    }

    #[test]
    fn skipped_values_are_validated() {
        for good in [
            "0",
            "-0",
            "12.5e-3",
            "1E+9",
            "-7.25",
            "true",
            "false",
            "null",
            "[]",
            "[ 1 , [2, {}], \"x\" ]",
            "{}",
            r#"{"a": {"b": [null, "\u00e9"]}, "c": 1}"#,
        ] {
            assert!(skips(good), "{good}");
            assert!(serde_json::from_str::<serde::de::IgnoredAny>(good).is_ok());
        }
        for bad in [
            "01",
            "-",
            "1.",
            ".5",
            "1e",
            "+1",
            "tru",
            "nul",
            "[1,]",
            "[1 2]",
            "{\"a\"}",
            "{\"a\":}",
            "{\"a\":1,}",
            "{1:2}",
            "[",
            "{",
            "\"x",
            "NaN",
            "",
        ] {
            assert!(!skips(bad), "{bad}");
            assert!(serde_json::from_str::<serde::de::IgnoredAny>(bad).is_err());
        }
        let deep = format!("{}{}", "[".repeat(70), "]".repeat(70));
        assert!(!skips(&deep), "deeper than MAX_DEPTH is declined");
        let ok = format!("{}{}", "[".repeat(60), "]".repeat(60));
        assert!(skips(&ok));
    }

    #[test]
    fn run_end_finds_the_first_stop_at_every_offset() {
        for len in 0..70 {
            for stop in [b'"', b'\\', b'\n', 0u8] {
                for at in 0..=len {
                    let mut bytes = vec![b'a'; len];
                    if at < len {
                        bytes[at] = stop;
                    }
                    assert_eq!(plain_run_end(&bytes, 0), at.min(len));
                    if at > 0 {
                        assert_eq!(plain_run_end(&bytes, at - 1), at.min(len));
                    }
                }
            }
        }
        // Non-ASCII bytes do not stop a run.
        assert_eq!(plain_run_end("ééééééééééé\"".as_bytes(), 0), 22);
    }
}
