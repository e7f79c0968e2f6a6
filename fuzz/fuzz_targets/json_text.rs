//! The JSON text -> protobuf Struct parser; an accepted text written back
//! as JSON parses to the same Struct.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(parsed) = convert::struct_from_json_str(text) else {
        return;
    };
    let mut written = Vec::new();
    convert::write_struct_json(&parsed, &mut written);
    let again = std::str::from_utf8(&written)
        .ok()
        .and_then(|t| convert::struct_from_json_str(t).ok());
    assert_eq!(
        again.as_ref(),
        Some(&parsed),
        "the written JSON parses differently"
    );
});
