//! The read routes' bodies: `POST /flow_runs/filter`, `/flow_runs/count`
//! and `/flows/filter` (the filters this server answers, their sort and
//! paging).

use serde_json::{Map, Value};

use super::fields::{
    At, Invalid, Res, datetime, field, keys, list, object, read_body, state_type, unused, uuid,
};
use crate::filter::{Bounds, FlowSort, RunFilter, RunSort};
use crate::uuid::Uuid;

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

pub(super) fn paging(m: &Map<String, Value>, at: &At<'_>) -> Result<(usize, usize), PageError> {
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
        keys(
            fm,
            &["operator", "id"],
            &["deployment", "name", "tags"],
            &fat,
        )?;
        and_only(fm, &fat)?;
        if let Some(id) = field(fm, "id") {
            let iat = fat.key("id");
            let im = object(id, &iat)?;
            keys(im, &["any_"], &["not_any_"], &iat)?;
            if let Some(any) = field(im, "any_") {
                f.flows = Some(list(any, &iat.key("any_"), uuid)?);
            }
        }
    }
    if let Some(runs) = field(m, "flow_runs") {
        let rat = at.key("flow_runs");
        let rm = object(runs, &rat)?;
        keys(
            rm,
            &[
                "operator",
                "state",
                "start_time",
                "end_time",
                "expected_start_time",
            ],
            &[
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
            ],
            &rat,
        )?;
        and_only(rm, &rat)?;
        if let Some(state) = field(rm, "state") {
            let sat = rat.key("state");
            let sm = object(state, &sat)?;
            keys(sm, &["operator", "type"], &["name"], &sat)?;
            and_only(sm, &sat)?;
            if let Some(t) = field(sm, "type") {
                let tat = sat.key("type");
                let tm = object(t, &tat)?;
                keys(tm, &["any_"], &["not_any_"], &tat)?;
                if let Some(any) = field(tm, "any_") {
                    f.states = Some(list(any, &tat.key("any_"), state_type)?);
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
    keys(bm, &["before_", "after_"], &["is_null_"], &bat)?;
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
    let m = read_body(v, &empty, &at)?;
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
    let m = read_body(v, &empty, &at)?;
    filters(m, &at)
}

/// `POST /flows/filter`: flows in one of Prefect's `FlowSort` orders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowsRead {
    /// The order.
    pub sort: FlowSort,
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
    let m = read_body(v, &empty, &at)?;
    let sort = match field(m, "sort") {
        None => FlowSort::default(),
        Some(s) => s
            .as_str()
            .and_then(|name| FlowSort::ALL.into_iter().find(|f| f.as_str() == name))
            .ok_or_else(|| {
                at.key("sort").bad(
                    "enum",
                    "Input should be 'CREATED_DESC', 'UPDATED_DESC', 'NAME_ASC' or 'NAME_DESC'",
                    s,
                )
            })?,
    };
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
        sort,
        ids: f.flows,
        limit,
        offset,
    })
}
