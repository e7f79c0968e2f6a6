//! The XRPC client: one hyper client per process (its pool keeps the
//! connections alive and opens one more only while requests overlap),
//! bodies read under a bound for their kind, a deadline per request, and
//! the server's errors turned into [`KnotError`]s (429s with their
//! `Retry-After` / `RateLimit-*` headers).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::{HeaderMap, Method, Request, header};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

use crate::error::{KnotError, RateLimit, Result};
use crate::names::raw_cid;
use crate::state::WriteAllowance;

use crate::preconnect::PreConnect;

#[cfg(feature = "https")]
type Connector = hyper_rustls::HttpsConnector<PreConnect>;
#[cfg(not(feature = "https"))]
type Connector = PreConnect;

/// Largest JSON answer (a page of ref records with long pack lists).
pub const JSON_LIMIT: usize = 16 << 20;

/// An XRPC service at one base URL.
#[derive(Clone)]
pub struct Xrpc {
    http: Client<Connector, Full<Bytes>>,
    pre: PreConnect,
    base: String,
    timeout: Duration,
    // What the record writes' answers said remains (`state.rs`).
    allowance: Arc<Mutex<Option<WriteAllowance>>>,
}

/// The methods the PDS charges write points for.
const RECORD_WRITES: [&str; 4] = [
    "com.atproto.repo.putRecord",
    "com.atproto.repo.createRecord",
    "com.atproto.repo.deleteRecord",
    "com.atproto.repo.applyWrites",
];

/// A successful answer.
pub struct Answer {
    /// The headers.
    pub headers: HeaderMap,
    /// The whole body.
    pub body: Bytes,
}

fn connector(pre: PreConnect) -> Connector {
    #[cfg(feature = "https")]
    {
        hyper_rustls::HttpsConnectorBuilder::new()
            .with_webpki_roots()
            .https_or_http()
            .enable_http1()
            .wrap_connector(pre)
    }
    #[cfg(not(feature = "https"))]
    {
        pre
    }
}

/// Percent-encodes a query value (everything but unreserved characters and `:`).
pub fn encode_query(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        if b.is_ascii_alphanumeric() || b"-._~:".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn header_u64(h: &HeaderMap, name: &str) -> Option<u64> {
    h.get(name)?.to_str().ok()?.trim().parse().ok()
}

/// The rate-limit headers of an answer.
pub fn rate_limit_of(h: &HeaderMap, message: String) -> RateLimit {
    RateLimit {
        retry_after: header_u64(h, "retry-after"),
        reset: header_u64(h, "ratelimit-reset"),
        limit: header_u64(h, "ratelimit-limit"),
        remaining: header_u64(h, "ratelimit-remaining"),
        policy: h
            .get("ratelimit-policy")
            .and_then(|v| v.to_str().ok())
            .map(|s| s.chars().take(200).collect()),
        message,
    }
}

/// The write points a record write's answer says remain: its
/// `RateLimit-Remaining` and `RateLimit-Reset`, unless its
/// `RateLimit-Policy` window is under an hour. That is the per-IP request
/// limit (3,000 per 5 minutes at the reference PDS), which counts
/// requests, not points, and the headers name it whenever it is the
/// tightest.
pub fn allowance_of(h: &HeaderMap) -> Option<WriteAllowance> {
    let window = h
        .get("ratelimit-policy")
        .and_then(|v| v.to_str().ok())
        .and_then(|p| p.split(';').find_map(|kv| kv.trim().strip_prefix("w=")))
        .and_then(|w| w.trim().parse::<u64>().ok());
    if window.is_some_and(|w| w < 3600) {
        return None;
    }
    Some(WriteAllowance {
        remaining: header_u64(h, "ratelimit-remaining")?,
        reset: header_u64(h, "ratelimit-reset")?,
    })
}

impl Xrpc {
    /// A client of the service at `base` (`http://host:port`), every request
    /// bounded by `timeout`.
    pub fn new(base: &str, timeout: Duration) -> Xrpc {
        let mut tcp = hyper_util::client::legacy::connect::HttpConnector::new();
        tcp.set_nodelay(true);
        tcp.enforce_http(false);
        let pre = PreConnect::new(tcp);
        let http = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(60))
            .pool_max_idle_per_host(8)
            .build(connector(pre.clone()));
        Xrpc {
            http,
            pre,
            base: base.trim_end_matches('/').to_owned(),
            timeout,
            allowance: Arc::new(Mutex::new(None)),
        }
    }

    /// What the last record writes' answers said remains of the limit.
    pub fn write_allowance(&self) -> Option<WriteAllowance> {
        *self.allowance.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts from what an earlier run saw (the warm state).
    pub fn set_write_allowance(&self, a: Option<WriteAllowance>) {
        *self.allowance.lock().unwrap_or_else(|e| e.into_inner()) = a;
    }

    fn note_allowance(&self, op: &str, h: &HeaderMap) {
        if !RECORD_WRITES.contains(&op) {
            return;
        }
        let Some(seen) = allowance_of(h) else {
            return;
        };
        let mut a = self.allowance.lock().unwrap_or_else(|e| e.into_inner());
        *a = Some(a.map_or(seen, |a| a.merge(seen)));
    }

    /// Dials the service now, on a thread (`crate::preconnect`): the
    /// first request then finds its connection open.
    pub fn preconnect(&self) {
        if let Ok(u) = self.base.parse::<http::Uri>()
            && let Some(h) = u.host()
        {
            let port = u.port_u16().unwrap_or(if u.scheme_str() == Some("https") {
                443
            } else {
                80
            });
            self.pre.start(h, port);
        }
    }

    /// The base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// Sends `req` and reads at most `limit` body bytes; non-2xx answers
    /// become errors.
    pub async fn send(&self, op: &str, req: Request<Full<Bytes>>, limit: usize) -> Result<Answer> {
        let t = |why: String| KnotError::Transport {
            op: op.to_owned(),
            why,
        };
        let fut = async {
            let resp = self.http.request(req).await.map_err(|e| {
                let mut s = e.to_string();
                let mut src = std::error::Error::source(&e);
                while let Some(x) = src {
                    s.push_str(": ");
                    s.push_str(&x.to_string());
                    src = x.source();
                }
                t(s)
            })?;
            let (parts, mut body) = resp.into_parts();
            let declared = parts
                .headers
                .get(header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|s| s.parse::<usize>().ok());
            // Error bodies are small whatever the method.
            let cap = if parts.status.is_success() {
                limit
            } else {
                limit.min(64 << 10)
            };
            if declared.is_some_and(|n| n > cap) {
                return Err(KnotError::TooLarge {
                    op: op.to_owned(),
                    limit: cap,
                });
            }
            let mut buf = BytesMut::with_capacity(declared.unwrap_or(0).min(cap));
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(|e| t(e.to_string()))?;
                if let Ok(data) = frame.into_data() {
                    if buf.len() + data.len() > cap {
                        return Err(KnotError::TooLarge {
                            op: op.to_owned(),
                            limit: cap,
                        });
                    }
                    buf.extend_from_slice(&data);
                }
            }
            Ok((parts, buf.freeze()))
        };
        let started = std::time::Instant::now();
        let answered = tokio::time::timeout(self.timeout, fut).await;
        crate::trace::mark(&format!("http {op}"), Some(started.elapsed()));
        let (parts, body) =
            answered.map_err(|_| t(format!("no complete answer within {:?}", self.timeout)))??;
        self.note_allowance(op, &parts.headers);
        if parts.status.is_success() {
            return Ok(Answer {
                headers: parts.headers,
                body,
            });
        }
        let v: Option<Value> = serde_json::from_slice(&body).ok();
        let field = |k: &str| {
            v.as_ref()
                .and_then(|v| v.get(k))
                .and_then(|s| s.as_str())
                .map(|s| s.chars().take(500).collect::<String>())
        };
        let message = field("message")
            .unwrap_or_else(|| String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned());
        if parts.status.as_u16() == 429 {
            return Err(KnotError::RateLimited {
                op: op.to_owned(),
                limit: Box::new(rate_limit_of(&parts.headers, message)),
            });
        }
        Err(KnotError::Xrpc {
            op: op.to_owned(),
            status: parts.status.as_u16(),
            error: field("error").unwrap_or_else(|| "(no error name)".to_owned()),
            message,
        })
    }

    fn url(&self, nsid: &str, query: &[(&str, &str)]) -> String {
        let mut u = format!("{}/xrpc/{nsid}", self.base);
        for (i, (k, v)) in query.iter().enumerate() {
            u.push(if i == 0 { '?' } else { '&' });
            u.push_str(k);
            u.push('=');
            u.push_str(&encode_query(v));
        }
        u
    }

    fn request(
        &self,
        op: &str,
        method: Method,
        url: &str,
        token: Option<&str>,
    ) -> Result<http::request::Builder> {
        let _ = url.parse::<http::Uri>().map_err(|e| KnotError::Url {
            url: url.to_owned(),
            why: format!("{op}: {e}"),
        })?;
        let mut b = Request::builder().method(method).uri(url);
        if let Some(t) = token {
            b = b.header(header::AUTHORIZATION, format!("Bearer {t}"));
        }
        Ok(b)
    }

    /// A query (GET) answered with JSON.
    pub async fn query(
        &self,
        nsid: &str,
        query: &[(&str, &str)],
        token: Option<&str>,
    ) -> Result<Value> {
        let url = self.url(nsid, query);
        let req = self
            .request(nsid, Method::GET, &url, token)?
            .body(Full::new(Bytes::new()))
            .map_err(|e| KnotError::bad(nsid, e.to_string()))?;
        let a = self.send(nsid, req, JSON_LIMIT).await?;
        serde_json::from_slice(&a.body).map_err(|e| KnotError::bad(nsid, format!("not JSON: {e}")))
    }

    /// A procedure (POST) with a JSON body, answered with JSON.
    pub async fn procedure(&self, nsid: &str, body: &Value, token: Option<&str>) -> Result<Value> {
        let url = self.url(nsid, &[]);
        // `Null`: a procedure without input (refreshSession).
        let b = self.request(nsid, Method::POST, &url, token)?;
        let req = if body.is_null() {
            b.body(Full::new(Bytes::new()))
        } else {
            b.header(header::CONTENT_TYPE, "application/json")
                .body(Full::new(Bytes::from(body.to_string())))
        }
        .map_err(|e| KnotError::bad(nsid, e.to_string()))?;
        let a = self.send(nsid, req, JSON_LIMIT).await?;
        if a.body.is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_slice(&a.body).map_err(|e| KnotError::bad(nsid, format!("not JSON: {e}")))
    }

    /// `uploadBlob` of one part; checks that the server names it by the
    /// CID of these bytes. Returns the CID.
    pub async fn upload_blob(&self, bytes: Bytes, mime: &str, token: &str) -> Result<String> {
        const OP: &str = "com.atproto.repo.uploadBlob";
        let want = raw_cid(&bytes);
        let size = bytes.len();
        let url = self.url(OP, &[]);
        let req = self
            .request(OP, Method::POST, &url, Some(token))?
            .header(header::CONTENT_TYPE, mime)
            .body(Full::new(bytes))
            .map_err(|e| KnotError::bad(OP, e.to_string()))?;
        let a = self.send(OP, req, 64 << 10).await?;
        let v: Value = serde_json::from_slice(&a.body)
            .map_err(|e| KnotError::bad(OP, format!("not JSON: {e}")))?;
        let got = v["blob"]["ref"]["$link"]
            .as_str()
            .ok_or_else(|| KnotError::bad(OP, "no blob.ref.$link"))?;
        if got != want {
            return Err(KnotError::HashMismatch {
                what: format!("uploaded part of {size} bytes"),
                expected: want,
                got: got.chars().take(100).collect(),
            });
        }
        if v["blob"]["size"].as_u64().is_some_and(|s| s != size as u64) {
            return Err(KnotError::bad(OP, "blob size differs from the bytes sent"));
        }
        Ok(want)
    }

    /// `getBlob`: at most `size` bytes, which must hash to `cid`.
    pub async fn get_blob(&self, did: &str, cid: &str, size: u64) -> Result<Bytes> {
        const OP: &str = "com.atproto.sync.getBlob";
        let url = self.url(OP, &[("did", did), ("cid", cid)]);
        let req = self
            .request(OP, Method::GET, &url, None)?
            .body(Full::new(Bytes::new()))
            .map_err(|e| KnotError::bad(OP, e.to_string()))?;
        let limit = usize::try_from(size).unwrap_or(usize::MAX);
        let a = self.send(OP, req, limit).await?;
        let got = raw_cid(&a.body);
        if got != cid || a.body.len() as u64 != size {
            return Err(KnotError::HashMismatch {
                what: format!("pack part {cid} ({} of {size} bytes)", a.body.len()),
                expected: cid.to_owned(),
                got,
            });
        }
        Ok(a.body)
    }

    /// A plain GET of `url` (identity documents), at most `limit` bytes.
    pub async fn get_url(&self, url: &str, limit: usize) -> Result<Bytes> {
        let req = self
            .request(url, Method::GET, url, None)?
            .body(Full::new(Bytes::new()))
            .map_err(|e| KnotError::bad(url, e.to_string()))?;
        Ok(self.send(url, req, limit).await?.body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn write_allowance_from_headers() {
        let h = |policy| {
            headers(&[
                ("ratelimit-remaining", "24"),
                ("ratelimit-reset", "1000"),
                ("ratelimit-policy", policy),
            ])
        };
        let a = WriteAllowance {
            remaining: 24,
            reset: 1000,
        };
        assert_eq!(allowance_of(&h("5000;w=3600")), Some(a));
        assert_eq!(allowance_of(&h("35000;w=86400")), Some(a));
        // The per-IP request limit counts requests, not points.
        assert_eq!(allowance_of(&h("3000;w=300")), None);
        assert_eq!(
            allowance_of(&headers(&[("ratelimit-remaining", "3")])),
            None
        );
    }

    proptest::proptest! {
        #[test]
        fn any_headers_parse_without_panic(r in "[ -~]{0,20}", s in "[ -~]{0,20}", p in "[ -~]{0,30}") {
            let mut h = HeaderMap::new();
            for (k, v) in [("ratelimit-remaining", r), ("ratelimit-reset", s), ("ratelimit-policy", p)] {
                if let Ok(v) = v.parse() {
                    h.insert(k, v);
                }
            }
            let _ = allowance_of(&h);
        }
    }
}
