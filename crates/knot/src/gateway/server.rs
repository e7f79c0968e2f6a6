//! The gateway's HTTP server (HTTP/1.1, hyper): `POST /v1/push` and
//! `GET /v1/stats` (wire in the module doc of `gateway`). Every input is
//! bounded: connections (accepts wait for a free slot), header read time,
//! the body (`max_push_bytes`, refused with 413 past it), the query's
//! fields (checked before anything is done with them). A bad request is a
//! 4xx with `{"error","message"}`, never a panic.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use super::Core;
use super::queue::{Refusal, Reply};
use crate::names::check_repo_name;

/// Time a client has to send its request's headers.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(30);

/// Accepts and serves until the listener fails.
pub async fn serve(core: Arc<Core>, listener: TcpListener) {
    let slots = Arc::new(Semaphore::new(core.cfg.max_connections.max(1)));
    loop {
        let Ok(permit) = slots.clone().acquire_owned().await else {
            return;
        };
        let (sock, _) = match listener.accept().await {
            Ok(x) => x,
            Err(_) => {
                // Out of descriptors or similar: back off, do not spin.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = sock.set_nodelay(true);
        let core = core.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let svc = hyper::service::service_fn(move |req| {
                let core = core.clone();
                async move { Ok::<_, Infallible>(handle(core, req).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .max_buf_size(64 << 10)
                .serve_connection(TokioIo::new(sock), svc)
                .await;
        });
    }
}

fn answer(status: StatusCode, v: &Value) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(v.to_string())));
    *r.status_mut() = status;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    r
}

fn error(status: StatusCode, name: &str, message: impl Into<String>) -> Response<Full<Bytes>> {
    answer(status, &json!({"error": name, "message": message.into()}))
}

/// The query's fields, percent-decoded (`%XX` only; `+` stays).
fn query_field(q: &str, key: &str) -> Option<String> {
    for pair in q.split('&') {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if k == key {
            let b = v.as_bytes();
            let mut out = Vec::with_capacity(b.len());
            let mut i = 0;
            while i < b.len() {
                if b[i] == b'%' {
                    let hex = b.get(i + 1..i + 3)?;
                    if !hex.iter().all(u8::is_ascii_hexdigit) {
                        return None;
                    }
                    let hex = std::str::from_utf8(hex).ok()?;
                    out.push(u8::from_str_radix(hex, 16).ok()?);
                    i += 3;
                } else {
                    out.push(b[i]);
                    i += 1;
                }
            }
            return String::from_utf8(out).ok();
        }
    }
    None
}

/// A branch name git would accept (`git check-ref-format` rules that
/// matter here), under `refs/heads/`.
pub fn check_branch(name: &str) -> Result<(), String> {
    let Some(rest) = name.strip_prefix("refs/heads/") else {
        return Err(format!("{name:?} is not a branch (refs/heads/…)"));
    };
    let ok = !rest.is_empty()
        && name.len() <= 1024
        && !name.contains("..")
        && !name.contains("@{")
        && !name.contains("//")
        && !name.ends_with('/')
        && !name.ends_with(".lock")
        && !name.ends_with('.')
        && !rest.split('/').any(|c| c.starts_with('.'))
        && name
            .bytes()
            .all(|b| b > b' ' && b != 0x7f && !b"~^:?*[\\".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(format!("{name:?} is not a valid branch name"))
    }
}

fn check_oid(s: &str) -> bool {
    s.len() == 40 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

async fn handle(core: Arc<Core>, req: Request<Incoming>) -> Response<Full<Bytes>> {
    if let Some(t) = &core.cfg.token {
        let want = format!("Bearer {t}");
        let got = req
            .headers()
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        if got != Some(want.as_str()) {
            return error(
                StatusCode::UNAUTHORIZED,
                "AuthRequired",
                "this gateway wants its bearer token",
            );
        }
    }
    match (req.method(), req.uri().path()) {
        (&Method::GET, "/v1/stats") => answer(StatusCode::OK, &core.stats.to_json()),
        (&Method::POST, "/v1/push") => push(core, req).await,
        _ => error(StatusCode::NOT_FOUND, "NotFound", "no such method"),
    }
}

async fn push(core: Arc<Core>, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let q = req.uri().query().unwrap_or("").to_owned();
    let (Some(repo), Some(branch), Some(new)) = (
        query_field(&q, "repo"),
        query_field(&q, "ref"),
        query_field(&q, "new"),
    ) else {
        return error(
            StatusCode::BAD_REQUEST,
            "InvalidRequest",
            "repo, ref and new are required",
        );
    };
    if let Err(why) = check_repo_name(&repo) {
        return error(StatusCode::BAD_REQUEST, "InvalidRequest", why);
    }
    if let Err(why) = check_branch(&branch) {
        return error(StatusCode::BAD_REQUEST, "InvalidRequest", why);
    }
    if !check_oid(&new) {
        return error(
            StatusCode::BAD_REQUEST,
            "InvalidRequest",
            "new is not an object id (40 lower-case hex)",
        );
    }
    let limit = core.cfg.max_push_bytes;
    let body = match Limited::new(req.into_body(), limit).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            return if e.is::<http_body_util::LengthLimitError>() {
                error(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "PayloadTooLarge",
                    format!(
                        "a push through the gateway is at most {limit} bytes of pack; push straight to the PDS"
                    ),
                )
            } else {
                error(StatusCode::BAD_REQUEST, "InvalidRequest", e.to_string())
            };
        }
    };
    core.stats.pushes.fetch_add(1, Ordering::Relaxed);
    if let Err(e) = core.scratch.index_pack(&body).await {
        return error(StatusCode::BAD_REQUEST, "BadPack", e.to_string());
    }
    match core.scratch.has_commit(&new).await {
        Ok(true) => {}
        Ok(false) => {
            return error(
                StatusCode::BAD_REQUEST,
                "BadPack",
                format!("the pack does not hold commit {new}"),
            );
        }
        Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, "Git", e.to_string()),
    }
    let queue = match core.queue(&repo, &branch).await {
        Ok(Some(q)) => q,
        Ok(None) => {
            return error(
                StatusCode::SERVICE_UNAVAILABLE,
                "TooManyQueues",
                format!("the gateway holds {} queues", core.cfg.max_queues),
            );
        }
        Err(e) => return error(StatusCode::BAD_GATEWAY, "Pds", e.to_string()),
    };
    let rx = match queue
        .submit(&core.scratch, &new, body.len() as u64, core.cfg.max_queue)
        .await
    {
        Ok(Ok(rx)) => rx,
        Ok(Err(Refusal::Git(why))) => {
            core.stats.refused.fetch_add(1, Ordering::Relaxed);
            return answer(StatusCode::OK, &json!({"status": "refused", "why": why}));
        }
        Ok(Err(Refusal::Full(n))) => {
            core.stats.refused.fetch_add(1, Ordering::Relaxed);
            return error(
                StatusCode::SERVICE_UNAVAILABLE,
                "QueueFull",
                format!("{n} pushes wait on {branch} already"),
            );
        }
        Err(e) => return error(StatusCode::BAD_GATEWAY, "Gateway", e.to_string()),
    };
    match rx.await {
        Ok(Reply::Landed { tip, rebased }) => answer(
            StatusCode::OK,
            &json!({"status": "landed", "landed": tip, "rebased": rebased}),
        ),
        Ok(Reply::Refused(why)) => {
            answer(StatusCode::OK, &json!({"status": "refused", "why": why}))
        }
        Ok(Reply::Failed(why)) => error(StatusCode::BAD_GATEWAY, "FlushFailed", why),
        Err(_) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Gateway",
            "the queue stopped before answering",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn fields_and_names() {
        assert_eq!(
            query_field("repo=r&ref=refs%2Fheads%2Fmain&new=a", "ref").as_deref(),
            Some("refs/heads/main")
        );
        assert_eq!(query_field("ref=%2", "ref"), None);
        assert_eq!(query_field("ref=%zz", "ref"), None);
        assert_eq!(query_field("x=1", "ref"), None);
        assert!(check_branch("refs/heads/main").is_ok());
        assert!(check_branch("refs/heads/a/b-c_d.e").is_ok());
        for bad in [
            "refs/tags/v1",
            "refs/heads/",
            "refs/heads/a..b",
            "refs/heads/a b",
            "refs/heads/.x",
            "refs/heads/x.lock",
            "refs/heads/a~1",
            "refs/heads/a//b",
        ] {
            assert!(check_branch(bad).is_err(), "{bad}");
        }
    }

    proptest! {
        #[test]
        fn hostile_queries_do_not_panic(q in ".{0,200}", k in "[a-z]{1,4}") {
            let _ = query_field(&q, &k);
            let _ = check_branch(&q);
        }
    }
}
