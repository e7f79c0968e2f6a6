//! data-model vectors: JSON <-> DAG-CBOR <-> CID, and the valid / invalid
//! JSON lists.

mod common;

use base64::Engine as _;
use repo::Cid;
use repo::cbor::{self, json};

fn b64(s: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(s)
        .unwrap()
}

#[test]
fn fixtures_round_trip() {
    let cases = common::read_json("interop/data-model/data-model-fixtures.json");
    let cases = cases.as_array().unwrap();
    assert_eq!(cases.len(), 3);
    for (i, c) in cases.iter().enumerate() {
        let want_cbor = b64(c["cbor_base64"].as_str().unwrap());
        let want_cid: Cid = c["cid"].as_str().unwrap().parse().unwrap();

        // JSON -> value -> DAG-CBOR bytes and CID.
        let value = json::from_json_value(&c["json"]).unwrap();
        let bytes = cbor::to_vec(&value);
        assert_eq!(bytes, want_cbor, "case {i}: encoding");
        assert_eq!(Cid::for_dag_cbor(&bytes), want_cid, "case {i}: CID");

        // DAG-CBOR -> borrowed and owned values -> same bytes.
        let borrowed = cbor::decode(&want_cbor).unwrap();
        let owned = cbor::decode_owned(&want_cbor).unwrap();
        assert_eq!(owned, value, "case {i}: owned decode");
        assert_eq!(
            borrowed.to_owned_value(),
            value,
            "case {i}: borrowed decode"
        );
        assert_eq!(cbor::to_vec_ref(&borrowed), want_cbor);

        // DAG-CBOR -> atproto JSON -> the fixture's JSON.
        let rendered = json::to_json(&borrowed);
        let back: serde_json::Value = serde_json::from_str(&rendered).unwrap();
        assert_eq!(back, c["json"], "case {i}: JSON rendering");
        assert_eq!(json::value_to_json(&owned), rendered);
    }
}

#[test]
fn valid_json_is_accepted_and_round_trips() {
    let cases = common::read_json("interop/data-model/data-model-valid.json");
    let cases = cases.as_array().unwrap();
    assert_eq!(cases.len(), 5);
    for c in cases {
        let note = c["note"].as_str().unwrap();
        let value = json::from_json_value(&c["json"]).unwrap_or_else(|e| panic!("{note}: {e}"));
        let bytes = cbor::to_vec(&value);
        let back = cbor::decode(&bytes).unwrap();
        assert_eq!(back.to_owned_value(), value, "{note}");
        let again = json::from_json_str(&json::to_json(&back)).unwrap();
        assert_eq!(again, value, "{note}");
    }
}

#[test]
fn invalid_json_is_rejected() {
    let cases = common::read_json("interop/data-model/data-model-invalid.json");
    let cases = cases.as_array().unwrap();
    assert_eq!(cases.len(), 12);
    for c in cases {
        let note = c["note"].as_str().unwrap();
        let err = json::from_json_value(&c["json"]).expect_err(note);
        // Every rejection names its reason.
        assert!(!err.to_string().is_empty(), "{note}");
    }
}

#[test]
fn cbor_decoder_rejects_non_canonical_forms_of_fixtures() {
    let cases = common::read_json("interop/data-model/data-model-fixtures.json");
    for c in cases.as_array().unwrap() {
        let good = b64(c["cbor_base64"].as_str().unwrap());
        // Trailing byte.
        let mut bad = good.clone();
        bad.push(0);
        assert!(cbor::decode(&bad).is_err());
        // Every truncation fails cleanly.
        for n in 0..good.len() {
            assert!(cbor::decode(&good[..n]).is_err());
        }
    }
}
