//! Shared by the server's integration tests: a server on an ephemeral
//! loopback port over a temporary store, and a small HTTP client.

#![allow(dead_code)]

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{HeaderMap, Method, Request, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};
use xrpc::{RunningServer, ServerConfig};

/// A server over a temporary directory (removed when dropped).
pub struct TestServer {
    pub server: Option<RunningServer>,
    pub dir: tempfile::TempDir,
    pub client: Client<HttpConnector, Full<Bytes>>,
    pub url: String,
}

/// The defaults for tests: ephemeral port, cheap scrypt.
pub fn config(dir: &tempfile::TempDir) -> ServerConfig {
    let mut c = ServerConfig::new(dir.path().join("pds.sqlite"));
    c.listen = "127.0.0.1:0".parse().unwrap();
    c.scrypt_log_n = 4;
    c
}

pub fn start_with(f: impl FnOnce(&mut ServerConfig)) -> TestServer {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(&dir);
    f(&mut c);
    let server = xrpc::spawn(c).unwrap();
    let url = server.url();
    TestServer {
        server: Some(server),
        dir,
        client: Client::builder(TokioExecutor::new()).build_http(),
        url,
    }
}

pub fn start() -> TestServer {
    start_with(|_| {})
}

/// An answer.
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", String::from_utf8_lossy(&self.body)))
    }

    /// The XRPC error name (asserting the error shape).
    pub fn error(&self) -> String {
        let v = self.json();
        assert!(v["message"].is_string(), "error without message: {v}");
        v["error"].as_str().unwrap_or_default().to_owned()
    }

    /// Asserts status and error name.
    #[track_caller]
    pub fn expect_error(&self, status: u16, name: &str) {
        assert_eq!(
            (self.status.as_u16(), self.error().as_str()),
            (status, name),
            "body: {}",
            String::from_utf8_lossy(&self.body)
        );
    }

    #[track_caller]
    pub fn ok_json(&self) -> Value {
        assert_eq!(
            self.status,
            StatusCode::OK,
            "body: {}",
            String::from_utf8_lossy(&self.body)
        );
        self.json()
    }
}

impl TestServer {
    pub async fn request(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> Answer {
        let mut req = Request::builder()
            .method(method)
            .uri(format!("{}{}", self.url, path));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let resp = tokio::time::timeout(
            Duration::from_secs(20),
            self.client.request(req.body(Full::new(body)).unwrap()),
        )
        .await
        .expect("request timed out")
        .expect("request failed");
        let status = resp.status();
        let headers = resp.headers().clone();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        Answer {
            status,
            headers,
            body,
        }
    }

    pub async fn get(&self, path: &str) -> Answer {
        self.request(Method::GET, path, &[], Bytes::new()).await
    }

    pub async fn get_auth(&self, path: &str, token: &str) -> Answer {
        let auth = format!("Bearer {token}");
        self.request(Method::GET, path, &[("authorization", &auth)], Bytes::new())
            .await
    }

    pub async fn post(&self, path: &str, token: Option<&str>, body: &Value) -> Answer {
        let auth = token.map(|t| format!("Bearer {t}"));
        let mut h = vec![("content-type", "application/json")];
        if let Some(a) = &auth {
            h.push(("authorization", a));
        }
        self.request(Method::POST, path, &h, Bytes::from(body.to_string()))
            .await
    }

    /// Creates an account; returns (did, accessJwt, refreshJwt).
    pub async fn account(&self, handle: &str) -> (String, String, String) {
        let v = self
            .post(
                "/xrpc/com.atproto.server.createAccount",
                None,
                &json!({"handle": handle, "password": "pw-" , "email": format!("{handle}@example.com")}),
            )
            .await
            .ok_json();
        (
            v["did"].as_str().unwrap().to_owned(),
            v["accessJwt"].as_str().unwrap().to_owned(),
            v["refreshJwt"].as_str().unwrap().to_owned(),
        )
    }

    /// createRecord of a post; returns (uri, cid).
    pub async fn post_record(&self, did: &str, token: &str, text: &str) -> (String, String) {
        let v = self
            .post(
                "/xrpc/com.atproto.repo.createRecord",
                Some(token),
                &json!({
                    "repo": did,
                    "collection": "app.bsky.feed.post",
                    "record": {"$type": "app.bsky.feed.post", "text": text, "createdAt": "2024-01-01T00:00:00.000Z"},
                }),
            )
            .await
            .ok_json();
        (
            v["uri"].as_str().unwrap().to_owned(),
            v["cid"].as_str().unwrap().to_owned(),
        )
    }

    pub fn ws_url(&self, query: &str) -> String {
        format!(
            "{}/xrpc/com.atproto.sync.subscribeRepos{query}",
            self.url.replacen("http://", "ws://", 1)
        )
    }

    pub fn shutdown(&mut self) {
        if let Some(s) = self.server.take() {
            s.shutdown();
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// This test process's resident memory (the server runs in it), from
/// `/proc/self/status`.
pub fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kib << 10
}
