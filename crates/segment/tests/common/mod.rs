//! Shared by the segment test targets: reading the vendored corpus and
//! writing a sealed segment of given events.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use segment::{Event, Writer, WriterOptions};

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

/// Writes `events` as one sealed segment at `path`, `block_events` to a
/// block, appended live (`sync`: fsync each block as it is flushed).
pub fn write_sealed(path: &Path, events: &[Event], block_events: usize, sync: bool) {
    let mut w = Writer::create(path, WriterOptions { block_events, sync }).unwrap();
    for e in events {
        w.append_live(&e.as_ref()).unwrap();
    }
    w.seal().unwrap();
}
