//! JSON string literals written straight into a text buffer (RFC 8259
//! escaping: `"` and `\`, the short escapes for `\n` `\r` `\t`, `\u00XX`
//! for the other control characters, everything else as is). Shared by the
//! crates that write JSON text without a value tree (datagen's generators,
//! the appview's REST answers).

use std::fmt::Write as _;

/// Appends `s` as a quoted, escaped JSON string.
pub fn push_string(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    // The runs between bytes that need an escape are copied whole: every
    // such byte is ASCII, so each cut falls on a character boundary.
    let mut rest = s;
    while let Some(i) = rest
        .bytes()
        .position(|b| b == b'"' || b == b'\\' || b < 0x20)
    {
        let (run, tail) = rest.split_at(i);
        out.push_str(run);
        let Some(b) = tail.bytes().next() else { break };
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            b => {
                let _ = write!(out, "\\u{:04x}", b);
            }
        }
        rest = tail.get(1..).unwrap_or_default();
    }
    out.push_str(rest);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::push_string;

    /// The escaping, a character at a time (the definition the run-copying
    /// writer must match).
    fn one_char_at_a_time(s: &str) -> String {
        let mut out = String::from('"');
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                c => out.push(c),
            }
        }
        out.push('"');
        out
    }

    proptest! {
        #[test]
        fn equals_the_escaping_one_char_at_a_time(s in "\\PC*|[\\x00-\\x1f\"\\\\a-zé😀]{0,24}") {
            let mut out = String::from("x");
            push_string(&mut out, &s);
            prop_assert_eq!(&out[1..], one_char_at_a_time(&s));
        }
    }

    #[test]
    fn escapes_what_rfc_8259_requires() {
        let s = "a\"b\\c\nd\re\tf\u{1}g\u{1f}h\u{7f}é😀";
        let mut out = String::new();
        push_string(&mut out, s);
        assert_eq!(out, "\"a\\\"b\\\\c\\nd\\re\\tf\\u0001g\\u001fh\u{7f}é😀\"");
    }
}
