//! The REST server over the wire (`appview::rest`): Prefect's shapes and
//! answers for the subset, refusals as Prefect's, the bounds, and every
//! write a commit the index was fed by.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use appview::AppView;
use appview::rest::{RestConfig, RunningRest, spawn};
use serde_json::{Value, json};

fn start(config: RestConfig) -> (tempfile::TempDir, Arc<AppView>, RunningRest) {
    let dir = tempfile::tempdir().unwrap();
    let app = Arc::new(AppView::open(dir.path(), store::Config::default()).unwrap());
    let server = spawn(
        app.clone(),
        RestConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            workers: 1,
            ..config
        },
    )
    .unwrap();
    (dir, app, server)
}

/// One request on its own connection: (status, body text).
fn raw(server: &RunningRest, head: &str, body: &[u8]) -> (u16, String) {
    let mut s = TcpStream::connect(server.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let status = text[9..12].parse().unwrap();
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

fn call(server: &RunningRest, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let text = body.map(|b| b.to_string()).unwrap_or_default();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        text.len()
    );
    let (status, body) = raw(server, &head, text.as_bytes());
    (
        status,
        serde_json::from_str(&body).unwrap_or(Value::String(body)),
    )
}

fn post(server: &RunningRest, path: &str, body: Value) -> (u16, Value) {
    call(server, "POST", path, Some(&body))
}

#[test]
fn a_run_lives_its_lifecycle_through_prefects_routes_and_every_write_is_a_commit() {
    let (_dir, app, s) = start(RestConfig::default());
    assert_eq!(call(&s, "GET", "/api/health", None), (200, json!(true)));
    let (st, flow) = post(&s, "/api/flows/", json!({"name": "etl", "tags": ["a"]}));
    assert_eq!(st, 201, "{flow}");
    let (st, again) = post(&s, "/api/flows/", json!({"name": "etl"}));
    assert_eq!((st, &again["id"]), (200, &flow["id"]));
    let fid = flow["id"].as_str().unwrap();

    let mut runs = Vec::new();
    for i in 0..4 {
        let (st, run) = post(
            &s,
            "/api/flow_runs/",
            json!({"flow_id": fid, "name": format!("r{i}"), "tags": ["t"], "parameters": {"k": "v"},
                   "state": {"type": "PENDING"}, "flow_version": "abc", "context": {}}),
        );
        assert_eq!(st, 201, "{run}");
        assert_eq!(run["state_type"], "PENDING");
        assert_eq!(run["state"]["type"], "PENDING");
        assert_eq!(run["parameters"], json!({"k": "v"}));
        runs.push(run["id"].as_str().unwrap().to_owned());
    }
    let set = |id: &str, t: &str| {
        post(
            &s,
            &format!("/api/flow_runs/{id}/set_state"),
            json!({"state": {"type": t}, "force": false}),
        )
    };
    for id in &runs[..3] {
        let (st, r) = set(id, "RUNNING");
        assert_eq!((st, r["status"].as_str()), (201, Some("ACCEPT")), "{r}");
        assert_eq!(r["details"]["type"], "accept_details");
    }
    let (st, r) = set(&runs[0], "COMPLETED");
    assert_eq!(
        (st, r["status"].as_str(), r["state"]["type"].as_str()),
        (201, Some("ACCEPT"), Some("COMPLETED"))
    );
    let (_, r) = set(&runs[1], "FAILED");
    assert_eq!(r["status"], "ACCEPT");
    // Refused as Prefect refuses them: ABORT, the current state, a reason.
    let (st, r) = set(&runs[0], "CRASHED");
    assert_eq!((st, r["status"].as_str()), (200, Some("ABORT")), "{r}");
    assert_eq!(r["state"]["type"], "COMPLETED");
    assert_eq!(
        r["details"]["reason"],
        "Run is already in terminal state COMPLETED."
    );
    let (_, r) = set(&runs[2], "PENDING");
    assert_eq!(r["status"], "ABORT");
    assert_eq!(
        r["details"]["reason"],
        "This run is in a RUNNING state and cannot transition to a PENDING state."
    );

    let (st, run) = call(&s, "GET", &format!("/api/flow_runs/{}", runs[0]), None);
    assert_eq!(st, 200);
    assert_eq!(
        (run["state_type"].as_str(), run["run_count"].as_i64()),
        (Some("COMPLETED"), Some(1))
    );
    assert!(
        run["start_time"].is_string() && run["end_time"].is_string(),
        "{run}"
    );

    let (st, page) = post(
        &s,
        "/api/flow_runs/filter",
        json!({"flow_runs": {"state": {"type": {"any_": ["RUNNING", "PENDING"]}}}}),
    );
    assert_eq!(st, 200);
    let ids: Vec<&str> = page
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    let mut want = vec![runs[2].as_str(), runs[3].as_str()];
    want.sort();
    want.reverse();
    assert_eq!(ids, want, "ID_DESC");
    let (_, page) = post(
        &s,
        "/api/flow_runs/filter",
        json!({"sort": "EXPECTED_START_TIME_ASC", "offset": 1, "limit": 2}),
    );
    let names: Vec<&str> = page
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["r1", "r2"]);
    let (_, page) = post(
        &s,
        "/api/flow_runs/filter",
        json!({"flows": {"id": {"any_": [fid]}}, "sort": "END_TIME_DESC",
        "flow_runs": {"end_time": {"after_": "2000-01-01T00:00:00Z"}}}),
    );
    let names: Vec<&str> = page
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["r1", "r0"]);
    assert_eq!(
        post(
            &s,
            "/api/flow_runs/count",
            json!({"flow_runs": {"state": {"type": {"any_": ["COMPLETED"]}}}})
        ),
        (200, json!(1))
    );
    assert_eq!(post(&s, "/api/flow_runs/count", json!({})), (200, json!(4)));
    let (_, flows) = post(
        &s,
        "/api/flows/filter",
        json!({"sort": "NAME_ASC", "limit": 200}),
    );
    assert_eq!(flows.as_array().unwrap().len(), 1);
    assert_eq!(flows[0]["name"], "etl");

    // 1 flow + 4 runs + 5 accepted states: ten commits, and the index
    // equals one rebuilt from the repository alone.
    let index = app.index();
    assert_eq!(
        (index.flow_count(), index.run_count(), index.state_count()),
        (1, 4, 4 + 5)
    );
    assert_eq!(*index, app.rebuild_index().unwrap());
    drop(index);
    s.shutdown();
}

#[test]
fn flows_sort_every_way_and_parameters_come_back_as_prefect_writes_them() {
    let (_dir, app, s) = start(RestConfig::default());
    let mut ids = Vec::new();
    for name in ["alpha", "charlie", "bravo"] {
        let (st, f) = post(&s, "/api/flows/", json!({"name": name}));
        assert_eq!(st, 201);
        ids.push(f["id"].as_str().unwrap().to_owned());
        // Distinct creation times (µs).
        std::thread::sleep(Duration::from_millis(2));
    }
    let names = |sort: &str| -> Vec<String> {
        let (st, page) = post(
            &s,
            "/api/flows/filter",
            json!({"sort": sort, "limit": 15, "offset": 0}),
        );
        assert_eq!(st, 200, "{sort}: {page}");
        page.as_array()
            .unwrap()
            .iter()
            .map(|f| f["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names("NAME_ASC"), ["alpha", "bravo", "charlie"]);
    assert_eq!(names("NAME_DESC"), ["charlie", "bravo", "alpha"]);
    assert_eq!(names("CREATED_DESC"), ["bravo", "charlie", "alpha"]);
    assert_eq!(names("UPDATED_DESC"), ["bravo", "charlie", "alpha"]);
    let (_, page) = post(
        &s,
        "/api/flows/filter",
        json!({"sort": "CREATED_DESC", "offset": 1, "limit": 1, "flows": {"id": {"any_": [ids[0], ids[1]]}}}),
    );
    assert_eq!(page[0]["name"], "alpha", "{page}");
    let (st, e) = post(&s, "/api/flows/filter", json!({"sort": "ID_DESC"}));
    assert_eq!(
        (
            st,
            &e["exception_detail"][0]["loc"],
            &e["exception_detail"][0]["type"]
        ),
        (422, &json!(["body", "sort"]), &json!("enum"))
    );

    // Sent as Python's client writes them; given back as Prefect's server
    // writes them (key order kept, floats as repr, UTF-8 as is).
    let sent = format!(
        r#"{{"flow_id": "{}", "parameters": {{"n": 3, "x": 1e5, "tiny": 1e-05, "ok": true, "none": null, "xs": [1, 2.5, "a"], "d": {{"z": 1, "a": {{"q": [ ]}}}}, "\u00e9": "\u00e9\u0001"}}}}"#,
        ids[0]
    );
    let given = r#""parameters":{"n":3,"x":100000.0,"tiny":1e-05,"ok":true,"none":null,"xs":[1,2.5,"a"],"d":{"z":1,"a":{"q":[]}},"é":"é\u0001"}"#;
    let head = format!(
        "POST /api/flow_runs/ HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        sent.len()
    );
    let (st, created) = raw(&s, &head, sent.as_bytes());
    assert_eq!(st, 201, "{created}");
    assert!(created.contains(given), "{created}");
    let id = serde_json::from_str::<Value>(&created).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (st, read) = raw(
        &s,
        &format!("GET /api/flow_runs/{id} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"),
        b"",
    );
    assert_eq!(st, 200);
    assert!(read.contains(given), "{read}");
    let (_, page) = post(&s, "/api/flow_runs/filter", json!({}));
    assert_eq!(
        page[0]["parameters"],
        json!({"n": 3, "x": 100000.0, "tiny": 1e-05, "ok": true, "none": null,
               "xs": [1, 2.5, "a"], "d": {"z": 1, "a": {"q": []}}, "é": "é\u{1}"})
    );
    assert_eq!(*app.index(), app.rebuild_index().unwrap());
    s.shutdown();
}

#[test]
fn requests_outside_the_subset_are_refused_in_prefects_shapes() {
    let (_dir, _app, s) = start(RestConfig::default());
    let (st, e) = post(&s, "/api/flow_runs/filter", json!({"sort": "BOGUS"}));
    assert_eq!(st, 422);
    assert_eq!(e["exception_message"], "Invalid request received.");
    assert_eq!(e["exception_detail"][0]["loc"], json!(["body", "sort"]));
    assert_eq!(e["exception_detail"][0]["type"], "enum");
    assert_eq!(e["request_body"], json!({"sort": "BOGUS"}));
    let (st, e) = post(
        &s,
        "/api/flow_runs/count",
        json!({"flow_runs": {"state": {"type": {"any_": ["NOPE"]}}}}),
    );
    assert_eq!(
        (st, &e["exception_detail"][0]["loc"]),
        (
            422,
            &json!(["body", "flow_runs", "state", "type", "any_", 0])
        )
    );
    let (st, e) = post(
        &s,
        "/api/flow_runs/filter",
        json!({"flow_runs": {"bogus": 1}}),
    );
    assert_eq!(
        (st, e["exception_detail"][0]["type"].as_str()),
        (422, Some("extra_forbidden"))
    );
    let (st, e) = post(
        &s,
        "/api/flow_runs/filter",
        json!({"flow_runs": {"tags": {"all_": ["x"]}}}),
    );
    assert_eq!(
        (st, e["exception_detail"][0]["type"].as_str()),
        (422, Some("not_supported")),
        "{e}"
    );
    assert_eq!(
        post(&s, "/api/flow_runs/filter", json!({"limit": 201})),
        (
            422,
            json!({"detail": "Invalid limit: must be less than or equal to 200."})
        )
    );
    let (st, e) = raw(
        &s,
        "POST /api/flow_runs/filter HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-length: 4\r\n\r\n",
        b"{bad",
    );
    let e: Value = serde_json::from_str(&e).unwrap();
    assert_eq!(
        (st, e["exception_detail"][0]["type"].as_str()),
        (422, Some("json_invalid"))
    );
    let (st, e) = post(&s, "/api/flow_runs/", json!({"name": "x"}));
    assert_eq!(
        (st, &e["exception_detail"][0]["loc"]),
        (422, &json!(["body", "flow_id"]))
    );
    let (st, _) = post(
        &s,
        "/api/flow_runs/",
        json!({"flow_id": "00000000-0000-4000-8000-000000000000"}),
    );
    assert_eq!(st, 409, "a run of no flow");
    let missing = "00000000-0000-4000-8000-000000000001";
    assert_eq!(
        call(&s, "GET", &format!("/api/flow_runs/{missing}"), None),
        (404, json!({"detail": "Flow run not found"}))
    );
    let (st, e) = post(
        &s,
        &format!("/api/flow_runs/{missing}/set_state"),
        json!({"state": {"type": "RUNNING"}}),
    );
    assert_eq!((st, e["exception_message"].as_str().is_some()), (404, true));
    assert_eq!(
        post(&s, "/api/no_such_route/filter", json!({})),
        (404, json!({"detail": "Not Found"}))
    );
    assert_eq!(
        call(&s, "GET", "/api/flow_runs/filter", None),
        (405, json!({"detail": "Method Not Allowed"}))
    );
    // The areas outside the subset: 404 in Prefect's shape, naming them.
    for (method, path, name) in [
        ("POST", "/api/deployments/filter", "Deployments"),
        ("GET", "/api/work_pools/default", "Work pools"),
        ("POST", "/api/work_queues/filter", "Work queues"),
        ("POST", "/api/automations/filter", "Automations"),
        ("POST", "/api/block_documents/filter", "Blocks"),
        ("GET", "/api/variables/name/x", "Variables"),
        (
            "POST",
            "/api/v2/concurrency_limits/filter",
            "Concurrency limits",
        ),
        ("POST", "/api/artifacts/", "Artifacts"),
    ] {
        let (st, e) = call(&s, method, path, Some(&json!({})));
        assert_eq!(st, 404, "{path}");
        let detail = e["detail"].as_str().unwrap();
        assert!(
            detail.starts_with(&format!("{name} are not served")),
            "{detail}"
        );
    }
    s.shutdown();
}

#[test]
fn bodies_heads_and_connections_are_bounded() {
    let (_dir, _app, s) = start(RestConfig {
        max_body_bytes: 1024,
        max_connections: 1,
        ..RestConfig::default()
    });
    // A declared body over the cap: 413 before it is read.
    let (st, _) = raw(
        &s,
        "POST /api/flow_runs/filter HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-length: 5000\r\n\r\n",
        b"",
    );
    assert_eq!(st, 413);
    // A chunked body that grows past it: 413 too.
    let chunk = format!(
        "800\r\n{}\r\n800\r\n{}\r\n0\r\n\r\n",
        " ".repeat(0x800),
        " ".repeat(0x800)
    );
    let (st, _) = raw(
        &s,
        "POST /api/flow_runs/filter HTTP/1.1\r\nhost: x\r\nconnection: close\r\ntransfer-encoding: chunked\r\n\r\n",
        chunk.as_bytes(),
    );
    assert_eq!(st, 413);
    // A head over the cap: 431 from hyper.
    let big = format!(
        "GET /api/health HTTP/1.1\r\nhost: x\r\nx-big: {}\r\nconnection: close\r\n\r\n",
        "a".repeat(40_000)
    );
    let mut c = TcpStream::connect(s.addr()).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let _ = c.write_all(big.as_bytes());
    let mut out = Vec::new();
    let _ = c.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out);
    assert!(
        text.is_empty() || text.starts_with("HTTP/1.1 431"),
        "{text}"
    );
    // One connection at most: a second is not served while the first is open.
    let mut first = TcpStream::connect(s.addr()).unwrap();
    first
        .write_all(b"GET /api/health HTTP/1.1\r\nhost: x\r\n\r\n")
        .unwrap();
    let mut buf = [0u8; 256];
    first
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let n = first.read(&mut buf).unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
    let mut second = TcpStream::connect(s.addr()).unwrap();
    second
        .write_all(b"GET /api/health HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        .unwrap();
    second
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    assert!(
        second.read(&mut buf).is_err(),
        "served past the connection cap"
    );
    drop(first);
    second
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let n = second.read(&mut buf).unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
    s.shutdown();
}
