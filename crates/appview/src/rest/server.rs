//! The listener and connections: HTTP/1.1 with keep-alive on hyper (the
//! stack `atpds` serves XRPC on), every resource bounded: at most
//! [`RestConfig::max_connections`] connections (past it the listener
//! stops accepting until one closes, so the kernel's backlog queues the
//! rest), request heads capped at [`RestConfig::max_header_bytes`] (431
//! past it, hyper's answer) and 100 headers, a head that does not arrive
//! in 30 s closes the connection, and a body capped at
//! [`RestConfig::max_body_bytes`] ([`RestConfig::max_log_batch_bytes`]
//! for a batch of log lines; 413, refused before reading when its
//! declared length is over) that must arrive within
//! [`RestConfig::body_timeout`] (408). Writes run on the blocking pool
//! (each is a signed commit); reads answer from the index on the async
//! threads. Shutdown stops accepting and lets each connection finish its
//! in-flight request.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};

use crate::app::AppView;
use crate::rest::RestConfig;
use crate::rest::reply::Reply;
use crate::rest::routes;

fn response(reply: Reply) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(reply.body)));
    *r.status_mut() = hyper::StatusCode::from_u16(reply.status)
        .unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    r
}

async fn handle(
    app: Arc<AppView>,
    config: Arc<RestConfig>,
    req: Request<Incoming>,
) -> Response<Full<Bytes>> {
    let route = match routes::route(req.method().as_str(), req.uri().path()) {
        Ok(r) => r,
        Err(reply) => return response(reply),
    };
    if route == routes::Route::Task(crate::rest::task_runs::TaskRoute::EventsIn) {
        return crate::rest::events::upgrade(app, req);
    }
    let limit = if route == routes::Route::Log(crate::rest::logs::LogRoute::Create) {
        config.max_log_batch_bytes
    } else {
        config.max_body_bytes
    };
    let declared = req
        .headers()
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let too_large = || {
        response(Reply::detail(
            413,
            &format!("Request body is larger than {limit} bytes"),
        ))
    };
    if declared.is_some_and(|n| n > limit as u64) {
        return too_large();
    }
    let body = match tokio::time::timeout(
        config.body_timeout,
        Limited::new(req.into_body(), limit).collect(),
    )
    .await
    {
        Err(_) => return response(Reply::detail(408, "Request body did not arrive in time")),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => return too_large(),
        Ok(Err(e)) => {
            return response(Reply::detail(
                400,
                &format!("Reading the request body: {e}"),
            ));
        }
        Ok(Ok(b)) => b.to_bytes(),
    };
    let reply = if route.writes() {
        match tokio::task::spawn_blocking(move || routes::respond(&app, route, &body)).await {
            Ok(r) => r,
            Err(_) => Reply::detail(500, "Internal Server Error"),
        }
    } else {
        routes::respond(&app, route, &body)
    };
    response(reply)
}

/// Serves `app` on `listener` until `shutdown` resolves.
pub async fn serve(
    app: Arc<AppView>,
    config: RestConfig,
    listener: TcpListener,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let config = Arc::new(config);
    let slots = Arc::new(Semaphore::new(config.max_connections.max(1)));
    let (stop_tx, stop_rx) = watch::channel(false);
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            _ = &mut shutdown => break,
            p = slots.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
        };
        let accepted = tokio::select! {
            _ = &mut shutdown => break,
            a = listener.accept() => a,
        };
        let (stream, _) = match accepted {
            Ok(s) => s,
            // Out of descriptors and the like: back off briefly.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let (app, config, mut stop) = (app.clone(), config.clone(), stop_rx.clone());
        tokio::spawn(async move {
            let _permit = permit;
            let svc_config = config.clone();
            let svc = service_fn(move |req| {
                let (app, config) = (app.clone(), svc_config.clone());
                async move { Ok::<_, Infallible>(handle(app, config, req).await) }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .max_buf_size(config.max_header_bytes)
                .max_headers(100)
                .keep_alive(true)
                .timer(TokioTimer::new())
                .header_read_timeout(Duration::from_secs(30))
                .serve_connection(TokioIo::new(stream), svc)
                .with_upgrades();
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = async { let _ = stop.wait_for(|s| *s).await; } => {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
        });
    }
    let _ = stop_tx.send(true);
    // Wait (bounded) for the connections to finish their requests.
    let all = u32::try_from(config.max_connections.max(1)).unwrap_or(u32::MAX);
    let _ = tokio::time::timeout(Duration::from_secs(10), slots.acquire_many(all)).await;
}

/// Binds `config.listen`.
pub async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}
