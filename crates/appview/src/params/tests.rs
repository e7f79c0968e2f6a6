use proptest::prelude::*;
use serde_json::Value;

use super::*;

fn float(x: f64) -> String {
    let mut s = String::new();
    push_float(&mut s, x);
    s
}

fn pairs(p: &[(&str, &str)]) -> Params {
    p.iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn floats_are_written_as_python_repr_writes_them() {
    // Python 3: repr() of each left-hand value.
    for (x, py) in [
        (1.0, "1.0"),
        (0.1, "0.1"),
        (-2.5, "-2.5"),
        (-0.0, "-0.0"),
        (0.0, "0.0"),
        (123.456, "123.456"),
        (1e15, "1000000000000000.0"),
        (1e16, "1e+16"),
        (12345678901234567.0, "1.2345678901234568e+16"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (1.5e-7, "1.5e-07"),
        (1.5e300, "1.5e+300"),
        (5e-324, "5e-324"),
        (f64::MAX, "1.7976931348623157e+308"),
    ] {
        assert_eq!(float(x), py, "{x:?}");
    }
}

#[test]
fn values_keep_their_order_and_python_text() {
    let p = parse_object(
        br#"{ "n": 3, "x": 1e5, "flag": true, "items": [1, 2.50, "a\u00e9\b", null],
              "cfg": {"z": {"deep": [ ]}, "a": -7}, "none": null, "s": "t\"\\" }"#,
    )
    .unwrap();
    assert_eq!(
        p,
        pairs(&[
            ("n", "3"),
            ("x", "100000.0"),
            ("flag", "true"),
            ("items", "[1,2.5,\"aé\\b\",null]"),
            ("cfg", "{\"z\":{\"deep\":[]},\"a\":-7}"),
            ("none", "null"),
            ("s", "\"t\\\"\\\\\""),
        ])
    );
    assert_eq!(
        object_text(&p),
        r#"{"n":3,"x":100000.0,"flag":true,"items":[1,2.5,"aé\b",null],"cfg":{"z":{"deep":[]},"a":-7},"none":null,"s":"t\"\\"}"#
    );
}

#[test]
fn integers_keep_their_digits_at_any_size() {
    // What Python's int writes: 10**20, -(2**70), and -0 read as 0.
    let p = parse_object(
        br#"{"a":100000000000000000000,"b":-1180591620717411303424,"c":-0,"d":-0.0,"e":1E2}"#,
    )
    .unwrap();
    assert_eq!(
        p,
        pairs(&[
            ("a", "100000000000000000000"),
            ("b", "-1180591620717411303424"),
            ("c", "0"),
            ("d", "-0.0"),
            ("e", "100.0"),
        ])
    );
    for bad in [
        &br#"{"a":01}"#[..],
        br#"{"a":1.}"#,
        br#"{"a":-}"#,
        br#"{"a":1e}"#,
        br#"{"a":1e400}"#,
        br#"{"a":"\ud800"}"#,
        br#"{"a":"\u+123"}"#,
    ] {
        assert!(
            matches!(parse_object(bad), Err(ParamsError::Json(_))),
            "{}",
            String::from_utf8_lossy(bad)
        );
    }
}

#[test]
fn a_repeated_key_keeps_its_first_place_and_last_value() {
    assert_eq!(
        parse_object(br#"{"a":1,"b":{"k":1,"j":2,"k":3},"a":4}"#).unwrap(),
        pairs(&[("a", "4"), ("b", "{\"k\":3,\"j\":2}")])
    );
}

#[test]
fn a_body_gives_its_parameters_member() {
    let got = from_body(br#"{"flow_id":"x","parameters":{"b":[1,{"c":2}],"a":1.0},"tags":[]}"#);
    assert_eq!(
        got,
        Ok(Some(pairs(&[("b", "[1,{\"c\":2}]"), ("a", "1.0")])))
    );
    assert_eq!(from_body(br#"{"flow_id":"x"}"#), Ok(None));
    assert_eq!(from_body(br#"{"parameters":null}"#), Ok(None));
    assert_eq!(from_body(br#"{"parameters":[1]}"#), Ok(None));
    assert_eq!(from_body(b"[]"), Ok(None));
    assert!(matches!(from_body(b"{"), Err(ParamsError::Json(_))));
    assert!(matches!(parse_object(b"[1]"), Err(ParamsError::Json(_))));
    assert!(matches!(parse_object(b"{} x"), Err(ParamsError::Json(_))));
}

#[test]
fn depth_and_size_are_bounded() {
    let nested = |n: usize| format!("{{\"a\":{}1{}}}", "[".repeat(n), "]".repeat(n));
    assert!(parse_object(nested(MAX_DEPTH - 1).as_bytes()).is_ok());
    assert_eq!(
        parse_object(nested(MAX_DEPTH).as_bytes()),
        Err(ParamsError::TooDeep)
    );
    let big = format!("{{\"a\":\"{}\"}}", "x".repeat(MAX_BYTES));
    assert_eq!(parse_object(big.as_bytes()), Err(ParamsError::TooLarge));
    let body = format!("{{\"parameters\":{big}}}");
    assert_eq!(from_body(body.as_bytes()), Err(ParamsError::TooLarge));
    // The bound is the text's length, exactly.
    let at = |n: usize| format!("{{\"a\":\"{}\"}}", "x".repeat(n - r#"{"a":""}"#.len()));
    let fits = parse_object(at(MAX_BYTES).as_bytes()).unwrap();
    assert_eq!(object_text(&fits).len(), MAX_BYTES);
    assert_eq!(
        parse_object(at(MAX_BYTES + 1).as_bytes()),
        Err(ParamsError::TooLarge)
    );
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |x| x.is_finite())
            .prop_map(Value::from),
        "\\PC{0,8}|[\\x00-\\x1f\"\\\\é]{0,6}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 5, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z]{0,3}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn floats_read_back_as_themselves(x in any::<f64>().prop_filter("finite", |x| x.is_finite())) {
        let s = float(x);
        let back: f64 = s.parse().unwrap();
        prop_assert_eq!(back.to_bits(), x.to_bits(), "{}", s);
    }

    #[test]
    fn parameters_round_trip_as_values_and_as_text(
        kv in proptest::collection::vec(("\\PC{0,6}", arb_json()), 0..5)
    ) {
        // Sent as a client writes it (serde_json's text, keys in order).
        let mut sent = String::from("{");
        for (i, (k, v)) in kv.iter().enumerate() {
            if i > 0 { sent.push(','); }
            sent.push_str(&serde_json::to_string(k).unwrap());
            sent.push(':');
            sent.push_str(&serde_json::to_string(v).unwrap());
        }
        sent.push('}');
        let p = parse_object(sent.as_bytes()).unwrap();
        // The same values (serde_json's tree forgets the order).
        let a: Value = serde_json::from_str(&sent).unwrap();
        let b: Value = serde_json::from_str(&object_text(&p)).unwrap();
        prop_assert_eq!(a, b);
        // Keys in the order first sent, each once.
        let mut keys: Vec<&str> = Vec::new();
        for (k, _) in &kv {
            if !keys.contains(&k.as_str()) { keys.push(k); }
        }
        let distinct = keys.len() == kv.len();
        prop_assert_eq!(p.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), keys);
        // The text is a fixed point: what a record or column holds reads
        // back as the same pairs.
        prop_assert_eq!(parse_object(object_text(&p).as_bytes()).unwrap(), p.clone());
        // The bound counts the text's bytes (no key repeats: nested
        // objects are maps, and `keys` are the top's distinct ones).
        if distinct {
            let (_, counted) = parse_counted(sent.as_bytes()).unwrap();
            prop_assert_eq!(counted, object_text(&p).len());
        }
    }

    #[test]
    fn the_grammar_is_serde_jsons(
        kv in proptest::collection::vec(("\\PC{0,4}", arb_json()), 0..4),
        at in any::<prop::sample::Index>(),
        byte in prop_oneof![Just(b'"'), Just(b'\\'), Just(b','), Just(b'}'), Just(b'e'), Just(b'.'), Just(b'-'), Just(b' '), any::<u8>()],
    ) {
        // A client's text, one byte changed: read here exactly when
        // serde_json reads it as an object.
        let value = Value::Object(kv.into_iter().collect());
        let mut text = serde_json::to_vec(&value).unwrap();
        let i = at.index(text.len());
        text[i] = byte;
        let theirs = serde_json::from_slice::<serde_json::Map<String, Value>>(&text).is_ok();
        prop_assert_eq!(parse_object(&text).is_ok(), theirs, "{}", String::from_utf8_lossy(&text));
    }

    #[test]
    fn any_bytes_parse_or_refuse_without_panicking(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        let _ = parse_object(&bytes);
        let _ = from_body(&bytes);
    }

    #[test]
    fn strings_read_back_as_themselves(s in "\\PC{0,12}|[\\x00-\\x1f\"\\\\]{0,6}") {
        let back: String = serde_json::from_str(&string_value(&s)).unwrap();
        prop_assert_eq!(back, s);
    }
}
