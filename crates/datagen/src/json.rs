//! Tiny JSON text helpers for the generators: escaped strings and numbers
//! written from integers, so the output never depends on a float printer.

use std::fmt::Write as _;

/// Appends `s` as a JSON string literal (quoted, escaped per RFC 8259).
pub(crate) use codec::json_text::push_string as push_str;

/// Appends `"key":` (keys are trusted literals and need no escaping).
pub(crate) fn push_key(out: &mut String, key: &str) {
    out.push('"');
    out.push_str(key);
    out.push_str("\":");
}

/// Appends an integer.
pub(crate) fn push_int(out: &mut String, n: i64) {
    let _ = write!(out, "{n}");
}

/// Appends `units / 10^decimals` as a JSON number with exactly `decimals`
/// fraction digits (`decimals` >= 1), e.g. `(-1234, 3)` -> `-1.234`.
pub(crate) fn push_fixed(out: &mut String, units: i64, decimals: u32) {
    let scale = 10u64.pow(decimals);
    let abs = units.unsigned_abs();
    if units < 0 {
        out.push('-');
    }
    let _ = write!(
        out,
        "{}.{:0width$}",
        abs / scale,
        abs % scale,
        width = decimals as usize
    );
}

/// Appends `bytes` as lowercase hex, inside a JSON string.
pub(crate) fn push_hex(out: &mut String, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push('"');
    for b in bytes {
        out.push(HEX[usize::from(b >> 4)] as char);
        out.push(HEX[usize::from(b & 15)] as char);
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(f: impl FnOnce(&mut String)) -> String {
        let mut s = String::new();
        f(&mut s);
        s
    }

    #[test]
    fn strings_are_escaped_and_parse_back() {
        let raw = "a\"b\\c\nd\te\u{1}f café 🦀";
        let text = run(|o| push_str(o, raw));
        assert_eq!(text, "\"a\\\"b\\\\c\\nd\\te\\u0001f café 🦀\"");
        let back: String = serde_json::from_str(&text).unwrap();
        assert_eq!(back, raw);
    }

    #[test]
    fn fixed_decimals() {
        assert_eq!(run(|o| push_fixed(o, -1234, 3)), "-1.234");
        assert_eq!(run(|o| push_fixed(o, 5, 4)), "0.0005");
        assert_eq!(run(|o| push_fixed(o, -5, 2)), "-0.05");
        assert_eq!(run(|o| push_fixed(o, 0, 2)), "0.00");
        assert_eq!(run(|o| push_fixed(o, 1_000_000, 6)), "1.000000");
    }

    #[test]
    fn hex_and_ints() {
        assert_eq!(run(|o| push_hex(o, &[0x00, 0xab, 0x7f])), "\"00ab7f\"");
        assert_eq!(run(|o| push_int(o, -42)), "-42");
        assert_eq!(run(|o| push_key(o, "k")), "\"k\":");
    }
}
