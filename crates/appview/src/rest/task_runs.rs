//! The task-run routes and the one write path every task-run state takes
//! ([`record_state`]: a `prefect.task-run.*` event from `/events/in`, a
//! `POST /task_runs/`, a `set_state`), each a signed commit of the task
//! run's record and its new state's (`crate::task_run`).
//!
//! | route | answer |
//! |---|---|
//! | `POST /api/task_runs/` | the task run of that (flow run, `task_key`, `dynamic_key`) when there is one (200), else a new one in the body's state or PENDING (201) |
//! | `GET /api/task_runs/{id}` | the task run with its state, or 404 `Task not found` |
//! | `POST /api/task_runs/{id}/set_state` | `ACCEPT` (201), or `ABORT` (200) when leaving a terminal state without `force` |
//! | `POST /api/task_runs/filter` | `flow_runs.id.any_`, `task_runs.id.any_`, `task_runs.name.any_`, `task_runs.state.type.any_`, `task_runs.flow_run_id.any_`/`is_null_`; sorts `ID_DESC` (default), `EXPECTED_START_TIME_ASC`/`_DESC`, `NAME_ASC`/`_DESC`, `END_TIME_DESC`; `limit` (at most 200), `offset` |
//! | `POST /api/task_runs/count` | the count of the same filter |
//!
//! Ordering: a state whose timestamp is older than the run's current
//! state is kept in the history but does not move the run (Prefect's
//! recorder keeps the newest state current). An event seen again (the
//! client resends the events a checkpoint did not confirm) writes
//! nothing: its id is the state's record key. A filter field outside the
//! list is refused with 422 in Prefect's shape, naming it.

use serde_json::{Map, Value, json};

use crate::app::AppView;
use crate::error::AppviewError;
use crate::model::StateType;
use crate::rest::reply::Reply;
use crate::rest::request;
use crate::rest::time;
use crate::task_run::{TASK_RUN_NSID, TASK_STATE_NSID, TaskRun, TaskRunState};
use crate::uuid::Uuid;
use store::RecordWrite;

/// The task-run and event routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskRoute {
    /// `POST /api/task_runs/`.
    Create,
    /// `POST /api/task_runs/filter`.
    Filter,
    /// `POST /api/task_runs/count`.
    Count,
    /// `GET /api/task_runs/{id}`.
    Read(Uuid),
    /// `POST /api/task_runs/{id}/set_state`.
    SetState(Uuid),
    /// `GET /api/events/in` (a WebSocket upgrade; the server answers it).
    EventsIn,
    /// `POST /api/events/filter`.
    EventsFilter,
    /// `GET /api/flows/{id}` (the client's events worker reads the flow
    /// of every event it sends).
    ReadFlow(Uuid),
}

/// Task-run fields the server owns, never taken from a client's body.
const SERVER_FIELDS: [&str; 10] = [
    "id",
    "created",
    "updated",
    "flow_run_id",
    "state_id",
    "state_type",
    "state_name",
    "state",
    "estimated_run_time",
    "estimated_start_time_delta",
];

/// One state to record for task run `run_id`.
pub(crate) struct StateIn {
    /// The state's id (the event's id).
    pub id: Uuid,
    /// When (µs).
    pub timestamp: i64,
    /// `type`, `name`, `message`, `state_details`, `data` as sent.
    pub state: Map<String, Value>,
}

/// What a record did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Recorded {
    /// Committed; whether the run's current state moved.
    Committed(bool),
    /// The state was already recorded (a resent event).
    Duplicate,
}

fn id_text(id: Uuid) -> Value {
    Value::from(id.to_string())
}

/// Records `st` for the task run `run_id` (created when new) with the
/// run's fields `fields` (the event's `payload.task_run`), under flow run
/// `flow_run`: one signed commit.
pub(crate) fn record_state(
    app: &AppView,
    run_id: Uuid,
    flow_run: Option<Uuid>,
    fields: &Map<String, Value>,
    st: StateIn,
) -> Result<Recorded, AppviewError> {
    let mut outcome = Recorded::Duplicate;
    app.commit_with(|index| {
        let tasks = index.tasks();
        if tasks.state(st.id).is_some() {
            return Ok(None);
        }
        let existing = tasks.get(run_id);
        let now = time::now_us();
        let mut body = existing.map(|r| r.body.clone()).unwrap_or_default();
        for (k, v) in fields {
            if !SERVER_FIELDS.contains(&k.as_str()) {
                body.insert(k.clone(), v.clone());
            }
        }
        body.insert("id".into(), id_text(run_id));
        let created = existing
            .and_then(|r| r.body.get("created").cloned())
            .unwrap_or_else(|| Value::from(time::format(now)));
        body.insert("created".into(), created);
        body.insert("updated".into(), Value::from(time::format(now)));
        let flow_run = flow_run.or(existing.and_then(|r| r.flow_run_id));
        body.insert("flow_run_id".into(), flow_run.map_or(Value::Null, id_text));
        let mut state = st.state.clone();
        let type_name = state
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("PENDING")
            .to_owned();
        let state_type = StateType::parse(&type_name)?;
        state.insert("id".into(), id_text(st.id));
        state.insert("type".into(), Value::from(type_name.clone()));
        if !state.get("name").is_some_and(Value::is_string) {
            state.insert(
                "name".into(),
                Value::from(request::default_name(state_type)),
            );
        }
        state.insert("timestamp".into(), Value::from(time::format(st.timestamp)));
        state.entry("message").or_insert(Value::Null);
        state.entry("data").or_insert(Value::Null);
        let details = state
            .entry("state_details")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(d) = details {
            d.insert("task_run_id".into(), id_text(run_id));
            d.insert("flow_run_id".into(), flow_run.map_or(Value::Null, id_text));
        }
        let newer = existing.is_none_or(|r| st.timestamp >= r.state_timestamp);
        if newer {
            body.insert("state_id".into(), id_text(st.id));
            body.insert("state_type".into(), Value::from(type_name));
            body.insert("state_name".into(), state["name"].clone());
            body.insert(
                "state_timestamp".into(),
                Value::from(time::format(st.timestamp)),
            );
        }
        let mut run = TaskRun::from_body(run_id, body);
        run.children = existing.map(|r| r.children.clone()).unwrap_or_default();
        let state = TaskRunState {
            id: st.id,
            task_run_id: run_id,
            body: state,
        };
        let rkey = run_id.to_string();
        let run_write = if existing.is_some() {
            RecordWrite::update(TASK_RUN_NSID, &rkey, run.encode())
        } else {
            RecordWrite::create(TASK_RUN_NSID, Some(&rkey), run.encode())
        };
        let state_write =
            RecordWrite::create(TASK_STATE_NSID, Some(&st.id.to_string()), state.encode());
        outcome = Recorded::Committed(newer);
        Ok(Some(vec![run_write, state_write]))
    })?;
    Ok(outcome)
}

/// Links flow run `child` to its parent task run `parent` (a subflow's
/// `POST /flow_runs/` with `parent_task_run_id`): one commit of the task
/// run's record. A parent that is not a task run here links nothing.
pub(crate) fn link_child(app: &AppView, parent: Uuid, child: Uuid) -> Result<(), AppviewError> {
    app.commit_with(|index| {
        let Some(run) = index.tasks().get(parent) else {
            return Ok(None);
        };
        let mut run = (**run).clone();
        if run.children.contains(&child) {
            return Ok(None);
        }
        run.children.push(child);
        run.children.sort_unstable();
        let rkey = parent.to_string();
        Ok(Some(vec![RecordWrite::update(
            TASK_RUN_NSID,
            &rkey,
            run.encode(),
        )]))
    })
    .map(|_| ())
}

/// After a `POST /flow_runs/` answered `reply`: links the new run to the
/// body's `parent_task_run_id` (a failed link is the reply's 500: the run
/// stands, and a subflow retry would not find it).
pub(crate) fn link_subflow(app: &AppView, body: &Value, status: u16, reply: &str) -> Option<Reply> {
    let parent = body.get("parent_task_run_id").and_then(parse_uuid)?;
    if status != 201 {
        return None;
    }
    let child = serde_json::from_str::<Value>(reply)
        .ok()
        .and_then(|v| v.get("id").and_then(parse_uuid))?;
    link_child(app, parent, child).err().map(|e| failed(&e))
}

/// After a flow run's `set_state` answered `reply`: a subflow's new state
/// is also its tracking task run's (Prefect's server does the same), one
/// more commit. The flow run's state stands whatever this does.
pub(crate) fn mirror_to_parent(
    app: &AppView,
    flow_run: Uuid,
    status: u16,
    reply: &str,
) -> Option<Reply> {
    if status != 201 {
        return None;
    }
    let parent = app.index().tasks().parent_of(flow_run)?;
    let answer = serde_json::from_str::<Value>(reply).ok()?;
    let Some(Value::Object(state)) = answer.get("state") else {
        return None;
    };
    let mut st = Map::new();
    for k in ["type", "name", "message"] {
        if let Some(v) = state.get(k) {
            st.insert(k.into(), v.clone());
        }
    }
    let mut details = Map::new();
    details.insert("child_flow_run_id".into(), id_text(flow_run));
    st.insert("state_details".into(), Value::Object(details));
    let id = match new_id() {
        Ok(i) => i,
        Err(e) => return Some(failed(&e)),
    };
    let timestamp = state
        .get("timestamp")
        .and_then(Value::as_str)
        .and_then(time::parse)
        .unwrap_or_else(time::now_us);
    let mut fields = Map::new();
    match st.get("type").and_then(Value::as_str) {
        Some("RUNNING") => {
            fields.insert("start_time".into(), Value::from(time::format(timestamp)));
        }
        Some(t) if StateType::parse(t).is_ok_and(StateType::is_terminal) => {
            fields.insert("end_time".into(), Value::from(time::format(timestamp)));
        }
        _ => {}
    }
    let stin = StateIn {
        id,
        timestamp,
        state: st,
    };
    record_state(app, parent, None, &fields, stin)
        .err()
        .map(|e| failed(&e))
}

/// `flow_runs.parent_task_run_id.any_` of a flow-run read, taken out of
/// `body`: the flow runs created under those task runs (`None`: the body
/// has no such filter).
pub(crate) fn take_parent_filter(app: &AppView, body: &mut Value) -> Option<Vec<Uuid>> {
    let runs = body.get_mut("flow_runs")?.as_object_mut()?;
    let parent = runs.remove("parent_task_run_id")?;
    let ids: Vec<Uuid> = parent
        .get("any_")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(parse_uuid)
        .collect();
    Some(app.index().tasks().children_of(&ids))
}

/// A task run as Prefect's API answers it: its body, its state, and the
/// two estimates Prefect computes (0 here).
pub(crate) fn render(app_index: &crate::index::Index, run: &TaskRun) -> Value {
    let mut out = run.body.clone();
    out.remove("state_timestamp");
    let state = run
        .state_id
        .and_then(|s| app_index.tasks().state(s))
        .map_or(Value::Null, |s| Value::Object(s.body.clone()));
    out.insert("state".into(), state);
    let total = out.get("total_run_time").cloned().unwrap_or(json!(0.0));
    out.insert("estimated_run_time".into(), total);
    out.insert("estimated_start_time_delta".into(), json!(0.0));
    Value::Object(out)
}

pub(super) fn invalid(loc: &[&str], msg: &str, input: &Value, body: &Value) -> Reply {
    let mut l: Vec<Value> = vec![Value::from("body")];
    l.extend(loc.iter().map(|s| Value::from(*s)));
    let b = json!({
        "exception_message": "Invalid request received.",
        "exception_detail": [{"type": "value_error", "loc": l, "msg": msg, "input": input}],
        "request_body": body,
    });
    Reply {
        status: 422,
        body: b.to_string(),
    }
}

pub(super) fn parse(text: &[u8]) -> Result<Value, Reply> {
    if text.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Null);
    }
    serde_json::from_slice(text).map_err(|e| Reply::bad_json(&e, text))
}

pub(super) fn parse_uuid(v: &Value) -> Option<Uuid> {
    v.as_str()
        .and_then(|s| Uuid::parse(&s.to_ascii_lowercase()).ok())
}

fn new_id() -> Result<Uuid, AppviewError> {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).map_err(|e| AppviewError::Io(std::io::Error::other(e.to_string())))?;
    let v = u128::from_be_bytes(b);
    Ok(Uuid(
        (v & !(0xf << 76) & !(0x3 << 62)) | (0x4 << 76) | (0x2 << 62),
    ))
}

pub(super) fn failed(e: &AppviewError) -> Reply {
    Reply {
        status: 500,
        body: json!({"exception_message": format!("Internal Server Error: {e}")}).to_string(),
    }
}

/// `POST /api/task_runs/`.
pub(super) fn create(app: &AppView, text: &[u8]) -> Reply {
    let body = match parse(text) {
        Ok(Value::Object(b)) => b,
        Ok(other) => return invalid(&[], "Input should be a valid dictionary", &other, &other),
        Err(r) => return r,
    };
    let whole = Value::Object(body.clone());
    for key in ["task_key", "dynamic_key"] {
        if !body.get(key).is_some_and(Value::is_string) {
            let input = body.get(key).cloned().unwrap_or(Value::Null);
            return invalid(&[key], "Field required (a string)", &input, &whole);
        }
    }
    let flow_run = match body.get("flow_run_id") {
        None | Some(Value::Null) => None,
        Some(v) => match parse_uuid(v) {
            Some(id) => Some(id),
            None => return invalid(&["flow_run_id"], "Input should be a valid UUID", v, &whole),
        },
    };
    // Prefect answers an existing (flow run, task key, dynamic key) with
    // that run.
    if let Some(f) = flow_run {
        let index = app.index();
        let same = index.tasks().of_flow_run(f).find(|r| {
            r.body.get("task_key") == body.get("task_key")
                && r.body.get("dynamic_key") == body.get("dynamic_key")
        });
        if let Some(r) = same {
            return Reply {
                status: 200,
                body: render(&index, r).to_string(),
            };
        }
    }
    let id = match body.get("id") {
        Some(v) if !v.is_null() => match parse_uuid(v) {
            Some(id) => id,
            None => return invalid(&["id"], "Input should be a valid UUID", v, &whole),
        },
        _ => match new_id() {
            Ok(id) => id,
            Err(e) => return failed(&e),
        },
    };
    let mut state = match body.get("state") {
        Some(Value::Object(s)) => s.clone(),
        _ => Map::new(),
    };
    state
        .entry("type")
        .or_insert_with(|| Value::from("PENDING"));
    let mut fields = body.clone();
    fields.remove("state");
    fields
        .entry("name")
        .or_insert_with(|| Value::from(format!("task-run-{}", &id.to_string()[..8])));
    let now = time::now_us();
    fields
        .entry("expected_start_time")
        .or_insert_with(|| Value::from(time::format(now)));
    put_state(app, id, flow_run, &fields, state, 201, |_| None)
}

/// Records `state` and answers with the run (create) or the
/// orchestration result (set_state, `orchestration` given the state).
fn put_state(
    app: &AppView,
    id: Uuid,
    flow_run: Option<Uuid>,
    fields: &Map<String, Value>,
    state: Map<String, Value>,
    status: u16,
    orchestration: impl Fn(Value) -> Option<Value>,
) -> Reply {
    if let Some(t) = state.get("type")
        && t.as_str().is_none_or(|t| StateType::parse(t).is_err())
    {
        let whole = Value::Object(state.clone());
        return invalid(
            &["state", "type"],
            "Input should be a state type",
            t,
            &whole,
        );
    }
    let st_id = match new_id() {
        Ok(i) => i,
        Err(e) => return failed(&e),
    };
    let st = StateIn {
        id: st_id,
        timestamp: time::now_us(),
        state,
    };
    match record_state(app, id, flow_run, fields, st) {
        Ok(_) => {
            let index = app.index();
            let Some(run) = index.tasks().get(id) else {
                return failed(&AppviewError::UnknownRun(id.to_string()));
            };
            let rendered = render(&index, run);
            let out = orchestration(rendered["state"].clone()).unwrap_or(rendered);
            Reply {
                status,
                body: out.to_string(),
            }
        }
        Err(AppviewError::UnknownStateType(t)) => invalid(
            &["state", "type"],
            "Input should be a state type",
            &Value::from(t),
            &Value::Null,
        ),
        Err(e) => failed(&e),
    }
}

/// `GET /api/task_runs/{id}`.
pub(super) fn read(app: &AppView, id: Uuid) -> Reply {
    let index = app.index();
    match index.tasks().get(id) {
        Some(r) => Reply {
            status: 200,
            body: render(&index, r).to_string(),
        },
        None => Reply::detail(404, "Task not found"),
    }
}

/// `POST /api/task_runs/{id}/set_state`.
pub(super) fn set_state(app: &AppView, id: Uuid, text: &[u8]) -> Reply {
    let body = match parse(text) {
        Ok(b) => b,
        Err(r) => return r,
    };
    let Some(Value::Object(state)) = body.get("state") else {
        let input = body.get("state").cloned().unwrap_or(Value::Null);
        return invalid(&["state"], "Field required (a state)", &input, &body);
    };
    let force = body.get("force").and_then(Value::as_bool).unwrap_or(false);
    let current = {
        let index = app.index();
        match index.tasks().get(id) {
            None => {
                return Reply {
                    status: 404,
                    body: json!({"exception_message": format!("Task run with id {id} not found")})
                        .to_string(),
                };
            }
            Some(r) => (r.state_type, render(&index, r)["state"].clone()),
        }
    };
    if let (Some(t), false) = (current.0, force)
        && t.is_terminal()
    {
        let out = json!({
            "state": current.1,
            "status": "ABORT",
            "details": {"type": "abort_details",
                "reason": format!("Run is already in terminal state {}.", t.as_str())},
        });
        return Reply {
            status: 200,
            body: out.to_string(),
        };
    }
    put_state(app, id, None, &Map::new(), state.clone(), 201, |st| {
        Some(json!({"state": st, "status": "ACCEPT", "details": {"type": "accept_details"}}))
    })
}
