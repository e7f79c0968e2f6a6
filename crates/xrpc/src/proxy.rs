//! Service proxying: an XRPC method atpds does not serve is forwarded to
//! the service the `atproto-proxy` header names (`did#service_id`), or,
//! without the header, to the configured appview for `app.bsky.*`
//! (`--appview-url`, `--appview-did`), as the reference PDS's catch-all
//! proxy does. The call carries a fresh service-auth JWT
//! (`service_jwt.rs`: `iss` the caller's DID, `aud` the service's DID
//! (with the `#service_id` when the header named one), `lxm` the method),
//! and the answer streams back chunk by chunk.
//!
//! Resolution: atpds resolves no DID over the network; the header's DID
//! must be the configured appview's (service id `#bsky_appview`), else 400
//! `InvalidRequest` with the reference's messages ("could not resolve proxy
//! did", "could not resolve proxy did service url"); a method with no
//! header and no default service is the reference's "No service
//! configured for `<nsid>`". Only `http://` service URLs (no TLS client).
//!
//! Bounds: a request body at the JSON cap (read whole, as every route
//! reads one); the upstream answer's head within
//! [`ServerConfig::proxy_timeout`](crate::ServerConfig::proxy_timeout)
//! (else 504 `UpstreamTimeout`) and its whole body within twice that; the
//! body at most
//! [`ServerConfig::proxy_max_bytes`](crate::ServerConfig::proxy_max_bytes)
//! (a declared length over it is 502 `UpstreamFailure` before anything is
//! sent; an undeclared one cuts the stream once past it). An unreachable
//! upstream, or one that answers garbage, is 502 `UpstreamFailure`; an
//! upstream 500 becomes 502 `UpstreamFailure` with its error, other
//! upstream errors keep their status, as the reference maps them.

use std::sync::Arc;

use bytes::Bytes;
use http::request::Parts;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;

use crate::app::App;
use crate::auth::Scope;
use crate::error::{XResult, XrpcError};
use crate::response::Body;
use crate::service_jwt::{DEFAULT_TTL, ServiceClaims};

/// The appview a `app.bsky.*` call goes to without a header.
#[derive(Debug, Clone)]
pub struct Appview {
    /// Its base URL (`http://host:port`, no trailing slash).
    pub url: String,
    /// Its DID (the tokens' `aud`).
    pub did: String,
}

/// The service id the appview answers to in an `atproto-proxy` header.
pub const APPVIEW_SERVICE_ID: &str = "#bsky_appview";

/// Request headers passed on (the reference's list).
const FORWARD_REQUEST: &[&str] = &[
    "accept-language",
    "content-type",
    "atproto-accept-labelers",
    "x-bsky-topics",
];
/// Response headers passed back.
const FORWARD_RESPONSE: &[&str] = &[
    "content-type",
    "content-language",
    "content-encoding",
    "atproto-repo-rev",
    "atproto-content-labelers",
];

/// Whether a method atpds does not serve goes to the proxy: a header asks
/// for it, or an appview is configured for `app.bsky.*`.
pub fn wants(app: &App, parts: &Parts, nsid: &str) -> bool {
    parts.headers.contains_key("atproto-proxy")
        || (app.config.appview.is_some() && nsid.starts_with("app.bsky."))
}

/// Where a call goes: (base URL, `aud`).
fn target(app: &App, parts: &Parts, nsid: &str) -> XResult<(String, String)> {
    let Some(h) = parts.headers.get("atproto-proxy") else {
        return match &app.config.appview {
            Some(a) if nsid.starts_with("app.bsky.") => Ok((a.url.clone(), a.did.clone())),
            _ => Err(XrpcError::invalid(format!(
                "No service configured for {nsid}"
            ))),
        };
    };
    let h = h
        .to_str()
        .map_err(|_| XrpcError::invalid("invalid proxy header format"))?;
    let Some(i) = h.find('#') else {
        return Err(XrpcError::invalid(
            "no service id specified in proxy header",
        ));
    };
    if i == 0 {
        return Err(XrpcError::invalid("no did specified in proxy header"));
    }
    if i == h.len() - 1 {
        return Err(XrpcError::invalid(
            "no service id specified in proxy header",
        ));
    }
    if h[i + 1..].contains('#') {
        return Err(XrpcError::invalid("invalid proxy header format"));
    }
    if h.contains(' ') {
        return Err(XrpcError::invalid("proxy header cannot contain spaces"));
    }
    let (did, service) = h.split_at(i);
    match &app.config.appview {
        Some(a) if a.did == did => {
            if service == APPVIEW_SERVICE_ID {
                Ok((a.url.clone(), h.to_owned()))
            } else {
                Err(XrpcError::invalid(
                    "could not resolve proxy did service url",
                ))
            }
        }
        _ => Err(XrpcError::invalid("could not resolve proxy did")),
    }
}

fn upstream_failure(message: impl Into<String>) -> XrpcError {
    XrpcError::new(StatusCode::BAD_GATEWAY, "UpstreamFailure", message)
}

fn upstream_timeout() -> XrpcError {
    XrpcError::new(
        StatusCode::GATEWAY_TIMEOUT,
        "UpstreamTimeout",
        "Upstream service timed out",
    )
}

/// Forwards the call `nsid` (see the module docs).
pub async fn forward(
    app: &Arc<App>,
    parts: &Parts,
    body: Incoming,
    nsid: &str,
) -> XResult<Response<Body>> {
    if parts.method != Method::GET && parts.method != Method::HEAD && parts.method != Method::POST {
        return Err(XrpcError::invalid(
            "XRPC requests only supports GET and POST",
        ));
    }
    if repo::syntax::validate_nsid(nsid).is_err() {
        return Err(XrpcError::new(
            StatusCode::NOT_IMPLEMENTED,
            "MethodNotImplemented",
            "Method Not Implemented",
        ));
    }
    if crate::methods::is_protected_method(nsid) {
        return Err(XrpcError::bad("InvalidToken", "Bad token method"));
    }
    let claims = app.session(parts, Scope::Access)?;
    if !claims.is_privileged() && crate::methods::is_privileged_method(nsid) {
        return Err(XrpcError::bad("InvalidToken", "Bad token method"));
    }
    let (base, aud) = target(app, parts, nsid)?;
    let request_body = if parts.method == Method::POST {
        Bytes::from(crate::request::read_body(app, parts, body, app.config.json_body_limit).await?)
    } else {
        Bytes::new()
    };
    let (iss, aud2, lxm) = (claims.sub, aud, nsid.to_owned());
    let token = app
        .read(move |store| {
            crate::service_jwt::sign(
                store,
                &ServiceClaims {
                    iss: &iss,
                    aud: &aud2,
                    exp: crate::auth::now() + DEFAULT_TTL,
                    lxm: Some(&lxm),
                },
            )
        })
        .await?;
    let path_and_query = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let uri: http::Uri = format!("{base}{path_and_query}")
        .parse()
        .map_err(|e| XrpcError::internal(format!("proxy URL: {e}")))?;
    let mut req = http::Request::builder()
        .method(parts.method.clone())
        .uri(uri)
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        // The answer is passed through as it comes: ask for it unencoded
        // unless the client accepts more.
        .header(
            header::ACCEPT_ENCODING,
            parts
                .headers
                .get(header::ACCEPT_ENCODING)
                .cloned()
                .unwrap_or(HeaderValue::from_static("identity")),
        );
    for name in FORWARD_REQUEST {
        if let Some(v) = parts.headers.get(*name) {
            req = req.header(*name, v);
        }
    }
    let req = req
        .body(Full::new(request_body))
        .map_err(|e| XrpcError::internal(format!("proxy request: {e}")))?;
    let timeout = app.config.proxy_timeout;
    let started = tokio::time::Instant::now();
    let resp = match tokio::time::timeout(timeout, app.proxy.client().request(req)).await {
        Err(_) => return Err(upstream_timeout()),
        Ok(Err(e)) => {
            return Err(upstream_failure(format!(
                "Upstream service unreachable: {e}"
            )));
        }
        Ok(Ok(r)) => r,
    };
    let (head, upstream) = resp.into_parts();
    let max = app.config.proxy_max_bytes;
    let declared = head
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(upstream_failure(format!(
            "Upstream answer is larger than {max} bytes"
        )));
    }
    if head.status.is_client_error() || head.status.is_server_error() {
        return upstream_error(head.status, upstream, started + timeout).await;
    }
    let mut r = Response::new(Body::empty());
    *r.status_mut() = head.status;
    copy_response_headers(&head.headers, r.headers_mut());
    if parts.method == Method::HEAD {
        return Ok(r);
    }
    *r.body_mut() = stream_body(upstream, max, started + timeout * 2);
    Ok(r)
}

fn copy_response_headers(from: &HeaderMap, to: &mut HeaderMap) {
    for name in FORWARD_RESPONSE {
        if let Some(v) = from.get(*name) {
            to.insert(HeaderName::from_static(name), v.clone());
        }
    }
}

/// An upstream error answer: its XRPC error passed on (500 becomes 502
/// `UpstreamFailure`), read whole up to a small cap.
async fn upstream_error(
    status: StatusCode,
    mut body: Incoming,
    deadline: tokio::time::Instant,
) -> XResult<Response<Body>> {
    const MAX_ERROR: usize = 16 << 10;
    let mut bytes = Vec::new();
    while bytes.len() <= MAX_ERROR {
        match tokio::time::timeout_at(deadline, body.frame()).await {
            Err(_) => return Err(upstream_timeout()),
            Ok(None) => break,
            Ok(Some(Err(e))) => return Err(upstream_failure(format!("Upstream answer: {e}"))),
            Ok(Some(Ok(f))) => {
                if let Ok(d) = f.into_data() {
                    bytes.extend_from_slice(&d);
                }
            }
        }
    }
    #[derive(serde::Deserialize)]
    struct Err {
        error: Option<String>,
        message: Option<String>,
    }
    let parsed: Option<Err> = serde_json::from_slice(&bytes).ok();
    let (error, message) = match parsed {
        Some(e) => (e.error, e.message),
        None => (None, None),
    };
    let status = if status == StatusCode::INTERNAL_SERVER_ERROR {
        StatusCode::BAD_GATEWAY
    } else {
        status
    };
    let name = match error.as_deref() {
        // The answer's own name, when it is a plain identifier.
        Some(n)
            if !n.is_empty() && n.len() <= 64 && n.bytes().all(|b| b.is_ascii_alphanumeric()) =>
        {
            n.to_owned()
        }
        _ if status == StatusCode::BAD_GATEWAY => "UpstreamFailure".to_owned(),
        _ => "Upstream".to_owned(),
    };
    let mut s = String::with_capacity(128);
    s.push_str("{\"error\":");
    repo::cbor::json::push_json_str(&name, &mut s);
    s.push_str(",\"message\":");
    repo::cbor::json::push_json_str(
        message.as_deref().unwrap_or("Upstream service error"),
        &mut s,
    );
    s.push('}');
    Ok(crate::response::json(status, s))
}

/// The upstream body as a response stream: a few chunks ahead at most,
/// cut past `max` bytes or `deadline` (the client sees a truncated body
/// and the connection ends, as headers are already sent).
fn stream_body(mut upstream: Incoming, max: usize, deadline: tokio::time::Instant) -> Body {
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    tokio::spawn(async move {
        let mut sent = 0usize;
        loop {
            let frame = match tokio::time::timeout_at(deadline, upstream.frame()).await {
                Err(_) => Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "upstream answer too slow",
                )),
                Ok(None) => break,
                Ok(Some(Err(e))) => Err(std::io::Error::other(e)),
                Ok(Some(Ok(f))) => match f.into_data() {
                    Ok(d) => {
                        sent += d.len();
                        if sent > max {
                            Err(std::io::Error::other("upstream answer too large"))
                        } else {
                            Ok(d)
                        }
                    }
                    Err(_) => continue,
                },
            };
            let stop = frame.is_err();
            if tx.send(frame).await.is_err() || stop {
                break;
            }
        }
    });
    Body::Stream(rx)
}
