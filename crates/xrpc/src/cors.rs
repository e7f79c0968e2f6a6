//! CORS, as the reference PDS answers it (the `cors` middleware at its
//! defaults, with a day's max-age), so a browser client on any origin can
//! call atpds:
//!
//! - a preflight (`OPTIONS` with `Access-Control-Request-Method`) is 204
//!   with `Access-Control-Allow-Origin: *`, the methods, the request's own
//!   `Access-Control-Request-Headers` reflected (bounded), and
//!   `Access-Control-Max-Age: 86400`; it reaches no route and no limit;
//! - every other answer carries `Access-Control-Allow-Origin: *` and
//!   `Access-Control-Expose-Headers` naming the non-safelisted headers
//!   atpds sends that a client reads (rate limits, `Retry-After`, and the
//!   appview's headers passed through by the proxy).
//!
//! No credentials mode: sessions are bearer tokens in `Authorization`,
//! never cookies.

use http::{HeaderMap, HeaderValue, Method, Response, StatusCode, header};

use crate::response::Body;

const METHODS: HeaderValue = HeaderValue::from_static("GET,HEAD,PUT,PATCH,POST,DELETE");
const MAX_AGE: HeaderValue = HeaderValue::from_static("86400");
const EXPOSE: HeaderValue = HeaderValue::from_static(
    "RateLimit-Limit,RateLimit-Remaining,RateLimit-Reset,RateLimit-Policy,Retry-After,\
     atproto-repo-rev,atproto-content-labelers",
);
/// Longest `Access-Control-Request-Headers` reflected (a list longer than
/// any real client's is answered with the headers atpds reads).
const MAX_REFLECTED: usize = 1024;
const DEFAULT_ALLOWED: HeaderValue = HeaderValue::from_static(
    "authorization,content-type,atproto-proxy,atproto-accept-labelers,dpop",
);

/// The preflight answer, when `method`/`headers` are one.
pub fn preflight(method: &Method, headers: &HeaderMap) -> Option<Response<Body>> {
    if method != Method::OPTIONS {
        return None;
    }
    let mut r = Response::new(Body::empty());
    *r.status_mut() = StatusCode::NO_CONTENT;
    let h = r.headers_mut();
    h.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    h.insert(header::ACCESS_CONTROL_ALLOW_METHODS, METHODS);
    let allowed = headers
        .get(header::ACCESS_CONTROL_REQUEST_HEADERS)
        .filter(|v| v.len() <= MAX_REFLECTED)
        .cloned()
        .unwrap_or(DEFAULT_ALLOWED);
    h.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, allowed);
    h.insert(header::ACCESS_CONTROL_MAX_AGE, MAX_AGE);
    h.insert(
        header::VARY,
        HeaderValue::from_static("Access-Control-Request-Headers"),
    );
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(0));
    Some(r)
}

/// The headers every non-preflight answer carries.
pub fn decorate(h: &mut HeaderMap) {
    h.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    h.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, EXPOSE);
}
