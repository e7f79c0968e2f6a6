//! Reading a request's body: whole, with its cap (413 before reading when
//! the declared length is over it, as soon as it passes it otherwise) and
//! its deadline (408, and the connection closes: a client that stalls
//! mid-body holds its buffer for a bounded time only), and as JSON. A
//! leaf the handlers share.

use std::time::Duration;

use http::request::Parts;
use http::{StatusCode, header};
use http_body_util::BodyExt;
use hyper::body::Incoming;

use crate::app::App;
use crate::error::{XResult, XrpcError};

/// How long a body of `len` bytes may take to arrive: `grace`, plus its
/// length at `min_rate` bytes per second.
pub fn body_deadline(len: u64, grace: Duration, min_rate: u64) -> Duration {
    grace + Duration::from_secs_f64(len as f64 / min_rate.max(1) as f64)
}

/// Reads a whole request body, refusing one over `limit` bytes (413)
/// before reading it when its length is declared, and as soon as it
/// passes the limit otherwise; and one that has not arrived by its
/// deadline ([`body_deadline`] of its declared length, else of `limit`,
/// at [`ServerConfig::body_grace`](crate::ServerConfig::body_grace) and
/// [`body_min_rate`](crate::ServerConfig::body_min_rate)): 408, and the
/// router closes the connection.
pub async fn read_body(app: &App, parts: &Parts, body: Incoming, limit: usize) -> XResult<Vec<u8>> {
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(XrpcError::too_large(format!(
            "request body is larger than {limit} bytes"
        )));
    }
    let allowed = body_deadline(
        declared.unwrap_or(limit as u64),
        app.config.body_grace,
        app.config.body_min_rate,
    );
    let deadline = tokio::time::Instant::now() + allowed;
    let mut out = Vec::with_capacity(declared.map_or(0, |n| n as usize));
    let mut body = body;
    loop {
        let frame = match tokio::time::timeout_at(deadline, body.frame()).await {
            Ok(Some(frame)) => frame,
            Ok(None) => break,
            Err(_) => {
                return Err(XrpcError::new(
                    StatusCode::REQUEST_TIMEOUT,
                    "RequestTimeout",
                    format!(
                        "the request body did not arrive within {allowed:?} ({} of {} bytes)",
                        out.len(),
                        declared.map_or_else(|| "?".to_owned(), |n| n.to_string())
                    ),
                ));
            }
        };
        let frame = frame.map_err(|e| XrpcError::invalid(format!("reading the body: {e}")))?;
        if let Ok(data) = frame.into_data() {
            if out.len() + data.len() > limit {
                return Err(XrpcError::too_large(format!(
                    "request body is larger than {limit} bytes"
                )));
            }
            out.extend_from_slice(&data);
        }
    }
    Ok(out)
}

/// Reads and parses a JSON body (capped at the JSON limit).
pub async fn json_body<T: serde::de::DeserializeOwned>(
    app: &App,
    parts: &Parts,
    body: Incoming,
) -> XResult<T> {
    let bytes = read_body(app, parts, body, app.config.json_body_limit).await?;
    serde_json::from_slice(&bytes)
        .map_err(|e| XrpcError::invalid(format!("Invalid JSON body: {e}")))
}
