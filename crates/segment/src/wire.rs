//! Jetstream v1 and v2 wire JSON of archived events (feature `wire`).
//!
//! A v1 line is `{"did", "time_us", "kind", ...}` with, for commits,
//! `"commit": {"rev", "operation", "collection", "rkey", "record", "cid"}`
//! (`record` and `cid` absent on deletes; `record` is the DAG-CBOR payload
//! rendered as atproto JSON, `cid` its base32 CIDv1), and for identity and
//! account events their CBOR body as JSON. `#sync` events are never sent.

use repo::Cid;
use repo::cbor;

use crate::error::{Error, Result};
use crate::event::{Event, EventRef, Kind};

fn wire_err(what: impl std::fmt::Display) -> Error {
    Error::Wire(what.to_string())
}

/// The v1 operation name of a record event's kind.
fn operation(kind: Kind) -> Option<&'static str> {
    match kind {
        Kind::Create | Kind::CreateResync => Some("create"),
        Kind::Update => Some("update"),
        Kind::Delete => Some("delete"),
        _ => None,
    }
}

/// Which wire version a line is rendered for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Version {
    V1,
    V2,
}

/// Appends the v1 JSON line of `event` (no newline) to `out`. Returns
/// `false`, appending nothing, for events v1 never sends (`#sync`).
/// `time_us` is the event's `witnessed_at`.
pub fn encode_v1(event: &EventRef<'_>, out: &mut String) -> Result<bool> {
    encode(event, Version::V1, out)
}

/// Appends the v2 JSON line of `event` (no newline) to `out`: the v1 line
/// plus `"seq"` and `"cursor"` (both the archive's seq, right after
/// `"kind"`), `"record_cbor"` (standard padded base64 of the DAG-CBOR
/// payload, before `"cid"`) on creates and updates, and `#sync` events as
/// `"kind":"sync","sync":{..}` (the body rendered as atproto JSON). Every
/// event is sent, so this always returns `true` on success.
pub fn encode_v2(event: &EventRef<'_>, out: &mut String) -> Result<bool> {
    encode(event, Version::V2, out)
}

fn encode(event: &EventRef<'_>, version: Version, out: &mut String) -> Result<bool> {
    let kind_name = match event.kind {
        Kind::Sync if version == Version::V1 => return Ok(false),
        Kind::Sync => "sync",
        Kind::Identity => "identity",
        Kind::Account => "account",
        _ => "commit",
    };
    let start = out.len();
    let result = (|| {
        out.push_str("{\"did\":");
        cbor::json::push_json_str(event.did, out);
        out.push_str(",\"time_us\":");
        push_int(out, event.witnessed_at);
        out.push_str(",\"kind\":\"");
        out.push_str(kind_name);
        out.push('"');
        if version == Version::V2 {
            out.push_str(",\"seq\":");
            push_int(out, event.seq);
            out.push_str(",\"cursor\":");
            push_int(out, event.seq);
        }
        out.push_str(",\"");
        out.push_str(kind_name);
        out.push_str("\":");
        match operation(event.kind) {
            Some(op) => {
                out.push_str("{\"rev\":");
                cbor::json::push_json_str(event.rev, out);
                out.push_str(",\"operation\":\"");
                out.push_str(op);
                out.push_str("\",\"collection\":");
                cbor::json::push_json_str(event.collection, out);
                out.push_str(",\"rkey\":");
                cbor::json::push_json_str(event.rkey, out);
                if event.kind != Kind::Delete {
                    let record = cbor::decode(event.payload).map_err(wire_err)?;
                    out.push_str(",\"record\":");
                    cbor::json::write_json(&record, out);
                    if version == Version::V2 {
                        out.push_str(",\"record_cbor\":\"");
                        codec::base64::encode_into_string(event.payload, out);
                        out.push('"');
                    }
                    out.push_str(",\"cid\":\"");
                    Cid::for_dag_cbor(event.payload).push_str(out);
                    out.push('"');
                }
                out.push('}');
            }
            None => {
                let body = cbor::decode(event.payload).map_err(wire_err)?;
                cbor::json::write_json(&body, out);
            }
        }
        out.push('}');
        Ok(())
    })();
    match result {
        Ok(()) => Ok(true),
        Err(e) => {
            out.truncate(start);
            Err(e)
        }
    }
}

/// Appends the decimal form of `v` without an intermediate `String`.
fn push_int(out: &mut String, v: impl std::fmt::Display) {
    use std::fmt::Write as _;
    // Writing into a String cannot fail.
    let _ = write!(out, "{v}");
}

fn str_field<'a>(obj: &'a serde_json::Value, key: &str) -> Result<&'a str> {
    obj.get(key)
        .and_then(serde_json::Value::as_str)
        .ok_or_else(|| wire_err(format!("missing string field {key:?}")))
}

fn to_cbor(v: &serde_json::Value) -> Result<Vec<u8>> {
    let value = cbor::json::from_json_value(v).map_err(wire_err)?;
    Ok(cbor::to_vec(&value))
}

/// Parses one v1 JSON line back into an archive event with sequence
/// number `seq` (`witnessed_at` = `time_us`). Records and identity/account
/// bodies are re-encoded as DAG-CBOR; a commit's `cid` must match the
/// re-encoded record.
pub fn decode_v1(line: &str, seq: u64) -> Result<Event> {
    decode(line, Some(seq))
}

/// Parses one v2 JSON line (see [`encode_v2`]) back into an archive event:
/// `seq` (which `cursor` must equal) is the event's seq, a commit's payload
/// is its `record_cbor` (whose CIDv1 must be `cid`), identity, account and
/// sync bodies are re-encoded as DAG-CBOR.
pub fn decode_v2(line: &str) -> Result<Event> {
    decode(line, None)
}

/// A v2 commit's `record` must be its `record_cbor` rendered as JSON.
fn check_record(record: &serde_json::Value, payload: &[u8]) -> Result<()> {
    let value = cbor::decode(payload).map_err(wire_err)?;
    let mut text = String::new();
    cbor::json::write_json(&value, &mut text);
    let rendered: serde_json::Value = serde_json::from_str(&text).map_err(wire_err)?;
    if &rendered != record {
        return Err(wire_err("record differs from record_cbor"));
    }
    Ok(())
}

fn u64_field(obj: &serde_json::Value, key: &str) -> Result<u64> {
    obj.get(key)
        .and_then(serde_json::Value::as_u64)
        .ok_or_else(|| wire_err(format!("missing unsigned field {key:?}")))
}

/// `seq: Some` parses a v1 line (the seq given), `None` a v2 line.
fn decode(line: &str, seq: Option<u64>) -> Result<Event> {
    let v: serde_json::Value = serde_json::from_str(line).map_err(wire_err)?;
    let v2 = seq.is_none();
    let seq = match seq {
        Some(s) => s,
        None => {
            let s = u64_field(&v, "seq")?;
            if u64_field(&v, "cursor")? != s {
                return Err(wire_err("cursor differs from seq"));
            }
            s
        }
    };
    let did = str_field(&v, "did")?.to_owned();
    let time_us = v
        .get("time_us")
        .and_then(serde_json::Value::as_i64)
        .ok_or_else(|| wire_err("missing time_us"))?;
    let mut event = Event {
        seq,
        witnessed_at: time_us,
        indexed_at: 0,
        kind: Kind::Create,
        did,
        collection: String::new(),
        rkey: String::new(),
        rev: String::new(),
        payload: Vec::new(),
    };
    match str_field(&v, "kind")? {
        "commit" => {
            let c = v.get("commit").ok_or_else(|| wire_err("missing commit"))?;
            event.kind = match str_field(c, "operation")? {
                "create" => Kind::Create,
                "update" => Kind::Update,
                "delete" => Kind::Delete,
                other => return Err(wire_err(format!("unknown operation {other:?}"))),
            };
            event.rev = str_field(c, "rev")?.to_owned();
            event.collection = str_field(c, "collection")?.to_owned();
            event.rkey = str_field(c, "rkey")?.to_owned();
            if event.kind != Kind::Delete {
                let record = c.get("record").ok_or_else(|| wire_err("missing record"))?;
                event.payload = if v2 {
                    let b64 = str_field(c, "record_cbor")?;
                    let payload = codec::base64::decode(b64.as_bytes()).map_err(wire_err)?;
                    check_record(record, &payload)?;
                    payload
                } else {
                    to_cbor(record)?
                };
                let cid = Cid::parse_str(str_field(c, "cid")?).map_err(wire_err)?;
                if !cid.matches(&event.payload) {
                    return Err(wire_err("record does not re-encode to its cid"));
                }
            }
        }
        kind @ ("identity" | "account" | "sync") => {
            event.kind = match kind {
                "identity" => Kind::Identity,
                "account" => Kind::Account,
                _ if v2 => Kind::Sync,
                other => return Err(wire_err(format!("unknown kind {other:?}"))),
            };
            let body = v.get(kind).ok_or_else(|| wire_err("missing body"))?;
            event.payload = to_cbor(body)?;
        }
        other => return Err(wire_err(format!("unknown kind {other:?}"))),
    }
    event.as_ref().validate()?;
    Ok(event)
}
