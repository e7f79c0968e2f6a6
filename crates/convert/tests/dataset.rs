//! The conversions on the whole datagen bench sample (8000 records, 8000
//! SQL, 4000 object and 4000 REST lines): the two write paths agree, the
//! text and DOM paths agree, reads round-trip, every dispatch line parses,
//! the batch write paths give the per-record Structs, and the clone-body
//! baseline returns the same requests.

use convert::prost_types::Struct;
use datagen::hotpath::{Sample, SampleSizes};
use serde_json::{Map, Value};

fn sample() -> Sample {
    Sample::generate(SampleSizes::BENCH)
}

fn object(line: &str) -> Map<String, Value> {
    match serde_json::from_str(line) {
        Ok(Value::Object(map)) => map,
        other => panic!("not an object: {other:?}"),
    }
}

#[test]
fn clone_and_move_write_paths_are_identical_on_the_sample() {
    let sample = sample();
    assert_eq!(sample.records.len(), 8000);
    let mut reused = Struct::default();
    for (i, line) in sample.records.iter().enumerate() {
        let map = object(line);
        let cloned = convert::json_to_struct(&map);
        let checked = convert::json_to_struct_checked(&map).expect("sample integers are exact");
        let moved = convert::json_into_struct(map.clone());
        assert_eq!(cloned, moved, "record {i}");
        assert_eq!(cloned, checked, "record {i}");
        // Text straight to Struct, fresh and reused, agree with the DOM path.
        let text = convert::struct_from_json_str(line).expect("record parses");
        assert_eq!(text, cloned, "record {i}");
        convert::struct_from_json_str_into(line, &mut reused).expect("record parses");
        assert_eq!(reused, cloned, "record {i}");
        // Reads round-trip to the parsed line (integers stay integers).
        let dom = Value::Object(map);
        assert_eq!(convert::struct_to_json(&cloned), dom, "record {i}");
        let mut out = Vec::new();
        convert::write_struct_json(&cloned, &mut out);
        let back: Value = serde_json::from_slice(&out).expect("written JSON parses");
        assert_eq!(back, dom, "record {i}");
        assert_eq!(convert::struct_into_json(moved), dom, "record {i}");
        // The Value entry points agree with the Struct ones.
        let v = convert::json_to_prost_value(&dom);
        assert_eq!(v, convert::json_into_prost_value(dom.clone()));
        assert_eq!(convert::prost_value_to_json(&v), dom);
    }
}

#[test]
fn batch_write_paths_equal_the_per_record_ones_on_the_sample() {
    let maps: Vec<Map<String, Value>> = sample().records.iter().map(|l| object(l)).collect();
    let one_by_one: Vec<Struct> = maps.iter().map(convert::json_to_struct).collect();
    assert_eq!(convert::json_to_structs(&maps), one_by_one);
    assert_eq!(convert::json_into_structs(maps), one_by_one);
}

#[test]
fn every_sample_dispatch_line_parses() {
    let sample = sample();
    let mut with_params = 0;
    for line in &sample.sql {
        let d = convert::parse_sql_dispatch(line).expect("sql line parses");
        let dom = object(line);
        assert_eq!(Some(&Value::String(d.sql.clone())), dom.get("sql"));
        let params = dom.get("params").or(dom.get("parameters"));
        match params {
            Some(Value::Array(p)) => {
                assert_eq!(&d.params, p);
                with_params += 1;
            }
            _ => assert!(d.params.is_empty()),
        }
    }
    assert!(with_params > 6000);

    let mut decoded = 0usize;
    for line in &sample.object {
        let d = convert::parse_object_dispatch(line).expect("object line parses");
        let dom = object(line);
        let bucket = dom.get("bucket").or(dom.get("container"));
        assert_eq!(bucket, Some(&Value::String(d.bucket.clone())));
        let key = dom.get("key").or(dom.get("object"));
        assert_eq!(key, Some(&Value::String(d.object.clone())));
        let payload = d.payload.expect("every sample line has a payload");
        let bytes = convert::object_bytes_from_json(&payload).expect("payload decodes");
        assert_eq!(bytes.len(), bytes.capacity());
        decoded += bytes.len();
        // A BLOB cell of the bytes decodes back to them.
        let cell = convert::base64_cell(&bytes);
        assert_eq!(
            convert::base64_cell_bytes(&cell).as_deref(),
            Some(&bytes[..])
        );
    }
    assert!(decoded > 4000 * 64);

    for line in &sample.rest {
        let moved = convert::parse_rest_dispatch_value(line).expect("rest line parses");
        let dom: Value = serde_json::from_str(line).expect("json");
        assert_eq!(moved.body, dom.get("body").cloned().unwrap_or(Value::Null));
        let raw = convert::parse_rest_dispatch(line).expect("rest line parses");
        assert_eq!((raw.method, &raw.path), (moved.method, &moved.path));
        assert_eq!(raw.body_value().expect("raw body parses"), moved.body);
        assert_eq!(
            convert::RestDispatch::from_json(dom).expect("dom parses"),
            moved
        );
    }
}
