//! `POST /api/task_runs/filter` and `/count`: the filter this server
//! answers (the fields `rest::task_runs` lists), read from the task runs'
//! part of the index: a flow run's task runs from its ordered set, a state
//! type's from its set, ids by lookup, everything else from the set of
//! all by expected start; then the sort and the page.

use std::cmp::Reverse;

use serde_json::{Map, Value};

use crate::app::AppView;
use crate::model::StateType;
use crate::rest::reply::Reply;
use crate::rest::task_runs::{invalid, parse, parse_uuid, render};
use crate::task_run::TaskRun;
use crate::uuid::Uuid;

/// A filter read: the matching runs in the sort's order.
struct Filter {
    flow_runs: Option<Vec<Uuid>>,
    ids: Option<Vec<Uuid>>,
    names: Option<Vec<String>>,
    types: Option<Vec<StateType>>,
    flow_run_null: Option<bool>,
}

fn filter_of(body: &Value) -> Result<Filter, (Vec<&'static str>, String, Value)> {
    let mut f = Filter {
        flow_runs: None,
        ids: None,
        names: None,
        types: None,
        flow_run_null: None,
    };
    let ids = |v: &Value, at: Vec<&'static str>| -> Result<Vec<Uuid>, _> {
        let list = v
            .as_array()
            .ok_or((at.clone(), "a list".to_owned(), v.clone()))?;
        list.iter()
            .map(|x| parse_uuid(x).ok_or((at.clone(), "a UUID".to_owned(), x.clone())))
            .collect()
    };
    let obj = |v: &'static str, x: &Value| -> Result<Map<String, Value>, _> {
        match x {
            Value::Object(o) => Ok(o.clone()),
            Value::Null => Ok(Map::new()),
            _ => Err((vec![v], "a dictionary".to_owned(), x.clone())),
        }
    };
    let Some(top) = body.as_object() else {
        return Ok(f);
    };
    if let Some(fr) = top.get("flow_runs") {
        for (k, v) in obj("flow_runs", fr)? {
            match (k.as_str(), &v) {
                (_, Value::Null) => {}
                ("id", Value::Object(o)) => {
                    if let Some(a) = o.get("any_").filter(|a| !a.is_null()) {
                        f.flow_runs = Some(ids(a, vec!["flow_runs", "id", "any_"])?);
                    }
                }
                ("operator", _) => {}
                _ => return Err((vec!["flow_runs"], format!("{k}: not served"), v.clone())),
            }
        }
    }
    if let Some(tr) = top.get("task_runs") {
        for (k, v) in obj("task_runs", tr)? {
            match (k.as_str(), &v) {
                (_, Value::Null) | ("operator", _) => {}
                ("id", Value::Object(o)) => {
                    if let Some(a) = o.get("any_").filter(|a| !a.is_null()) {
                        f.ids = Some(ids(a, vec!["task_runs", "id", "any_"])?);
                    }
                }
                ("name", Value::Object(o)) => {
                    if let Some(Value::Array(a)) = o.get("any_") {
                        f.names = Some(
                            a.iter()
                                .filter_map(|s| s.as_str().map(str::to_owned))
                                .collect(),
                        );
                    }
                }
                ("flow_run_id", Value::Object(o)) => {
                    if let Some(a) = o.get("any_").filter(|a| !a.is_null()) {
                        f.flow_runs = Some(ids(a, vec!["task_runs", "flow_run_id", "any_"])?);
                    }
                    if let Some(b) = o.get("is_null_").and_then(Value::as_bool) {
                        f.flow_run_null = Some(b);
                    }
                }
                ("state", Value::Object(o)) => {
                    if let Some(Value::Object(t)) = o.get("type")
                        && let Some(Value::Array(a)) = t.get("any_")
                    {
                        let mut types = Vec::new();
                        for x in a {
                            let t = x.as_str().and_then(|s| StateType::parse(s).ok()).ok_or((
                                vec!["task_runs", "state", "type", "any_"],
                                "a state type".to_owned(),
                                x.clone(),
                            ))?;
                            types.push(t);
                        }
                        f.types = Some(types);
                    }
                }
                _ => return Err((vec!["task_runs"], format!("{k}: not served"), v.clone())),
            }
        }
    }
    for k in ["flows", "deployments", "work_pools", "work_pool_queues"] {
        if let Some(v) = top.get(k).filter(|v| !v.is_null()) {
            return Err((vec![k_static(k)], "not served".into(), v.clone()));
        }
    }
    Ok(f)
}

fn k_static(k: &str) -> &'static str {
    match k {
        "flows" => "flows",
        "deployments" => "deployments",
        "work_pools" => "work_pools",
        _ => "work_pool_queues",
    }
}

fn matching<'a>(index: &'a crate::index::Index, f: &Filter) -> Vec<&'a std::sync::Arc<TaskRun>> {
    let tasks = index.tasks();
    let base: Vec<&std::sync::Arc<TaskRun>> = match (&f.ids, &f.flow_runs, &f.types) {
        (Some(ids), _, _) => ids.iter().filter_map(|i| tasks.get(*i)).collect(),
        (None, Some(frs), _) => frs.iter().flat_map(|fr| tasks.of_flow_run(*fr)).collect(),
        (None, None, Some(types)) => tasks.in_states(types),
        (None, None, None) => tasks.by_expected().collect(),
    };
    base.into_iter()
        .filter(|r| f.ids.as_ref().is_none_or(|ids| ids.contains(&r.id)))
        .filter(|r| {
            f.flow_runs
                .as_ref()
                .is_none_or(|frs| r.flow_run_id.is_some_and(|x| frs.contains(&x)))
        })
        .filter(|r| {
            f.types
                .as_ref()
                .is_none_or(|ts| r.state_type.is_some_and(|t| ts.contains(&t)))
        })
        .filter(|r| f.names.as_ref().is_none_or(|ns| ns.contains(&r.name)))
        .filter(|r| {
            f.flow_run_null
                .is_none_or(|null| r.flow_run_id.is_none() == null)
        })
        .collect()
}

/// `limit` and `offset` when both are valid.
fn page_of(body: &Value) -> Result<(usize, usize), ()> {
    let limit = match body.get("limit") {
        None | Some(Value::Null) => 200,
        Some(v) => match v.as_u64() {
            Some(n) if n <= 200 => n as usize,
            _ => return Err(()),
        },
    };
    let offset = match body.get("offset") {
        None | Some(Value::Null) => 0,
        Some(v) => v.as_u64().ok_or(())? as usize,
    };
    Ok((offset, limit))
}

/// `POST /api/task_runs/filter` (`count`: `/task_runs/count`).
pub(super) fn filter(app: &AppView, text: &[u8], count: bool) -> Reply {
    let body = match parse(text) {
        Ok(b) => b,
        Err(r) => return r,
    };
    let f = match filter_of(&body) {
        Ok(f) => f,
        Err((loc, msg, input)) => return invalid(&loc, &msg, &input, &body),
    };
    let index = app.index();
    let unfiltered =
        f.ids.is_none() && f.flow_runs.is_none() && f.names.is_none() && f.flow_run_null.is_none();
    // The unfiltered reads (`prefect task-run ls`, a state's count) from
    // the ordered sets alone: O(log n + page), not a scan.
    if count && unfiltered {
        let n = match &f.types {
            None => index.tasks().len(),
            Some(ts) => {
                let mut ts = ts.clone();
                ts.sort_unstable();
                ts.dedup();
                ts.iter().map(|t| index.tasks().count_in(*t)).sum()
            }
        };
        return Reply {
            status: 200,
            body: n.to_string(),
        };
    }
    let sort = body
        .get("sort")
        .and_then(Value::as_str)
        .unwrap_or("ID_DESC");
    if unfiltered
        && f.types.is_none()
        && matches!(sort, "EXPECTED_START_TIME_DESC" | "EXPECTED_START_TIME_ASC")
        && let Ok((offset, limit)) = page_of(&body)
    {
        let all = index.tasks().by_expected();
        let page: Vec<Value> = if sort.ends_with("DESC") {
            all.rev()
                .skip(offset)
                .take(limit)
                .map(|r| render(&index, r))
                .collect()
        } else {
            all.skip(offset)
                .take(limit)
                .map(|r| render(&index, r))
                .collect()
        };
        return Reply {
            status: 200,
            body: Value::Array(page).to_string(),
        };
    }
    let mut runs = matching(&index, &f);
    if count {
        return Reply {
            status: 200,
            body: runs.len().to_string(),
        };
    }
    let limit = match body.get("limit") {
        None | Some(Value::Null) => 200,
        Some(v) => match v.as_u64() {
            Some(n) if n <= 200 => n as usize,
            Some(_) => {
                return Reply::detail(422, "Invalid limit: must be less than or equal to 200.");
            }
            None => return invalid(&["limit"], "Input should be a valid integer", v, &body),
        },
    };
    let offset = match body.get("offset") {
        None | Some(Value::Null) => 0,
        Some(v) => match v.as_u64() {
            Some(n) => n as usize,
            None => return invalid(&["offset"], "Input should be a valid integer", v, &body),
        },
    };
    match sort {
        "ID_DESC" => runs.sort_by_key(|r| Reverse(r.id)),
        "EXPECTED_START_TIME_ASC" => runs.sort_by_key(|r| (r.expected_start, r.id)),
        "EXPECTED_START_TIME_DESC" => runs.sort_by_key(|r| Reverse((r.expected_start, r.id))),
        "NAME_ASC" => runs.sort_by(|a, b| (&a.name, a.id).cmp(&(&b.name, b.id))),
        "NAME_DESC" => runs.sort_by(|a, b| (&b.name, b.id).cmp(&(&a.name, a.id))),
        // Nulls last, as Prefect's.
        "END_TIME_DESC" => runs.sort_by_key(|r| Reverse((r.end.is_some(), r.end, r.id))),
        "NEXT_SCHEDULED_START_TIME_ASC" => runs.sort_by_key(|r| (r.expected_start, r.id)),
        other => {
            return invalid(
                &["sort"],
                "Input should be a TaskRunSort",
                &Value::from(other),
                &body,
            );
        }
    }
    let page: Vec<Value> = runs
        .into_iter()
        .skip(offset)
        .take(limit)
        .map(|r| render(&index, r))
        .collect();
    Reply {
        status: 200,
        body: Value::Array(page).to_string(),
    }
}
