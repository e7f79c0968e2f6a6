//! JSON string literals written straight into a text buffer (RFC 8259
//! escaping: `"` and `\`, the short escapes for `\n` `\r` `\t`, `\u00XX`
//! for the other control characters, everything else as is). Shared by the
//! crates that write JSON text without a value tree (datagen's generators,
//! the appview's REST answers).

use std::fmt::Write as _;

/// Appends `s` as a quoted, escaped JSON string.
pub fn push_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::push_string;

    #[test]
    fn escapes_what_rfc_8259_requires() {
        let s = "a\"b\\c\nd\re\tf\u{1}g\u{1f}h\u{7f}é😀";
        let mut out = String::new();
        push_string(&mut out, s);
        assert_eq!(out, "\"a\\\"b\\\\c\\nd\\re\\tf\\u0001g\\u001fh\u{7f}é😀\"");
    }
}
