//! Reading a request's body: whole, with its cap (413 before reading when
//! the declared length is over it, as soon as it passes it otherwise), and
//! as JSON. A leaf the handlers share.

use http::header;
use http::request::Parts;
use http_body_util::BodyExt;
use hyper::body::Incoming;

use crate::app::App;
use crate::error::{XResult, XrpcError};

/// Reads a whole request body, refusing one over `limit` bytes (413)
/// before reading it when its length is declared, and as soon as it
/// passes the limit otherwise.
pub async fn read_body(parts: &Parts, body: Incoming, limit: usize) -> XResult<Vec<u8>> {
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
    let mut out = Vec::with_capacity(declared.map_or(0, |n| n as usize));
    let mut body = body;
    while let Some(frame) = body.frame().await {
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
    let bytes = read_body(parts, body, app.config.json_body_limit).await?;
    serde_json::from_slice(&bytes)
        .map_err(|e| XrpcError::invalid(format!("Invalid JSON body: {e}")))
}
