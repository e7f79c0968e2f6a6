//! The task-run routes and the events socket over the wire, without
//! Prefect's client: `POST /task_runs/` (and its answer for an existing
//! natural key), `GET`, `set_state` (ACCEPT, ABORT leaving a terminal
//! state, `force`), filter and count with sorts and pages, refusals in
//! Prefect's shape, `/events/in`'s auth handshake and message bound, a
//! resent event recorded once, and the index equal to its rebuild.

#[path = "support/http.rs"]
mod http;

use std::net::TcpStream;

use appview::rest::{RestConfig, time};
use http::{call, get};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::{Message, client::client};

#[test]
fn task_runs_are_created_moved_read_filtered_and_counted() {
    let (_dir, app, s) = http::start(1, RestConfig::default());
    let (_, flow) = call(&s, "POST", "/api/flows/", &json!({"name": "f"}));
    let (st, fr) = call(
        &s,
        "POST",
        "/api/flow_runs/",
        &json!({"flow_id": flow["id"]}),
    );
    assert_eq!(st, 201);
    let fr = fr["id"].as_str().unwrap();
    let mut ids = Vec::new();
    for (i, name) in ["b", "a", "c"].into_iter().enumerate() {
        let (st, tr) = call(
            &s,
            "POST",
            "/api/task_runs/",
            &json!({"flow_run_id": fr, "task_key": "k", "dynamic_key": i.to_string(), "name": name,
                "empirical_policy": {"retries": 0, "retry_jitter_factor": 0.5}}),
        );
        assert_eq!(st, 201, "{tr}");
        assert_eq!(tr["state"]["type"], "PENDING");
        assert_eq!(
            tr["empirical_policy"]["retry_jitter_factor"], 0.5,
            "kept as sent"
        );
        ids.push(tr["id"].as_str().unwrap().to_owned());
    }
    // The same natural key: that run, 200.
    let (st, again) = call(
        &s,
        "POST",
        "/api/task_runs/",
        &json!({"flow_run_id": fr, "task_key": "k", "dynamic_key": "0"}),
    );
    assert_eq!((st, again["id"].as_str()), (200, Some(ids[0].as_str())));
    let set =
        |id: &str, body: Value| call(&s, "POST", &format!("/api/task_runs/{id}/set_state"), &body);
    let (st, r) = set(&ids[0], json!({"state": {"type": "RUNNING"}}));
    assert_eq!((st, r["status"].as_str()), (201, Some("ACCEPT")));
    let (st, _) = set(&ids[0], json!({"state": {"type": "COMPLETED"}}));
    assert_eq!(st, 201);
    let (st, r) = set(&ids[0], json!({"state": {"type": "RUNNING"}}));
    assert_eq!((st, r["status"].as_str()), (200, Some("ABORT")), "{r}");
    assert_eq!(r["state"]["type"], "COMPLETED");
    let (st, _) = set(
        &ids[0],
        json!({"state": {"type": "RUNNING"}, "force": true}),
    );
    assert_eq!(st, 201, "force");
    let (st, r) = get(&s, &format!("/api/task_runs/{}", ids[0]));
    assert_eq!((st, r["state_type"].as_str()), (200, Some("RUNNING")));
    assert_eq!(r["state"]["state_details"]["task_run_id"], ids[0].as_str());
    let missing = "00000000-0000-4000-8000-000000000009";
    assert_eq!(
        get(&s, &format!("/api/task_runs/{missing}")),
        (404, json!({"detail": "Task not found"}))
    );
    assert_eq!(set(missing, json!({"state": {"type": "RUNNING"}})).0, 404);
    let (st, e) = set(&ids[1], json!({"state": {"type": "NOPE"}}));
    assert_eq!(st, 422, "{e}");

    let names = |body: Value| -> Vec<String> {
        let (st, page) = call(&s, "POST", "/api/task_runs/filter", &body);
        assert_eq!(st, 200, "{page}");
        page.as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(json!({"sort": "NAME_ASC"})), ["a", "b", "c"]);
    assert_eq!(names(json!({"sort": "NAME_DESC", "limit": 2})), ["c", "b"]);
    assert_eq!(
        names(json!({"sort": "NAME_ASC", "offset": 1, "limit": 1})),
        ["b"]
    );
    assert_eq!(
        names(json!({"sort": "EXPECTED_START_TIME_ASC"})),
        ["b", "a", "c"]
    );
    assert_eq!(
        names(json!({"sort": "EXPECTED_START_TIME_DESC"})),
        ["c", "a", "b"]
    );
    assert_eq!(
        names(json!({"task_runs": {"state": {"type": {"any_": ["PENDING"]}}}, "sort": "NAME_ASC"})),
        ["a", "c"]
    );
    assert_eq!(names(json!({"flow_runs": {"id": {"any_": [fr]}}})).len(), 3);
    assert_eq!(
        names(json!({"task_runs": {"id": {"any_": [ids[2]]}}})),
        ["c"]
    );
    let (_, n) = call(
        &s,
        "POST",
        "/api/task_runs/count",
        &json!({"task_runs": {"state": {"type": {"any_": ["RUNNING"]}}}}),
    );
    assert_eq!(n, 1);
    let (st, e) = call(
        &s,
        "POST",
        "/api/task_runs/filter",
        &json!({"sort": "SIDEWAYS"}),
    );
    assert_eq!(
        (st, e["exception_detail"][0]["loc"].clone()),
        (422, json!(["body", "sort"]))
    );
    let (st, _) = call(&s, "POST", "/api/task_runs/filter", &json!({"limit": 201}));
    assert_eq!(st, 422);
    let (st, e) = call(
        &s,
        "POST",
        "/api/task_runs/filter",
        &json!({"task_runs": {"tags": {"all_": ["x"]}}}),
    );
    assert_eq!(st, 422, "a filter field not served: {e}");
    let (st, _) = call(&s, "POST", "/api/task_runs/", &json!({"task_key": "k"}));
    assert_eq!(st, 422, "dynamic_key missing");
    assert_eq!(*app.index(), app.rebuild_index().unwrap());
    s.shutdown();
}

fn event(id: &str, run: &str, ty: &str, name: &str) -> String {
    let now = time::format(time::now_us());
    json!({"id": id, "occurred": now, "event": format!("prefect.task-run.{name}"),
        "resource": {"prefect.resource.id": format!("prefect.task-run.{run}")}, "related": [],
        "payload": {"validated_state": {"type": ty, "name": name},
            "task_run": {"name": "t", "task_key": "t", "dynamic_key": "0", "expected_start_time": now}}})
    .to_string()
}

#[test]
fn the_events_socket_authenticates_bounds_and_records_each_event_once() {
    let (_dir, app, s) = http::start(1, RestConfig::default());
    let url = format!("ws://{}/api/events/in", s.addr());
    // A first message that is not the auth message: auth_failure, closed.
    let (mut ws, resp) = client(
        tokio_tungstenite::tungstenite::ClientRequestBuilder::new(url.parse().unwrap())
            .with_sub_protocol("prefect"),
        TcpStream::connect(s.addr()).unwrap(),
    )
    .unwrap();
    assert_eq!(
        resp.headers().get("sec-websocket-protocol").unwrap(),
        "prefect"
    );
    ws.send(Message::Text("{\"type\":\"hello\"}".into()))
        .unwrap();
    match ws.read().unwrap() {
        Message::Text(t) => assert!(t.contains("auth_failure"), "{t}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(ws.read(), Ok(Message::Close(_)) | Err(_)));

    let (mut ws, _) = client(url.as_str(), TcpStream::connect(s.addr()).unwrap()).unwrap();
    ws.send(Message::Text("{\"type\":\"auth\",\"token\":null}".into()))
        .unwrap();
    assert!(matches!(ws.read().unwrap(), Message::Text(t) if t.contains("auth_success")));
    let run = "00000000-0000-4000-8000-0000000000aa";
    let e1 = "00000000-0000-4000-8000-0000000000b1";
    let e2 = "00000000-0000-4000-8000-0000000000b2";
    ws.send(Message::Text(event(e1, run, "PENDING", "Pending").into()))
        .unwrap();
    ws.send(Message::Text(event(e2, run, "RUNNING", "Running").into()))
        .unwrap();
    // Resent (as the client does after a reconnect): written once.
    ws.send(Message::Text(event(e1, run, "PENDING", "Pending").into()))
        .unwrap();
    // Other types and bodies that are not events: accepted, dropped.
    ws.send(Message::Text(
        "{\"event\":\"prefect.flow-run.heartbeat\"}".into(),
    ))
    .unwrap();
    ws.send(Message::Text("not json".into())).unwrap();
    ws.send(Message::Ping(Vec::from(*b"cp").into())).unwrap();
    loop {
        if let Message::Pong(_) = ws.read().unwrap() {
            break;
        }
    }
    assert_eq!(app.index().tasks().len(), 1);
    assert_eq!(app.index().tasks().state_count(), 2);
    let (_, r) = get(&s, &format!("/api/task_runs/{run}"));
    assert_eq!(r["state_type"], "RUNNING");
    let (_, page) = call(
        &s,
        "POST",
        "/api/events/filter",
        &json!({"filter": {"event": {"prefix": ["prefect.task-run."]}, "order": "ASC"}}),
    );
    let got: Vec<&str> = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        got,
        ["prefect.task-run.Pending", "prefect.task-run.Running"]
    );
    assert_eq!(page["total"], 2);
    // A message past the bound closes the socket.
    let big = "x".repeat(appview::rest::events::MAX_MESSAGE + 1);
    let _ = ws.send(Message::Text(big.into()));
    let closed = loop {
        match ws.read() {
            Ok(Message::Close(_)) | Err(_) => break true,
            Ok(_) => continue,
        }
    };
    assert!(closed);
    // Not an upgrade: refused.
    assert_eq!(get(&s, "/api/events/in").0, 400);
    assert_eq!(*app.index(), app.rebuild_index().unwrap());
    s.shutdown();
}
