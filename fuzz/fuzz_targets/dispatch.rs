//! The gateway's dispatch-line parsers (SQL, object, REST with the body
//! kept raw and as a DOM) on any UTF-8 line.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    let _ = convert::parse_sql_dispatch(line);
    let _ = convert::parse_object_dispatch(line);
    let _ = convert::parse_rest_dispatch(line);
    let _ = convert::parse_rest_dispatch_value(line);
});
