//! The log routes' bodies: `POST /logs/` (a list of Prefect's server
//! `LogCreate`) and `POST /logs/filter` (`LogFilter`, `LogSort`, paging).
//!
//! `LogCreate` is one of Prefect's `extra="forbid"` models, so a key
//! outside `name`, `level`, `message`, `timestamp`, `flow_run_id` and
//! `task_run_id` is refused, `worker_id` included: Prefect's client sends
//! it only when set, for Prefect Cloud, and Prefect's own server refuses
//! it the same way. A batch holds at most [`MAX_BATCH`] lines (past it
//! 422 `too_long`, Pydantic's shape for a list's `max_length`); its bytes
//! are bounded before it is read (`RestConfig::max_log_batch_bytes`).

use serde_json::{Map, Value};

use super::fields::{
    At, Res, boolean, datetime, field, keys, list, object, read_body, required, string, unused,
    uuid,
};
use super::read::{MAX_LIMIT, PageError};
use crate::logs::{LogFilter, LogSort};
use crate::uuid::Uuid;

/// Lines per `POST /logs/` at most. Prefect's client sends a batch of at
/// most 4,000,000 bytes (`PREFECT_LOGGING_TO_API_BATCH_SIZE`), under
/// 20,000 lines of a real log line's size; the bound is above that so
/// the client's own batches always pass.
pub const MAX_BATCH: usize = 50_000;

/// One line as sent (the server adds its id and `created`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogCreate {
    /// The logger's name.
    pub name: String,
    /// The level.
    pub level: i64,
    /// The text.
    pub message: String,
    /// When it was logged (µs).
    pub timestamp: i64,
    /// Its flow run.
    pub flow_run_id: Option<Uuid>,
    /// Its task run.
    pub task_run_id: Option<Uuid>,
}

fn int(v: &Value, at: &At<'_>) -> Res<i64> {
    v.as_i64()
        .ok_or_else(|| at.bad("int_type", "Input should be a valid integer", v))
}

fn opt_uuid(m: &Map<String, Value>, k: &'static str, at: &At<'_>) -> Res<Option<Uuid>> {
    field(m, k).map(|v| uuid(v, &at.key(k))).transpose()
}

fn log_create(v: &Value, at: &At<'_>) -> Res<LogCreate> {
    let m = object(v, at)?;
    keys(
        m,
        &[
            "name",
            "level",
            "message",
            "timestamp",
            "flow_run_id",
            "task_run_id",
        ],
        &[],
        at,
    )?;
    // Prefect strips NUL characters from both strings (its PostgreSQL
    // refuses them); the same line reads back the same from either.
    let text = |k: &'static str| -> Res<String> {
        Ok(string(required(m, k, at)?, &at.key(k))?.replace('\0', ""))
    };
    Ok(LogCreate {
        name: text("name")?,
        level: int(required(m, "level", at)?, &at.key("level"))?,
        message: text("message")?,
        timestamp: datetime(required(m, "timestamp", at)?, &at.key("timestamp"))?,
        flow_run_id: opt_uuid(m, "flow_run_id", at)?,
        task_run_id: opt_uuid(m, "task_run_id", at)?,
    })
}

/// Parses `POST /logs/`.
pub fn logs_create(v: &Value) -> Res<Vec<LogCreate>> {
    let at = At::BODY;
    if let Some(a) = v.as_array().filter(|a| a.len() > MAX_BATCH) {
        return Err(at.bad(
            "too_long",
            format!(
                "List should have at most {MAX_BATCH} items after validation, not {}",
                a.len()
            ),
            &Value::Null,
        ));
    }
    list(v, &at, log_create)
}

/// `POST /logs/filter`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogsRead {
    /// Which lines.
    pub filter: LogFilter,
    /// Their order.
    pub sort: LogSort,
    /// At most this many.
    pub limit: usize,
    /// After skipping this many.
    pub offset: usize,
}

/// A sub-filter's object and its keys checked (`None` when absent or
/// null).
fn part<'v>(
    m: &'v Map<String, Value>,
    k: &'static str,
    honoured: &[&str],
    at: &At<'_>,
) -> Res<Option<&'v Map<String, Value>>> {
    let Some(v) = field(m, k) else {
        return Ok(None);
    };
    let pat = at.key(k);
    let pm = object(v, &pat)?;
    keys(pm, honoured, &[], &pat)?;
    Ok(Some(pm))
}

fn filter(m: &Map<String, Value>, at: &At<'_>) -> Res<LogFilter> {
    let mut f = LogFilter::default();
    let Some(v) = field(m, "logs") else {
        return Ok(f);
    };
    let lat = at.key("logs");
    let lm = object(v, &lat)?;
    keys(
        lm,
        &[
            "operator",
            "level",
            "timestamp",
            "flow_run_id",
            "task_run_id",
        ],
        &["text"],
        &lat,
    )?;
    match field(lm, "operator") {
        None => {}
        Some(Value::String(s)) if s == "and_" => {}
        Some(o @ Value::String(s)) if s == "or_" => {
            return Err(lat.key("operator").bad(
                "not_supported",
                "operator or_ is not supported by this server",
                o,
            ));
        }
        Some(o) => {
            return Err(lat
                .key("operator")
                .bad("enum", "Input should be 'and_' or 'or_'", o));
        }
    }
    let sub = |pm: &Map<String, Value>, k: &'static str, pat: &At<'_>| {
        field(pm, k).map(|v| int(v, &pat.key(k))).transpose()
    };
    if let Some(pm) = part(lm, "level", &["ge_", "le_"], &lat)? {
        let pat = lat.key("level");
        f.level_ge = sub(pm, "ge_", &pat)?;
        f.level_le = sub(pm, "le_", &pat)?;
    }
    if let Some(pm) = part(lm, "timestamp", &["before_", "after_"], &lat)? {
        let pat = lat.key("timestamp");
        let time = |k: &'static str| field(pm, k).map(|v| datetime(v, &pat.key(k))).transpose();
        f.before = time("before_")?;
        f.after = time("after_")?;
    }
    if let Some(pm) = part(lm, "flow_run_id", &["any_"], &lat)? {
        let pat = lat.key("flow_run_id");
        f.flow_runs = field(pm, "any_")
            .map(|v| list(v, &pat.key("any_"), uuid))
            .transpose()?;
    }
    if let Some(pm) = part(lm, "task_run_id", &["any_", "is_null_"], &lat)? {
        let pat = lat.key("task_run_id");
        f.task_runs = field(pm, "any_")
            .map(|v| list(v, &pat.key("any_"), uuid))
            .transpose()?;
        f.task_run_null = field(pm, "is_null_")
            .map(|v| boolean(v, &pat.key("is_null_")))
            .transpose()?;
    }
    unused(lm, "text", &lat)?;
    Ok(f)
}

/// Parses `POST /logs/filter` (an empty body is every default: the first
/// [`MAX_LIMIT`] lines, oldest first).
pub fn logs_read(v: &Value) -> Result<LogsRead, PageError> {
    let at = At::BODY;
    let empty = Map::new();
    let m = read_body(v, &empty, &at)?;
    let sort = match field(m, "sort") {
        None => LogSort::TimestampAsc,
        Some(Value::String(s)) if s == "TIMESTAMP_ASC" => LogSort::TimestampAsc,
        Some(Value::String(s)) if s == "TIMESTAMP_DESC" => LogSort::TimestampDesc,
        Some(s) => {
            return Err(at
                .key("sort")
                .bad(
                    "enum",
                    "Input should be 'TIMESTAMP_ASC' or 'TIMESTAMP_DESC'",
                    s,
                )
                .into());
        }
    };
    let (limit, offset) = super::read::paging(m, &at)?;
    debug_assert!(limit <= MAX_LIMIT);
    Ok(LogsRead {
        filter: filter(m, &at)?,
        sort,
        limit,
        offset,
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::rest::request::Loc;

    #[test]
    fn a_client_batch_and_the_cli_filter_parse() {
        let run = "b8932a69-6bc4-460d-9f8d-38c4a202fec1";
        let got = logs_create(
            &json!([{"name": "prefect.flow_runs", "level": 20, "message": "a\u{0}b",
            "timestamp": "2026-12-07T23:30:00.123456Z", "flow_run_id": run, "task_run_id": null}]),
        )
        .unwrap();
        assert_eq!(got[0].message, "ab");
        assert_eq!(got[0].flow_run_id, Some(Uuid::parse(run).unwrap()));
        let e = logs_create(&json!([{"name": "n", "level": 20, "message": "m",
            "timestamp": "2026-12-07T23:30:00Z", "worker_id": run}]))
        .unwrap_err();
        assert_eq!(e.kind, "extra_forbidden");
        assert_eq!(
            e.loc,
            vec![
                Loc::Key("body"),
                Loc::Index(0),
                Loc::Name("worker_id".into())
            ]
        );
        let e = logs_create(&json!([{"name": "n", "message": "m", "timestamp": "x"}])).unwrap_err();
        assert_eq!((e.kind, e.loc.len()), ("missing", 3));
        let long = Value::Array(vec![Value::Null; MAX_BATCH + 1]);
        assert_eq!(logs_create(&long).unwrap_err().kind, "too_long");
        // What `prefect flow-run logs` sends (every sub-filter dumped).
        let r = logs_read(
            &json!({"logs": {"operator": "and_", "level": null, "timestamp": null,
            "flow_run_id": {"any_": [run]}, "task_run_id": null, "text": null},
            "limit": null, "offset": 0, "sort": "TIMESTAMP_DESC"}),
        )
        .unwrap();
        assert_eq!(r.sort, LogSort::TimestampDesc);
        assert_eq!(r.filter.flow_runs, Some(vec![Uuid::parse(run).unwrap()]));
        assert_eq!((r.limit, r.offset), (MAX_LIMIT, 0));
        let r = logs_read(&json!({"logs": {"level": {"ge_": 30, "le_": 40},
            "timestamp": {"after_": "1970-01-01T00:00:01Z", "before_": "1970-01-01T00:00:02Z"},
            "task_run_id": {"is_null_": true}}}))
        .unwrap();
        assert_eq!(
            (
                r.filter.level_ge,
                r.filter.level_le,
                r.filter.after,
                r.filter.before
            ),
            (Some(30), Some(40), Some(1_000_000), Some(2_000_000))
        );
        assert_eq!(r.filter.task_run_null, Some(true));
        assert_eq!(logs_read(&json!({"limit": 201})), Err(PageError::Limit));
        for bad in [
            json!({"sort": "NAME_ASC"}),
            json!({"logs": {"text": {"query": "error"}}}),
            json!({"logs": {"name": {"any_": ["x"]}}}),
            json!({"logs": {"operator": "or_"}}),
        ] {
            assert!(
                matches!(logs_read(&bad), Err(PageError::Invalid(_))),
                "{bad}"
            );
        }
    }

    fn arb_body() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            prop_oneof![
                Just("TIMESTAMP_ASC"),
                Just("and_"),
                Just("or_"),
                Just("2026-01-01T00:00:00Z"),
                Just("00000000-0000-4000-8000-000000000001"),
                Just(""),
            ]
            .prop_map(Value::from),
        ];
        let keys = prop_oneof![
            Just("logs"),
            Just("level"),
            Just("ge_"),
            Just("le_"),
            Just("timestamp"),
            Just("before_"),
            Just("after_"),
            Just("flow_run_id"),
            Just("task_run_id"),
            Just("any_"),
            Just("is_null_"),
            Just("text"),
            Just("operator"),
            Just("sort"),
            Just("limit"),
            Just("offset"),
            Just("name"),
            Just("message"),
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
        fn any_log_body_parses_or_refuses_without_panicking(v in arb_body()) {
            let _ = logs_create(&v);
            let _ = logs_read(&v);
        }
    }
}
