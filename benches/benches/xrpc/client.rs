//! The load generator: one keep-alive HTTP/1.1 connection per caller
//! (hyper's client connection on a current-thread tokio runtime owned by
//! the caller's thread), so `cN` is exactly N connections on loopback; and
//! the checks of what came back, made outside the timing.

use std::net::SocketAddr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::HeaderMap;
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;

/// One caller's connection.
pub struct Conn {
    rt: tokio::runtime::Runtime,
    sender: SendRequest<Full<Bytes>>,
    host: String,
}

impl Conn {
    /// Opens a connection to `addr` (Nagle off, as every HTTP client does).
    pub fn open(addr: SocketAddr) -> Conn {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a current-thread runtime");
        let sender = rt.block_on(async {
            let stream = tokio::net::TcpStream::connect(addr)
                .await
                .expect("connect to the server");
            stream.set_nodelay(true).expect("TCP_NODELAY");
            let (sender, conn) = http1::handshake(TokioIo::new(stream))
                .await
                .expect("HTTP/1.1 handshake");
            // The connection task runs whenever this thread blocks on a
            // request (current-thread runtime).
            tokio::spawn(async move {
                let _ = conn.await;
            });
            sender
        });
        Conn {
            rt,
            sender,
            host: addr.to_string(),
        }
    }

    /// Sends one request and reads the whole answer: status and body.
    pub fn send(&mut self, req: &Call, body: Bytes) -> (StatusCode, Bytes) {
        let a = self.answer(req, body);
        (a.status, a.body)
    }

    /// Sends one request and reads the whole answer, headers included
    /// (a HEAD answer has no body: its headers are what there is to check).
    pub fn answer(&mut self, req: &Call, body: Bytes) -> Answer {
        let mut builder = Request::builder()
            .method(req.method.clone())
            .uri(req.path.as_str())
            .header("host", req.host.as_deref().unwrap_or(&self.host));
        if let Some(token) = &req.token {
            builder = builder.header("authorization", token.as_str());
        }
        for (name, value) in &req.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        if !body.is_empty() {
            let mime = req.content_type.as_deref().unwrap_or("application/json");
            builder = builder.header("content-type", mime);
        }
        let request = builder.body(Full::new(body)).expect("a valid request");
        let sender = &mut self.sender;
        self.rt.block_on(async move {
            sender.ready().await.expect("connection ready");
            let resp = sender.send_request(request).await.expect("a response");
            let (parts, body) = resp.into_parts();
            let body = body.collect().await.expect("the response body").to_bytes();
            Answer {
                status: parts.status,
                headers: parts.headers,
                body,
                asked: None,
            }
        })
    }
}

/// One answer, read whole.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    /// Its status.
    pub status: StatusCode,
    /// Its headers.
    pub headers: HeaderMap,
    /// Its body.
    pub body: Bytes,
    /// Who asked what (the caller's DID, the path and query), set after
    /// the timing on the answers a check compares with their request.
    pub asked: Option<(String, String)>,
}

/// What one request of a route is, apart from its body.
#[derive(Debug, Clone)]
pub struct Call {
    /// GET, HEAD or POST.
    pub method: Method,
    /// Path and query.
    pub path: String,
    /// `Bearer <jwt>`, when the route needs it.
    pub token: Option<String>,
    /// A Host header other than the server's address (`.well-known`).
    pub host: Option<String>,
    /// The body's MIME type when it is not JSON (`uploadBlob`).
    pub content_type: Option<String>,
    /// Other request headers (`Range`, `Accept`, `Atproto-Space-Mac`).
    pub headers: Vec<(String, String)>,
}

impl Call {
    /// A GET of `path`.
    pub fn get(path: impl Into<String>) -> Call {
        Call {
            method: Method::GET,
            path: path.into(),
            token: None,
            host: None,
            content_type: None,
            headers: Vec::new(),
        }
    }

    /// A POST to `path`.
    pub fn post(path: impl Into<String>) -> Call {
        Call::get(path).method(Method::POST)
    }

    /// The same call with another method.
    pub fn method(mut self, method: Method) -> Call {
        self.method = method;
        self
    }

    /// The same call with an access token.
    pub fn bearer(mut self, jwt: &str) -> Call {
        self.token = Some(format!("Bearer {jwt}"));
        self
    }

    /// The same call with a body of MIME type `mime`.
    pub fn content_type(mut self, mime: &str) -> Call {
        self.content_type = Some(mime.to_owned());
        self
    }

    /// The same call with one more header.
    pub fn header(mut self, name: &str, value: &str) -> Call {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// The same call with a Host header.
    pub fn host(mut self, host: &str) -> Call {
        self.host = Some(host.to_owned());
        self
    }
}

/// What the timed requests answered, kept for the checks after the
/// benchmark: how many had another status than expected (the first one
/// kept), and the body of each caller's first request of every batch.
#[derive(Default)]
pub struct Outcomes {
    unexpected: AtomicU64,
    first_unexpected: Mutex<Option<Answer>>,
    samples: Mutex<Vec<Answer>>,
}

impl Outcomes {
    /// Records one answer (cheap: an atomic, a lock only for samples).
    pub fn record(&self, expected: StatusCode, answer: &Answer, sample: bool) {
        if answer.status != expected {
            if self.unexpected.fetch_add(1, Ordering::Relaxed) == 0 {
                *self
                    .first_unexpected
                    .lock()
                    .unwrap_or_else(|p| p.into_inner()) = Some(answer.clone());
            }
        } else if sample {
            self.samples
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(answer.clone());
        }
    }

    /// Panics unless every answer had the expected status; returns the
    /// sampled answers.
    pub fn check(self, id: &str) -> Vec<Answer> {
        let bad = self.unexpected.load(Ordering::Relaxed);
        if bad > 0 {
            let first = self
                .first_unexpected
                .into_inner()
                .unwrap_or_else(|p| p.into_inner());
            let first = first.unwrap_or_default();
            panic!(
                "{id}: {bad} answers with an unexpected status, first {}: {}",
                first.status,
                String::from_utf8_lossy(&first.body)
            );
        }
        self.samples.into_inner().unwrap_or_else(|p| p.into_inner())
    }
}

/// One request outside any timing, for seeding and checks.
pub fn once(
    addr: SocketAddr,
    call: &Call,
    body: Option<&serde_json::Value>,
) -> (StatusCode, Bytes) {
    let body = body.map_or_else(Bytes::new, |v| {
        Bytes::from(serde_json::to_vec(v).expect("JSON"))
    });
    Conn::open(addr).send(call, body)
}

/// [`once`] with raw body bytes.
pub fn once_bytes(addr: SocketAddr, call: &Call, body: Bytes) -> (StatusCode, Bytes) {
    Conn::open(addr).send(call, body)
}

/// [`once`] that must answer 200 with JSON.
pub fn json_ok(
    addr: SocketAddr,
    call: &Call,
    body: Option<&serde_json::Value>,
) -> serde_json::Value {
    let (status, bytes) = once(addr, call, body);
    assert_eq!(
        status,
        StatusCode::OK,
        "{} {}: {}",
        call.method,
        call.path,
        String::from_utf8_lossy(&bytes)
    );
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: not JSON ({e})", call.path))
}
