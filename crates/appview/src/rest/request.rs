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

use serde_json::{Map, Value};

use crate::filter::{Bounds, RunFilter, RunSort};
use crate::model::StateType;
use crate::rest::time;
use crate::uuid::Uuid;

/// One part of a field's location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Loc {
    /// A key.
    Key(&'static str),
    /// A key from the request.
    Name(String),
    /// An array index.
    Index(usize),
}

/// One refused field (FastAPI's `exception_detail` entry).
#[derive(Debug, Clone, PartialEq)]
pub struct Invalid {
    /// Pydantic's error type (`missing`, `enum`, `extra_forbidden`, ...).
    pub kind: &'static str,
    /// Where, from `body`.
    pub loc: Vec<Loc>,
    /// What was wrong.
    pub msg: String,
    /// The refused value.
    pub input: Value,
}

type Res<T> = Result<T, Invalid>;

/// A location under `body`.
#[derive(Clone, Copy)]
struct At<'a> {
    parent: Option<&'a At<'a>>,
    part: Part<'a>,
}

#[derive(Clone, Copy)]
enum Part<'a> {
    Body,
    Key(&'static str),
    Name(&'a str),
    Index(usize),
}

impl<'a> At<'a> {
    const BODY: At<'static> = At {
        parent: None,
        part: Part::Body,
    };

    fn key(&'a self, k: &'static str) -> At<'a> {
        At {
            parent: Some(self),
            part: Part::Key(k),
        }
    }

    fn name(&'a self, k: &'a str) -> At<'a> {
        At {
            parent: Some(self),
            part: Part::Name(k),
        }
    }

    fn index(&'a self, i: usize) -> At<'a> {
        At {
            parent: Some(self),
            part: Part::Index(i),
        }
    }

    fn loc(&self) -> Vec<Loc> {
        let mut out = match self.parent {
            Some(p) => p.loc(),
            None => Vec::new(),
        };
        match self.part {
            Part::Body => out.push(Loc::Key("body")),
            Part::Key(k) => out.push(Loc::Key(k)),
            Part::Name(k) => out.push(Loc::Name(k.to_owned())),
            Part::Index(i) => out.push(Loc::Index(i)),
        }
        out
    }

    fn bad(&self, kind: &'static str, msg: impl Into<String>, input: &Value) -> Invalid {
        Invalid {
            kind,
            loc: self.loc(),
            msg: msg.into(),
            input: input.clone(),
        }
    }
}

/// The object at `at`.
fn object<'v>(v: &'v Value, at: &At<'_>) -> Res<&'v Map<String, Value>> {
    v.as_object().ok_or_else(|| {
        at.bad(
            "model_attributes_type",
            "Input should be a valid dictionary or object to extract fields from",
            v,
        )
    })
}

/// Refuses keys of `m` outside `known`.
fn only(m: &Map<String, Value>, known: &[&str], at: &At<'_>) -> Res<()> {
    match m.iter().find(|(k, _)| !known.contains(&k.as_str())) {
        Some((k, v)) => Err(at
            .name(k)
            .bad("extra_forbidden", "Extra inputs are not permitted", v)),
        None => Ok(()),
    }
}

/// `m[k]` unless absent or null.
fn field<'v>(m: &'v Map<String, Value>, k: &str) -> Option<&'v Value> {
    m.get(k).filter(|v| !v.is_null())
}

fn string(v: &Value, at: &At<'_>) -> Res<String> {
    v.as_str()
        .map(str::to_owned)
        .ok_or_else(|| at.bad("string_type", "Input should be a valid string", v))
}

fn strings(v: &Value, at: &At<'_>) -> Res<Vec<String>> {
    let items = v
        .as_array()
        .ok_or_else(|| at.bad("list_type", "Input should be a valid list", v))?;
    items
        .iter()
        .enumerate()
        .map(|(i, s)| string(s, &at.index(i)))
        .collect()
}

fn uuid(v: &Value, at: &At<'_>) -> Res<Uuid> {
    let bad = || at.bad("uuid_parsing", "Input should be a valid UUID", v);
    let s = v.as_str().ok_or_else(bad)?;
    Uuid::parse(&s.to_ascii_lowercase()).map_err(|_| bad())
}

fn uuids(v: &Value, at: &At<'_>) -> Res<Vec<Uuid>> {
    let items = v
        .as_array()
        .ok_or_else(|| at.bad("list_type", "Input should be a valid list", v))?;
    items
        .iter()
        .enumerate()
        .map(|(i, s)| uuid(s, &at.index(i)))
        .collect()
}

fn datetime(v: &Value, at: &At<'_>) -> Res<i64> {
    v.as_str().and_then(time::parse).ok_or_else(|| {
        at.bad(
            "datetime_from_date_parsing",
            "Input should be a valid datetime",
            v,
        )
    })
}

fn state_type(v: &Value, at: &At<'_>) -> Res<StateType> {
    v.as_str().and_then(|s| StateType::parse(s).ok()).ok_or_else(|| {
        at.bad(
            "enum",
            "Input should be 'SCHEDULED', 'PENDING', 'RUNNING', 'COMPLETED', 'FAILED', 'CANCELLED', 'CRASHED', 'PAUSED' or 'CANCELLING'",
            v,
        )
    })
}

fn boolean(v: &Value, at: &At<'_>) -> Res<bool> {
    v.as_bool()
        .ok_or_else(|| at.bad("bool_type", "Input should be a valid boolean", v))
}

/// Accepts `v` only when it means "not used" (null, false, 0, "", [] or
/// {}); this server does not honour the field otherwise.
fn unused(m: &Map<String, Value>, k: &'static str, at: &At<'_>) -> Res<()> {
    let Some(v) = m.get(k) else { return Ok(()) };
    let empty = match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    };
    if empty {
        Ok(())
    } else {
        Err(at.key(k).bad(
            "not_supported",
            format!("{k} is not supported by this server (the appview's Prefect subset)"),
            v,
        ))
    }
}

/// `POST /flows/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowCreate {
    /// The name.
    pub name: String,
    /// Tags.
    pub tags: Vec<String>,
}

/// Parses `POST /flows/`.
pub fn flow_create(v: &Value) -> Res<FlowCreate> {
    let at = At::BODY;
    let m = object(v, &at)?;
    only(m, &["name", "tags", "labels"], &at)?;
    unused(m, "labels", &at)?;
    let name = match m.get("name") {
        Some(n) => string(n, &at.key("name"))?,
        None => {
            return Err(at
                .key("name")
                .bad("missing", "Field required", &Value::Null));
        }
    };
    let tags = field(m, "tags").map_or(Ok(Vec::new()), |t| strings(t, &at.key("tags")))?;
    Ok(FlowCreate { name, tags })
}

/// A state as sent (`StateCreate`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateCreate {
    /// Its type.
    pub state_type: StateType,
    /// Its name (Prefect's default: the type, capitalised).
    pub name: String,
    /// Its message.
    pub message: String,
}

fn state_create(v: &Value, at: &At<'_>) -> Res<StateCreate> {
    let m = object(v, at)?;
    only(m, &["type", "name", "message", "data", "state_details"], at)?;
    unused(m, "data", at)?;
    if let Some(d) = field(m, "state_details") {
        // Its fields are the orchestration's bookkeeping (ids the server
        // fills, cache and pause settings); accepted as an object, not
        // stored.
        object(d, &at.key("state_details"))?;
    }
    let state_type = match m.get("type") {
        Some(t) => state_type(t, &at.key("type"))?,
        None => {
            return Err(at
                .key("type")
                .bad("missing", "Field required", &Value::Null));
        }
    };
    let name = match field(m, "name") {
        Some(n) => string(n, &at.key("name"))?,
        None => default_name(state_type),
    };
    let message =
        field(m, "message").map_or(Ok(String::new()), |s| string(s, &at.key("message")))?;
    Ok(StateCreate {
        state_type,
        name,
        message,
    })
}

/// Prefect's default state name: the type's words capitalised.
pub fn default_name(t: StateType) -> String {
    let s = t.as_str();
    let mut out = String::with_capacity(s.len());
    out.push_str(&s[..1]);
    out.push_str(&s[1..].to_ascii_lowercase());
    out
}

/// `POST /flow_runs/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowRunCreate {
    /// The flow.
    pub flow_id: Uuid,
    /// The name (`None`: the server makes one).
    pub name: Option<String>,
    /// Tags.
    pub tags: Vec<String>,
    /// Parameters (string values).
    pub parameters: Vec<(String, String)>,
}

/// Parses `POST /flow_runs/`. The run starts PENDING (a `state` of another
/// type, or another name, is refused: this server creates runs PENDING,
/// its model's first state).
pub fn flow_run_create(v: &Value) -> Res<FlowRunCreate> {
    let at = At::BODY;
    let m = object(v, &at)?;
    only(
        m,
        &[
            "state",
            "name",
            "flow_id",
            "flow_version",
            "parameters",
            "context",
            "parent_task_run_id",
            "infrastructure_document_id",
            "empirical_policy",
            "tags",
            "labels",
            "idempotency_key",
            "work_pool_name",
            "work_queue_name",
            "job_variables",
            "deployment_id",
        ],
        &at,
    )?;
    for k in [
        "context",
        "parent_task_run_id",
        "infrastructure_document_id",
        "labels",
        "idempotency_key",
        "work_pool_name",
        "work_queue_name",
        "job_variables",
        "deployment_id",
    ] {
        unused(m, k, &at)?;
    }
    // The version is the flow's code hash a client sends with every run:
    // accepted, not stored (the model has no field for it).
    if let Some(v) = field(m, "flow_version") {
        string(v, &at.key("flow_version"))?;
    }
    if let Some(p) = field(m, "empirical_policy") {
        let pat = at.key("empirical_policy");
        let pm = object(p, &pat)?;
        for k in [
            "max_retries",
            "retries",
            "retry_delay_seconds",
            "retry_delay",
            "pause_keys",
            "resuming",
            "retry_type",
        ] {
            unused(pm, k, &pat)?;
        }
    }
    let flow_id = match m.get("flow_id") {
        Some(f) => uuid(f, &at.key("flow_id"))?,
        None => {
            return Err(at
                .key("flow_id")
                .bad("missing", "Field required", &Value::Null));
        }
    };
    if let Some(s) = field(m, "state") {
        let sat = at.key("state");
        let st = state_create(s, &sat)?;
        if st.state_type != StateType::Pending {
            return Err(sat.key("type").bad(
                "not_supported",
                "this server creates flow runs PENDING only",
                &Value::from(st.state_type.as_str()),
            ));
        }
        if st.name != "Pending" || !st.message.is_empty() {
            return Err(sat.bad(
                "not_supported",
                "this server's first state is named Pending, without a message",
                s,
            ));
        }
    }
    let name = field(m, "name")
        .map(|n| string(n, &at.key("name")))
        .transpose()?;
    let tags = field(m, "tags").map_or(Ok(Vec::new()), |t| strings(t, &at.key("tags")))?;
    let mut parameters = Vec::new();
    if let Some(p) = field(m, "parameters") {
        let pat = at.key("parameters");
        for (k, v) in object(p, &pat)? {
            let s = v.as_str().ok_or_else(|| {
                pat.name(k).bad(
                    "not_supported",
                    "this server stores string parameter values only",
                    v,
                )
            })?;
            parameters.push((k.clone(), s.to_owned()));
        }
    }
    Ok(FlowRunCreate {
        flow_id,
        name,
        tags,
        parameters,
    })
}

/// Parses `POST /flow_runs/{id}/set_state`: the state (`force` must be
/// false: this server always orchestrates).
pub fn set_state(v: &Value) -> Res<StateCreate> {
    let at = At::BODY;
    let m = object(v, &at)?;
    if let Some(f) = field(m, "force")
        && boolean(f, &at.key("force"))?
    {
        return Err(at.key("force").bad(
            "not_supported",
            "force is not supported by this server (it always orchestrates)",
            f,
        ));
    }
    match m.get("state") {
        Some(s) => state_create(s, &at.key("state")),
        None => Err(at
            .key("state")
            .bad("missing", "Field required", &Value::Null)),
    }
}

/// A page's `limit` and `offset`: Prefect's default and maximum limit is
/// 200 (its `PREFECT_SERVER_API_DEFAULT_LIMIT`).
pub const MAX_LIMIT: usize = 200;

/// A `limit` over [`MAX_LIMIT`] (Prefect answers it with a plain 422
/// `detail`, not a validation error).
#[derive(Debug, Clone, PartialEq)]
pub enum PageError {
    /// A field refused.
    Invalid(Invalid),
    /// Limit over the maximum.
    Limit,
}

impl From<Invalid> for PageError {
    fn from(i: Invalid) -> Self {
        PageError::Invalid(i)
    }
}

fn paging(m: &Map<String, Value>, at: &At<'_>) -> Result<(usize, usize), PageError> {
    let int = |k: &'static str| -> Res<Option<i64>> {
        field(m, k)
            .map(|v| {
                v.as_i64().ok_or_else(|| {
                    at.key(k)
                        .bad("int_type", "Input should be a valid integer", v)
                })
            })
            .transpose()
    };
    let limit = match int("limit")? {
        None => MAX_LIMIT,
        Some(l) if l < 0 => return Err(PageError::Limit),
        Some(l) if l > MAX_LIMIT as i64 => return Err(PageError::Limit),
        Some(l) => l as usize,
    };
    let offset = match int("offset")? {
        None => 0,
        Some(o) if o < 0 => {
            return Err(at
                .key("offset")
                .bad(
                    "greater_than_equal",
                    "Input should be greater than or equal to 0",
                    &Value::from(o),
                )
                .into());
        }
        Some(o) => usize::try_from(o).unwrap_or(usize::MAX),
    };
    Ok((limit, offset))
}

/// The parts of a read body this server answers: the run filter, the
/// flows' ids.
fn filters(m: &Map<String, Value>, at: &At<'_>) -> Res<RunFilter> {
    for k in ["task_runs", "deployments", "work_pools", "work_pool_queues"] {
        unused(m, k, at)?;
    }
    let mut f = RunFilter::default();
    if let Some(flows) = field(m, "flows") {
        let fat = at.key("flows");
        let fm = object(flows, &fat)?;
        only(fm, &["operator", "id", "deployment", "name", "tags"], &fat)?;
        for k in ["deployment", "name", "tags"] {
            unused(fm, k, &fat)?;
        }
        and_only(fm, &fat)?;
        if let Some(id) = field(fm, "id") {
            let iat = fat.key("id");
            let im = object(id, &iat)?;
            only(im, &["any_", "not_any_"], &iat)?;
            unused(im, "not_any_", &iat)?;
            if let Some(any) = field(im, "any_") {
                f.flows = Some(uuids(any, &iat.key("any_"))?);
            }
        }
    }
    if let Some(runs) = field(m, "flow_runs") {
        let rat = at.key("flow_runs");
        let rm = object(runs, &rat)?;
        only(
            rm,
            &[
                "operator",
                "id",
                "name",
                "tags",
                "deployment_id",
                "work_queue_name",
                "state",
                "flow_version",
                "start_time",
                "end_time",
                "expected_start_time",
                "next_scheduled_start_time",
                "parent_flow_run_id",
                "parent_task_run_id",
                "idempotency_key",
                "created_by",
            ],
            &rat,
        )?;
        for k in [
            "id",
            "name",
            "tags",
            "deployment_id",
            "work_queue_name",
            "flow_version",
            "next_scheduled_start_time",
            "parent_flow_run_id",
            "parent_task_run_id",
            "idempotency_key",
            "created_by",
        ] {
            unused(rm, k, &rat)?;
        }
        and_only(rm, &rat)?;
        if let Some(state) = field(rm, "state") {
            let sat = rat.key("state");
            let sm = object(state, &sat)?;
            only(sm, &["operator", "type", "name"], &sat)?;
            unused(sm, "name", &sat)?;
            and_only(sm, &sat)?;
            if let Some(t) = field(sm, "type") {
                let tat = sat.key("type");
                let tm = object(t, &tat)?;
                only(tm, &["any_", "not_any_"], &tat)?;
                unused(tm, "not_any_", &tat)?;
                if let Some(any) = field(tm, "any_") {
                    let aat = tat.key("any_");
                    let items = any
                        .as_array()
                        .ok_or_else(|| aat.bad("list_type", "Input should be a valid list", any))?;
                    f.states = Some(
                        items
                            .iter()
                            .enumerate()
                            .map(|(i, s)| state_type(s, &aat.index(i)))
                            .collect::<Res<_>>()?,
                    );
                }
            }
        }
        f.start = bounds(rm, "start_time", &rat)?;
        f.end = bounds(rm, "end_time", &rat)?;
        f.expected = bounds(rm, "expected_start_time", &rat)?;
    }
    Ok(f)
}

/// `operator` may only be `and_` (the default).
fn and_only(m: &Map<String, Value>, at: &At<'_>) -> Res<()> {
    match field(m, "operator") {
        None => Ok(()),
        Some(Value::String(s)) if s == "and_" => Ok(()),
        Some(v @ Value::String(s)) if s == "or_" => Err(at.key("operator").bad(
            "not_supported",
            "operator or_ is not supported by this server",
            v,
        )),
        Some(v) => Err(at
            .key("operator")
            .bad("enum", "Input should be 'and_' or 'or_'", v)),
    }
}

fn bounds(m: &Map<String, Value>, k: &'static str, at: &At<'_>) -> Res<Bounds> {
    let Some(v) = field(m, k) else {
        return Ok(Bounds::default());
    };
    let bat = at.key(k);
    let bm = object(v, &bat)?;
    only(bm, &["before_", "after_", "is_null_"], &bat)?;
    unused(bm, "is_null_", &bat)?;
    Ok(Bounds {
        after: field(bm, "after_")
            .map(|a| datetime(a, &bat.key("after_")))
            .transpose()?,
        before: field(bm, "before_")
            .map(|b| datetime(b, &bat.key("before_")))
            .transpose()?,
    })
}

/// `POST /flow_runs/filter`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunsRead {
    /// Which runs.
    pub filter: RunFilter,
    /// Their order.
    pub sort: RunSort,
    /// At most this many.
    pub limit: usize,
    /// After skipping this many.
    pub offset: usize,
}

/// Parses `POST /flow_runs/filter` (an empty body is every default).
pub fn runs_read(v: &Value) -> Result<RunsRead, PageError> {
    let at = At::BODY;
    let empty = Map::new();
    let m = if v.is_null() { &empty } else { object(v, &at)? };
    let sort = match field(m, "sort") {
        None => RunSort::IdDesc,
        Some(s) => s.as_str().and_then(|s| RunSort::parse(s).ok()).ok_or_else(|| {
            at.key("sort").bad(
                "enum",
                "Input should be 'ID_DESC', 'START_TIME_ASC', 'START_TIME_DESC', 'EXPECTED_START_TIME_ASC', 'EXPECTED_START_TIME_DESC', 'NAME_ASC', 'NAME_DESC', 'NEXT_SCHEDULED_START_TIME_ASC' or 'END_TIME_DESC'",
                s,
            )
        })?,
    };
    let (limit, offset) = paging(m, &at)?;
    Ok(RunsRead {
        filter: filters(m, &at)?,
        sort,
        limit,
        offset,
    })
}

/// Parses `POST /flow_runs/count`.
pub fn runs_count(v: &Value) -> Res<RunFilter> {
    let at = At::BODY;
    let empty = Map::new();
    let m = if v.is_null() { &empty } else { object(v, &at)? };
    filters(m, &at)
}

/// `POST /flows/filter`: flows by name ascending (the only sort this
/// server answers; Prefect's default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowsRead {
    /// Only these flows.
    pub ids: Option<Vec<Uuid>>,
    /// At most this many.
    pub limit: usize,
    /// After skipping this many.
    pub offset: usize,
}

/// Parses `POST /flows/filter`.
pub fn flows_read(v: &Value) -> Result<FlowsRead, PageError> {
    let at = At::BODY;
    let empty = Map::new();
    let m = if v.is_null() { &empty } else { object(v, &at)? };
    match field(m, "sort") {
        None => {}
        Some(Value::String(s)) if s == "NAME_ASC" => {}
        Some(s @ Value::String(name))
            if ["CREATED_DESC", "UPDATED_DESC", "NAME_DESC"].contains(&name.as_str()) =>
        {
            return Err(at
                .key("sort")
                .bad(
                    "not_supported",
                    "this server sorts flows by NAME_ASC only",
                    s,
                )
                .into());
        }
        Some(s) => {
            return Err(at
                .key("sort")
                .bad(
                    "enum",
                    "Input should be 'CREATED_DESC', 'UPDATED_DESC', 'NAME_ASC' or 'NAME_DESC'",
                    s,
                )
                .into());
        }
    }
    let (limit, offset) = paging(m, &at)?;
    let f = filters(m, &at)?;
    if f != (RunFilter {
        flows: f.flows.clone(),
        ..RunFilter::default()
    }) {
        return Err(at
            .key("flow_runs")
            .bad(
                "not_supported",
                "this server filters flows by flows.id only",
                m.get("flow_runs").unwrap_or(&Value::Null),
            )
            .into());
    }
    Ok(FlowsRead {
        ids: f.flows,
        limit,
        offset,
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

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
        let e = flow_run_create(
            &json!({"flow_id": "00000000-0000-0000-0000-000000000001", "bogus": 1}),
        )
        .unwrap_err();
        assert_eq!(
            (e.kind, e.loc),
            (
                "extra_forbidden",
                vec![Loc::Key("body"), Loc::Name("bogus".into())]
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
            let _ = flow_run_create(&v);
            let _ = set_state(&v);
        }
    }
}
