//! Events: the `/api/events/in` WebSocket Prefect 3's client reports to,
//! and `POST /api/events/filter`.
//!
//! The socket, as Prefect's server speaks it: an HTTP/1.1 upgrade (the
//! client offers the `prefect` subprotocol, echoed back), then the
//! client's first text message `{"type": "auth", "token": ...}`, answered
//! `{"type": "auth_success"}` (this server has no auth string
//! configured, so, as Prefect's server without one, any token passes); a
//! first message of another kind is answered `{"type": "auth_failure",
//! "reason": ...}` and the socket closed with 1008. Then every text
//! message is one event's JSON. Bounds: a message of at most
//! [`MAX_MESSAGE`] bytes (the client truncates a state's message at
//! 100,000 characters), [`MAX_SOCKETS`] sockets at once (503 past it), 10
//! s for the auth message, [`IDLE`] of silence at most; the queue is the
//! socket itself: one message is read, recorded, and only then the next,
//! so a fast client is held back by TCP and nothing queues in the server.
//!
//! What is kept: a `prefect.task-run.*` event is recorded as its task
//! run's state before the next message is read (`rest::task_runs`, one
//! signed commit). The client counts an event as delivered once a ping
//! sent after it is answered (its checkpoint; it resends the others on
//! reconnect), and a pong is only written after the messages before the
//! ping were read, so every event the client saw confirmed is committed.
//! A resent event writes nothing (its id is its state's record key). If a
//! commit fails the socket closes with 1011 and the client resends.
//! Every other event type (the client's `prefect.flow-run.*` of a
//! client-side run, a user's `emit_event`, assets) is accepted and
//! dropped (counted in [`dropped`]): this server keeps task runs, not an
//! event store. An event that is not valid JSON, or a task-run event
//! without the fields the recorder reads, is dropped too.
//!
//! `POST /api/events/filter` answers from what was recorded: each task
//! run state is given back as the `prefect.task-run.{state name}` event
//! that reported it (its id, time, resource and flow-run related
//! resource), filtered by `filter.occurred.since`/`until`,
//! `filter.event.prefix`/`name`, `filter.resource.id`/`id_prefix`, in
//! `filter.order` (`DESC` by default), `limit` (at most 50 by default,
//! 200 at most) as Prefect's `{"events", "total", "next_page": null}`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode, header};
use hyper_util::rt::TokioIo;
use serde_json::{Map, Value, json};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};

use crate::app::AppView;
use crate::rest::reply::Reply;
use crate::rest::task_runs::{self, StateIn};
use crate::rest::time;
use crate::uuid::Uuid;

/// An event message's bytes at most.
pub const MAX_MESSAGE: usize = 1 << 20;
/// Open event sockets at most (per process).
pub const MAX_SOCKETS: usize = 256;
/// A socket silent this long is closed (1001): the client's websockets
/// library pings every 20 s and its checkpoint every 30 s, so only a dead
/// peer stays silent.
pub const IDLE: Duration = Duration::from_secs(120);

static OPEN: AtomicUsize = AtomicUsize::new(0);
static DROPPED: AtomicU64 = AtomicU64::new(0);

/// Events accepted and dropped since the process started (types this
/// server does not keep, or bodies it cannot read).
pub fn dropped() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}

fn has(req: &Request<Incoming>, name: header::HeaderName, token: &str) -> bool {
    req.headers()
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|v| v.trim().eq_ignore_ascii_case(token))
}

fn plain(status: StatusCode, detail: &str) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(
        json!({ "detail": detail }).to_string(),
    )));
    *r.status_mut() = status;
    r
}

struct Slot;

impl Drop for Slot {
    fn drop(&mut self) {
        OPEN.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Answers the upgrade of `/api/events/in` and starts reading events.
pub fn upgrade(app: Arc<AppView>, mut req: Request<Incoming>) -> Response<Full<Bytes>> {
    if !has(&req, header::UPGRADE, "websocket") || !has(&req, header::CONNECTION, "upgrade") {
        return plain(
            StatusCode::BAD_REQUEST,
            "/api/events/in is a WebSocket endpoint: expected an upgrade",
        );
    }
    let Some(key) = req.headers().get(header::SEC_WEBSOCKET_KEY) else {
        return plain(StatusCode::BAD_REQUEST, "missing Sec-WebSocket-Key");
    };
    let accept = tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.as_bytes());
    let prefect = has(&req, header::SEC_WEBSOCKET_PROTOCOL, "prefect");
    if OPEN.fetch_add(1, Ordering::Relaxed) >= MAX_SOCKETS {
        OPEN.fetch_sub(1, Ordering::Relaxed);
        return plain(StatusCode::SERVICE_UNAVAILABLE, "Too many event sockets");
    }
    let slot = Slot;
    let on_upgrade = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        let _slot = slot;
        let Ok(upgraded) = on_upgrade.await else {
            return;
        };
        let config = WebSocketConfig::default()
            .max_message_size(Some(MAX_MESSAGE))
            .max_frame_size(Some(MAX_MESSAGE));
        let ws =
            WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, Some(config))
                .await;
        run(app, ws).await;
    });
    let mut r = Response::new(Full::new(Bytes::new()));
    *r.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = r.headers_mut();
    h.insert(
        header::CONNECTION,
        header::HeaderValue::from_static("upgrade"),
    );
    h.insert(
        header::UPGRADE,
        header::HeaderValue::from_static("websocket"),
    );
    if prefect {
        h.insert(
            header::SEC_WEBSOCKET_PROTOCOL,
            header::HeaderValue::from_static("prefect"),
        );
    }
    if let Ok(v) = header::HeaderValue::try_from(accept) {
        h.insert(header::SEC_WEBSOCKET_ACCEPT, v);
    }
    r
}

async fn close<S>(ws: &mut WebSocketStream<S>, code: CloseCode, reason: &str)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let _ = tokio::time::timeout(
        Duration::from_secs(5),
        ws.send(Message::Close(Some(CloseFrame {
            code,
            reason: reason.to_owned().into(),
        }))),
    )
    .await;
}

async fn run<S>(app: Arc<AppView>, mut ws: WebSocketStream<S>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    // The auth handshake.
    let first = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match ws.next().await {
                Some(Ok(Message::Text(t))) => return Some(t.to_string()),
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                _ => return None,
            }
        }
    })
    .await;
    let Ok(Some(first)) = first else {
        return close(&mut ws, CloseCode::Policy, "auth message expected").await;
    };
    let auth: Value = serde_json::from_str(&first).unwrap_or(Value::Null);
    if auth.get("type").and_then(Value::as_str) != Some("auth") {
        let reply = json!({"type": "auth_failure", "reason": "expected an auth message"});
        let _ = ws.send(Message::Text(reply.to_string().into())).await;
        return close(&mut ws, CloseCode::Policy, "auth failure").await;
    }
    if ws
        .send(Message::Text(
            json!({"type": "auth_success"}).to_string().into(),
        ))
        .await
        .is_err()
    {
        return;
    }
    loop {
        let msg = match tokio::time::timeout(IDLE, ws.next()).await {
            Err(_) => return close(&mut ws, CloseCode::Away, "idle").await,
            Ok(None) => break,
            Ok(Some(m)) => m,
        };
        let text = match msg {
            Ok(Message::Text(t)) => t,
            Ok(Message::Binary(b)) => match String::from_utf8(b.to_vec()) {
                Ok(t) => t.into(),
                Err(_) => {
                    DROPPED.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
            },
            Ok(Message::Close(_)) | Err(_) => break,
            Ok(_) => continue,
        };
        let app = app.clone();
        let recorded = tokio::task::spawn_blocking(move || receive(&app, text.as_str())).await;
        if !matches!(recorded, Ok(Ok(()))) {
            return close(&mut ws, CloseCode::Error, "event not recorded").await;
        }
    }
}

/// One event message: a task-run event recorded (`Err` only when its
/// commit failed), anything else dropped.
fn receive(app: &AppView, text: &str) -> Result<(), crate::error::AppviewError> {
    let drop = || {
        DROPPED.fetch_add(1, Ordering::Relaxed);
        Ok(())
    };
    let Ok(Value::Object(event)) = serde_json::from_str::<Value>(text) else {
        return drop();
    };
    let Some(parsed) = task_event(&event) else {
        return drop();
    };
    task_runs::record_state(app, parsed.0, parsed.1, &parsed.2, parsed.3).map(|_| ())
}

fn uuid_after(s: &str, prefix: &str) -> Option<Uuid> {
    s.strip_prefix(prefix)
        .and_then(|id| Uuid::parse(&id.to_ascii_lowercase()).ok())
}

/// A task-run event as the recorder reads it: the task run, its flow run,
/// the run's fields (`payload.task_run`) and the state.
type TaskEvent = (Uuid, Option<Uuid>, Map<String, Value>, StateIn);

/// A `prefect.task-run.*` event's parts, as Prefect's recorder reads them
/// (`None`: another type, or fields missing).
fn task_event(event: &Map<String, Value>) -> Option<TaskEvent> {
    let name = event.get("event")?.as_str()?;
    name.strip_prefix("prefect.task-run.")?;
    let resource = event
        .get("resource")?
        .get("prefect.resource.id")?
        .as_str()?;
    let run = uuid_after(resource, "prefect.task-run.")?;
    let flow_run = event
        .get("related")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|r| r.get("prefect.resource.role").and_then(Value::as_str) == Some("flow-run"))
        .and_then(|r| r.get("prefect.resource.id")?.as_str())
        .and_then(|s| uuid_after(s, "prefect.flow-run."));
    let id = Uuid::parse(&event.get("id")?.as_str()?.to_ascii_lowercase()).ok()?;
    let occurred = time::parse(event.get("occurred")?.as_str()?)?;
    let payload = event.get("payload")?;
    let Value::Object(state) = payload.get("validated_state")? else {
        return None;
    };
    let fields = match payload.get("task_run") {
        Some(Value::Object(o)) => o.clone(),
        _ => Map::new(),
    };
    Some((
        run,
        flow_run,
        fields,
        StateIn {
            id,
            timestamp: occurred,
            state: state.clone(),
        },
    ))
}

/// `POST /api/events/filter`.
pub fn filter(app: &AppView, text: &[u8]) -> Reply {
    let body: Value = if text.iter().all(u8::is_ascii_whitespace) {
        Value::Null
    } else {
        match serde_json::from_slice(text) {
            Ok(v) => v,
            Err(e) => return Reply::bad_json(&e, text),
        }
    };
    let f = body.get("filter").cloned().unwrap_or(Value::Null);
    let limit = body.get("limit").and_then(Value::as_u64).unwrap_or(50);
    if limit > 200 {
        return Reply::detail(422, "Invalid limit: must be less than or equal to 200.");
    }
    let when = |k: &str| {
        f.get("occurred")
            .and_then(|o| o.get(k))
            .and_then(Value::as_str)
            .and_then(time::parse)
    };
    let (since, until) = (when("since"), when("until"));
    let list = |a: &str, b: &str| -> Option<Vec<String>> {
        f.get(a)?.get(b)?.as_array().map(|v| {
            v.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
    };
    let (prefixes, names) = (list("event", "prefix"), list("event", "name"));
    let (rids, rprefixes) = (list("resource", "id"), list("resource", "id_prefix"));
    let asc = f.get("order").and_then(Value::as_str) == Some("ASC");
    let index = app.index();
    let tasks = index.tasks();
    let mut events: Vec<(i64, Uuid, Value)> = Vec::new();
    for st in tasks.states() {
        let ts = st.timestamp();
        if since.is_some_and(|s| ts < s) || until.is_some_and(|u| ts > u) {
            continue;
        }
        let state_name = st.body.get("name").and_then(Value::as_str).unwrap_or("");
        let event = format!("prefect.task-run.{state_name}");
        let resource = format!("prefect.task-run.{}", st.task_run_id);
        if prefixes
            .as_ref()
            .is_some_and(|p| !p.iter().any(|p| event.starts_with(p.as_str())))
            || names.as_ref().is_some_and(|n| !n.contains(&event))
            || rids.as_ref().is_some_and(|r| !r.contains(&resource))
            || rprefixes
                .as_ref()
                .is_some_and(|p| !p.iter().any(|p| resource.starts_with(p.as_str())))
        {
            continue;
        }
        let run = tasks.get(st.task_run_id);
        let mut res = json!({
            "prefect.resource.id": resource,
            "prefect.state-name": state_name,
            "prefect.state-type": st.body.get("type").cloned().unwrap_or(Value::Null),
            "prefect.state-timestamp": time::format(ts),
        });
        if let Some(r) = run {
            res["prefect.resource.name"] = Value::from(r.name.as_str());
        }
        let related: Vec<Value> = run
            .and_then(|r| r.flow_run_id)
            .map(|f| {
                json!({"prefect.resource.id": format!("prefect.flow-run.{f}"),
                    "prefect.resource.role": "flow-run"})
            })
            .into_iter()
            .collect();
        let mut validated = st.body.clone();
        validated.remove("id");
        validated.remove("timestamp");
        events.push((
            ts,
            st.id,
            json!({
                "id": st.id.to_string(),
                "occurred": time::format(ts),
                "event": event,
                "resource": res,
                "related": related,
                "payload": {"validated_state": validated},
                "received": time::format(ts),
                "follows": null,
            }),
        ));
    }
    events.sort_by_key(|e| (e.0, e.1));
    if !asc {
        events.reverse();
    }
    let total = events.len();
    let page: Vec<Value> = events
        .into_iter()
        .take(limit as usize)
        .map(|e| e.2)
        .collect();
    Reply {
        status: 200,
        body: json!({"events": page, "total": total, "next_page": null}).to_string(),
    }
}
