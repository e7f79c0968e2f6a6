//! Shared helpers for the conformance tests: locating vendored vectors.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::PathBuf;

use repo::crypto::PublicKey;

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

/// The corpus relay frames: `frames.bin.zst` is zstd of `[u32 LE length][frame]`
/// repeated.
pub fn corpus_frames() -> Vec<Vec<u8>> {
    let raw = read_zst("corpus/frames.bin.zst");
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < raw.len() {
        let len = u32::from_le_bytes(raw[pos..pos + 4].try_into().unwrap()) as usize;
        out.push(raw[pos + 4..pos + 4 + len].to_vec());
        pos += 4 + len;
    }
    out
}

/// DID -> signing key, from the corpus's `did_docs.json.zst`.
pub fn corpus_did_keys() -> HashMap<String, PublicKey> {
    let docs: serde_json::Value = serde_json::from_slice(&read_zst("corpus/did_docs.json.zst"))
        .unwrap_or_else(|e| panic!("did_docs.json.zst: {e}"));
    docs.as_object()
        .unwrap_or_else(|| panic!("did_docs.json.zst is not a JSON object"))
        .iter()
        .map(|(did, doc)| {
            let key = PublicKey::from_did_document(doc).unwrap_or_else(|e| panic!("{did}: {e}"));
            (did.clone(), key)
        })
        .collect()
}
