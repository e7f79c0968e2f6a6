//! atproto syntax: DIDs, NSIDs, record keys, TIDs and AT-URIs; a TID that
//! parses encodes back to its text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use repo::syntax::{AtUri, Tid, validate_did, validate_nsid, validate_record_key};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = validate_did(text);
    let _ = validate_nsid(text);
    let _ = validate_record_key(text);
    let _ = AtUri::parse(text);
    if let Ok(tid) = Tid::parse(text) {
        assert_eq!(tid.to_string(), text, "a TID re-encodes differently");
    }
});
