//! The appview as a Prefect-compatible REST server (`rest` feature;
//! `appview serve`): the part of Prefect 3's REST API the seeded workload
//! and the read patterns use, with Prefect's JSON shapes, on hyper's
//! HTTP/1.1 (the stack `atpds` serves XRPC on). Every write is a signed
//! commit through `crates/store` ([`AppView::apply_with`]); every read
//! comes from the index.
//!
//! | route | answer |
//! |---|---|
//! | `GET /api/health` | `true` |
//! | `GET /api/admin/version` | the Prefect API version followed ([`routes::API_VERSION`]) |
//! | `POST /api/flows/` | the flow of that name (200) or a new one (201) |
//! | `GET /api/flows/{id}` | the flow, or 404 `Flow not found` |
//! | `POST /api/flows/filter` | flows: `flows.id.any_`, every `sort` (`CREATED_DESC`, `UPDATED_DESC`, `NAME_ASC`, `NAME_DESC`), `limit`, `offset` |
//! | `POST /api/flow_runs/` | a new run, PENDING (201); parameters of any JSON type, given back in Prefect's text ([`crate::params`]) |
//! | `GET /api/flow_runs/{id}` | the run with its state, or 404 `Flow run not found` |
//! | `POST /api/flow_runs/{id}/set_state` | the orchestration result: `ACCEPT` (201) or `ABORT` (200) |
//! | `POST /api/flow_runs/filter` | runs: `flow_runs.state.type.any_`, `flows.id.any_`, `start_time`/`expected_start_time`/`end_time` `after_`/`before_`, every `sort`, `limit` (default and maximum 200), `offset` |
//! | `POST /api/flow_runs/count` | the count of the same filter, a bare integer |
//! | `/api/task_runs/...`, `GET /api/events/in` (WebSocket), `POST /api/events/filter` | task runs and events: `task_runs`, `events` |
//! | `POST /api/logs/`, `POST /api/logs/filter` | log lines, kept beside the store (`crate::logs`): `logs` |
//!
//! Not served, each answered 404 with a `detail` naming it, under every
//! path and method of its prefix (module `unserved`, which says what
//! Prefect's client does with the answer):
//!
//! | area | paths under `/api/` | what Prefect 3.9.1's client does |
//! |---|---|---|
//! | deployments | `deployments/` | `prefect deployment ls` exits 1, quoting the detail; `prefect deployment inspect NAME`: `Deployment 'NAME' not found!` |
//! | work pools | `work_pools/` | `prefect work-pool ls` exits 1, quoting the detail |
//! | work queues | `work_queues/` | `prefect work-queue ls` exits 1, quoting the detail |
//! | automations | `automations/` | `prefect automation ls` exits 1, quoting the detail |
//! | blocks | `block_documents/`, `block_types/`, `block_schemas/`, `block_capabilities/` | `Block.load(name)` raises `ValueError: Unable to find block document named ...` |
//! | variables | `variables/` | `Variable.get(name, default=d)` returns `d`; `prefect variable ls` exits 1 |
//! | concurrency limits | `concurrency_limits/`, `v2/concurrency_limits/` | `prefect concurrency-limit ls` exits 1; a flow taking a slot (`concurrency("db")`) ends FAILED: `ConcurrencySlotAcquisitionError` quoting the detail |
//! | artifacts | `artifacts/` | a flow calling `create_markdown_artifact` ends FAILED on the error |
//!
//! Anything else is refused as Prefect would: 404 `Not Found` for another
//! path, 405 for another method, 422 in Prefect's validation shape naming
//! the field for a body that is not JSON, a bad value or enum, an unknown
//! key inside a model, or a field this server does not honour (module
//! `request`); 422 `Invalid limit` past 200. What differs from Prefect's
//! answers is said where it is decided: `request` (the subset), `routes`
//! (orchestration, names, ids), `render` (fields the model does not hold),
//! `crate::filter` (null order).

pub mod events;
mod logs;
mod render;
mod reply;
mod request;
pub mod routes;
mod server;
mod task_filter;
mod task_runs;
pub mod time;
mod unserved;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::app::AppView;

/// The server's bounds and address.
#[derive(Debug, Clone)]
pub struct RestConfig {
    /// Where to listen.
    pub listen: SocketAddr,
    /// Open connections at most.
    pub max_connections: usize,
    /// A request head's bytes at most (at least 8 KiB: hyper's floor).
    pub max_header_bytes: usize,
    /// A request body's bytes at most.
    pub max_body_bytes: usize,
    /// A `POST /logs/` body's bytes at most: Prefect's client sends
    /// batches of up to 4,000,000 bytes (`PREFECT_LOGGING_TO_API_BATCH_SIZE`).
    pub max_log_batch_bytes: usize,
    /// How long a body may take to arrive.
    pub body_timeout: Duration,
    /// Async worker threads.
    pub workers: usize,
}

impl Default for RestConfig {
    fn default() -> Self {
        RestConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 4200)),
            max_connections: 512,
            max_header_bytes: 16 * 1024,
            max_body_bytes: 1024 * 1024,
            max_log_batch_bytes: 4 * 1024 * 1024,
            body_timeout: Duration::from_secs(30),
            workers: std::thread::available_parallelism().map_or(2, |n| n.get()),
        }
    }
}

/// A server running on a thread of its own (tests, benches).
pub struct RunningRest {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RunningRest {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR/api`, what Prefect's `PREFECT_API_URL` takes.
    pub fn api_url(&self) -> String {
        format!("http://{}/api", self.addr)
    }

    /// Stops accepting, lets in-flight requests finish, joins the thread.
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for RunningRest {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// The runtime the server runs on: `workers` async threads and a blocking
/// pool for the writes.
pub fn runtime(workers: usize) -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers.max(1))
        .max_blocking_threads(64)
        .thread_name("appview-rest")
        .enable_all()
        .build()
}

/// Serves `app` until `shutdown` resolves (the CLI's; call inside a
/// runtime). Returns the bound address through `bound` once listening.
pub async fn serve(
    app: Arc<AppView>,
    config: RestConfig,
    bound: impl FnOnce(SocketAddr),
    shutdown: impl std::future::Future<Output = ()>,
) -> std::io::Result<()> {
    let listener = server::bind(config.listen).await?;
    bound(listener.local_addr()?);
    server::serve(app, config, listener, shutdown).await;
    Ok(())
}

/// Starts serving `app` on a thread of its own with a runtime of its own.
pub fn spawn(app: Arc<AppView>, config: RestConfig) -> std::io::Result<RunningRest> {
    let rt = runtime(config.workers)?;
    let listener = rt.block_on(server::bind(config.listen))?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("appview-rest".into())
        .spawn(move || {
            rt.block_on(server::serve(app, config, listener, async {
                let _ = stopped.await;
            }));
        })?;
    Ok(RunningRest {
        addr,
        stop: Some(stop),
        thread: Some(thread),
    })
}
