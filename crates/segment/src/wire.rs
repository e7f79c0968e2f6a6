//! Jetstream v1 wire JSON of archived events (feature `wire`).
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

/// Appends the v1 JSON line of `event` (no newline) to `out`. Returns
/// `false`, appending nothing, for events v1 never sends (`#sync`).
/// `time_us` is the event's `witnessed_at`.
pub fn encode_v1(event: &EventRef<'_>, out: &mut String) -> Result<bool> {
    let kind_name = match event.kind {
        Kind::Sync => return Ok(false),
        Kind::Identity => "identity",
        Kind::Account => "account",
        _ => "commit",
    };
    let start = out.len();
    let result = (|| {
        out.push_str("{\"did\":");
        cbor::json::push_json_str(event.did, out);
        out.push_str(",\"time_us\":");
        out.push_str(&event.witnessed_at.to_string());
        out.push_str(",\"kind\":\"");
        out.push_str(kind_name);
        out.push_str("\",\"");
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
    let v: serde_json::Value = serde_json::from_str(line).map_err(wire_err)?;
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
                event.payload = to_cbor(record)?;
                let cid = Cid::parse_str(str_field(c, "cid")?).map_err(wire_err)?;
                if !cid.matches(&event.payload) {
                    return Err(wire_err("record does not re-encode to its cid"));
                }
            }
        }
        kind @ ("identity" | "account") => {
            event.kind = if kind == "identity" {
                Kind::Identity
            } else {
                Kind::Account
            };
            let body = v.get(kind).ok_or_else(|| wire_err("missing body"))?;
            event.payload = to_cbor(body)?;
        }
        other => return Err(wire_err(format!("unknown kind {other:?}"))),
    }
    event.as_ref().validate()?;
    Ok(event)
}
