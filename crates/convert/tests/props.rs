//! Property tests: the conversions agree with each other on arbitrary JSON,
//! the checked paths report exactly the inexact integers, the merge keeps
//! its rules, record sets are valid JSON, and no parser panics on arbitrary
//! text.

use convert::{Cell, Context, RecordSetMode};
use proptest::prelude::*;
use serde_json::{Map, Number, Value};

fn number() -> impl Strategy<Value = Number> {
    prop_oneof![
        (-(1i64 << 53)..=(1i64 << 53)).prop_map(Number::from),
        any::<i64>().prop_map(Number::from),
        any::<u64>().prop_map(Number::from),
        // serde_json's default float parser (no `float_roundtrip`) is not
        // correctly rounded for every text; keep the floats it reads back
        // exactly, so the properties test this crate, not that parser.
        any::<f64>()
            .prop_filter("finite, read back exactly by serde_json", |f| {
                f.is_finite()
                    && serde_json::from_str::<f64>(&Value::from(*f).to_string()).ok() == Some(*f)
            })
            .prop_map(|f| Number::from_f64(f).unwrap_or_else(|| Number::from(0))),
    ]
}

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number().prop_map(Value::Number),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(".{0,8}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn json_object() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map(".{0,8}", json(), 0..8).prop_map(|m| m.into_iter().collect())
}

/// Whether every integer in `v` survives an f64.
fn all_exact(v: &Value) -> bool {
    match v {
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => (i as f64) as i128 == i128::from(i),
            (None, Some(u)) => (u as f64) as i128 == i128::from(u),
            _ => true,
        },
        Value::Array(items) => items.iter().all(all_exact),
        Value::Object(map) => map.values().all(all_exact),
        _ => true,
    }
}

/// Equal, numbers within a relative 1e-15 (serde_json's default float
/// parser is not correctly rounded for every text it reads back).
fn approx_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
            x == y || (x - y).abs() <= 1e-15 * x.abs().max(y.abs())
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| approx_eq(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((kx, x), (ky, y))| kx == ky && approx_eq(x, y))
        }
        _ => a == b,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn batch_write_paths_agree(maps in proptest::collection::vec(json_object(), 0..12)) {
        let one_by_one: Vec<_> = maps.iter().map(convert::json_to_struct).collect();
        prop_assert_eq!(&convert::json_to_structs(&maps), &one_by_one);
        prop_assert_eq!(&convert::json_into_structs(maps), &one_by_one);
    }

    #[test]
    fn write_paths_agree(map in json_object()) {
        let cloned = convert::json_to_struct(&map);
        prop_assert_eq!(&cloned, &convert::json_into_struct(map.clone()));
        let whole = Value::Object(map.clone());
        let checked = convert::json_to_struct_checked(&map);
        prop_assert_eq!(checked.is_ok(), all_exact(&whole));
        prop_assert_eq!(checked.is_ok(), convert::json_into_struct_checked(map.clone()).is_ok());
        prop_assert_eq!(convert::json_to_prost_value_checked(&whole).is_ok(), all_exact(&whole));
        if let Ok(s) = checked {
            prop_assert_eq!(&s, &cloned);
            // The text path agrees with the DOM path.
            let text = serde_json::to_string(&whole).unwrap_or_default();
            let parsed = convert::struct_from_json_str(&text);
            prop_assert!(parsed.is_ok(), "{:?}", parsed);
            prop_assert_eq!(parsed.ok(), Some(s));
        } else {
            let text = serde_json::to_string(&whole).unwrap_or_default();
            prop_assert!(matches!(convert::struct_from_json_str(&text), Err(convert::TextError::PrecisionLoss(_))));
        }
    }

    #[test]
    fn reads_are_stable(map in json_object()) {
        // JSON -> Struct -> JSON -> Struct is a fixed point on the protobuf side.
        let s = convert::json_to_struct(&map);
        let back = convert::struct_to_json(&s);
        let again = back.as_object().map(convert::json_to_struct).unwrap_or_default();
        prop_assert_eq!(&again, &s);
        let mut out = Vec::new();
        convert::write_struct_json(&s, &mut out);
        let from_text: Value = serde_json::from_slice(&out).unwrap_or(Value::Null);
        prop_assert!(approx_eq(&from_text, &back), "{} vs {}", from_text, back);
        prop_assert_eq!(convert::struct_into_json(s), back);
    }

    #[test]
    fn reuse_equals_fresh(a in json_object(), b in json_object()) {
        let text_a = serde_json::to_string(&a).unwrap_or_default();
        let text_b = serde_json::to_string(&b).unwrap_or_default();
        let mut reused = convert::struct_from_json_str(&text_a).unwrap_or_default();
        let r = convert::struct_from_json_str_into(&text_b, &mut reused);
        if r.is_ok() {
            prop_assert_eq!(Some(reused), convert::struct_from_json_str(&text_b).ok());
        }
    }

    #[test]
    fn parsers_never_panic_on_text(text in ".{0,200}") {
        let _ = convert::parse_sql_dispatch(&text);
        let _ = convert::parse_object_dispatch(&text);
        let _ = convert::parse_rest_dispatch(&text);
        let _ = convert::parse_rest_dispatch_value(&text);
        let _ = convert::struct_from_json_str(&text);
    }

    #[test]
    fn parsers_never_panic_on_near_miss_objects(
        keys in prop::collection::vec(prop::sample::select(vec![
            "sql", "params", "parameters", "op", "bucket", "container", "key", "object",
            "content_type", "data_base64", "content_base64", "data_text", "content_text",
            "path", "method", "body", "other",
        ]), 0..6),
        values in prop::collection::vec(json(), 6),
    ) {
        let mut map = Map::new();
        for (k, v) in keys.iter().zip(values) {
            map.insert((*k).to_owned(), v);
        }
        let line = Value::Object(map).to_string();
        let _ = convert::parse_sql_dispatch(&line);
        if let Ok(d) = convert::parse_object_dispatch(&line)
            && let Some(p) = d.payload
        {
            let _ = convert::object_bytes_from_json(&p);
        }
        let moved = convert::parse_rest_dispatch_value(&line);
        let raw = convert::parse_rest_dispatch(&line);
        prop_assert_eq!(moved.is_ok(), raw.is_ok());
        if let (Ok(m), Ok(r)) = (&moved, &raw) {
            prop_assert_eq!(&r.body_value().ok(), &Some(m.body.clone()));
        }
        let dom: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
        let from_dom = convert::RestDispatch::from_json(dom);
        prop_assert_eq!(moved.ok(), from_dom.ok());
    }

    #[test]
    fn merge_rules_hold(
        wire_user in "[ a-z]{0,4}", auth_user in "[a-z]{0,4}",
        wire_lag in 0u64..3, auth_lag in 0u64..3,
        wire_flags in any::<(bool, bool)>(), auth_flags in any::<(bool, bool)>(),
        wire_scopes in prop::collection::vec("[a-z]{1,3}", 0..3),
    ) {
        let auth = Context {
            tenant: "t".into(), project: "p".into(), decision_id: "d".into(),
            user: auth_user.clone(), max_replica_lag_ms: auth_lag,
            dry_run: auth_flags.0, trace: auth_flags.1,
            scopes: vec!["auth".to_owned()].into(),
            ..Context::default()
        };
        let wire = Context {
            tenant: "evil".into(), project: "evil".into(), catalog_version: 9,
            user: wire_user.clone(), max_replica_lag_ms: wire_lag,
            dry_run: wire_flags.0, trace: wire_flags.1,
            scopes: wire_scopes.clone().into(),
            ..Context::default()
        };
        let m = convert::merge_context(wire, &auth);
        prop_assert_eq!(&*m.tenant, "t");
        prop_assert_eq!(&*m.project, "p");
        prop_assert_eq!(m.catalog_version, 0);
        let expect_user = if wire_user.trim().is_empty() { auth_user } else { wire_user.trim().to_owned() };
        prop_assert_eq!(m.user, expect_user);
        prop_assert_eq!(m.max_replica_lag_ms, if wire_lag > 0 { wire_lag } else { auth_lag });
        prop_assert_eq!(m.dry_run, wire_flags.0 || auth_flags.0);
        prop_assert_eq!(m.trace, wire_flags.1 || auth_flags.1);
        let expect_scopes = if wire_scopes.is_empty() { vec!["auth".to_owned()] } else { wire_scopes };
        prop_assert_eq!(m.scopes.to_vec(), expect_scopes);
    }

    #[test]
    fn record_sets_are_json(
        rows in prop::collection::vec(prop::collection::vec(prop_oneof![
            Just(Cell::Null),
            any::<i64>().prop_map(Cell::Int),
            any::<f64>().prop_map(Cell::Float),
            any::<bool>().prop_map(Cell::Bool),
            "-?[0-9]{1,20}\\.[0-9]{0,6}".prop_map(Cell::Numeric),
            ".{0,10}".prop_map(Cell::Text),
            prop::collection::vec(any::<u8>(), 0..20).prop_map(Cell::Bytes),
            any::<u128>().prop_map(Cell::Uuid),
            any::<i64>().prop_map(Cell::Timestamp),
            json().prop_map(Cell::Json),
        ], 3), 0..5),
    ) {
        let columns = vec!["a".to_owned(), "b\"".to_owned(), "c".to_owned()];
        for mode in [RecordSetMode::JsonOnly, RecordSetMode::JsonAndRows] {
            match convert::rows_to_record_set(&columns, &rows, mode) {
                Ok(set) => {
                    prop_assert_eq!(set.records.len(), rows.len());
                    for record in &set.records {
                        let v: Value = serde_json::from_str(record).unwrap_or(Value::Null);
                        prop_assert_eq!(v.as_object().map(|m| m.len()), Some(3));
                    }
                    if mode == RecordSetMode::JsonAndRows {
                        prop_assert_eq!(set.rows.len(), rows.len());
                        prop_assert!(set.rows.iter().all(|r| r.values.len() == 3));
                    }
                }
                Err(e) => prop_assert!(!e.to_string().is_empty()),
            }
        }
    }
}
