//! Shared helpers for the conformance tests: locating vendored vectors.
#![allow(dead_code)]

use std::path::PathBuf;

/// Absolute path of a vendored test file under `tests/`.
pub fn path(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(rel)
}

/// Reads a vendored test file; fails the test naming the path when missing.
pub fn read(rel: &str) -> Vec<u8> {
    let p = path(rel);
    match std::fs::read(&p) {
        Ok(b) => b,
        Err(e) => panic!(
            "conformance vectors missing: cannot read {}: {e}",
            p.display()
        ),
    }
}

/// Reads a vendored text file.
pub fn read_string(rel: &str) -> String {
    let p = path(rel);
    String::from_utf8(read(rel)).unwrap_or_else(|e| panic!("{} is not UTF-8: {e}", p.display()))
}

/// Parses a vendored JSON file.
pub fn read_json(rel: &str) -> serde_json::Value {
    let p = path(rel);
    serde_json::from_slice(&read(rel))
        .unwrap_or_else(|e| panic!("{} is not JSON: {e}", p.display()))
}

/// Reads and zstd-decompresses a vendored file.
pub fn read_zst(rel: &str) -> Vec<u8> {
    let p = path(rel);
    zstd::decode_all(&read(rel)[..]).unwrap_or_else(|e| panic!("{} is not zstd: {e}", p.display()))
}

/// The value lines of a syntax vector file: comments (`#` first) and empty
/// lines dropped, nothing trimmed (whitespace is significant).
pub fn syntax_lines(rel: &str) -> Vec<String> {
    let lines: Vec<String> = read_string(rel)
        .split('\n')
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect();
    assert!(!lines.is_empty(), "{rel} has no vectors");
    lines
}
