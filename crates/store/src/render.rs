//! getRecord / listRecords rendering: a record's DAG-CBOR bytes straight
//! to atproto JSON, without building a value tree.
//!
//! The streaming path reads the bytes once with the repo crate's strict
//! [`Reader`] (canonical key order, no duplicate keys, depth limit, no
//! trailing bytes) and writes JSON as it goes. Anything it does not render
//! itself (byte strings, and every malformed input) makes it give up and
//! the record is rendered by the reference path, `repo::cbor::decode` +
//! `write_json`, which also produces the typed error. The output is
//! byte-identical to the reference path (tested below).

use repo::Cid;
use repo::cbor::MAX_DEPTH;
use repo::cbor::json::push_json_str;
use repo::cbor::{Reader, Type};

use crate::error::Result;

/// Appends `{"uri":..,"cid":..,"value":..}` for one record to `out`.
pub(crate) fn render_record_into(
    did: &str,
    collection: &str,
    rkey: &str,
    cid: &Cid,
    bytes: &[u8],
    out: &mut String,
) -> Result<()> {
    let start = out.len();
    out.push_str("{\"uri\":\"at://");
    out.push_str(did);
    out.push('/');
    out.push_str(collection);
    out.push('/');
    out.push_str(rkey);
    out.push_str("\",\"cid\":\"");
    cid.push_str(out);
    out.push_str("\",\"value\":");
    let value_start = out.len();
    let mut r = Reader::new(bytes);
    if stream_value(&mut r, out, 0).is_none() || r.finish().is_err() {
        // Reference path: byte strings, or input the strict decoder
        // rejects (its error is the answer).
        out.truncate(value_start);
        match repo::cbor::decode(bytes) {
            Ok(value) => repo::cbor::json::write_json(&value, out),
            Err(e) => {
                out.truncate(start);
                return Err(e.into());
            }
        }
    }
    out.push('}');
    Ok(())
}

/// `{"uri":..,"cid":..,"value":..}` as a new string.
pub(crate) fn render_record(
    did: &str,
    collection: &str,
    rkey: &str,
    cid: &Cid,
    bytes: &[u8],
) -> Result<String> {
    let mut out = String::with_capacity(bytes.len() * 2 + 160);
    render_record_into(did, collection, rkey, cid, bytes, &mut out)?;
    Ok(out)
}

/// Renders one value; `None` = give up (the caller falls back).
fn stream_value(r: &mut Reader<'_>, out: &mut String, depth: usize) -> Option<()> {
    match r.peek_type().ok()? {
        Type::Null => {
            if !r.read_null() {
                return None; // floats, undefined, simple values
            }
            out.push_str("null");
        }
        Type::Bool => out.push_str(if r.read_bool().ok()? { "true" } else { "false" }),
        Type::Int => push_int(r.read_int().ok()?, out),
        Type::Text => push_str_fast(r.read_text().ok()?, out),
        Type::Link => {
            let c = r.read_link().ok()?;
            out.push_str("{\"$link\":\"");
            c.push_str(out);
            out.push_str("\"}");
        }
        Type::Bytes => return None,
        Type::List => {
            if depth >= MAX_DEPTH {
                return None;
            }
            let n = r.read_list_len().ok()?;
            out.push('[');
            for i in 0..n {
                if i > 0 {
                    out.push(',');
                }
                stream_value(r, out, depth + 1)?;
            }
            out.push(']');
        }
        Type::Map => {
            if depth >= MAX_DEPTH {
                return None;
            }
            let n = r.read_map_len().ok()?;
            let mut prev = None;
            out.push('{');
            for i in 0..n {
                if i > 0 {
                    out.push(',');
                }
                push_str_fast(r.read_key(&mut prev).ok()?, out);
                out.push(':');
                stream_value(r, out, depth + 1)?;
            }
            out.push('}');
        }
    }
    Some(())
}

fn push_int(i: i64, out: &mut String) {
    let mut buf = [0u8; 20];
    let mut pos = buf.len();
    let mut n = i.unsigned_abs();
    loop {
        pos -= 1;
        buf[pos] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if i < 0 {
        out.push('-');
    }
    for &d in &buf[pos..] {
        out.push(d as char);
    }
}

/// A JSON string literal: strings with nothing to escape (nearly all) are
/// copied whole after a branch-free scan; the rest go through the repo
/// crate's escaper, so both give identical bytes.
fn push_str_fast(s: &str, out: &mut String) {
    let needs = s.as_bytes().chunks(16).fold(false, |acc, chunk| {
        acc | chunk
            .iter()
            .fold(false, |a, &b| a | (b < 0x20) | (b == b'"') | (b == b'\\'))
    });
    if needs {
        push_json_str(s, out);
    } else {
        out.reserve(s.len() + 2);
        out.push('"');
        out.push_str(s);
        out.push('"');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(bytes: &[u8]) -> String {
        let v = repo::cbor::decode(bytes).unwrap();
        let mut s = String::new();
        repo::cbor::json::write_json(&v, &mut s);
        s
    }

    fn streamed(bytes: &[u8]) -> String {
        let cid = Cid::for_dag_cbor(bytes);
        let full = render_record("did:plc:x", "a.b.c", "k", &cid, bytes).unwrap();
        let prefix = format!("{{\"uri\":\"at://did:plc:x/a.b.c/k\",\"cid\":\"{cid}\",\"value\":");
        assert!(full.starts_with(&prefix) && full.ends_with('}'), "{full}");
        full[prefix.len()..full.len() - 1].to_owned()
    }

    #[test]
    fn matches_reference_on_datagen_records() {
        for i in 0..3u64 {
            for rec in datagen::store::records(i, 300) {
                let v = repo::cbor::json::from_json_value(&rec.value).unwrap();
                let bytes = repo::cbor::to_vec(&v);
                assert_eq!(streamed(&bytes), reference(&bytes));
            }
        }
    }

    #[test]
    fn escapes_bytes_ints_and_nesting_match_reference() {
        let json = serde_json::json!({
            "$type": "x.y.z",
            "text": "quote \" back \\ nl \n tab \t ctl \u{1} é 😀 and a long tail past sixteen bytes",
            "neg": -9_007_199_254_740_991i64,
            "zero": 0,
            "big": 9_007_199_254_740_991i64,
            "flags": [true, false, null],
            "blob": {"$bytes": "AAECAwQ"},
            "link": {"$link": "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm"},
            "deep": {"a": [{"b": [1, 2, {"c": "d"}]}]}
        });
        let v = repo::cbor::json::from_json_value(&json).unwrap();
        let bytes = repo::cbor::to_vec(&v);
        assert_eq!(streamed(&bytes), reference(&bytes));
    }

    #[test]
    fn malformed_input_gives_the_decoders_error() {
        let cid = Cid::for_dag_cbor(b"x");
        // A float, trailing bytes, unsorted keys, truncation.
        for bad in [
            &[0xa1, 0x61, 0x61, 0xfb, 0, 0, 0, 0, 0, 0, 0, 0][..],
            &[0xa0, 0x00][..],
            &[0xa2, 0x61, 0x62, 0x01, 0x61, 0x61, 0x02][..],
            &[0xa1, 0x61, 0x61][..],
        ] {
            let mut out = String::from("keep");
            assert!(render_record_into("did:plc:x", "a.b.c", "k", &cid, bad, &mut out).is_err());
            assert_eq!(out, "keep");
        }
    }
}
