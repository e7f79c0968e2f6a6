//! Fuzz-style robustness: random bytes and mutated real datagen lines
//! through every parser and the payload decoder. Nothing may panic; every
//! rejection must be a typed error whose message is not empty.

use datagen::hotpath::{Kind, lines};

#[path = "support/rng.rs"]
mod rng;
use rng::Rng;

/// Bytes that matter to a JSON parser, to mutate with.
const SPECIAL: &[u8] = b"{}[]\":,\\ntfe-+.0123456789 \t\x00\xff=/";

fn exercise(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    match convert::parse_sql_dispatch(&text) {
        Ok(d) => assert!(!d.sql.trim().is_empty()),
        Err(e) => assert!(!e.to_string().is_empty()),
    }
    match convert::parse_object_dispatch(&text) {
        Ok(d) => {
            if let Some(p) = d.payload {
                let _ = convert::object_bytes_from_json(&p)
                    .map_err(|e| assert!(!e.to_string().is_empty()));
            }
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
    match convert::parse_rest_dispatch(&text) {
        Ok(d) => {
            assert!(d.path.starts_with('/'));
            let value = convert::parse_rest_dispatch_value(&text)
                .map(|v| v.body)
                .ok();
            assert_eq!(d.body_value().ok(), value);
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
    match convert::struct_from_json_str(&text) {
        Ok(s) => {
            let mut out = Vec::new();
            convert::write_struct_json(&s, &mut out);
            assert!(serde_json::from_slice::<serde_json::Value>(&out).is_ok());
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
    if let Ok(serde_json::Value::Object(map)) = serde_json::from_str::<serde_json::Value>(&text) {
        let s = convert::json_to_struct(&map);
        assert_eq!(s, convert::json_into_struct(map));
    }
}

#[test]
fn random_bytes_do_not_panic() {
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    for _ in 0..4000 {
        let len = rng.below(256);
        exercise(&rng.bytes(len));
        // Mostly-JSON noise reaches deeper than uniform bytes.
        exercise(&rng.noise(len, SPECIAL));
    }
}

#[test]
fn mutated_datagen_lines_do_not_panic() {
    let mut rng = Rng(0xfa22_0000_0000_0001);
    for kind in [
        Kind::Records,
        Kind::SqlDispatch,
        Kind::ObjectDispatch,
        Kind::RestDispatch,
        Kind::Blobs,
    ] {
        let count = if kind == Kind::Blobs { 8 } else { 300 };
        for line in lines(kind, count) {
            exercise(line.as_bytes());
            for _ in 0..8 {
                exercise(&rng.mutate(&line, SPECIAL, 4, None));
            }
        }
    }
}
