//! The records as DAG-CBOR: [`encode`] for the writes and [`decode`] for
//! the index (from a commit's blocks or from an exported repository).
//!
//! Each record is a map with `$type` equal to its collection; the record
//! key is the id, so the id is not repeated inside. Times and durations
//! are integers (µs); an absent optional time is `null`; tags are a list
//! of text. A run's parameters are one text field, the JSON text of their
//! object in the order given (`crate::params`: DAG-CBOR maps are
//! key-ordered and atproto records carry no floats); a record of the
//! earlier form, a map of text to text, reads as string values. The
//! decoder is strict about the fields it reads (every one must be present
//! with its type; unknown fields are ignored, so later versions may add
//! some) and never panics.

use repo::cbor::{self, Encoder, MapRef, ValueRef};
#[cfg(test)]
use repo::cbor::{Map, Value};

use crate::error::{AppviewError, Result};
use crate::model::{
    FLOW_NSID, Flow, FlowRun, FlowRunState, RUN_NSID, Record, RecordRef, STATE_NSID, StateType,
    is_appview_collection,
};
use crate::params;
use crate::uuid::Uuid;

#[cfg(test)]
fn text(s: &str) -> Value {
    Value::Text(s.to_owned())
}

#[cfg(test)]
fn opt_int(v: Option<i64>) -> Value {
    v.map_or(Value::Null, Value::Int)
}

#[cfg(test)]
fn tags(t: &[String]) -> Value {
    Value::List(t.iter().map(|s| text(s)).collect())
}

/// The record's DAG-CBOR bytes, written field by field in canonical key
/// order (length, then bytes) without building a value tree; the tests
/// hold it byte-equal to a value tree's encoding.
pub fn encode<'a>(record: impl Into<RecordRef<'a>>) -> Vec<u8> {
    let record = record.into();
    let mut out = Vec::with_capacity(match record {
        RecordRef::Run(_) => 512,
        _ => 160,
    });
    let mut e = Encoder::new(&mut out);
    let opt = |e: &mut Encoder<'_>, v: Option<i64>| match v {
        Some(v) => e.int(v),
        None => e.null(),
    };
    let tags = |e: &mut Encoder<'_>, t: &[String]| {
        e.list(t.len());
        for s in t {
            e.text(s);
        }
    };
    let mut uuid = [0u8; 36];
    match record {
        RecordRef::Flow(f) => {
            e.map(5);
            e.text("name");
            e.text(&f.name);
            e.text("tags");
            tags(&mut e, &f.tags);
            e.text("$type");
            e.text(FLOW_NSID);
            e.text("created");
            e.int(f.created);
            e.text("updated");
            e.int(f.updated);
        }
        RecordRef::Run(r) => {
            e.map(17);
            e.text("end");
            opt(&mut e, r.end);
            e.text("flow");
            e.text(r.flow_id.write_to(&mut uuid));
            e.text("name");
            e.text(&r.name);
            e.text("tags");
            tags(&mut e, &r.tags);
            e.text("$type");
            e.text(RUN_NSID);
            e.text("start");
            opt(&mut e, r.start);
            e.text("created");
            e.int(r.created);
            e.text("stateId");
            e.text(r.state_id.write_to(&mut uuid));
            e.text("updated");
            e.int(r.updated);
            e.text("runCount");
            e.int(r.run_count);
            e.text("stateName");
            e.text(&r.state_name);
            e.text("stateType");
            e.text(r.state_type.as_str());
            e.text("parameters");
            e.text(&params::object_text(&r.parameters));
            e.text("totalRunTime");
            e.int(r.total_run_time);
            e.text("expectedStart");
            e.int(r.expected_start);
            e.text("stateTimestamp");
            e.int(r.state_timestamp);
            e.text("nextScheduledStart");
            opt(&mut e, r.next_scheduled_start);
        }
        RecordRef::State(st) => {
            e.map(6);
            e.text("run");
            e.text(st.run_id.write_to(&mut uuid));
            e.text("name");
            e.text(&st.name);
            e.text("type");
            e.text(st.state_type.as_str());
            e.text("$type");
            e.text(STATE_NSID);
            e.text("message");
            e.text(&st.message);
            e.text("timestamp");
            e.int(st.timestamp);
        }
    }
    out
}

/// The value-tree encoder: the oracle [`encode`] is checked against.
#[cfg(test)]
pub(crate) fn encode_tree(record: &Record) -> Vec<u8> {
    let mut m = Map::new();
    m.insert("$type", text(record.collection()));
    match record {
        Record::Flow(f) => {
            m.insert("name", text(&f.name));
            m.insert("tags", tags(&f.tags));
            m.insert("created", Value::Int(f.created));
            m.insert("updated", Value::Int(f.updated));
        }
        Record::Run(r) => {
            m.insert("flow", text(&r.flow_id.to_string()));
            m.insert("name", text(&r.name));
            m.insert("stateId", text(&r.state_id.to_string()));
            m.insert("stateType", text(r.state_type.as_str()));
            m.insert("stateName", text(&r.state_name));
            m.insert("stateTimestamp", Value::Int(r.state_timestamp));
            m.insert("expectedStart", Value::Int(r.expected_start));
            m.insert("nextScheduledStart", opt_int(r.next_scheduled_start));
            m.insert("start", opt_int(r.start));
            m.insert("end", opt_int(r.end));
            m.insert("totalRunTime", Value::Int(r.total_run_time));
            m.insert("runCount", Value::Int(r.run_count));
            m.insert("created", Value::Int(r.created));
            m.insert("updated", Value::Int(r.updated));
            m.insert("tags", tags(&r.tags));
            m.insert("parameters", text(&params::object_text(&r.parameters)));
        }
        Record::State(s) => {
            m.insert("run", text(&s.run_id.to_string()));
            m.insert("type", text(s.state_type.as_str()));
            m.insert("name", text(&s.name));
            m.insert("timestamp", Value::Int(s.timestamp));
            m.insert("message", text(&s.message));
        }
    }
    cbor::to_vec(&Value::Map(m))
}

/// Reads the fields of one record, naming the record in its errors.
struct Fields<'a, 'b> {
    map: &'b MapRef<'a>,
    collection: &'b str,
    rkey: &'b str,
}

/// The error naming record `collection/rkey` (the key cut to 64 chars:
/// it may be anything a commit carried).
fn bad_record(collection: &str, rkey: &str, reason: String) -> AppviewError {
    AppviewError::BadRecord {
        collection: collection.to_owned(),
        rkey: rkey.chars().take(64).collect(),
        reason,
    }
}

impl<'a> Fields<'a, '_> {
    fn bad(&self, reason: String) -> AppviewError {
        bad_record(self.collection, self.rkey, reason)
    }

    fn get(&self, key: &str) -> Result<&ValueRef<'a>> {
        self.map
            .get(key)
            .ok_or_else(|| self.bad(format!("missing field {key}")))
    }

    fn text(&self, key: &str) -> Result<&'a str> {
        match self.get(key)? {
            ValueRef::Text(s) => Ok(s),
            _ => Err(self.bad(format!("{key} is not text"))),
        }
    }

    fn int(&self, key: &str) -> Result<i64> {
        match self.get(key)? {
            ValueRef::Int(i) => Ok(*i),
            _ => Err(self.bad(format!("{key} is not an integer"))),
        }
    }

    fn opt_int(&self, key: &str) -> Result<Option<i64>> {
        match self.get(key)? {
            ValueRef::Int(i) => Ok(Some(*i)),
            ValueRef::Null => Ok(None),
            _ => Err(self.bad(format!("{key} is not an integer or null"))),
        }
    }

    fn uuid(&self, key: &str) -> Result<Uuid> {
        Uuid::parse(self.text(key)?).map_err(|e| self.bad(format!("{key}: {e}")))
    }

    fn state_type(&self, key: &str) -> Result<StateType> {
        StateType::parse(self.text(key)?).map_err(|e| self.bad(format!("{key}: {e}")))
    }

    fn tags(&self, key: &str) -> Result<Vec<String>> {
        match self.get(key)? {
            ValueRef::List(items) => items
                .iter()
                .map(|v| match v {
                    ValueRef::Text(s) => Ok((*s).to_owned()),
                    _ => Err(self.bad(format!("{key} holds a non-text item"))),
                })
                .collect(),
            _ => Err(self.bad(format!("{key} is not a list"))),
        }
    }

    fn params(&self, key: &str) -> Result<Vec<(String, String)>> {
        match self.get(key)? {
            ValueRef::Text(s) => {
                params::parse_object(s.as_bytes()).map_err(|e| self.bad(format!("{key}: {e}")))
            }
            // The earlier form: text values, keys ascending.
            ValueRef::Map(m) => {
                let mut out = m
                    .entries()
                    .iter()
                    .map(|(k, v)| match v {
                        ValueRef::Text(s) => Ok(((*k).to_owned(), params::string_value(s))),
                        _ => Err(self.bad(format!("{key}.{k} is not text"))),
                    })
                    .collect::<Result<Vec<_>>>()?;
                // Canonical CBOR order is by length first; the model's is
                // bytewise, as the SQL baselines' JSON gives it back.
                out.sort();
                Ok(out)
            }
            _ => Err(self.bad(format!("{key} is not text"))),
        }
    }
}

/// Decodes a record of `collection` at `rkey` (whose id the key is).
/// `Ok(None)` for a collection that is not the appview's.
pub fn decode(collection: &str, rkey: &str, bytes: &[u8]) -> Result<Option<Record>> {
    if !is_appview_collection(collection) {
        return Ok(None);
    }
    let bad = |reason: String| bad_record(collection, rkey, reason);
    let value = cbor::decode(bytes).map_err(|e| bad(e.to_string()))?;
    let ValueRef::Map(map) = &value else {
        return Err(bad("not a map".to_owned()));
    };
    let f = Fields {
        map,
        collection,
        rkey,
    };
    if f.text("$type")? != collection {
        return Err(bad("$type differs from the collection".to_owned()));
    }
    let id = Uuid::parse(rkey).map_err(|e| bad(e.to_string()))?;
    let record = match collection {
        FLOW_NSID => Record::Flow(Flow {
            id,
            name: f.text("name")?.to_owned(),
            tags: f.tags("tags")?,
            created: f.int("created")?,
            updated: f.int("updated")?,
        }),
        RUN_NSID => Record::Run(FlowRun {
            id,
            flow_id: f.uuid("flow")?,
            name: f.text("name")?.to_owned(),
            state_id: f.uuid("stateId")?,
            state_type: f.state_type("stateType")?,
            state_name: f.text("stateName")?.to_owned(),
            state_timestamp: f.int("stateTimestamp")?,
            expected_start: f.int("expectedStart")?,
            next_scheduled_start: f.opt_int("nextScheduledStart")?,
            start: f.opt_int("start")?,
            end: f.opt_int("end")?,
            total_run_time: f.int("totalRunTime")?,
            run_count: f.int("runCount")?,
            created: f.int("created")?,
            updated: f.int("updated")?,
            tags: f.tags("tags")?,
            parameters: f.params("parameters")?,
        }),
        _ => Record::State(FlowRunState {
            id,
            run_id: f.uuid("run")?,
            state_type: f.state_type("type")?,
            name: f.text("name")?.to_owned(),
            timestamp: f.int("timestamp")?,
            message: f.text("message")?.to_owned(),
        }),
    };
    Ok(Some(record))
}

#[cfg(test)]
pub(crate) mod tests {
    use proptest::prelude::*;

    use super::*;

    pub fn arb_state_type() -> impl Strategy<Value = StateType> {
        (0..9usize).prop_map(|i| StateType::ALL[i])
    }

    /// A value's text as `params` writes it.
    fn arb_value() -> impl Strategy<Value = String> {
        prop_oneof![
            "\\PC{0,6}".prop_map(|s| params::string_value(&s)),
            any::<i64>().prop_map(|i| i.to_string()),
            any::<f64>()
                .prop_filter("finite", |x| x.is_finite())
                .prop_map(|x| {
                    let mut s = String::new();
                    params::push_float(&mut s, x);
                    s
                }),
            Just("[true,null,{\"b\":1,\"a\":[]}]".to_owned()),
        ]
    }

    /// The first of each key, in order (what `params` gives a run).
    fn unique_keys(kv: Vec<(String, String)>) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for (k, v) in kv {
            if !out.iter().any(|(o, _)| *o == k) {
                out.push((k, v));
            }
        }
        out
    }

    fn arb_run() -> impl Strategy<Value = FlowRun> {
        (
            (
                any::<u128>(),
                any::<u128>(),
                "\\PC{0,12}",
                any::<u128>(),
                arb_state_type(),
                "[A-Za-z]{0,10}",
            ),
            (
                any::<i64>(),
                any::<i64>(),
                any::<Option<i64>>(),
                any::<Option<i64>>(),
                any::<Option<i64>>(),
            ),
            (any::<i64>(), any::<i64>(), any::<i64>(), any::<i64>()),
            (
                proptest::collection::vec("\\PC{0,8}", 0..4),
                proptest::collection::vec(("\\PC{0,6}", arb_value()), 0..4),
            ),
        )
            .prop_map(|(a, b, c, d)| FlowRun {
                id: Uuid(a.0),
                flow_id: Uuid(a.1),
                name: a.2,
                state_id: Uuid(a.3),
                state_type: a.4,
                state_name: a.5,
                state_timestamp: b.0,
                expected_start: b.1,
                next_scheduled_start: b.2,
                start: b.3,
                end: b.4,
                total_run_time: c.0,
                run_count: c.1,
                created: c.2,
                updated: c.3,
                tags: d.0,
                parameters: unique_keys(d.1),
            })
    }

    fn arb_record() -> impl Strategy<Value = Record> {
        prop_oneof![
            (
                any::<u128>(),
                "\\PC{0,16}",
                proptest::collection::vec("\\PC{0,8}", 0..4),
                any::<i64>(),
                any::<i64>()
            )
                .prop_map(|(id, name, tags, created, updated)| Record::Flow(Flow {
                    id: Uuid(id),
                    name,
                    tags,
                    created,
                    updated
                })),
            arb_run().prop_map(Record::Run),
            (
                any::<u128>(),
                any::<u128>(),
                arb_state_type(),
                "\\PC{0,10}",
                any::<i64>(),
                "\\PC{0,20}"
            )
                .prop_map(|(id, run, t, name, timestamp, message)| Record::State(
                    FlowRunState {
                        id: Uuid(id),
                        run_id: Uuid(run),
                        state_type: t,
                        name,
                        timestamp,
                        message
                    }
                )),
        ]
    }

    proptest! {
        #[test]
        fn round_trip(record in arb_record()) {
            let bytes = encode(&record);
            let rkey = record.id().to_string();
            let back = decode(record.collection(), &rkey, &bytes).unwrap();
            prop_assert_eq!(back, Some(record));
        }

        #[test]
        fn direct_encoder_equals_the_value_tree(record in arb_record()) {
            prop_assert_eq!(encode(&record), encode_tree(&record));
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200), which in 0..4usize) {
            let collection = [FLOW_NSID, RUN_NSID, STATE_NSID, "app.bsky.feed.post"][which];
            let _ = decode(collection, "0f3a9e2c-1b4d-4e5f-8a6b-7c8d9e0f1a2b", &bytes);
        }

        #[test]
        fn mutated_records_never_panic(record in arb_record(), at in any::<prop::sample::Index>(), byte in any::<u8>()) {
            let mut bytes = encode(&record);
            let i = at.index(bytes.len());
            bytes[i] = byte;
            let rkey = record.id().to_string();
            let _ = decode(record.collection(), &rkey, &bytes);
        }
    }

    #[test]
    fn a_run_of_the_earlier_form_reads_its_parameters_as_text() {
        let run = FlowRun {
            id: Uuid(7),
            flow_id: Uuid(8),
            name: "r".into(),
            state_id: Uuid(9),
            state_type: StateType::Pending,
            state_name: "Pending".into(),
            state_timestamp: 1,
            expected_start: 1,
            next_scheduled_start: None,
            start: None,
            end: None,
            total_run_time: 0,
            run_count: 0,
            created: 1,
            updated: 1,
            tags: vec![],
            parameters: vec![],
        };
        let Value::Map(mut m) = cbor::decode_owned(&encode(&Record::Run(run.clone()))).unwrap()
        else {
            panic!("not a map")
        };
        let mut old = Map::new();
        old.insert("region", text("eu"));
        old.insert("batch", text("7"));
        m.insert("parameters", Value::Map(old));
        let bytes = cbor::to_vec(&Value::Map(m));
        let back = decode(RUN_NSID, &run.id.to_string(), &bytes).unwrap();
        let want = vec![
            ("batch".to_owned(), "\"7\"".to_owned()),
            ("region".to_owned(), "\"eu\"".to_owned()),
        ];
        assert_eq!(
            back,
            Some(Record::Run(FlowRun {
                parameters: want,
                ..run
            }))
        );
    }

    #[test]
    fn wrong_type_and_missing_fields_are_named() {
        let flow = Record::Flow(Flow {
            id: Uuid(1),
            name: "a".into(),
            tags: vec![],
            created: 1,
            updated: 1,
        });
        let bytes = encode(&flow);
        let rkey = Uuid(1).to_string();
        let e = decode(RUN_NSID, &rkey, &bytes).unwrap_err().to_string();
        assert!(e.contains("$type"), "{e}");
        let e = decode(FLOW_NSID, "not-a-uuid", &bytes)
            .unwrap_err()
            .to_string();
        assert!(e.contains("UUID"), "{e}");
        assert_eq!(decode("app.bsky.feed.post", &rkey, &bytes).unwrap(), None);
    }
}
