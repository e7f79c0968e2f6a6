//! DAG-CBOR: the borrowed and the owned decoders accept the same inputs and
//! agree on the value; an accepted input re-encodes byte for byte (strict
//! DAG-CBOR has one encoding per value), and renders as JSON.
#![no_main]

use libfuzzer_sys::fuzz_target;
use repo::cbor;

fuzz_target!(|data: &[u8]| {
    match (cbor::decode(data), cbor::decode_owned(data)) {
        (Ok(borrowed), Ok(owned)) => {
            assert_eq!(
                borrowed.to_owned_value(),
                owned,
                "borrowed and owned values differ"
            );
            assert_eq!(
                cbor::to_vec(&owned),
                data,
                "an accepted input re-encodes differently"
            );
            assert_eq!(
                cbor::to_vec_ref(&borrowed),
                data,
                "borrowed re-encoding differs"
            );
            let _ = cbor::json::to_json(&borrowed);
        }
        (Err(_), Err(_)) => {}
        (b, o) => panic!(
            "borrowed accepts: {}, owned accepts: {}",
            b.is_ok(),
            o.is_ok()
        ),
    }
});
