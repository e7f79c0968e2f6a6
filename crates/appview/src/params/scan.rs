//! The one-pass reader of a parameters object: JSON text in, each value's
//! text in Prefect's form out ([`super`]), the bounds counted as it goes.
//! It reads the JSON grammar itself (RFC 8259) because the lexical form
//! decides a number's type: digits are a Python `int` of any size, kept
//! as written, while a fraction or exponent is a `float`.

use super::{
    MAX_BYTES, MAX_DEPTH, Params, ParamsError, push_float, push_object, push_string, string_len,
};

/// A read position in the text, and the bytes written so far.
pub(super) struct Scan<'a> {
    s: &'a [u8],
    i: usize,
    /// Bytes of the text written, counted against [`MAX_BYTES`] (a
    /// repeated key's earlier values included).
    pub(super) written: usize,
}

type Res<T> = Result<T, ParamsError>;

impl<'a> Scan<'a> {
    pub(super) fn new(s: &'a [u8]) -> Self {
        Scan {
            s,
            i: 0,
            written: 0,
        }
    }

    fn bad(&self, what: &str) -> ParamsError {
        ParamsError::Json(format!("{what} at byte {}", self.i))
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, b: u8) -> bool {
        let hit = self.peek() == Some(b);
        self.i += usize::from(hit);
        hit
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn spend(&mut self, n: usize) -> Res<()> {
        self.written = self.written.saturating_add(n);
        if self.written > MAX_BYTES {
            return Err(ParamsError::TooLarge);
        }
        Ok(())
    }

    /// The whole text: one object, nothing after it but whitespace.
    pub(super) fn document(&mut self) -> Res<Params> {
        self.ws();
        if self.peek() != Some(b'{') {
            return Err(self.bad("expected an object"));
        }
        let p = self.object(0)?;
        self.ws();
        if self.i != self.s.len() {
            return Err(self.bad("trailing characters"));
        }
        Ok(p)
    }

    /// An object at `{`: its entries in order, a repeated key at its first
    /// place with its last value (a Python dict's rule).
    fn object(&mut self, depth: usize) -> Res<Params> {
        self.i += 1;
        self.spend(2)?;
        let mut out: Params = Vec::new();
        self.ws();
        if self.eat(b'}') {
            return Ok(out);
        }
        let mut first = true;
        loop {
            self.ws();
            if self.peek() != Some(b'"') {
                return Err(self.bad("expected a key"));
            }
            let k = self.string()?;
            // The key, its colon, and the comma before it.
            self.spend(string_len(&k) + 1 + usize::from(!first))?;
            first = false;
            self.ws();
            if !self.eat(b':') {
                return Err(self.bad("expected ':'"));
            }
            self.ws();
            let mut v = String::new();
            self.value(depth + 1, &mut v)?;
            match out.iter_mut().find(|(old, _)| *old == k) {
                Some(slot) => slot.1 = v,
                None => out.push((k, v)),
            }
            self.ws();
            if self.eat(b'}') {
                return Ok(out);
            }
            if !self.eat(b',') {
                return Err(self.bad("expected ',' or '}'"));
            }
        }
    }

    /// One value, written as its text into `out`.
    fn value(&mut self, depth: usize, out: &mut String) -> Res<()> {
        match self.peek() {
            Some(b'{' | b'[') if depth >= MAX_DEPTH => Err(ParamsError::TooDeep),
            Some(b'{') => {
                let e = self.object(depth)?;
                push_object(out, e.iter().map(|(k, v)| (k.as_str(), v.as_str())));
                Ok(())
            }
            Some(b'[') => self.array(depth, out),
            Some(b'"') => {
                let s = self.string()?;
                self.spend(string_len(&s))?;
                push_string(out, &s);
                Ok(())
            }
            Some(b't') => self.word("true", out),
            Some(b'f') => self.word("false", out),
            Some(b'n') => self.word("null", out),
            Some(b'-' | b'0'..=b'9') => self.number(out),
            _ => Err(self.bad("expected a value")),
        }
    }

    fn array(&mut self, depth: usize, out: &mut String) -> Res<()> {
        self.i += 1;
        self.spend(2)?;
        out.push('[');
        self.ws();
        if !self.eat(b']') {
            loop {
                self.ws();
                self.value(depth + 1, out)?;
                self.ws();
                if self.eat(b']') {
                    break;
                }
                if !self.eat(b',') {
                    return Err(self.bad("expected ',' or ']'"));
                }
                self.spend(1)?;
                out.push(',');
            }
        }
        out.push(']');
        Ok(())
    }

    fn word(&mut self, w: &str, out: &mut String) -> Res<()> {
        if !self.s[self.i..].starts_with(w.as_bytes()) {
            return Err(self.bad("expected a value"));
        }
        self.i += w.len();
        self.spend(w.len())?;
        out.push_str(w);
        Ok(())
    }

    fn digits(&mut self) -> Res<()> {
        if !matches!(self.peek(), Some(b'0'..=b'9')) {
            return Err(self.bad("expected a digit"));
        }
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        Ok(())
    }

    /// A number: an integer kept as written (`-0` is Python's `0`), a
    /// fraction or exponent read as the nearest double and written as
    /// Python's repr.
    fn number(&mut self, out: &mut String) -> Res<()> {
        let start = self.i;
        self.eat(b'-');
        if !self.eat(b'0') {
            self.digits()?;
        }
        let mut float = false;
        if self.eat(b'.') {
            float = true;
            self.digits()?;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            float = true;
            self.i += 1;
            if !self.eat(b'+') {
                self.eat(b'-');
            }
            self.digits()?;
        }
        // ASCII digits and signs only.
        let text = std::str::from_utf8(&self.s[start..self.i]).map_err(|_| self.bad("number"))?;
        if float {
            let x: f64 = text.parse().map_err(|_| self.bad("number"))?;
            if !x.is_finite() {
                // As serde_json refuses it (Python would read `inf`).
                return Err(self.bad("number out of range"));
            }
            let mut s = String::new();
            push_float(&mut s, x);
            self.spend(s.len())?;
            out.push_str(&s);
        } else {
            let t = if text == "-0" { "0" } else { text };
            self.spend(t.len())?;
            out.push_str(t);
        }
        Ok(())
    }

    fn hex4(&mut self) -> Res<u32> {
        let h = self
            .s
            .get(self.i..self.i + 4)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| {
                u32::from_str_radix(h, 16)
                    .ok()
                    .filter(|_| !h.starts_with('+'))
            })
            .ok_or_else(|| self.bad("bad \\u escape"))?;
        self.i += 4;
        Ok(h)
    }

    /// A string at `"`, its escapes decoded.
    fn string(&mut self) -> Res<String> {
        self.i += 1;
        let mut out = String::new();
        loop {
            // A run of plain bytes ends at an ASCII byte, so on a
            // character boundary.
            let start = self.i;
            while matches!(self.peek(), Some(b) if b != b'"' && b != b'\\' && b >= 0x20) {
                self.i += 1;
            }
            let run =
                std::str::from_utf8(&self.s[start..self.i]).map_err(|_| self.bad("not UTF-8"))?;
            out.push_str(run);
            match self.peek() {
                Some(b'"') => {
                    self.i += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.i += 1;
                    let c = match self.peek() {
                        Some(b'u') => {
                            self.i += 1;
                            self.unicode()?
                        }
                        Some(e) => {
                            self.i += 1;
                            match e {
                                b'"' => '"',
                                b'\\' => '\\',
                                b'/' => '/',
                                b'b' => '\u{8}',
                                b'f' => '\u{c}',
                                b'n' => '\n',
                                b'r' => '\r',
                                b't' => '\t',
                                _ => return Err(self.bad("bad escape")),
                            }
                        }
                        None => return Err(self.bad("unterminated string")),
                    };
                    out.push(c);
                }
                Some(_) => return Err(self.bad("control character in a string")),
                None => return Err(self.bad("unterminated string")),
            }
        }
    }

    /// The character of a `\u` escape (after the `u`), a surrogate pair
    /// joined; a lone surrogate is refused, as serde_json refuses it.
    fn unicode(&mut self) -> Res<char> {
        let hi = self.hex4()?;
        let code = match hi {
            0xD800..=0xDBFF => {
                if !(self.eat(b'\\') && self.eat(b'u')) {
                    return Err(self.bad("lone surrogate"));
                }
                let lo = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&lo) {
                    return Err(self.bad("lone surrogate"));
                }
                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
            }
            0xDC00..=0xDFFF => return Err(self.bad("lone surrogate")),
            c => c,
        };
        char::from_u32(code).ok_or_else(|| self.bad("bad \\u escape"))
    }
}
