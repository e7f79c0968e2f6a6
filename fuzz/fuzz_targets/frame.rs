//! Firehose frames: decode any frame; a `#commit` goes through every
//! verification check but the signature (CAR blocks against their CIDs,
//! the commit, the inverted MST operations against `prevData`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use repo::firehose::Frame;

fuzz_target!(|data: &[u8]| {
    if let Ok(Frame::Commit(commit)) = Frame::decode(data) {
        let _ = repo::bench_internals::verify_commit_without_signature(&commit);
    }
});
