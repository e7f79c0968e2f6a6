//! `xrpc.websocket_churn/ours/cohort-<limit>`: one iteration opens a
//! cohort of `subscribeRepos` connections up to the server's connection
//! limit (its default, [`xrpc::ServerConfig::max_subscribers`]), waits until
//! the server counts all of them, closes them (WebSocket close handshake)
//! and waits until it counts none.
//!
//! Checked and printed outside the timing: a cold round first (one more
//! connection past the limit is refused), then Criterion's warm rounds;
//! after each, the process's thread count returns to its baseline (taken
//! before the cold round, the clients' runtime already running, once the
//! count has stopped changing: the server's startup threads gone) and its
//! resident set (after `malloc_trim`) grows by no more than [`RSS_BOUND`]. The server runs in
//! this process, so these are its threads and memory (plus the
//! clients', which are steady).

use std::time::{Duration, Instant};

use benches::target::BenchTarget;
use criterion::{SamplingMode, Throughput};
use futures_util::StreamExt;

use crate::seed;

/// How much the resident set may grow over the baseline after a round.
const RSS_BOUND: u64 = 64 << 20;

fn status_field(name: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

fn threads() -> u64 {
    status_field("Threads:").unwrap_or(0)
}

/// Resident bytes, after handing the allocator's free pages back to the
/// system (glibc keeps freed memory in its arenas otherwise, which is
/// retention, not growth).
fn rss_bytes() -> u64 {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory of the allocator.
    unsafe {
        libc::malloc_trim(0);
    }
    status_field("VmRSS:").unwrap_or(0) * 1024
}

struct Churn {
    server: xrpc::RunningServer,
    limit: usize,
    rt: tokio::runtime::Runtime,
}

impl Churn {
    fn url(&self) -> String {
        format!(
            "ws://{}/xrpc/com.atproto.sync.subscribeRepos",
            self.server.addr()
        )
    }

    fn wait_subscribers(&self, n: usize) {
        crate::firehose::wait_subscribers(&self.server, n, Duration::from_micros(500));
    }

    /// One cohort: open `limit`, (optionally check one more is refused),
    /// close them all.
    fn round(&self, check_limit: bool) {
        let url = self.url();
        let streams = self.rt.block_on(async {
            let tasks: Vec<_> = (0..self.limit)
                .map(|_| {
                    let url = url.clone();
                    tokio::spawn(async move {
                        tokio_tungstenite::connect_async(url.as_str())
                            .await
                            .map(|(s, _)| s)
                    })
                })
                .collect();
            let mut streams = Vec::with_capacity(tasks.len());
            for t in tasks {
                streams.push(
                    t.await
                        .expect("connect task")
                        .expect("a subscriber within the limit connects"),
                );
            }
            streams
        });
        self.wait_subscribers(self.limit);
        if check_limit {
            let refused = self.rt.block_on(async {
                match tokio_tungstenite::connect_async(url.as_str()).await {
                    Err(_) => true,
                    // Accepted at the HTTP level: the server must end it at once.
                    Ok((mut s, _)) => matches!(
                        tokio::time::timeout(Duration::from_secs(5), async {
                            loop {
                                match s.next().await {
                                    None | Some(Err(_)) => return true,
                                    Some(Ok(tokio_tungstenite::tungstenite::Message::Close(_))) => {
                                        return true;
                                    }
                                    Some(Ok(_)) => {}
                                }
                            }
                        })
                        .await,
                        Ok(true)
                    ),
                }
            });
            assert!(
                refused,
                "a subscriber past the limit of {} was served",
                self.limit
            );
            assert_eq!(
                self.server.subscribers(),
                self.limit,
                "the server counts past its limit"
            );
        }
        self.rt.block_on(async {
            let tasks: Vec<_> = streams
                .into_iter()
                .map(|mut s| {
                    tokio::spawn(async move {
                        let _ = s.close(None).await;
                        // Read until the server's close answer (or the end).
                        while let Some(Ok(_)) = s.next().await {}
                    })
                })
                .collect();
            for t in tasks {
                let _ = t.await;
            }
        });
        self.wait_subscribers(0);
    }
}

/// How long tokio keeps an idle blocking thread (its default).
const BLOCKING_KEEP_ALIVE: Duration = Duration::from_secs(10);

/// The thread count once it is stable: unchanged for longer than an idle
/// blocking thread lingers (at most 30 s). The server opened its store on
/// its blocking pool (`App::open`) just before; that thread idles on for
/// up to [`BLOCKING_KEEP_ALIVE`], and counted in the baseline it would let
/// a thread left behind by the rounds pass unseen.
fn settled_baseline() -> u64 {
    let start = Instant::now();
    let mut last = threads();
    let mut since = Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(100));
        let n = threads();
        if n != last {
            (last, since) = (n, Instant::now());
        }
        if since.elapsed() > BLOCKING_KEEP_ALIVE + Duration::from_millis(500)
            || start.elapsed() > Duration::from_secs(30)
        {
            return last;
        }
    }
}

/// Waits (up to 15 s, tokio's idle blocking threads linger 10 s) until the
/// thread count is back to `baseline`; returns the count and the wait.
fn settle_threads(baseline: u64) -> (u64, Duration) {
    let start = Instant::now();
    loop {
        let n = threads();
        if n <= baseline || start.elapsed() > Duration::from_secs(15) {
            return (n, start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn check(what: &str, id: &str, threads0: u64, rss0: u64) {
    let (n, waited) = settle_threads(threads0);
    let rss = rss_bytes();
    let growth = rss.saturating_sub(rss0);
    eprintln!(
        "atbench: {id}: after the {what}: {n} threads (baseline {threads0}, settled in {waited:.1?}), RSS {:.1} MiB (baseline {:.1} MiB, growth {:.1} MiB, bound {} MiB)",
        rss as f64 / (1 << 20) as f64,
        rss0 as f64 / (1 << 20) as f64,
        growth as f64 / (1 << 20) as f64,
        RSS_BOUND >> 20
    );
    assert!(
        n <= threads0,
        "{id}: {n} threads after the {what}, baseline {threads0}"
    );
    assert!(
        growth <= RSS_BOUND,
        "{id}: RSS grew by {growth} bytes after the {what}"
    );
}

/// Registers `xrpc.websocket_churn`.
pub fn run(target: &mut BenchTarget, dir: &std::path::Path) {
    let server = seed::spawn(dir, "churn", |_| {});
    let limit = xrpc::ServerConfig::new(dir.join("unused")).max_subscribers;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("churn-client")
        .enable_all()
        .build()
        .expect("client runtime");
    let churn = Churn { server, limit, rt };
    let id = format!("xrpc.websocket_churn/ours/cohort-{limit}");
    let threads0 = settled_baseline();
    let rss0 = rss_bytes();
    churn.round(true);
    check("cold round", &id, threads0, rss0);

    let mut g = target.group("xrpc.websocket_churn");
    g.criterion()
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10);
    g.throughput(Throughput::Elements(limit as u64));
    g.bench("ours", &format!("cohort-{limit}"), |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                churn.round(false);
            }
            start.elapsed()
        })
    });
    g.finish();
    check("warm rounds", &id, threads0, rss0);
}
