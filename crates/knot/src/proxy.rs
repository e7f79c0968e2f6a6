//! An in-process TCP proxy that adds round-trip time, and counts what
//! crosses it (`docs/design/knot.md`, "Latency": `tc netem` is not available).
//!
//! Each chunk read from one side is stamped on arrival and written to the
//! other side `rtt / 2` later: chunks in flight overlap, so throughput is
//! not divided by a sleep per chunk. A new connection's first bytes reach
//! the server no earlier than one RTT after the accept plus the usual
//! half: the connection costs one round trip, as a TCP handshake does.
//!
//! Counts (per [`Stats`], reset with [`LatencyProxy::take`]):
//! - `connects`: connections accepted;
//! - `requests`: client-to-server bursts: a burst starts when the client
//!   sends on a connection that is not already waiting for an answer (one
//!   HTTP/1.1 request, its body included; no pipelining);
//! - `round_trips`: bursts that began while no other connection was
//!   waiting: requests sent together (concurrent uploads) share one round
//!   trip, requests sent one after the other count one each. The connect
//!   of a new connection is counted in `connects`, not here.
//!
//! Memory: each direction holds at most [`QUEUE_CHUNKS`] chunks of at most
//! [`CHUNK`] bytes in flight.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Largest chunk read at once.
pub const CHUNK: usize = 64 << 10;
/// Chunks in flight per direction of a connection.
pub const QUEUE_CHUNKS: usize = 256;

/// What crossed the proxy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Connections accepted.
    pub connects: u64,
    /// Requests (client bursts).
    pub requests: u64,
    /// Round trips (bursts not overlapping another connection's wait).
    pub round_trips: u64,
    /// Client-to-server bytes.
    pub bytes_up: u64,
    /// Server-to-client bytes.
    pub bytes_down: u64,
}

#[derive(Default)]
struct Counters {
    connects: AtomicU64,
    requests: AtomicU64,
    round_trips: AtomicU64,
    bytes_up: AtomicU64,
    bytes_down: AtomicU64,
    /// Connections waiting for an answer.
    waiting: Mutex<u64>,
}

/// A running proxy (stopped when dropped).
pub struct LatencyProxy {
    addr: SocketAddr,
    counters: Arc<Counters>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl LatencyProxy {
    /// Starts a proxy on a free loopback port forwarding to `upstream`
    /// with round-trip time `rtt`, on a thread and runtime of its own.
    pub fn start(upstream: SocketAddr, rtt: Duration) -> std::io::Result<LatencyProxy> {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let counters = Arc::new(Counters::default());
        let (stop_tx, mut stop_rx) = tokio::sync::oneshot::channel::<()>();
        let c = counters.clone();
        let thread = std::thread::Builder::new()
            .name("latency-proxy".into())
            .spawn(move || {
                let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                else {
                    return;
                };
                rt.block_on(async move {
                    let Ok(listener) = TcpListener::from_std(std_listener) else {
                        return;
                    };
                    loop {
                        tokio::select! {
                            _ = &mut stop_rx => break,
                            acc = listener.accept() => {
                                let Ok((client, _)) = acc else { continue };
                                c.connects.fetch_add(1, Ordering::Relaxed);
                                let c = c.clone();
                                tokio::spawn(async move {
                                    let accepted = Instant::now();
                                    if let Ok(server) = TcpStream::connect(upstream).await {
                                        let _ = client.set_nodelay(true);
                                        let _ = server.set_nodelay(true);
                                        relay(client, server, rtt, accepted, c).await;
                                    }
                                });
                            }
                        }
                    }
                });
            })?;
        Ok(LatencyProxy {
            addr,
            counters,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }

    /// The address clients connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<addr>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The counts so far.
    pub fn stats(&self) -> Stats {
        let c = &self.counters;
        Stats {
            connects: c.connects.load(Ordering::Relaxed),
            requests: c.requests.load(Ordering::Relaxed),
            round_trips: c.round_trips.load(Ordering::Relaxed),
            bytes_up: c.bytes_up.load(Ordering::Relaxed),
            bytes_down: c.bytes_down.load(Ordering::Relaxed),
        }
    }

    /// The counts so far, and zero them (one operation's counts).
    pub fn take(&self) -> Stats {
        let c = &self.counters;
        Stats {
            connects: c.connects.swap(0, Ordering::Relaxed),
            requests: c.requests.swap(0, Ordering::Relaxed),
            round_trips: c.round_trips.swap(0, Ordering::Relaxed),
            bytes_up: c.bytes_up.swap(0, Ordering::Relaxed),
            bytes_down: c.bytes_down.swap(0, Ordering::Relaxed),
        }
    }
}

impl Drop for LatencyProxy {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// This connection's wait state, shared by its two directions.
struct Conn {
    waiting: Mutex<bool>,
    counters: Arc<Counters>,
}

impl Conn {
    fn client_sent(&self) {
        let mut w = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        if !*w {
            *w = true;
            self.counters.requests.fetch_add(1, Ordering::Relaxed);
            let mut all = self
                .counters
                .waiting
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if *all == 0 {
                self.counters.round_trips.fetch_add(1, Ordering::Relaxed);
            }
            *all += 1;
        }
    }

    fn server_sent(&self) {
        let mut w = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        if *w {
            *w = false;
            let mut all = self
                .counters
                .waiting
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            *all = all.saturating_sub(1);
        }
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.server_sent();
    }
}

async fn relay(
    client: TcpStream,
    server: TcpStream,
    rtt: Duration,
    accepted: Instant,
    counters: Arc<Counters>,
) {
    let conn = Arc::new(Conn {
        waiting: Mutex::new(false),
        counters,
    });
    let (cr, cw) = client.into_split();
    let (sr, sw) = server.into_split();
    let half = rtt / 2;
    // The first bytes of a connection wait out the handshake's round trip.
    let up = pipe(cr, sw, half, Some(accepted + rtt), conn.clone(), true);
    let down = pipe(sr, cw, half, None, conn.clone(), false);
    let _ = tokio::join!(up, down);
}

async fn pipe(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    delay: Duration,
    not_before: Option<Instant>,
    conn: Arc<Conn>,
    upstream: bool,
) {
    let (tx, mut rx) = mpsc::channel::<(Instant, Vec<u8>)>(QUEUE_CHUNKS);
    let reader = async move {
        let mut buf = vec![0u8; CHUNK];
        loop {
            let n = match from.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let now = Instant::now();
            let at = not_before.map_or(now, |nb| nb.max(now)) + delay;
            if upstream {
                conn.client_sent();
                conn.counters
                    .bytes_up
                    .fetch_add(n as u64, Ordering::Relaxed);
            } else {
                conn.server_sent();
                conn.counters
                    .bytes_down
                    .fetch_add(n as u64, Ordering::Relaxed);
            }
            if tx.send((at, buf[..n].to_vec())).await.is_err() {
                break;
            }
        }
    };
    let writer = async move {
        while let Some((at, chunk)) = rx.recv().await {
            tokio::time::sleep_until(at).await;
            if to.write_all(&chunk).await.is_err() {
                break;
            }
        }
        let _ = to.shutdown().await;
    };
    tokio::join!(reader, writer);
}
