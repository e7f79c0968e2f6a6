//! The routes: which request is which route, and each route's answer.
//! Reads come from the index under its read lock; writes go through
//! [`AppView::apply_with`] (a signed commit each), their times stamped by
//! the server under the write lock, as Prefect stamps its own.
//!
//! Orchestration (`set_state`): what the model refuses is answered as
//! Prefect's core policy answers the same transition, `ABORT` with the
//! run's current state and the reason: leaving a terminal state (Prefect
//! aborts only the moves to CRASHED, PAUSED, CANCELLING and SCHEDULED and
//! lets a rerun leave COMPLETED, FAILED or CANCELLED; this model keeps a
//! terminal state final) and entering PENDING from PENDING, RUNNING,
//! CANCELLING or CANCELLED. Prefect's `REJECT` and `WAIT` come from rules
//! this server has no state for (persisted results, concurrency slots,
//! scheduled times, retries), so it never answers them.

use serde_json::Value;

use crate::app::AppView;
use crate::error::AppviewError;
use crate::model::{Mutation, StateType};
use crate::plan::{Input, NewFlow, NewRun, NewState};
use crate::rest::logs::{self, LogRoute};
use crate::rest::render;
pub use crate::rest::reply::Reply;
use crate::rest::request::{self, PageError};
use crate::rest::task_runs::{self, TaskRoute};
use crate::rest::time;
use crate::rest::{events, task_filter, unserved};
use crate::run_page::RunPage;
use crate::uuid::Uuid;

/// The version of Prefect's API this server follows (`GET /admin/version`;
/// Prefect's client checks the major version).
pub const API_VERSION: &str = "3.9.1";

/// A route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// `GET /api/health`.
    Health,
    /// `GET /api/admin/version`.
    Version,
    /// `GET /api/csrf-token` (this server has CSRF protection off, as
    /// Prefect's default).
    CsrfToken,
    /// `POST /api/flows/`.
    CreateFlow,
    /// `POST /api/flows/filter`.
    ReadFlows,
    /// `POST /api/flow_runs/`.
    CreateRun,
    /// `POST /api/flow_runs/filter`.
    ReadRuns,
    /// `POST /api/flow_runs/count`.
    CountRuns,
    /// `GET /api/flow_runs/{id}`.
    ReadRun(Uuid),
    /// `POST /api/flow_runs/{id}/set_state`.
    SetState(Uuid),
    /// The task-run and event routes (`rest::task_runs`, `rest::events`).
    Task(TaskRoute),
    /// The log routes (`rest::logs`).
    Log(LogRoute),
}

impl Route {
    /// Whether it writes (the server runs those on its blocking pool).
    pub fn writes(self) -> bool {
        matches!(
            self,
            Route::CreateFlow
                | Route::CreateRun
                | Route::SetState(_)
                | Route::Task(TaskRoute::Create | TaskRoute::SetState(_))
                | Route::Log(LogRoute::Create)
        )
    }
}

/// Answers a task-run or event route (the upgrade of `/events/in` is the
/// server's, `rest::events::upgrade`).
fn respond_task(app: &AppView, route: TaskRoute, text: &[u8]) -> Reply {
    match route {
        TaskRoute::Create => task_runs::create(app, text),
        TaskRoute::Filter => task_filter::filter(app, text, false),
        TaskRoute::Count => task_filter::filter(app, text, true),
        TaskRoute::Read(id) => task_runs::read(app, id),
        TaskRoute::SetState(id) => task_runs::set_state(app, id, text),
        TaskRoute::EventsFilter => events::filter(app, text),
        TaskRoute::EventsIn => Reply::detail(400, "/api/events/in is a WebSocket endpoint"),
        TaskRoute::ReadFlow(id) => match app.index().flows.get(&id) {
            Some(f) => {
                let mut out = String::with_capacity(256);
                render::flow(&mut out, f);
                Reply::json(200, out)
            }
            None => Reply::detail(404, "Flow not found"),
        },
    }
}

/// Which route `method path` is: `Err` is the reply (404 for no such
/// path, 405 for a path of another method), as FastAPI answers.
pub fn route(method: &str, path: &str) -> Result<Route, Reply> {
    let path = path.split_once('?').map_or(path, |(p, _)| p);
    let rest = path.strip_prefix("/api/").ok_or_else(not_found)?;
    if let Some(area) = unserved::area(rest) {
        return Err(unserved::reply(area));
    }
    let (want, r) = match rest {
        "health" => ("GET", Route::Health),
        "admin/version" => ("GET", Route::Version),
        "csrf-token" => ("GET", Route::CsrfToken),
        "flows/" => ("POST", Route::CreateFlow),
        "flows/filter" => ("POST", Route::ReadFlows),
        "flow_runs/" => ("POST", Route::CreateRun),
        "flow_runs/filter" => ("POST", Route::ReadRuns),
        "flow_runs/count" => ("POST", Route::CountRuns),
        "task_runs/" => ("POST", Route::Task(TaskRoute::Create)),
        "task_runs/filter" => ("POST", Route::Task(TaskRoute::Filter)),
        "task_runs/count" => ("POST", Route::Task(TaskRoute::Count)),
        "events/in" => ("GET", Route::Task(TaskRoute::EventsIn)),
        "events/filter" => ("POST", Route::Task(TaskRoute::EventsFilter)),
        "logs/" => ("POST", Route::Log(LogRoute::Create)),
        "logs/filter" => ("POST", Route::Log(LogRoute::Filter)),
        _ if rest.starts_with("flows/") => {
            let id = &rest["flows/".len()..];
            let id = Uuid::parse(&id.to_ascii_lowercase()).map_err(|_| not_found())?;
            ("GET", Route::Task(TaskRoute::ReadFlow(id)))
        }
        _ if rest.starts_with("task_runs/") => {
            let tail = &rest["task_runs/".len()..];
            let (id, action) = tail.split_once('/').unwrap_or((tail, ""));
            let id = Uuid::parse(&id.to_ascii_lowercase()).map_err(|_| not_found())?;
            match action {
                "" => ("GET", Route::Task(TaskRoute::Read(id))),
                "set_state" => ("POST", Route::Task(TaskRoute::SetState(id))),
                _ => return Err(not_found()),
            }
        }
        _ => {
            let tail = rest.strip_prefix("flow_runs/").ok_or_else(not_found)?;
            let (id, action) = tail.split_once('/').unwrap_or((tail, ""));
            let id = Uuid::parse(&id.to_ascii_lowercase()).map_err(|_| not_found())?;
            match action {
                "" => ("GET", Route::ReadRun(id)),
                "set_state" => ("POST", Route::SetState(id)),
                _ => return Err(not_found()),
            }
        }
    };
    if method != want {
        return Err(Reply::detail(405, "Method Not Allowed"));
    }
    Ok(r)
}

fn not_found() -> Reply {
    Reply::detail(404, "Not Found")
}

/// The body as JSON (an empty body is `null`, which the read routes take
/// as every default).
fn parse_body(text: &[u8]) -> Result<Value, Reply> {
    if text.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Null);
    }
    serde_json::from_slice(text).map_err(|e| Reply::bad_json(&e, text))
}

/// Answers `route` with request body `text`.
pub fn respond(app: &AppView, route: Route, text: &[u8]) -> Reply {
    let body = match route {
        Route::Health => return Reply::json(200, "true".into()),
        Route::Version => return Reply::json(200, format!("\"{API_VERSION}\"")),
        Route::CsrfToken => return Reply::detail(422, "CSRF protection is disabled."),
        Route::ReadRun(id) => return read_run(app, id),
        Route::Task(t) => return respond_task(app, t, text),
        Route::Log(l) => return logs::respond(app, l, text),
        _ => match parse_body(text) {
            Ok(v) => v,
            Err(r) => return r,
        },
    };
    // A subflow's lookup (`flow_runs.parent_task_run_id`), answered from
    // the task runs' links (`rest::task_runs`).
    let mut body = body;
    let parents = match route {
        Route::ReadRuns => task_runs::take_parent_filter(app, &mut body),
        _ => None,
    };
    let page = |e: PageError| match e {
        PageError::Invalid(i) => Reply::invalid(&i, &body),
        PageError::Limit => Reply::detail(422, "Invalid limit: must be less than or equal to 200."),
    };
    match route {
        Route::CreateFlow => match request::flow_create(&body) {
            Ok(f) => create_flow(app, f),
            Err(e) => Reply::invalid(&e, &body),
        },
        Route::CreateRun => match request::flow_run_create(&body, text) {
            Ok(r) => {
                let reply = create_run(app, r);
                task_runs::link_subflow(app, &body, reply.status, &reply.body).unwrap_or(reply)
            }
            Err(e) => Reply::invalid(&e, &body),
        },
        Route::SetState(id) => match request::set_state(&body) {
            Ok(s) => {
                let reply = set_state(app, id, s);
                task_runs::mirror_to_parent(app, id, reply.status, &reply.body).unwrap_or(reply)
            }
            Err(e) => Reply::invalid(&e, &body),
        },
        Route::ReadRuns => match request::runs_read(&body) {
            Ok(q) => {
                let index = app.index();
                let runs = match &parents {
                    None => index.filter_runs(&q.filter, q.sort, q.offset, q.limit),
                    // Rare (once per subflow call) and few: the whole
                    // filter's order, then the children, then the page.
                    Some(children) => {
                        let all = index.filter_runs(&q.filter, q.sort, 0, usize::MAX);
                        let mut page = RunPage::with_capacity(children.len());
                        for r in all
                            .iter()
                            .filter(|r| children.contains(&r.id()))
                            .skip(q.offset)
                            .take(q.limit)
                        {
                            page.push(&r.to_run());
                        }
                        page
                    }
                };
                let now = time::now_us();
                let mut out = String::with_capacity(2048 * runs.len() + 2);
                out.push('[');
                for (i, r) in runs.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    render::run(&mut out, r, index.state(r.state_id()), now);
                }
                out.push(']');
                Reply::json(200, out)
            }
            Err(e) => page(e),
        },
        Route::CountRuns => match request::runs_count(&body) {
            Ok(f) => Reply::json(200, app.index().count_runs(&f).to_string()),
            Err(e) => Reply::invalid(&e, &body),
        },
        Route::ReadFlows => match request::flows_read(&body) {
            Ok(q) => {
                let flows = app
                    .index()
                    .flow_page(q.ids.as_deref(), q.sort, q.offset, q.limit);
                let mut out = String::with_capacity(160 * flows.len() + 2);
                render::flows(&mut out, flows.iter().map(|f| &**f));
                Reply::json(200, out)
            }
            Err(e) => page(e),
        },
        Route::Health
        | Route::Version
        | Route::CsrfToken
        | Route::ReadRun(_)
        | Route::Task(_)
        | Route::Log(_) => not_found(),
    }
}

fn read_run(app: &AppView, id: Uuid) -> Reply {
    let index = app.index();
    match index.run_view(id) {
        Some(r) => {
            let mut out = String::with_capacity(2048);
            render::run(&mut out, r, index.state(r.state_id()), time::now_us());
            Reply::json(200, out)
        }
        None => Reply::detail(404, "Flow run not found"),
    }
}

/// A fresh random (version 4) id.
fn new_id() -> Result<Uuid, AppviewError> {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).map_err(|e| AppviewError::Io(std::io::Error::other(e.to_string())))?;
    let v = u128::from_be_bytes(b);
    Ok(Uuid(
        (v & !(0xf << 76) & !(0x3 << 62)) | (0x4 << 76) | (0x2 << 62),
    ))
}

/// The reply to a write that failed for a reason other than a refused
/// transition.
fn failed(e: &AppviewError) -> Reply {
    match e {
        // Prefect's answer to a foreign key or unique conflict.
        AppviewError::UnknownFlow(_)
        | AppviewError::DuplicateId(_)
        | AppviewError::DuplicateFlowName(_) => Reply::detail(
            409,
            "Data integrity conflict. This usually means a unique or foreign key constraint was violated. See server logs for details.",
        ),
        _ => Reply::exception(500, "Internal Server Error"),
    }
}

fn create_flow(app: &AppView, f: request::FlowCreate) -> Reply {
    // Prefect's POST /flows/ returns the flow of that name when there is
    // one (200), and creates it otherwise (201).
    let mut existing = None;
    let made = app.apply_with(|index| {
        if let Some(old) = index.flow_by_name(&f.name) {
            existing = Some(old.clone());
            return Ok(None);
        }
        Ok(Some(Input::Flow(NewFlow {
            id: new_id()?,
            name: f.name.clone(),
            tags: f.tags.clone(),
            created: time::now_us(),
        })))
    });
    let mut out = String::with_capacity(256);
    match (made, existing) {
        (Ok(_), Some(old)) => {
            render::flow(&mut out, &old);
            Reply::json(200, out)
        }
        (Ok(Some(Mutation::CreateFlow(flow))), None) => {
            render::flow(&mut out, &flow);
            Reply::json(201, out)
        }
        (Ok(_), None) => Reply::exception(500, "Internal Server Error"),
        (Err(e), _) => failed(&e),
    }
}

fn create_run(app: &AppView, r: request::FlowRunCreate) -> Reply {
    let made = app.apply_with(|_| {
        let id = new_id()?;
        let now = time::now_us();
        let mut buf = [0u8; 36];
        Ok(Some(Input::Run(NewRun {
            id,
            flow_id: r.flow_id,
            // Prefect makes a two-word slug; this server a name from the id.
            name: r
                .name
                .clone()
                .unwrap_or_else(|| format!("run-{}", &id.write_to(&mut buf)[..8])),
            state_id: new_id()?,
            // A run created PENDING is expected to start when it was
            // created (Prefect's rule for a first state that is not
            // SCHEDULED).
            expected_start: now,
            created: now,
            tags: r.tags.clone(),
            parameters: r.parameters.clone(),
        })))
    });
    match made {
        Ok(Some(Mutation::CreateRun(run, state))) => {
            let mut out = String::with_capacity(2048);
            let page = RunPage::from_iter([run]);
            if let Some(view) = page.iter().next() {
                render::run(&mut out, view, Some(&state), time::now_us());
            }
            Reply::json(201, out)
        }
        Ok(_) => Reply::exception(500, "Internal Server Error"),
        Err(e) => failed(&e),
    }
}

fn set_state(app: &AppView, id: Uuid, s: request::StateCreate) -> Reply {
    let mut refused: Option<String> = None;
    let made = app.apply_with(|index| {
        let Some(run) = index.run_with_state(id) else {
            return Err(AppviewError::UnknownRun(id.to_string()));
        };
        let from = run.run.state_type;
        let reason = if from.is_terminal() {
            Some(format!(
                "Run is already in terminal state {}.",
                from.as_str()
            ))
        } else if s.state_type == StateType::Pending
            && matches!(
                from,
                StateType::Pending | StateType::Running | StateType::Cancelling
            )
        {
            Some(format!(
                "This run is in a {} state and cannot transition to a PENDING state.",
                from.as_str()
            ))
        } else {
            None
        };
        if reason.is_some() {
            refused = reason;
            return Ok(None);
        }
        Ok(Some(Input::State(NewState {
            id: new_id()?,
            run_id: id,
            state_type: s.state_type,
            name: s.name.clone(),
            // Later than the current state whatever the clock does.
            timestamp: time::now_us().max(run.run.state_timestamp.saturating_add(1)),
            message: s.message.clone(),
        })))
    });
    let mut out = String::with_capacity(1024);
    match made {
        Ok(Some(Mutation::SetState(_, state))) => {
            render::orchestration(&mut out, "ACCEPT", Some(&state), None);
            Reply::json(201, out)
        }
        Ok(_) => {
            let index = app.index();
            let current = index.run_with_state(id).and_then(|r| r.state);
            render::orchestration(&mut out, "ABORT", current.as_deref(), refused.as_deref());
            Reply::json(200, out)
        }
        Err(AppviewError::UnknownRun(_)) => {
            Reply::exception(404, &format!("Flow run with id {id} not found"))
        }
        Err(e) => failed(&e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_are_told_apart_as_fastapi_does() {
        assert_eq!(route("GET", "/api/health"), Ok(Route::Health));
        assert_eq!(
            route("POST", "/api/flow_runs/filter?x=1"),
            Ok(Route::ReadRuns)
        );
        let id = "B8932A69-6BC4-460D-9F8D-38C4A202FEC1";
        assert!(matches!(
            route("GET", &format!("/api/flow_runs/{id}")),
            Ok(Route::ReadRun(_))
        ));
        assert!(matches!(
            route("POST", &format!("/api/flow_runs/{id}/set_state")),
            Ok(Route::SetState(_))
        ));
        assert_eq!(
            route("GET", "/api/flow_runs/filter").unwrap_err().status,
            405
        );
        assert_eq!(route("GET", "/api/flow_runs/xyz").unwrap_err().status, 404);
        assert_eq!(
            route("POST", "/api/task_runs/filter"),
            Ok(Route::Task(TaskRoute::Filter))
        );
        assert_eq!(route("POST", "/api/task_runs/xyz").unwrap_err().status, 404);
        assert_eq!(route("GET", "/health").unwrap_err().status, 404);
    }

    #[test]
    fn new_ids_are_version_4() {
        let id = new_id().unwrap().to_string();
        assert_eq!(&id[14..15], "4");
        assert!(matches!(&id[19..20], "8" | "9" | "a" | "b"), "{id}");
    }
}
