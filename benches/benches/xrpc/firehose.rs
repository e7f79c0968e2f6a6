//! `xrpc.firehose/fanout/consumers-{1,10,100}` and
//! `xrpc.firehose/slow_consumer/consumers-10`: WebSocket consumers of
//! `subscribeRepos` (tokio-tungstenite, live, no cursor) while writers
//! commit at a fixed rate over HTTP.
//!
//! One iteration is one `#commit` delivered to every consumer; a batch of
//! `iters` commits is paced at [`RATE`] by [`WRITERS`] writer connections on
//! accounts of their own, and ends when every consumer has received all of
//! them. Each consumer decodes every frame (`repo::firehose::Frame`) and
//! records its lag: the wall clock at receipt minus the frame's `time`,
//! which the store stamps (millisecond precision, truncated) when it
//! sequences the event, so the lag is over-stated by up to 1 ms. The lag
//! percentiles of the measurement batches (the last [`SAMPLES`], Flat
//! sampling) go to the latency sidecar in place of request latencies.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use benches::callers::LatencySummary;
use benches::target::BenchTarget;
use bytes::Bytes;
use criterion::{SamplingMode, Throughput};
use futures_util::StreamExt;
use hdrhistogram::Histogram;
use hyper::StatusCode;
use repo::firehose::Frame;
use tokio_tungstenite::tungstenite::Message;

use crate::client::{Call, Conn};
use crate::seed::{self, Account};

/// Commits per second the writers hold.
pub const RATE: u64 = 1000;
/// Writer connections (each on its own account) sharing the rate.
const WRITERS: usize = 4;
/// Criterion samples per benchmark (Flat sampling: the last calls are the measurement).
const SAMPLES: usize = 10;
/// Commits the slow-consumer comparison needs on each side at least.
const CHECK_COMMITS: u64 = 300;
/// Frames the firehose server's outbox holds per subscriber (one second
/// at [`RATE`]); bytes likewise bounded at 4 MiB.
const OUTBOX_FRAMES: usize = 1000;
const OUTBOX_BYTES: usize = 4 << 20;

fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 600_000_000, 3).unwrap_or_else(|e| panic!("{e}"))
}

/// Milliseconds since the epoch of an RFC 3339 time (`codec::datetime`
/// parses), or `None`.
fn rfc3339_ms(t: &str) -> Option<i64> {
    codec::datetime::parse_rfc3339_micros(t).map(|us| us.div_euclid(1000))
}

/// The seq of an event frame (`None` for an error, `#info` or unknown frame).
fn event_seq(f: &Frame<'_>) -> Option<i64> {
    match f {
        Frame::Commit(e) => Some(e.seq),
        Frame::Sync(e) => Some(e.seq),
        Frame::Identity(e) => Some(e.seq),
        Frame::Account(e) => Some(e.seq),
        _ => None,
    }
}

fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

/// What one consumer saw.
#[derive(Default)]
struct Consumer {
    /// `#commit`s of the writers received.
    received: AtomicU64,
    /// Their lags (µs) since the last take.
    lags: Mutex<Option<Histogram<u64>>>,
    /// The error frame's name, when one came.
    error: Mutex<Option<String>>,
    /// The close code, when the server closed.
    close: Mutex<Option<u16>>,
    /// Read at full speed (a slow consumer, once the server dropped it).
    drain: AtomicBool,
    /// Decoding or transport failures, and events out of order.
    failures: Mutex<Vec<String>>,
}

impl Consumer {
    fn take_lags(&self) -> Histogram<u64> {
        self.lags
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .replace(new_histogram())
            .unwrap_or_else(new_histogram)
    }
}

/// Connects a consumer; `slow` reads one frame per `slow` interval
/// through a small receive buffer, so the server's outbox is what fills.
async fn consume(
    url: String,
    writers: Arc<Vec<String>>,
    state: Arc<Consumer>,
    slow: Option<Duration>,
) {
    let addr: SocketAddr = url
        .trim_start_matches("ws://")
        .split('/')
        .next()
        .and_then(|a| a.parse().ok())
        .expect("a loopback address");
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    if slow.is_some() {
        socket.set_recv_buffer_size(4096).expect("SO_RCVBUF");
    }
    let stream = socket.connect(addr).await.expect("connect");
    let (mut ws, _) = tokio_tungstenite::client_async(url.as_str(), stream)
        .await
        .expect("WebSocket handshake");
    *state.lags.lock().unwrap_or_else(|p| p.into_inner()) = Some(new_histogram());
    // The seq of the last event received: the writers' commits must each
    // follow it directly (no gap, no duplicate, no reordering).
    let mut prev: Option<i64> = None;
    while let Some(msg) = ws.next().await {
        let msg = match msg {
            Ok(m) => m,
            Err(e) => {
                state
                    .failures
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(e.to_string());
                break;
            }
        };
        match msg {
            Message::Binary(bytes) => match Frame::decode(&bytes) {
                Ok(Frame::Commit(c)) if writers.iter().any(|w| w == c.repo) => {
                    if let Some(p) = prev
                        && c.seq != p + 1
                    {
                        state
                            .failures
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .push(format!("#commit seq {} after seq {p}", c.seq));
                    }
                    prev = Some(c.seq);
                    if let Some(t) = rfc3339_ms(c.time) {
                        let lag = (now_us() - t * 1000).max(1) as u64;
                        if let Some(h) = state
                            .lags
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .as_mut()
                        {
                            h.saturating_record(lag);
                        }
                    }
                    state.received.fetch_add(1, Ordering::Release);
                }
                Ok(Frame::Error(e)) => {
                    *state.error.lock().unwrap_or_else(|p| p.into_inner()) =
                        Some(e.error.to_owned());
                }
                Ok(other) => {
                    if let Some(seq) = event_seq(&other) {
                        prev = Some(seq);
                    }
                }
                Err(e) => state
                    .failures
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(format!("frame: {e}")),
            },
            Message::Close(frame) => {
                *state.close.lock().unwrap_or_else(|p| p.into_inner()) =
                    frame.map(|f| u16::from(f.code));
                break;
            }
            _ => {}
        }
        if let Some(pause) = slow
            && !state.drain.load(Ordering::Acquire)
        {
            tokio::time::sleep(pause).await;
        }
    }
}

/// The firehose server, its writer accounts and connections, and the
/// consumers' runtime.
pub struct Hub {
    server: xrpc::RunningServer,
    writers: Arc<Vec<String>>,
    conns: Vec<Mutex<(Conn, Call, String, u64)>>,
    rt: tokio::runtime::Runtime,
}

impl Hub {
    pub fn build(dir: &std::path::Path) -> Hub {
        let server = seed::spawn(dir, "firehose", |c| {
            c.outbox_frames = OUTBOX_FRAMES;
            c.outbox_bytes = OUTBOX_BYTES;
        });
        let accounts: Vec<Account> = seed::accounts(server.addr(), "fh", WRITERS);
        let conns = accounts
            .iter()
            .map(|a| {
                let call = Call::post("/xrpc/com.atproto.repo.createRecord").bearer(&a.access);
                Mutex::new((Conn::open(server.addr()), call, a.did.clone(), 0))
            })
            .collect();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("fh-consumer")
            .enable_all()
            .build()
            .expect("consumer runtime");
        Hub {
            writers: Arc::new(accounts.into_iter().map(|a| a.did).collect()),
            server,
            conns,
            rt,
        }
    }

    fn ws_url(&self) -> String {
        format!(
            "ws://{}/xrpc/com.atproto.sync.subscribeRepos",
            self.server.addr()
        )
    }

    /// Commits `n` records at [`RATE`] across the writer connections.
    fn write(&self, n: u64) {
        let start = Instant::now();
        std::thread::scope(|s| {
            for (w, conn) in self.conns.iter().enumerate() {
                s.spawn(move || {
                    let mut guard = conn.lock().unwrap_or_else(|p| p.into_inner());
                    let (conn, call, did, counter) = &mut *guard;
                    let mut k = w as u64;
                    while k < n {
                        let due = start + Duration::from_micros(k * 1_000_000 / RATE);
                        if let Some(wait) = due.checked_duration_since(Instant::now()) {
                            std::thread::sleep(wait);
                        }
                        *counter += 1;
                        let body = format!(
                            r#"{{"repo":"{did}","collection":"app.bsky.feed.post","record":{{"$type":"app.bsky.feed.post","text":"firehose {counter}","createdAt":"2026-01-01T00:00:00.000Z"}}}}"#
                        );
                        let (status, answer) = conn.send(call, Bytes::from(body));
                        assert_eq!(status, StatusCode::OK, "createRecord: {}", String::from_utf8_lossy(&answer));
                        k += WRITERS as u64;
                    }
                });
            }
        });
    }

    /// Connects consumers and waits until the server counts them.
    fn connect(
        &self,
        n: usize,
        slow: Option<Duration>,
    ) -> Vec<(Arc<Consumer>, tokio::task::JoinHandle<()>)> {
        let before = self.server.subscribers();
        let out: Vec<_> = (0..n)
            .map(|_| {
                let state = Arc::new(Consumer::default());
                let task = self.rt.spawn(consume(
                    self.ws_url(),
                    self.writers.clone(),
                    state.clone(),
                    slow,
                ));
                (state, task)
            })
            .collect();
        self.wait_subscribers(before + n);
        out
    }

    fn wait_subscribers(&self, n: usize) {
        wait_subscribers(&self.server, n, Duration::from_millis(5));
    }

    fn close(
        &self,
        consumers: Vec<(Arc<Consumer>, tokio::task::JoinHandle<()>)>,
        remaining: usize,
    ) {
        for (_, task) in consumers {
            task.abort();
        }
        self.wait_subscribers(remaining);
    }
}

/// Waits until every consumer has `target[i]` commits.
fn wait_delivered(consumers: &[(Arc<Consumer>, tokio::task::JoinHandle<()>)], target: &[u64]) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if consumers
            .iter()
            .zip(target)
            .all(|((c, _), t)| c.received.load(Ordering::Acquire) >= *t)
        {
            return;
        }
        for (c, _) in consumers {
            let failures = c.failures.lock().unwrap_or_else(|p| p.into_inner());
            assert!(failures.is_empty(), "a consumer failed: {failures:?}");
            let error = c.error.lock().unwrap_or_else(|p| p.into_inner());
            assert!(error.is_none(), "a consumer got error frame {error:?}");
        }
        assert!(
            Instant::now() < deadline,
            "consumers did not receive every commit within 60 s"
        );
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Waits until `server` counts `n` WebSocket subscribers, polling every
/// `poll`; panics after 30 s (a bench whose consumers never connect has
/// nothing to measure).
pub(crate) fn wait_subscribers(server: &xrpc::RunningServer, n: usize, poll: Duration) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.subscribers() != n {
        assert!(
            Instant::now() < deadline,
            "the server counts {} subscribers, expected {n}",
            server.subscribers()
        );
        std::thread::sleep(poll);
    }
}

/// Commits `iters` records at the rate and waits until every consumer has
/// them: their merged lags, the wall time and the process's CPU time.
fn run_batch(
    hub: &Hub,
    consumers: &[Subscriber],
    iters: u64,
) -> (Histogram<u64>, Duration, Duration) {
    let target: Vec<u64> = consumers
        .iter()
        .map(|(c, _)| c.received.load(Ordering::Acquire) + iters)
        .collect();
    for (c, _) in consumers {
        c.take_lags();
    }
    let cpu = benches::callers::process_cpu();
    let start = Instant::now();
    hub.write(iters);
    wait_delivered(consumers, &target);
    let wall = start.elapsed();
    let cpu = benches::callers::process_cpu().saturating_sub(cpu);
    let mut merged = new_histogram();
    for (c, _) in consumers {
        let _ = merged.add(c.take_lags());
    }
    (merged, wall, cpu)
}

/// The lag p95 (ns) of a merged histogram (µs).
fn p95_ns(lags: &Histogram<u64>) -> u64 {
    lags.value_at_quantile(0.95) * 1000
}

/// The lag p95 (ns) of the consumers over at least [`CHECK_COMMITS`]
/// commits, counting only batches at whose end `attached()` held: those
/// of `fanout`'s measurement when it measured as many (a Criterion run),
/// else those and an untimed batch (a `--test` run measures one commit).
fn checked_p95(
    hub: &Hub,
    consumers: &[Subscriber],
    fanout: &Fanout,
    attached: &dyn Fn() -> bool,
) -> u64 {
    if fanout.attached_commits >= CHECK_COMMITS {
        return p95_ns(&fanout.attached_lags);
    }
    let id = &fanout.summary.id;
    assert!(
        attached(),
        "{id}: only {} commits were measured while the slow consumer was attached, and it no longer is",
        fanout.attached_commits
    );
    let (lags, ..) = run_batch(hub, consumers, CHECK_COMMITS);
    assert!(
        attached(),
        "{id}: the slow consumer was dropped during the untimed batch of {CHECK_COMMITS} commits"
    );
    let mut merged = fanout.attached_lags.clone();
    let _ = merged.add(lags);
    p95_ns(&merged)
}

/// A connected consumer and its task.
type Subscriber = (Arc<Consumer>, tokio::task::JoinHandle<()>);

/// One batch: the merged lag histogram, its wall and CPU time, its
/// commits, and whether `attached()` held at its end.
type Batch = (Histogram<u64>, Duration, Duration, u64, bool);

/// A fan-out benchmark's measurement.
struct Fanout {
    /// Over every measurement batch.
    summary: LatencySummary,
    /// The merged lags of the measurement batches at whose end
    /// `attached()` held.
    attached_lags: Histogram<u64>,
    /// Their commits.
    attached_commits: u64,
}

/// Runs one fan-out benchmark over `consumers` (already connected);
/// returns the lag summary of the measurement batches and the lags of
/// those at whose end `attached()` held (the slow consumer was still
/// there), or `None` when Criterion did not run it (filtered out, listed).
fn bench_fanout(
    g: &mut benches::Group<'_>,
    hub: &Hub,
    implementation: &str,
    consumers: &[(Arc<Consumer>, tokio::task::JoinHandle<()>)],
    attached: &dyn Fn() -> bool,
) -> Option<Fanout> {
    let id = g.id(implementation, &format!("consumers-{}", consumers.len()));
    let batches: Mutex<VecDeque<Batch>> = Mutex::new(VecDeque::new());
    g.bench(
        implementation,
        &format!("consumers-{}", consumers.len()),
        |b| {
            b.iter_custom(|iters| {
                let (merged, wall, cpu) = run_batch(hub, consumers, iters);
                let still = attached();
                let mut batches = batches.lock().unwrap_or_else(|p| p.into_inner());
                batches.push_back((merged, wall, cpu, iters, still));
                if batches.len() > SAMPLES {
                    batches.pop_front();
                }
                wall
            })
        },
    );
    let batches = batches.into_inner().unwrap_or_else(|p| p.into_inner());
    if batches.is_empty() {
        return None;
    }
    let mut lags = new_histogram();
    let mut attached_lags = new_histogram();
    let (mut wall, mut cpu, mut commits, mut attached_commits) =
        (Duration::ZERO, Duration::ZERO, 0u64, 0u64);
    for (h, w, c, n, still) in &batches {
        let _ = lags.add(h);
        if *still {
            let _ = attached_lags.add(h);
            attached_commits += n;
        }
        wall += *w;
        cpu += *c;
        commits += n;
    }
    let summary = LatencySummary {
        id: id.clone(),
        callers: consumers.len(),
        ops: commits,
        ops_per_sec: commits as f64 / wall.as_secs_f64().max(1e-9),
        mean_ns: lags.mean() * 1000.0,
        p50_ns: lags.value_at_quantile(0.50) * 1000,
        p95_ns: lags.value_at_quantile(0.95) * 1000,
        p99_ns: lags.value_at_quantile(0.99) * 1000,
        max_ns: lags.max() * 1000,
        cpu_ns_per_op: Some(cpu.as_nanos() as f64 / commits.max(1) as f64),
        machine_cpu_ns_per_op: None,
    };
    eprintln!(
        "atbench: {id}: {:.0} commits/s delivered to each of {} consumers (set by the writers' {RATE}/s pacing, not a capacity: the lag and the CPU per commit are the informative figures), lag p50 {:.1} ms, p95 {:.1} ms, p99 {:.1} ms, max {:.1} ms; process CPU {:.0} µs per commit",
        summary.ops_per_sec,
        consumers.len(),
        summary.p50_ns as f64 / 1e6,
        summary.p95_ns as f64 / 1e6,
        summary.p99_ns as f64 / 1e6,
        summary.max_ns as f64 / 1e6,
        summary.cpu_ns_per_op.unwrap_or_default() / 1000.0
    );
    if !benches::config::is_smoke() && commits > 0 {
        match serde_json::to_value(&summary) {
            Ok(v) => benches::sidecar::write("latency", &benches::sidecar::file_stem(&id), &v),
            Err(e) => eprintln!("atbench: {id}: {e}"),
        }
    }
    Some(Fanout {
        summary,
        attached_lags,
        attached_commits,
    })
}

/// Registers `xrpc.firehose`.
pub fn run(target: &mut BenchTarget, dir: &std::path::Path) {
    // The lag's time parser on two known instants.
    assert_eq!(rfc3339_ms("1970-01-01T00:00:00.000Z"), Some(0));
    assert_eq!(
        rfc3339_ms("2024-06-01T00:00:00.123Z"),
        Some(1_717_200_000_123)
    );
    let hub = Hub::build(dir);
    let mut g = target.group("xrpc.firehose");
    g.criterion()
        .sampling_mode(SamplingMode::Flat)
        .sample_size(SAMPLES);
    g.throughput(Throughput::Elements(1));
    let mut p95_of_10 = None;
    for n in [1usize, 10, 100] {
        let consumers = hub.connect(n, None);
        let f = bench_fanout(&mut g, &hub, "fanout", &consumers, &|| true);
        if n == 10 {
            p95_of_10 = f.map(|f| checked_p95(&hub, &consumers, &f, &|| true));
        }
        hub.close(consumers, 0);
    }

    // The same ten, beside one consumer reading at a tenth of the rate.
    let consumers = hub.connect(10, None);
    // The comparison's base: fanout/consumers-10's lag, or when that row
    // was filtered out, that of an untimed batch of the ten alone.
    let base = p95_of_10.unwrap_or_else(|| p95_ns(&run_batch(&hub, &consumers, CHECK_COMMITS).0));
    let slow = hub.connect(1, Some(Duration::from_micros(1_000_000 * 10 / RATE)));
    // Attached until the server drops it (once its outbox is full, about
    // a thousand commits in): only batches that ended before count.
    let drops = hub.server.too_slow_drops();
    let attached = || hub.server.too_slow_drops() == drops;
    let Some(f) = bench_fanout(&mut g, &hub, "slow_consumer", &consumers, &attached) else {
        hub.close(consumers, 1);
        hub.close(slow, 0);
        g.finish();
        return;
    };
    let slow_p95 = checked_p95(&hub, &consumers, &f, &attached);
    // Outside the timing: keep writing until the server drops the slow one.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut extra = 0u64;
    while hub.server.subscribers() > consumers.len() {
        assert!(
            Instant::now() < deadline,
            "the slow consumer was not dropped within 60 s"
        );
        let target: Vec<u64> = consumers
            .iter()
            .map(|(c, _)| c.received.load(Ordering::Acquire) + RATE / 10)
            .collect();
        hub.write(RATE / 10);
        wait_delivered(&consumers, &target);
        extra += RATE / 10;
    }
    let (slow_state, slow_task) = &slow[0];
    slow_state.drain.store(true, Ordering::Release);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !slow_task.is_finished() {
        assert!(
            Instant::now() < deadline,
            "the slow consumer's connection did not end"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let error = slow_state
        .error
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let close = *slow_state.close.lock().unwrap_or_else(|p| p.into_inner());
    assert_eq!(
        error.as_deref(),
        Some("ConsumerTooSlow"),
        "the slow consumer's error frame"
    );
    assert_eq!(close, Some(1008), "the slow consumer's close code");
    let received = consumers[0].0.received.load(Ordering::Acquire);
    for (c, _) in &consumers {
        assert_eq!(
            c.received.load(Ordering::Acquire),
            received,
            "a fast consumer missed commits"
        );
        assert!(c.error.lock().unwrap_or_else(|p| p.into_inner()).is_none());
    }
    // Within 2x of the run without it; 2 ms of slack for the events'
    // millisecond timestamps.
    assert!(
        slow_p95 <= 2 * base + 2_000_000,
        "xrpc.firehose/slow_consumer/consumers-10: lag p95 {slow_p95} ns against {base} ns without the slow consumer"
    );
    eprintln!(
        "atbench: xrpc.firehose/slow_consumer/consumers-10: the slow consumer got ConsumerTooSlow and close 1008 after {} commits ({extra} written after the measurement); the other 10 received all {received}, lag p95 {:.1} ms against {:.1} ms without it",
        slow_state.received.load(Ordering::Acquire),
        slow_p95 as f64 / 1e6,
        base as f64 / 1e6
    );
    hub.close(consumers, 0);
    g.finish();
    drop(hub);
}
