//! The object-line scanner against its references: the serde visitor (the
//! fallback, which must agree with every line the scanner accepts) and a
//! DOM-based reading of valid lines; on generated lines (aliases, escapes,
//! whitespace, unknown fields of every JSON kind, wrong types, repeats),
//! mutated datagen lines and random bytes. Nothing may panic.

use proptest::prelude::*;
use serde_json::Value;

use super::object::{parse_object_visitor, scan_object};
use super::*;

/// What the scanner and the public parser return for `line`, checked
/// against the visitor: an accepted line parses to the same request, and
/// the public result is the visitor's (same request or same error).
fn check_line(line: &str) -> Option<ObjectDispatch> {
    let fast = scan_object(line);
    let reference = parse_object_visitor(line);
    if let Some(d) = &fast {
        assert_eq!(
            reference.as_ref().ok(),
            Some(d),
            "scanner accepted {line:?}"
        );
    }
    match (parse_object_dispatch(line), reference) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "{line:?}"),
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{line:?}"),
        (a, b) => panic!("{line:?}: public {a:?} vs visitor {b:?}"),
    }
    fast
}

/// The request of a valid line read from its DOM (no repeated fields).
fn dom_reference(line: &str) -> Option<ObjectDispatch> {
    let Ok(Value::Object(map)) = serde_json::from_str::<Value>(line) else {
        return None;
    };
    let text = |names: &[&str]| -> Option<Option<String>> {
        let mut found = names.iter().filter_map(|n| map.get(*n));
        let v = found.next();
        if found.next().is_some() {
            return None;
        }
        match v {
            None => Some(None),
            Some(Value::String(s)) => Some(Some(s.clone())),
            Some(_) => None,
        }
    };
    let op = ObjectOp::parse(&text(&["op"])??)?;
    let bucket = text(&["bucket", "container"])??;
    let object = text(&["key", "object"])??;
    let content_type = match map.get("content_type") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return None,
    };
    let fields = [
        ("data_base64", PayloadEncoding::Base64),
        ("content_base64", PayloadEncoding::Base64),
        ("data_text", PayloadEncoding::Text),
        ("content_text", PayloadEncoding::Text),
    ];
    let mut payloads = fields.iter().filter(|(n, _)| map.contains_key(*n));
    let payload = match (payloads.next(), payloads.next()) {
        (None, _) => None,
        (Some(&(field, encoding)), None) => Some(InlinePayload {
            field,
            encoding,
            data: map.get(field)?.as_str()?.to_owned(),
        }),
        (Some(_), Some(_)) => return None,
    };
    if bucket.trim().is_empty() || object.trim().is_empty() || (op.writes() && payload.is_none()) {
        return None;
    }
    Some(ObjectDispatch {
        op,
        bucket,
        object,
        content_type,
        payload,
    })
}

/// `s` as a JSON string literal; `mode` 0 escapes minimally, 1 escapes
/// every character as `\uXXXX` (surrogate pairs past the BMP), 2 every
/// other one, 3 uses the short escapes where there are some.
fn quote(s: &str, mode: u8) -> String {
    let mut out = String::from("\"");
    for (i, c) in s.chars().enumerate() {
        let unicode = mode == 1 || (mode == 2 && i % 2 == 0);
        match c {
            _ if unicode => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '/' if mode == 3 => out.push_str("\\/"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn ws() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => Just(String::new()),
        1 => "[ \t\r\n]{1,3}",
    ]
}

/// A field name: every canonical name and alias, and unknown ones.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec![
            "op", "bucket", "container", "key", "object", "content_type", "data_base64",
            "content_base64", "data_text", "content_text",
        ])
        .prop_map(str::to_owned),
        1 => "[a-z_]{1,8}",
    ]
}

/// Any JSON value as text, nested a little.
fn any_json() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("null".to_owned()),
        Just("true".to_owned()),
        Just("false".to_owned()),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| Value::from(f).to_string()),
        (".{0,10}", 0u8..4).prop_map(|(s, m)| quote(&s, m)),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
            prop::collection::vec((".{0,6}", inner), 0..4).prop_map(|v| {
                let fields: Vec<String> = v
                    .into_iter()
                    .map(|(k, v)| format!("{}:{v}", quote(&k, 0)))
                    .collect();
                format!("{{{}}}", fields.join(","))
            }),
        ]
    })
}

/// The value of a field: mostly a string (an op name, blank, base64-ish,
/// anything), sometimes another JSON value.
fn field_value() -> impl Strategy<Value = String> {
    let text = prop_oneof![
        prop::sample::select(vec![
            "put", "upsert", "append", "get", "delete", "head", "list", "PUT", "copy"
        ])
        .prop_map(str::to_owned),
        Just(" \t".to_owned()),
        "[A-Za-z0-9+/]{0,80}={0,2}",
        ".{0,16}",
    ];
    prop_oneof![
        6 => (text, 0u8..4).prop_map(|(s, m)| quote(&s, m)),
        1 => any_json(),
    ]
}

/// An object line from its fields, with random whitespace.
fn line_of(fields: &[(String, u8, String)], pad: &[String]) -> String {
    let p = |i: usize| pad.get(i % pad.len().max(1)).map_or("", String::as_str);
    let mut line = format!("{}{{", p(0));
    for (i, (k, mode, v)) in fields.iter().enumerate() {
        if i > 0 {
            line.push(',');
        }
        line.push_str(&format!(
            "{}{}{}:{}{}",
            p(i + 1),
            quote(k, *mode),
            p(i + 2),
            p(i + 3),
            v
        ));
    }
    line.push_str(&format!("{}}}{}", p(fields.len() + 4), p(fields.len() + 5)));
    line
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Arbitrary field sets: whatever the scanner accepts, the visitor
    /// accepts with the same request, and the DOM reading agrees.
    #[test]
    fn generated_lines_agree(
        fields in prop::collection::vec((key(), 0u8..4, field_value()), 0..8),
        pad in prop::collection::vec(ws(), 1..6),
    ) {
        let line = line_of(&fields, &pad);
        if let Some(d) = check_line(&line) {
            prop_assert_eq!(dom_reference(&line), Some(d));
        }
    }

    /// Valid lines (one of each field, escapes and unknown fields of any
    /// kind included) are accepted by the scanner, with the DOM's request.
    #[test]
    fn valid_lines_take_the_fast_path(
        op in prop::sample::select(vec!["put", "upsert", "append", "get", "delete", "head", "list"]),
        bucket in ("[a-z0-9-]{1,12}|.{0,3}[a-z].{0,3}", any::<bool>()),
        object in ("[a-z0-9/._-]{1,30}|.{0,5}[a-z].{0,5}", any::<bool>()),
        content_type in prop::option::of(prop::option::of(".{0,12}")),
        payload in prop::option::of((0usize..4, "[A-Za-z0-9+/]{0,400}|.{0,40}")),
        extra in prop::collection::vec(("[a-z]{9,12}", any_json()), 0..3),
        modes in prop::collection::vec(0u8..4, 8),
        pad in prop::collection::vec(ws(), 1..6),
    ) {
        let names = ["data_base64", "content_base64", "data_text", "content_text"];
        let mut fields = vec![
            ("op".to_owned(), modes[0], quote(op, modes[1])),
            (if bucket.1 { "bucket" } else { "container" }.to_owned(), modes[2], quote(&bucket.0, modes[3])),
            (if object.1 { "key" } else { "object" }.to_owned(), modes[4], quote(&object.0, modes[5])),
        ];
        if let Some(ct) = &content_type {
            let v = ct.as_deref().map_or_else(|| "null".to_owned(), |s| quote(s, modes[6]));
            fields.push(("content_type".to_owned(), 0, v));
        }
        let has_payload = payload.is_some();
        if let Some((which, data)) = &payload {
            fields.push((names[*which].to_owned(), modes[7], quote(data, modes[7])));
        }
        for (k, v) in extra {
            fields.push((k, 0, v));
        }
        // Rotate so the fields come in varying orders.
        let turn = modes.iter().map(|&m| usize::from(m)).sum::<usize>() % fields.len();
        fields.rotate_left(turn);
        let line = line_of(&fields, &pad);
        let valid = !bucket.0.trim().is_empty()
            && !object.0.trim().is_empty()
            && (has_payload || !ObjectOp::parse(op).is_some_and(ObjectOp::writes));
        let fast = check_line(&line);
        if valid {
            prop_assert!(fast.is_some(), "scanner declined a valid line: {}", line);
            prop_assert_eq!(dom_reference(&line), fast);
        } else {
            prop_assert_eq!(fast, None);
        }
    }

    /// Arbitrary text never panics and never makes the scanner disagree.
    #[test]
    fn arbitrary_text_agrees(line in ".{0,64}") {
        check_line(&line);
    }
}

#[path = "../../tests/support/rng.rs"]
mod rng;
use rng::Rng;

#[test]
fn datagen_lines_take_the_fast_path() {
    let lines = datagen::hotpath::lines(datagen::hotpath::Kind::ObjectDispatch, 2000);
    for line in &lines {
        let fast = check_line(line);
        assert!(fast.is_some(), "scanner declined a sample line: {line}");
        assert_eq!(dom_reference(line), fast);
    }
}

#[test]
fn mutated_and_random_lines_agree() {
    const SPECIAL: &[u8] = b"{}[]\":,\\ntfelu-+.0123456789 \t\x00\x1f\xff=/";
    let mut rng = Rng(0x0b1e_c7ed_5ca1_ab1e);
    let lines = datagen::hotpath::lines(datagen::hotpath::Kind::ObjectDispatch, 400);
    for line in &lines {
        for _ in 0..16 {
            // Mostly near the small fields at the start, sometimes anywhere.
            let bytes = rng.mutate(line, SPECIAL, 3, Some(160));
            check_line(&String::from_utf8_lossy(&bytes));
        }
    }
    for _ in 0..4000 {
        let len = rng.below(96);
        check_line(&String::from_utf8_lossy(&rng.noise(len, SPECIAL)));
        check_line(&String::from_utf8_lossy(&rng.bytes(len)));
    }
}

#[test]
fn declined_lines_get_the_visitors_typed_errors() {
    for (line, field) in [
        (r#"{"op":"put","bucket":"b","key":"k"}"#, "data_base64"),
        (
            r#"{"op":"put","bucket":" ","key":"k","data_text":"x"}"#,
            "bucket",
        ),
        (
            r#"{"op":"get","bucket":"b","container":"c","key":"k"}"#,
            "bucket",
        ),
        (r#"{"op":"get","bucket":"b","key":5}"#, "key"),
        (r#"{"op":"zap","bucket":"b","key":"k"}"#, "op"),
        (
            r#"{"op":"get","bucket":"b","key":"k","content_type":1}"#,
            "content_type",
        ),
        (r#"{"op":"get","bucket":"b","key":"\ud800"}"#, "key"),
    ] {
        assert_eq!(scan_object(line), None, "{line}");
        let e = parse_object_dispatch(line).expect_err(line);
        assert!(e.to_string().contains(field), "{line}: {e}");
    }
    for line in [
        r#"{"op":"get","bucket":"b","key":"k",}"#,
        r#"{"op":"get","bucket":"b","key":"k"} x"#,
        r#"{"op":"get","bucket":"b","key":"k","x":01}"#,
        "{\"op\":\"get\",\"bucket\":\"b\",\"key\":\"k\u{1}\"}",
    ] {
        assert_eq!(scan_object(line), None, "{line}");
        assert!(matches!(
            parse_object_dispatch(line),
            Err(DispatchError::Syntax(_) | DispatchError::InvalidField { .. })
        ));
    }
    // Escaped keys and values are read, not declined.
    let line = r#"{"\u006fp":"g\u0065t","bucket":"b\/c","key":"\ud83e\udd80"}"#;
    let d = scan_object(line).expect("escapes are handled");
    assert_eq!(
        (d.op, d.bucket.as_str(), d.object.as_str()),
        (ObjectOp::Get, "b/c", "🦀")
    );
}
