//! The HTTP/1.1 server: hyper over tokio, GET and HEAD only. Request
//! heads are bounded (bytes and header count), connections are bounded by
//! a semaphore, and every page carries a content security policy that
//! allows no script at all.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};

use crate::app::App;

/// Server limits.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Bytes of one request head (request line plus headers).
    pub max_head_bytes: usize,
    /// Headers in one request.
    pub max_headers: usize,
    /// Open connections; further accepts wait.
    pub max_connections: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            max_head_bytes: 16 << 10,
            max_headers: 64,
            max_connections: 512,
        }
    }
}

const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self' data: https:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

fn respond(app: &App, req: &Request<Incoming>) -> Response<Full<Bytes>> {
    let head = req.method() == Method::HEAD;
    let result = if req.method() == Method::GET || head {
        app.handle(req.uri().path())
    } else {
        Err(crate::error::ServeError::Method(req.method().to_string()))
    };
    let (status, ctype, body, cache) = match result {
        Ok(r) => (StatusCode::OK, r.content_type, r.body, true),
        Err(e) => {
            let msg = format!(
                "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><link rel=\"icon\" href=\"data:,\"><title>error</title></head><body><p>{}</p></body></html>\n",
                crate::html::escape(&e.to_string())
            );
            (
                e.status(),
                "text/html; charset=utf-8",
                Bytes::from(msg),
                false,
            )
        }
    };
    let len = body.len();
    let mut b = Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, ctype)
        .header(header::CONTENT_LENGTH, len)
        .header("x-content-type-options", "nosniff")
        .header(header::CONTENT_SECURITY_POLICY, CSP)
        .header(
            header::CACHE_CONTROL,
            if cache {
                "public, max-age=60"
            } else {
                "no-store"
            },
        );
    if status == StatusCode::METHOD_NOT_ALLOWED {
        b = b.header(header::ALLOW, "GET, HEAD");
    }
    let body = if head { Bytes::new() } else { body };
    b.body(Full::new(body))
        .unwrap_or_else(|_| Response::new(Full::new(Bytes::new())))
}

/// Serves `app` on `listener` until `stop` turns true.
pub async fn serve(
    listener: TcpListener,
    app: Arc<App>,
    cfg: ServerConfig,
    mut stop: watch::Receiver<bool>,
) {
    let permits = Arc::new(Semaphore::new(cfg.max_connections.max(1)));
    loop {
        let permit = tokio::select! {
            p = permits.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => return },
            _ = async { let _ = stop.wait_for(|s| *s).await; } => return,
        };
        let (stream, _) = tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => x,
                // Out of descriptors and the like: back off, keep serving.
                Err(_) => { tokio::time::sleep(Duration::from_millis(50)).await; continue; }
            },
            _ = async { let _ = stop.wait_for(|s| *s).await; } => return,
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let cfg = cfg.clone();
        let mut stop = stop.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let svc = service_fn(move |req| {
                let app = app.clone();
                async move { Ok::<_, Infallible>(respond(&app, &req)) }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .max_buf_size(cfg.max_head_bytes.max(8192))
                .max_headers(cfg.max_headers)
                .keep_alive(true)
                .timer(TokioTimer::new())
                .header_read_timeout(Duration::from_secs(30))
                .serve_connection(TokioIo::new(stream), svc);
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
}

/// A server on its own thread and runtime (tests, benches, the browser
/// check).
pub struct Running {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Running {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Binds `listen` and serves `app` on `workers` threads.
pub fn spawn(
    app: Arc<App>,
    listen: SocketAddr,
    cfg: ServerConfig,
    workers: usize,
) -> std::io::Result<Running> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers.max(1))
        .enable_all()
        .build()?;
    let listener = rt.block_on(TcpListener::bind(listen))?;
    let addr = listener.local_addr()?;
    let (tx, rx) = watch::channel(false);
    let thread = std::thread::Builder::new()
        .name("knot-serve".into())
        .spawn(move || {
            rt.block_on(serve(listener, app, cfg, rx));
            rt.shutdown_timeout(Duration::from_secs(5));
        })?;
    Ok(Running {
        addr,
        stop: tx,
        thread: Some(thread),
    })
}
