//! DID, handle, NSID, record key and at-identifier validators.

use super::SyntaxError;

/// Checks DID syntax: `did:` + lowercase method + `:` + identifier of
/// `[a-zA-Z0-9._:%-]` not ending in `:` or `%`; at most 2048 characters.
pub fn validate_did(s: &str) -> Result<(), SyntaxError> {
    const W: &str = "DID";
    let b = s.as_bytes();
    if b.len() > 2048 {
        return Err(SyntaxError::new(W, "longer than 2048 characters"));
    }
    if !b.starts_with(b"did:") {
        return Err(SyntaxError::new(W, "must start with \"did:\""));
    }
    let mut i = 4;
    while i < b.len() && b[i].is_ascii_lowercase() {
        i += 1;
    }
    if i == 4 {
        return Err(SyntaxError::at(W, "method must be lowercase letters", 4));
    }
    if b.get(i) != Some(&b':') {
        return Err(SyntaxError::at(
            W,
            "method must be lowercase letters then ':'",
            i,
        ));
    }
    let id_start = i + 1;
    if id_start == b.len() {
        return Err(SyntaxError::new(W, "empty method-specific identifier"));
    }
    for (j, &c) in b.iter().enumerate().skip(id_start) {
        if !(c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b':' | b'%' | b'-')) {
            return Err(SyntaxError::at(W, "character not allowed", j));
        }
    }
    if matches!(b[b.len() - 1], b':' | b'%') {
        return Err(SyntaxError::at(
            W,
            "must not end with ':' or '%'",
            b.len() - 1,
        ));
    }
    Ok(())
}

/// Checks handle syntax: a DNS name of at least two labels, labels 1–63
/// characters of `[a-zA-Z0-9-]` not starting or ending with `-`, the last
/// label starting with a letter; at most 253 characters.
pub fn validate_handle(s: &str) -> Result<(), SyntaxError> {
    const W: &str = "handle";
    let b = s.as_bytes();
    if b.len() > 253 {
        return Err(SyntaxError::new(W, "longer than 253 characters"));
    }
    let mut labels = 0;
    let mut start = 0;
    for label in s.split('.') {
        check_domain_label(W, label, start)?;
        labels += 1;
        start += label.len() + 1;
    }
    if labels < 2 {
        return Err(SyntaxError::new(W, "needs at least two labels"));
    }
    let tld_start = s.rfind('.').map_or(0, |p| p + 1);
    if !b[tld_start].is_ascii_alphabetic() {
        return Err(SyntaxError::at(
            W,
            "top-level label must start with a letter",
            tld_start,
        ));
    }
    Ok(())
}

fn check_domain_label(w: &'static str, label: &str, offset: usize) -> Result<(), SyntaxError> {
    let b = label.as_bytes();
    if b.is_empty() {
        return Err(SyntaxError::at(w, "empty label", offset));
    }
    if b.len() > 63 {
        return Err(SyntaxError::at(
            w,
            "label longer than 63 characters",
            offset,
        ));
    }
    for (i, &c) in b.iter().enumerate() {
        if !(c.is_ascii_alphanumeric() || c == b'-') {
            return Err(SyntaxError::at(w, "character not allowed", offset + i));
        }
    }
    if b[0] == b'-' {
        return Err(SyntaxError::at(w, "label starts with '-'", offset));
    }
    if b[b.len() - 1] == b'-' {
        return Err(SyntaxError::at(
            w,
            "label ends with '-'",
            offset + b.len() - 1,
        ));
    }
    Ok(())
}

/// Checks NSID syntax: reversed domain authority (first segment starts
/// with a letter) plus a name segment `[a-zA-Z][a-zA-Z0-9]*`; at least three
/// segments of at most 63 characters; at most 317 characters.
pub fn validate_nsid(s: &str) -> Result<(), SyntaxError> {
    const W: &str = "NSID";
    let b = s.as_bytes();
    if b.len() > 317 {
        return Err(SyntaxError::new(W, "longer than 317 characters"));
    }
    let name_start = match s.rfind('.') {
        Some(p) => p + 1,
        None => return Err(SyntaxError::new(W, "needs at least three segments")),
    };
    let mut segments = 0;
    let mut start = 0;
    for seg in s[..name_start - 1].split('.') {
        check_domain_label(W, seg, start)?;
        if segments == 0 && !seg.as_bytes()[0].is_ascii_alphabetic() {
            return Err(SyntaxError::at(
                W,
                "first segment must start with a letter",
                0,
            ));
        }
        segments += 1;
        start += seg.len() + 1;
    }
    if segments < 2 {
        return Err(SyntaxError::new(W, "needs at least three segments"));
    }
    let name = &b[name_start..];
    if name.is_empty() {
        return Err(SyntaxError::at(W, "empty name segment", name_start));
    }
    if name.len() > 63 {
        return Err(SyntaxError::at(
            W,
            "name longer than 63 characters",
            name_start,
        ));
    }
    if !name[0].is_ascii_alphabetic() {
        return Err(SyntaxError::at(
            W,
            "name must start with a letter",
            name_start,
        ));
    }
    if let Some(i) = name.iter().position(|c| !c.is_ascii_alphanumeric()) {
        return Err(SyntaxError::at(
            W,
            "name must be letters and digits",
            name_start + i,
        ));
    }
    Ok(())
}

/// Checks record key syntax: 1–512 characters of `[a-zA-Z0-9._:~-]`, not
/// `.` or `..`.
pub fn validate_record_key(s: &str) -> Result<(), SyntaxError> {
    const W: &str = "record key";
    let b = s.as_bytes();
    if b.is_empty() {
        return Err(SyntaxError::new(W, "empty"));
    }
    if b.len() > 512 {
        return Err(SyntaxError::new(W, "longer than 512 characters"));
    }
    if s == "." || s == ".." {
        return Err(SyntaxError::new(W, "'.' and '..' are not allowed"));
    }
    if let Some(i) = b.iter().position(|&c| !is_rkey_char(c)) {
        return Err(SyntaxError::at(W, "character not allowed", i));
    }
    Ok(())
}

#[inline]
pub(crate) fn is_rkey_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b':' | b'~' | b'-')
}

/// Checks an at-identifier: a DID or a handle.
pub fn validate_at_identifier(s: &str) -> Result<(), SyntaxError> {
    if s.starts_with("did:") {
        validate_did(s)
    } else {
        validate_handle(s)
    }
}
