//! A connection opened ahead of the first request. A helper process is
//! short-lived, so its first request pays for a new connection (one round
//! trip, more with TLS) before anything else crosses. [`PreConnect`] wraps
//! the HTTP connector: [`PreConnect::start`] dials the PDS on a thread of
//! its own as soon as the remote is opened, while git and the helper run
//! their local subprocesses, and the first connection the client asks for
//! to that host and port is that one. Any other is dialled as usual.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioIo;
use tokio::sync::oneshot;
use tower_service::Service;

/// Longest the dial ahead may take before it is given up.
pub const DIAL_TIMEOUT: Duration = Duration::from_secs(10);

type Pending = (
    String,
    oneshot::Receiver<std::io::Result<std::net::TcpStream>>,
);

/// The HTTP connector with one connection dialled ahead.
#[derive(Clone)]
pub struct PreConnect {
    http: HttpConnector,
    spare: Arc<Mutex<Option<Pending>>>,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl PreConnect {
    /// Wraps `http`.
    pub fn new(http: HttpConnector) -> PreConnect {
        PreConnect {
            http,
            spare: Arc::new(Mutex::new(None)),
        }
    }

    /// Dials `host:port` now, on a thread: the next connection to it
    /// will be this one. A second call before it is used replaces it.
    pub fn start(&self, host: &str, port: u16) {
        let (tx, rx) = oneshot::channel();
        let target = format!("{host}:{port}");
        let dial = target.clone();
        let spawned = std::thread::Builder::new()
            .name("knot-preconnect".into())
            .spawn(move || {
                use std::net::ToSocketAddrs;
                let r = dial.to_socket_addrs().and_then(|mut addrs| {
                    let a = addrs.next().ok_or_else(|| {
                        std::io::Error::new(std::io::ErrorKind::NotFound, "no address")
                    })?;
                    let s = std::net::TcpStream::connect_timeout(&a, DIAL_TIMEOUT)?;
                    s.set_nodelay(true)?;
                    s.set_nonblocking(true)?;
                    Ok(s)
                });
                let _ = tx.send(r);
            });
        if spawned.is_ok()
            && let Ok(mut g) = self.spare.lock()
        {
            *g = Some((target, rx));
        }
    }

    fn take(
        &self,
        target: &str,
    ) -> Option<oneshot::Receiver<std::io::Result<std::net::TcpStream>>> {
        let mut g = self.spare.lock().ok()?;
        match g.take() {
            Some((t, rx)) if t == target => Some(rx),
            other => {
                *g = other;
                None
            }
        }
    }
}

impl Service<http::Uri> for PreConnect {
    type Response = TokioIo<tokio::net::TcpStream>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.http.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        let default_port = if uri.scheme_str() == Some("https") {
            443
        } else {
            80
        };
        let target = uri
            .host()
            .map(|h| format!("{h}:{}", uri.port_u16().unwrap_or(default_port)));
        let ready = target.as_deref().and_then(|t| self.take(t));
        let mut http = self.http.clone();
        Box::pin(async move {
            if let Some(rx) = ready
                && let Ok(Ok(std)) = rx.await
                && let Ok(s) = tokio::net::TcpStream::from_std(std)
            {
                crate::trace::mark("connection dialled ahead used", None);
                return Ok(TokioIo::new(s));
            }
            crate::trace::mark("connection dialled now", None);
            // The dial ahead failed (or was another host's): dial now.
            http.call(uri).await.map_err(Into::into)
        })
    }
}
