//! Shared by the segment test targets: reading the vendored corpus.

use std::path::PathBuf;

/// The bytes of `tests/corpus/<name>`; a missing file fails the test,
/// naming the path (conformance vectors never skip).
pub fn corpus(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "conformance file {} is missing ({e}); it is vendored from the jetstream-corpus fixtures",
            path.display()
        )
    })
}
