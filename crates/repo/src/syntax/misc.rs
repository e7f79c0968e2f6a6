//! Lexicon string formats beyond identifiers: CID syntax, BCP-47 language
//! tags, generic URIs.

use super::SyntaxError;

/// Checks the lexicon `cid` string format: 8–256 characters of
/// `[a-zA-Z0-9+=]` (any multibase), and not a CIDv0 (`Qm...`). This is
/// looser than [`Cid::parse_str`](crate::Cid::parse_str), which accepts only
/// the CIDs atproto data may contain.
pub fn validate_cid_syntax(s: &str) -> Result<(), SyntaxError> {
    const W: &str = "CID";
    if s.len() < 8 || s.len() > 256 {
        return Err(SyntaxError::new(W, "must be 8 to 256 characters"));
    }
    if let Some(i) = s
        .bytes()
        .position(|c| !(c.is_ascii_alphanumeric() || c == b'+' || c == b'='))
    {
        return Err(SyntaxError::at(W, "character not allowed", i));
    }
    if s.starts_with("Qm") {
        return Err(SyntaxError::new(W, "CIDv0 is not allowed"));
    }
    Ok(())
}

/// Checks BCP-47 language tag syntax (the atproto "naive" form): a primary
/// subtag of 2–3 lowercase letters or the singleton `i` or `x` (either
/// case), then `-`-separated subtags of 1–8 ASCII letters or digits.
pub fn validate_language_syntax(s: &str) -> Result<(), SyntaxError> {
    const W: &str = "language";
    if s.len() > 128 {
        return Err(SyntaxError::new(W, "longer than 128 characters"));
    }
    let mut parts = s.split('-');
    let primary = parts.next().unwrap_or_default().as_bytes();
    let primary_ok = matches!(primary, b"i" | b"I" | b"x" | b"X")
        || ((2..=3).contains(&primary.len()) && primary.iter().all(u8::is_ascii_lowercase));
    if !primary_ok {
        return Err(SyntaxError::at(W, "bad primary language subtag", 0));
    }
    let mut at = primary.len() + 1;
    for sub in parts {
        if sub.is_empty() || sub.len() > 8 {
            return Err(SyntaxError::at(W, "subtags must be 1 to 8 characters", at));
        }
        if let Some(i) = sub.bytes().position(|c| !c.is_ascii_alphanumeric()) {
            return Err(SyntaxError::at(W, "character not allowed", at + i));
        }
        at += sub.len() + 1;
    }
    Ok(())
}

/// Checks syntax plus RFC 5646 validity rules that need no registry: no
/// variant subtag and no extension singleton may repeat (case-insensitive).
/// Subtags after a private-use `x` are exempt.
pub fn validate_language(s: &str) -> Result<(), SyntaxError> {
    const W: &str = "language";
    validate_language_syntax(s)?;
    let mut parts = s.split('-');
    let primary = parts.next().unwrap_or_default();
    if primary.eq_ignore_ascii_case("x") || primary.eq_ignore_ascii_case("i") {
        return Ok(());
    }
    let mut variants: Vec<String> = Vec::new();
    let mut singletons: Vec<u8> = Vec::new();
    let mut in_extension = false;
    for sub in parts {
        let b = sub.as_bytes();
        if b.len() == 1 {
            let c = b[0].to_ascii_lowercase();
            if c == b'x' {
                break;
            }
            if singletons.contains(&c) {
                return Err(SyntaxError::new(W, "repeated extension singleton"));
            }
            singletons.push(c);
            in_extension = true;
        } else if !in_extension && (b.len() >= 5 || (b.len() == 4 && b[0].is_ascii_digit())) {
            let v = sub.to_ascii_lowercase();
            if variants.contains(&v) {
                return Err(SyntaxError::new(W, "repeated variant subtag"));
            }
            variants.push(v);
        }
    }
    Ok(())
}

/// Checks generic URI syntax: a lowercase scheme (letters, digits, `+`,
/// `.`, `-`, starting with a letter), `:`, then at least one visible ASCII
/// character and no whitespace; at most 8 KiB.
pub fn validate_uri(s: &str) -> Result<(), SyntaxError> {
    const W: &str = "URI";
    let b = s.as_bytes();
    if b.len() > 8 * 1024 {
        return Err(SyntaxError::new(W, "longer than 8 KiB"));
    }
    let colon = b
        .iter()
        .position(|&c| c == b':')
        .ok_or(SyntaxError::new(W, "missing scheme"))?;
    if colon == 0 || !b[0].is_ascii_lowercase() {
        return Err(SyntaxError::at(
            W,
            "scheme must start with a lowercase letter",
            0,
        ));
    }
    if let Some(i) = b[..colon].iter().position(|&c| {
        !(c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'+' | b'.' | b'-'))
    }) {
        return Err(SyntaxError::at(W, "character not allowed in scheme", i));
    }
    if colon + 1 == b.len() {
        return Err(SyntaxError::new(W, "nothing after the scheme"));
    }
    if let Some(i) = b[colon + 1..].iter().position(|&c| !c.is_ascii_graphic()) {
        return Err(SyntaxError::at(
            W,
            "whitespace or non-ASCII character",
            colon + 1 + i,
        ));
    }
    Ok(())
}
