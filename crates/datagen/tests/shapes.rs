//! The generated lines have the shapes and sizes `docs/design/hotpath.md` asks for.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use datagen::hotpath::{Kind, lines};
use serde_json::{Map, Value};

fn parsed(kind: Kind, count: usize) -> Vec<Map<String, Value>> {
    lines(kind, count)
        .iter()
        .map(|l| match serde_json::from_str(l) {
            Ok(Value::Object(map)) => map,
            other => panic!("{kind:?} line is not a JSON object: {other:?}: {l}"),
        })
        .collect()
}

fn b64_len(v: &Value) -> usize {
    let text = v.as_str().expect("base64 field is a string");
    STANDARD.decode(text).expect("padded standard base64").len()
}

fn mean_len(kind: Kind, count: usize) -> f64 {
    let ls = lines(kind, count);
    ls.iter().map(|l| l.len() + 1).sum::<usize>() as f64 / ls.len() as f64
}

#[test]
fn average_line_sizes_match_the_spec() {
    for (kind, count, want) in [
        (Kind::Records, 4000, 550.0),
        (Kind::ObjectDispatch, 2000, 2900.0),
        (Kind::SqlDispatch, 4000, 146.0),
        (Kind::RestDispatch, 4000, 265.0),
    ] {
        let got = mean_len(kind, count);
        assert!(
            (got - want).abs() <= want * 0.15,
            "{kind:?}: mean line {got:.1} B, spec ~{want} B (±15 %)"
        );
    }
}

#[test]
fn records_touch_every_value_kind() {
    let rows = parsed(Kind::Records, 2000);
    let (mut nulls, mut trues, mut falses, mut empty_tags, mut negative) = (0, 0, 0, 0, 0);
    for (i, r) in rows.iter().enumerate() {
        let id = r["id"].as_str().unwrap();
        assert!(
            id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()),
            "{id}"
        );
        assert!(r["tenant"].as_str().unwrap().starts_with("tenant-"));
        assert!(r["project"].is_string());
        assert_eq!(r["seq"].as_u64(), Some(1_000_000 + i as u64));
        let score = r["score"].as_f64().unwrap();
        assert!(r["score"].is_f64() && (0.0..=100.0).contains(&score));
        let ratio = r["ratio"].as_f64().unwrap();
        assert!(r["ratio"].is_f64() && (0.0..=1.0).contains(&ratio));
        assert!(r["active"].is_boolean());
        match &r["flagged"] {
            Value::Null => nulls += 1,
            Value::Bool(true) => trues += 1,
            Value::Bool(false) => falses += 1,
            other => panic!("flagged is {other}"),
        }
        let tags = r["tags"].as_array().unwrap();
        assert!(tags.len() <= 5 && tags.iter().all(Value::is_string));
        empty_tags += usize::from(tags.is_empty());
        let counts = r["counts"].as_object().unwrap();
        assert_eq!(counts.len(), 5);
        assert!(counts.values().all(|v| v.is_i64()));
        negative += usize::from(counts["delta"].as_i64().unwrap() < 0);
        let source = r["metadata"]["source"].as_object().unwrap();
        assert!(source["kind"].is_string() && source["region"].is_string());
        assert!(r["metadata"]["client"]["version"].is_string());
        assert!(!r["note"].as_str().unwrap().is_empty());
        assert!((8..=96).contains(&b64_len(&r["payload_b64"])));
        let ts = r["created_at"].as_str().unwrap();
        assert!(
            ts.len() == 24 && ts.ends_with('Z') && ts.as_bytes()[10] == b'T',
            "{ts}"
        );
        assert!(("2026-03-04".."2026-06-02").contains(&ts), "{ts}");
        assert_eq!(r.len(), 14, "unexpected field set: {:?}", r.keys());
    }
    assert!(
        nulls > 500 && trues > 200 && falses > 500,
        "{nulls}/{trues}/{falses}"
    );
    assert!(empty_tags > 100 && negative > 500);
}

#[test]
fn object_dispatch_mixes_aliases_and_carries_inline_payloads() {
    let rows = parsed(Kind::ObjectDispatch, 2000);
    let mut fields = std::collections::BTreeMap::<&str, usize>::new();
    let mut no_content_type = 0;
    for r in &rows {
        let op = r["op"].as_str().unwrap();
        assert!(
            ["put", "upsert", "append", "get", "delete"].contains(&op),
            "{op}"
        );
        assert_eq!(
            r.contains_key("bucket") as u8 + r.contains_key("container") as u8,
            1
        );
        assert_eq!(
            r.contains_key("key") as u8 + r.contains_key("object") as u8,
            1
        );
        no_content_type += usize::from(!r.contains_key("content_type"));
        let payload: Vec<&str> = ["data_base64", "content_base64", "data_text", "content_text"]
            .into_iter()
            .filter(|f| r.contains_key(*f))
            .collect();
        assert_eq!(payload.len(), 1, "{r:?}");
        let field = payload[0];
        *fields.entry(field).or_default() += 1;
        if field.ends_with("base64") {
            assert!((64..=4096).contains(&b64_len(&r[field])));
        } else {
            assert!(r[field].as_str().unwrap().len() >= 64);
        }
    }
    assert_eq!(fields.len(), 4, "every alias appears: {fields:?}");
    assert!(
        fields["data_base64"] > 1000,
        "mostly data_base64: {fields:?}"
    );
    assert!((200..800).contains(&no_content_type), "{no_content_type}");
}

#[test]
fn blobs_cycle_through_the_four_sizes() {
    let rows = parsed(Kind::Blobs, 8);
    for (i, r) in rows.iter().enumerate() {
        let size = [16, 256, 4096, 65536][i % 4];
        assert_eq!(r["size"].as_u64(), Some(size as u64));
        assert_eq!(b64_len(&r["data_base64"]), size);
        assert_eq!(r["id"].as_str().unwrap().len(), 32);
    }
}

#[test]
fn sql_dispatch_params_match_placeholders() {
    let rows = parsed(Kind::SqlDispatch, 2000);
    let (mut alias, mut missing) = (0, 0);
    for r in &rows {
        let sql = r["sql"].as_str().unwrap();
        let params = match (r.get("params"), r.get("parameters")) {
            (Some(p), None) => p.as_array().unwrap(),
            (None, Some(p)) => {
                alias += 1;
                p.as_array().unwrap()
            }
            (None, None) => {
                missing += 1;
                assert!(!sql.contains('$'), "{sql}");
                continue;
            }
            _ => panic!("both params and parameters: {r:?}"),
        };
        let highest = (1..=9)
            .filter(|n| sql.contains(&format!("${n}")))
            .max()
            .unwrap();
        assert_eq!(params.len(), highest, "{sql}");
    }
    assert!(
        (200..700).contains(&alias) && (100..400).contains(&missing),
        "{alias}/{missing}"
    );
}

#[test]
fn rest_dispatch_bodies_carry_vectors() {
    let rows = parsed(Kind::RestDispatch, 2000);
    let (mut no_method, mut no_body) = (0, 0);
    let mut dims = std::collections::BTreeSet::new();
    for r in &rows {
        assert!(r["path"].as_str().unwrap().starts_with("/v1/"));
        match r.get("method") {
            None => no_method += 1,
            Some(m) => assert!(["POST", "PUT", "PATCH", "GET"].contains(&m.as_str().unwrap())),
        }
        let Some(body) = r.get("body") else {
            no_body += 1;
            continue;
        };
        let vector = body["vector"].as_array().unwrap();
        assert!(
            vector
                .iter()
                .all(|v| v.is_f64() && v.as_f64().unwrap().abs() < 1.0)
        );
        dims.insert(vector.len());
    }
    assert_eq!(dims.into_iter().collect::<Vec<_>>(), vec![8, 16, 32]);
    assert!((200..700).contains(&no_method) && (100..400).contains(&no_body));
}
