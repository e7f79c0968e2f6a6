//! Unit tests of the three dispatch parsers: shapes, aliases, defaults and
//! one typed error per fault.

use serde_json::json;

use super::rest::parse_rest_dispatch_clone_body;
use super::*;

/// A line and the check its error must pass.
type Case = (&'static str, fn(&DispatchError) -> bool);

fn err<T: std::fmt::Debug>(r: Result<T, DispatchError>) -> DispatchError {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e,
    }
}

#[test]
fn sql_lines() {
    let d = parse_sql_dispatch(r#"{"sql":"SELECT $1","params":[1,"a",null]}"#).unwrap();
    assert_eq!(d.sql, "SELECT $1");
    assert_eq!(d.params, vec![json!(1), json!("a"), json!(null)]);
    let d = parse_sql_dispatch(r#"{"parameters":[true],"sql":"x","extra":{"a":[1]}}"#).unwrap();
    assert_eq!(d.params, vec![json!(true)]);
    assert!(
        parse_sql_dispatch(r#"{"sql":"x"}"#)
            .unwrap()
            .params
            .is_empty()
    );
    assert!(
        parse_sql_dispatch(r#"{"sql":"x","params":null}"#)
            .unwrap()
            .params
            .is_empty()
    );

    assert!(matches!(
        err(parse_sql_dispatch(r#"{"params":[]}"#)),
        DispatchError::MissingField { field: "sql" }
    ));
    assert!(matches!(
        err(parse_sql_dispatch(r#"{"sql":5}"#)),
        DispatchError::InvalidField { field: "sql", .. }
    ));
    assert!(matches!(
        err(parse_sql_dispatch(r#"{"sql":"  "}"#)),
        DispatchError::InvalidField { field: "sql", .. }
    ));
    assert!(matches!(
        err(parse_sql_dispatch(r#"{"sql":"x","params":{}}"#)),
        DispatchError::InvalidField {
            field: "params",
            ..
        }
    ));
    assert!(matches!(
        err(parse_sql_dispatch(
            r#"{"sql":"x","params":[],"parameters":[]}"#
        )),
        DispatchError::DuplicateField { field: "params" }
    ));
    assert!(matches!(
        err(parse_sql_dispatch("[]")),
        DispatchError::NotAnObject
    ));
    assert!(matches!(
        err(parse_sql_dispatch("7")),
        DispatchError::NotAnObject
    ));
    assert!(matches!(
        err(parse_sql_dispatch(r#"{"sql":"x""#)),
        DispatchError::Syntax(_)
    ));
    assert!(matches!(
        err(parse_sql_dispatch(r#"{"sql":"x"} {}"#)),
        DispatchError::Syntax(_)
    ));
    assert!(matches!(
        err(parse_sql_dispatch("")),
        DispatchError::Syntax(_)
    ));
}

#[test]
fn object_lines() {
    let d = parse_object_dispatch(
        r#"{"op":"put","container":"b","object":"k/1","content_type":"image/png","content_base64":"aGkh"}"#,
    )
    .unwrap();
    assert_eq!(d.op, ObjectOp::Put);
    assert_eq!((d.bucket.as_str(), d.object.as_str()), ("b", "k/1"));
    assert_eq!(d.content_type.as_deref(), Some("image/png"));
    let payload = d.payload.unwrap();
    assert_eq!(payload.field, "content_base64");
    assert_eq!(object_bytes_from_json(&payload).unwrap(), b"hi!");
    let d = parse_object_dispatch(r#"{"op":"append","bucket":"b","key":"k","data_text":"a\"b"}"#)
        .unwrap();
    assert_eq!(d.content_type, None);
    assert_eq!(
        object_bytes_from_json(&d.payload.unwrap()).unwrap(),
        b"a\"b"
    );
    let d = parse_object_dispatch(r#"{"op":"get","bucket":"b","key":"k","content_type":null}"#)
        .unwrap();
    assert_eq!(
        (d.op, d.payload, d.content_type),
        (ObjectOp::Get, None, None)
    );

    let cases: [Case; 9] = [
        (r#"{"bucket":"b","key":"k","data_text":""}"#, |e| {
            matches!(e, DispatchError::MissingField { field: "op" })
        }),
        (r#"{"op":"zap","bucket":"b","key":"k"}"#, |e| {
            matches!(e, DispatchError::UnsupportedValue { field: "op", .. })
        }),
        (r#"{"op":"get","key":"k"}"#, |e| {
            matches!(e, DispatchError::MissingField { field: "bucket" })
        }),
        (r#"{"op":"get","bucket":"b"}"#, |e| {
            matches!(e, DispatchError::MissingField { field: "key" })
        }),
        (
            r#"{"op":"get","bucket":"b","container":"c","key":"k"}"#,
            |e| matches!(e, DispatchError::DuplicateField { field: "bucket" }),
        ),
        (r#"{"op":"put","bucket":"b","key":"k"}"#, |e| {
            matches!(
                e,
                DispatchError::MissingField {
                    field: "data_base64"
                }
            )
        }),
        (
            r#"{"op":"put","bucket":"b","key":"k","data_text":"x","content_base64":"eA=="}"#,
            |e| {
                matches!(
                    e,
                    DispatchError::DuplicateField {
                        field: "content_base64"
                    }
                )
            },
        ),
        (
            r#"{"op":"put","bucket":" ","key":"k","data_text":"x"}"#,
            |e| {
                matches!(
                    e,
                    DispatchError::InvalidField {
                        field: "bucket",
                        ..
                    }
                )
            },
        ),
        (
            r#"{"op":"put","bucket":"b","key":"k","data_base64":7}"#,
            |e| {
                matches!(
                    e,
                    DispatchError::InvalidField {
                        field: "data_base64",
                        ..
                    }
                )
            },
        ),
    ];
    for (line, check) in cases {
        let e = err(parse_object_dispatch(line));
        assert!(check(&e), "{line}: {e:?}");
    }
}

#[test]
fn object_payloads() {
    let bad = InlinePayload {
        field: "data_base64",
        encoding: PayloadEncoding::Base64,
        data: "aGk*".to_owned(),
    };
    assert!(matches!(
        err(object_bytes_from_json(&bad)),
        DispatchError::Base64 {
            field: "data_base64",
            ..
        }
    ));
    let big = InlinePayload {
        field: "content_base64",
        encoding: PayloadEncoding::Base64,
        data: codec::base64::encode(&vec![0u8; INLINE_PAYLOAD_CAP + 1]),
    };
    assert!(matches!(
        err(object_bytes_from_json(&big)),
        DispatchError::PayloadTooLarge { field: "content_base64", len, cap: INLINE_PAYLOAD_CAP } if len == INLINE_PAYLOAD_CAP + 1
    ));
    let at_cap = InlinePayload {
        field: "data_base64",
        encoding: PayloadEncoding::Base64,
        data: codec::base64::encode(&vec![7u8; INLINE_PAYLOAD_CAP]),
    };
    assert_eq!(
        object_bytes_from_json(&at_cap).unwrap().len(),
        INLINE_PAYLOAD_CAP
    );
    let text = InlinePayload {
        field: "data_text",
        encoding: PayloadEncoding::Text,
        data: "x".repeat(INLINE_PAYLOAD_CAP + 1),
    };
    assert!(matches!(
        err(object_bytes_from_json(&text)),
        DispatchError::PayloadTooLarge {
            field: "data_text",
            ..
        }
    ));
    let mut out = b"keep".to_vec();
    assert!(object_bytes_into(&bad, &mut out).is_err());
    assert_eq!(out, b"keep");
}

#[test]
fn rest_lines() {
    let line = r#"{"path":"/v1/x","body":{"k":3,"vector":[0.5,-1]}}"#;
    let d = parse_rest_dispatch_value(line).unwrap();
    assert_eq!(d.method, Method::Post);
    assert_eq!(d.path, "/v1/x");
    assert_eq!(d.body, json!({"k": 3, "vector": [0.5, -1]}));
    assert_eq!(parse_rest_dispatch_clone_body(line).unwrap(), d);
    let dom: serde_json::Value = serde_json::from_str(line).unwrap();
    assert_eq!(RestDispatch::from_json(dom).unwrap(), d);
    let raw = parse_rest_dispatch(line).unwrap();
    assert_eq!((raw.method, raw.path.as_str()), (d.method, d.path.as_str()));
    assert_eq!(raw.body.get(), r#"{"k":3,"vector":[0.5,-1]}"#);
    assert_eq!(raw.body_value().unwrap(), d.body);
    let d = parse_rest_dispatch_value(r#"{"method":"patch","path":"/a"}"#).unwrap();
    assert_eq!((d.method, d.body), (Method::Patch, serde_json::Value::Null));
    assert_eq!(
        parse_rest_dispatch(r#"{"path":"/a"}"#).unwrap().body.get(),
        "null"
    );
    assert_eq!(
        parse_rest_dispatch(r#"{"method":null,"path":"/a"}"#)
            .unwrap()
            .method,
        Method::Post
    );

    let cases: [Case; 6] = [
        (r#"{"method":"GET"}"#, |e| {
            matches!(e, DispatchError::MissingField { field: "path" })
        }),
        (r#"{"path":"v1"}"#, |e| {
            matches!(e, DispatchError::InvalidField { field: "path", .. })
        }),
        (r#"{"path":["/"]}"#, |e| {
            matches!(e, DispatchError::InvalidField { field: "path", .. })
        }),
        (r#"{"path":"/","method":"BREW"}"#, |e| {
            matches!(
                e,
                DispatchError::UnsupportedValue {
                    field: "method",
                    ..
                }
            )
        }),
        (r#"{"path":"/","method":1}"#, |e| {
            matches!(
                e,
                DispatchError::InvalidField {
                    field: "method",
                    ..
                }
            )
        }),
        (r#"{"path":"/","body":1,"body":2}"#, |e| {
            matches!(e, DispatchError::DuplicateField { field: "body" })
        }),
    ];
    for (line, check) in cases {
        let e = err(parse_rest_dispatch(line));
        assert!(check(&e), "{line}: {e:?}");
        let e = err(parse_rest_dispatch_value(line));
        assert!(check(&e), "value {line}: {e:?}");
        if !line.contains("\"body\":1,") {
            let e = err(parse_rest_dispatch_clone_body(line));
            assert!(check(&e), "clone-body {line}: {e:?}");
        }
    }
    assert!(matches!(
        err(parse_rest_dispatch("null")),
        DispatchError::NotAnObject
    ));
    assert!(matches!(
        err(parse_rest_dispatch_clone_body("null")),
        DispatchError::NotAnObject
    ));
    for bad_body in [
        r#"{"path":"/","body":{"#,
        r#"{"path":"/","body":[1,}"#,
        r#"{"path":"/","body":"\x"}"#,
    ] {
        assert!(
            matches!(
                err(parse_rest_dispatch(bad_body)),
                DispatchError::InvalidField { field: "body", .. }
            ),
            "{bad_body}"
        );
        assert!(
            matches!(
                err(parse_rest_dispatch_value(bad_body)),
                DispatchError::InvalidField { field: "body", .. }
            ),
            "{bad_body}"
        );
    }
}
