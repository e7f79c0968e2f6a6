//! The REST server for the over-the-wire tests: one started in process on
//! a free port over a fresh repository, and a request on its own
//! connection, as a plain HTTP/1.1 client sends it.

// Each test binary that includes this module uses only part of it.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use appview::AppView;
use appview::rest::{RestConfig, RunningRest, spawn};
use serde_json::Value;

/// A server on `127.0.0.1:0` with `workers` workers and the rest of
/// `config`, over a repository in a fresh temporary directory (kept alive
/// by the returned `TempDir`).
pub fn start(workers: usize, config: RestConfig) -> (tempfile::TempDir, Arc<AppView>, RunningRest) {
    let dir = tempfile::tempdir().unwrap();
    let app =
        Arc::new(AppView::open(&dir.path().join("appview"), store::Config::default()).unwrap());
    let server = spawn(
        app.clone(),
        RestConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            workers,
            ..config
        },
    )
    .unwrap();
    (dir, app, server)
}

/// Checks the index equals one rebuilt from the repository, then stops
/// the server.
pub fn stop_checked(app: &AppView, server: RunningRest) {
    assert_eq!(
        *app.index(),
        app.rebuild_index().unwrap(),
        "the index is the repository's"
    );
    server.shutdown();
}

/// `GET path` with no body.
pub fn get(server: &RunningRest, path: &str) -> (u16, Value) {
    send(server, "GET", path, "")
}

/// `text` as the body of one request: (status, body as JSON, `null` when
/// it is not JSON).
pub fn send(server: &RunningRest, method: &str, path: &str, text: &str) -> (u16, Value) {
    let mut s = TcpStream::connect(server.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{text}",
        text.len()
    )
    .unwrap();
    let mut out = String::new();
    // A server refusing a body it will not read may reset the connection
    // after its answer; what arrived before the reset is the answer.
    let _ = s.read_to_string(&mut out);
    let status = out[9..12].parse().unwrap();
    let body = out.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

/// `body` as JSON in one request; `Value::Null` sends an empty body (the
/// server reads the two alike).
pub fn call(server: &RunningRest, method: &str, path: &str, body: &Value) -> (u16, Value) {
    let text = if body.is_null() {
        String::new()
    } else {
        body.to_string()
    };
    send(server, method, path, &text)
}
