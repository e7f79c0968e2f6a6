//! The listener and connections: HTTP/1.1 with keep-alive (hyper), the
//! request-head cap (`max_header_bytes`: a head over it is answered 431
//! by hyper), the runtime, and graceful shutdown (stop accepting, let each
//! connection finish its in-flight request, close the firehose
//! subscribers, wait for both, then close the store).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};

use crate::app::App;
use crate::error::ServerError;
use crate::firehose::Stats;
use crate::stall::Stalling;
use crate::{ServerConfig, routes};

/// How long shutdown waits for in-flight requests and subscribers.
const DRAIN: Duration = Duration::from_secs(10);

/// The runtime [`crate::spawn`] and the `atpds` binary run on: `workers`
/// async threads ([`ServerConfig::workers`]: one per core by default) and
/// a blocking pool for the store. Commits wait on the store's group
/// commit, so the pool is larger than the core count: ten concurrent
/// createRecord calls need ten threads waiting in one batch.
pub fn runtime(workers: usize) -> Result<tokio::runtime::Runtime, ServerError> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers.max(1))
        .max_blocking_threads(256)
        .thread_name("atpds")
        .enable_all()
        .build()?)
}

/// A bound listener and the opened state, ready to run.
pub struct Bound {
    listener: TcpListener,
    addr: SocketAddr,
    app: Arc<App>,
    /// The app's startup line with the stage timings after it.
    startup: String,
}

impl Bound {
    /// Binds, then opens the store and the account file (on the blocking
    /// pool) and starts the firehose broadcaster.
    pub async fn start(config: ServerConfig) -> Result<Bound, ServerError> {
        if config.max_header_bytes < 8192 {
            return Err(ServerError::Startup(
                "max_header_bytes must be at least 8192".into(),
            ));
        }
        let bind_started = std::time::Instant::now();
        let listener = TcpListener::bind(config.listen).await?;
        let addr = listener.local_addr()?;
        let bind_time = bind_started.elapsed();
        let app = tokio::task::spawn_blocking(move || App::open(config, addr))
            .await
            .map_err(|e| ServerError::Startup(e.to_string()))??;
        let hub_started = std::time::Instant::now();
        let app = Arc::new(app);
        tokio::spawn(app.hub.clone().run());
        let mut stages = app.stages;
        stages.http_init += bind_time + hub_started.elapsed();
        let startup = format!("{}; stages {}", app.startup, stages.line());
        Ok(Bound {
            listener,
            addr,
            app,
            startup,
        })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The firehose counters.
    pub fn stats(&self) -> Arc<Stats> {
        self.app.hub.stats()
    }

    /// The heavy responses' admission (their counts and held bytes).
    pub fn heavy(&self) -> Arc<crate::admission::Admission> {
        self.app.heavy.clone()
    }

    /// The startup report line.
    pub fn startup_line(&self) -> &str {
        &self.startup
    }

    /// Serves until `shutdown`, then drains and closes.
    pub async fn run(
        self,
        shutdown: impl std::future::Future<Output = ()>,
    ) -> Result<(), ServerError> {
        let Bound { listener, app, .. } = self;
        let (stop_tx, stop_rx) = watch::channel(false);
        // Each connection holds a sender; when all are gone, recv is None.
        let (track_tx, mut track_rx) = mpsc::channel::<()>(1);
        let sweeper = tokio::spawn(crate::sweeper::run(app.clone(), stop_rx.clone()));
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                _ = &mut shutdown => break,
                accepted = listener.accept() => match accepted {
                    Ok((stream, peer)) => {
                        let _ = stream.set_nodelay(true);
                        tokio::spawn(connection(app.clone(), stream, peer.ip(), stop_rx.clone(), track_tx.clone()));
                    }
                    // Out of descriptors and the like: back off briefly.
                    Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
                },
            }
        }
        drop(listener);
        let _ = stop_tx.send(true);
        app.hub.close();
        drop(track_tx);
        let _ = tokio::time::timeout(DRAIN, track_rx.recv()).await;
        let _ = tokio::time::timeout(DRAIN, sweeper).await;
        let stats = app.hub.stats();
        let deadline = tokio::time::Instant::now() + DRAIN;
        while stats.subscribers() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Ok(())
    }
}

async fn connection(
    app: Arc<App>,
    stream: tokio::net::TcpStream,
    peer: std::net::IpAddr,
    mut stop: watch::Receiver<bool>,
    _track: mpsc::Sender<()>,
) {
    let max_head = app.config.max_header_bytes;
    let svc_app = app.clone();
    let svc = service_fn(move |req| {
        let app = svc_app.clone();
        async move { Ok::<_, Infallible>(routes::handle(app, req, peer).await) }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .max_buf_size(max_head)
        .max_headers(100)
        .keep_alive(true)
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs(30))
        .serve_connection(
            TokioIo::new(Stalling::new(stream, app.config.write_stall)),
            svc,
        )
        .with_upgrades();
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        _ = async { let _ = stop.wait_for(|s| *s).await; } => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        }
    }
}
