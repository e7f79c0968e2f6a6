//! Segments: the input as a file, opened unchecked and checked, with its
//! first blocks, blooms and collection index read and `events()`; and the
//! input as a single block frame. Memory stays within libFuzzer's
//! `-rss_limit_mb` whatever the header claims (the format's limits).
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use segment::Segment;

/// One scratch file per fuzzing process.
fn scratch() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = if std::path::Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        dir.join(format!("atbench-fuzz-segment-{}.jss", std::process::id()))
    })
}

fn exercise(seg: &Segment) {
    for i in 0..seg.block_count().min(8) {
        let _ = seg.decode_block(i);
        let _ = seg.block_bloom(i);
    }
    let _ = seg.did_bloom();
    let _ = seg.blocks_for_did("did:plc:a");
    let _ = seg.events();
}

fuzz_target!(|data: &[u8]| {
    let _ = segment::decode_block(data);
    let path = scratch();
    if std::fs::write(path, data).is_err() {
        return;
    }
    if let Ok(seg) = Segment::open_unchecked(path) {
        exercise(&seg);
    }
    if let Ok(seg) = Segment::open(path) {
        let _ = seg.collections();
        exercise(&seg);
    }
});
