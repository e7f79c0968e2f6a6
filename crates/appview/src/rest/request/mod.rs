//! Request bodies: Prefect's request models, parsed from JSON by hand so a
//! refusal names the field as FastAPI does (`loc`, `type`, `msg`, in
//! Prefect's 422 shape), and the subset this server speaks is explicit: a
//! field Prefect knows but this server does not honour is accepted only at
//! the value that means "not used" (null, empty, zero) and refused
//! otherwise (`type` `not_supported`), never guessed at.
//!
//! Unknown keys: refused inside Prefect's models (`extra_forbidden`, as
//! its `extra="forbid"` models do: a run's create body, a state, every
//! filter), ignored at the top of a route's body of several parameters
//! (FastAPI's embedded bodies ignore them).

mod fields;
mod logs;
mod read;
mod write;

pub use fields::{Invalid, Loc};
pub use logs::{logs_create, logs_read};
pub use read::{PageError, flows_read, runs_count, runs_read};
pub use write::{
    FlowCreate, FlowRunCreate, StateCreate, default_name, flow_create, flow_run_create, set_state,
};

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use serde_json::Value;

    use super::*;
    use crate::filter::{Bounds, RunSort};
    use crate::model::StateType;

    #[test]
    fn a_bad_enum_names_its_field() {
        let e = match runs_read(
            &json!({"flow_runs": {"state": {"type": {"any_": ["RUNNING", "NOPE"]}}}}),
        ) {
            Err(PageError::Invalid(e)) => e,
            other => panic!("{other:?}"),
        };
        assert_eq!(e.kind, "enum");
        assert_eq!(
            e.loc,
            vec![
                Loc::Key("body"),
                Loc::Key("flow_runs"),
                Loc::Key("state"),
                Loc::Key("type"),
                Loc::Key("any_"),
                Loc::Index(1)
            ]
        );
    }

    #[test]
    fn the_patterns_bodies_parse() {
        let r = runs_read(&json!({"flow_runs": {"state": {"type": {"any_": ["COMPLETED"]}}}, "sort": "START_TIME_DESC", "limit": 50})).unwrap();
        assert_eq!(r.sort, RunSort::StartTimeDesc);
        assert_eq!(r.filter.states, Some(vec![StateType::Completed]));
        assert_eq!((r.limit, r.offset), (50, 0));
        assert_eq!(runs_read(&json!({"limit": 201})), Err(PageError::Limit));
        let r = runs_read(&json!({"flow_runs": {"end_time": {"after_": "1970-01-01T00:00:01Z", "before_": "1970-01-01T00:00:02Z"}}})).unwrap();
        assert_eq!(
            r.filter.end,
            Bounds {
                after: Some(1_000_000),
                before: Some(2_000_000)
            }
        );
        let body = json!({"flow_id": "00000000-0000-0000-0000-000000000001", "bogus": 1});
        let e = flow_run_create(&body, body.to_string().as_bytes()).unwrap_err();
        assert_eq!(
            (e.kind, e.loc),
            (
                "extra_forbidden",
                vec![Loc::Key("body"), Loc::Name("bogus".into())]
            )
        );
    }

    #[test]
    fn parameters_of_any_json_type_are_kept_in_order() {
        let body = br#"{"flow_id": "00000000-0000-0000-0000-000000000001",
            "parameters": {"n": 3, "x": 1.0, "ok": false, "xs": [1, "a"], "d": {"k": null}}}"#;
        let v: Value = serde_json::from_slice(body).unwrap();
        let r = flow_run_create(&v, body).unwrap();
        let got: Vec<(&str, &str)> = r
            .parameters
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("n", "3"),
                ("x", "1.0"),
                ("ok", "false"),
                ("xs", "[1,\"a\"]"),
                ("d", "{\"k\":null}")
            ]
        );
        let big = format!(
            "{{\"flow_id\": \"00000000-0000-0000-0000-000000000001\", \"parameters\": {{\"s\": \"{}\"}}}}",
            "x".repeat(crate::params::MAX_BYTES)
        );
        let v: Value = serde_json::from_str(&big).unwrap();
        let e = flow_run_create(&v, big.as_bytes()).unwrap_err();
        assert_eq!(
            (e.kind, e.loc),
            (
                "value_error",
                vec![Loc::Key("body"), Loc::Key("parameters")]
            )
        );
    }

    /// JSON built from the request models' own keys and values, so the
    /// parsers' deep paths are reached.
    fn arb_body() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            prop_oneof![
                Just(-1i64),
                Just(0),
                Just(1),
                Just(50),
                Just(201),
                any::<i64>()
            ]
            .prop_map(Value::from),
            prop_oneof![
                Just("RUNNING"),
                Just("PENDING"),
                Just("NOPE"),
                Just("ID_DESC"),
                Just("END_TIME_DESC"),
                Just("NAME_ASC"),
                Just("and_"),
                Just("or_"),
                Just("2026-01-01T00:00:00Z"),
                Just("2026-13-01"),
                Just("00000000-0000-4000-8000-000000000001"),
                Just(""),
                Just("x"),
            ]
            .prop_map(Value::from),
        ];
        let keys = prop_oneof![
            Just("flow_runs"),
            Just("flows"),
            Just("state"),
            Just("type"),
            Just("any_"),
            Just("not_any_"),
            Just("sort"),
            Just("limit"),
            Just("offset"),
            Just("end_time"),
            Just("start_time"),
            Just("expected_start_time"),
            Just("after_"),
            Just("before_"),
            Just("id"),
            Just("name"),
            Just("tags"),
            Just("parameters"),
            Just("flow_id"),
            Just("force"),
            Just("operator"),
            Just("message"),
            Just("state_details"),
            Just("empirical_policy"),
            Just("context"),
            Just("labels"),
            Just("bogus"),
        ];
        leaf.prop_recursive(4, 48, 6, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::vec((keys.clone(), inner), 0..5).prop_map(
                    |kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
                ),
            ]
        })
    }

    proptest! {
        #[test]
        fn any_body_parses_or_refuses_without_panicking(v in arb_body()) {
            let _ = runs_read(&v);
            let _ = runs_count(&v);
            let _ = flows_read(&v);
            let _ = flow_create(&v);
            let _ = flow_run_create(&v, v.to_string().as_bytes());
            let _ = set_state(&v);
        }
    }
}
