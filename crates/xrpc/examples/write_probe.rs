//! A probe of what one createRecord costs: `http` sends N createRecord
//! calls through an in-process server (C keep-alive connections, one
//! thread each, an account per connection), `store` makes the same N
//! commits with `Store::create_record` from C threads. Each prints the
//! process CPU, the context switches and the CPU of each thread group per
//! write, so the two can be compared, and both run unchanged under
//! `valgrind --tool=callgrind` (instruction counts per write: difference
//! of two runs with different N).
//!
//! `cargo run --release -p xrpc --example write_probe -- http|store N C`

use std::collections::BTreeMap;
use std::time::Instant;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;

const POST: &str = "app.bsky.feed.post";

fn record(caller: usize, n: u64) -> String {
    format!(
        r#"{{"$type":"app.bsky.feed.post","text":"probe post of caller {caller}, number {n}, with some words in it","langs":["en"],"createdAt":"2026-12-04T16:00:00.000Z"}}"#
    )
}

struct Conn {
    rt: tokio::runtime::Runtime,
    sender: SendRequest<Full<Bytes>>,
}

impl Conn {
    fn open(addr: std::net::SocketAddr) -> Conn {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let sender = rt.block_on(async {
            let s = tokio::net::TcpStream::connect(addr).await.expect("connect");
            s.set_nodelay(true).expect("nodelay");
            let (sender, conn) = http1::handshake(TokioIo::new(s)).await.expect("handshake");
            tokio::spawn(async move {
                let _ = conn.await;
            });
            sender
        });
        Conn { rt, sender }
    }

    fn post(&mut self, path: &str, token: Option<&str>, body: String) -> (u16, Bytes) {
        let mut b = Request::builder()
            .method(Method::POST)
            .uri(path)
            .header("host", "127.0.0.1")
            .header("content-type", "application/json");
        if let Some(t) = token {
            b = b.header("authorization", format!("Bearer {t}"));
        }
        let req = b.body(Full::new(Bytes::from(body))).expect("request");
        let sender = &mut self.sender;
        self.rt.block_on(async {
            sender.ready().await.expect("ready");
            let resp = sender.send_request(req).await.expect("send");
            let status = resp.status().as_u16();
            let body = resp.into_body().collect().await.expect("body").to_bytes();
            (status, body)
        })
    }
}

#[derive(Default, Clone, Copy)]
struct Usage {
    user_us: i64,
    sys_us: i64,
    vol: i64,
    invol: i64,
}

fn usage() -> Usage {
    // SAFETY: getrusage only writes the struct it is given.
    let mut r: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut r) };
    Usage {
        user_us: r.ru_utime.tv_sec * 1_000_000 + r.ru_utime.tv_usec,
        sys_us: r.ru_stime.tv_sec * 1_000_000 + r.ru_stime.tv_usec,
        vol: r.ru_nvcsw,
        invol: r.ru_nivcsw,
    }
}

/// CPU ticks and voluntary switches of each live thread, grouped by name.
fn threads() -> BTreeMap<String, (u64, u64, usize)> {
    let mut out: BTreeMap<String, (u64, u64, usize)> = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for t in dir.flatten() {
        let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
        let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
        let (Some(a), Some(b)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let name = stat[a + 1..b]
            .trim_end_matches(|c: char| c.is_ascii_digit())
            .to_owned();
        let f: Vec<&str> = stat[b + 2..].split(' ').collect();
        let ticks = f.get(11).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)
            + f.get(12).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        let vol = status
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0);
        let e = out.entry(name).or_default();
        e.0 += ticks;
        e.1 += vol;
        e.2 += 1;
    }
    out
}

fn report(
    mode: &str,
    n: u64,
    callers: usize,
    t: Instant,
    u0: Usage,
    th0: &BTreeMap<String, (u64, u64, usize)>,
) {
    let wall = t.elapsed();
    let u1 = usage();
    let writes = (n as usize * callers) as f64;
    println!(
        "{mode}: {} writes by {callers} callers in {wall:.2?}: {:.0} writes/s; per write: cpu {:.1} us (user {:.1}, sys {:.1}), voluntary switches {:.2}, involuntary {:.2}",
        writes,
        writes / wall.as_secs_f64(),
        ((u1.user_us - u0.user_us) + (u1.sys_us - u0.sys_us)) as f64 / writes,
        (u1.user_us - u0.user_us) as f64 / writes,
        (u1.sys_us - u0.sys_us) as f64 / writes,
        (u1.vol - u0.vol) as f64 / writes,
        (u1.invol - u0.invol) as f64 / writes,
    );
    let tick_us = 1e6 / 100.0;
    let mut live_us = 0.0;
    for (name, (ticks, vol, count)) in threads() {
        live_us += (ticks.saturating_sub(th0.get(&name).map_or(0, |t| t.0))) as f64 * tick_us;
        let (t0, v0, _) = th0.get(&name).copied().unwrap_or_default();
        println!(
            "  threads {name:<16} x{count:<3} cpu/write {:>7.1} us  voluntary switches/write {:.2}",
            (ticks.saturating_sub(t0)) as f64 * tick_us / writes,
            (vol.saturating_sub(v0)) as f64 / writes
        );
    }
    let total_us = ((u1.user_us - u0.user_us) + (u1.sys_us - u0.sys_us)) as f64;
    println!(
        "  threads exited (the callers)  cpu/write {:>7.1} us",
        (total_us - live_us) / writes
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map(String::as_str).unwrap_or("http").to_owned();
    let n: u64 = args.get(2).and_then(|v| v.parse().ok()).unwrap_or(2000);
    let callers: usize = args.get(3).and_then(|v| v.parse().ok()).unwrap_or(1);
    let dir = tempfile::tempdir().expect("tempdir");
    let warm = 50u64;
    match mode.as_str() {
        "store" => {
            let store = store::Store::open(dir.path().join("s.sqlite"), store::Config::default())
                .expect("open");
            let dids: Vec<String> = (0..callers)
                .map(|c| format!("did:plc:probe{c:019}"))
                .collect();
            for (c, did) in dids.iter().enumerate() {
                let key = repo::crypto::Keypair::from_bytes(
                    repo::crypto::Algorithm::K256,
                    &[c as u8 + 1; 32],
                )
                .expect("key");
                store.create_account(did, &key).expect("account");
            }
            let run = |from: u64, to: u64| {
                std::thread::scope(|s| {
                    for (c, did) in dids.iter().enumerate() {
                        let store = &store;
                        s.spawn(move || {
                            for i in from..to {
                                let v: serde_json::Value =
                                    serde_json::from_str(&record(c, i)).expect("json");
                                let body = repo::cbor::to_vec(
                                    &repo::cbor::json::from_json_value(&v).expect("cbor"),
                                );
                                store
                                    .create_record(did, POST, None, body, None)
                                    .expect("write");
                            }
                        });
                    }
                });
            };
            run(0, warm);
            let (t, u0, th0) = (Instant::now(), usage(), threads());
            run(warm, warm + n);
            report("store", n, callers, t, u0, &th0);
        }
        _ => {
            let mut config = xrpc::ServerConfig::new(dir.path().join("pds.sqlite"));
            config.listen = "127.0.0.1:0".parse().expect("addr");
            config.scrypt_log_n = 4;
            let server = xrpc::spawn(config).expect("spawn");
            let addr = server.addr();
            let mut accounts = Vec::new();
            for c in 0..callers {
                let mut conn = Conn::open(addr);
                let (status, body) = conn.post(
                    "/xrpc/com.atproto.server.createAccount",
                    None,
                    format!(r#"{{"handle":"probe{c}.test","password":"pw-probe","email":"p{c}@example.com"}}"#),
                );
                assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
                let v: serde_json::Value = serde_json::from_slice(&body).expect("json");
                accounts.push((
                    v["did"].as_str().expect("did").to_owned(),
                    v["accessJwt"].as_str().expect("jwt").to_owned(),
                ));
            }
            let mut conns: Vec<Conn> = (0..callers).map(|_| Conn::open(addr)).collect();
            let mut run = |from: u64, to: u64| {
                std::thread::scope(|s| {
                    for (c, (conn, (did, jwt))) in conns.iter_mut().zip(&accounts).enumerate() {
                        std::thread::Builder::new()
                            .name(format!("client{c}"))
                            .spawn_scoped(s, move || {
                                for i in from..to {
                                    let body = format!(
                                        r#"{{"repo":"{did}","collection":"{POST}","record":{}}}"#,
                                        record(c, i)
                                    );
                                    let (status, answer) = conn.post(
                                        "/xrpc/com.atproto.repo.createRecord",
                                        Some(jwt),
                                        body,
                                    );
                                    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
                                }
                            })
                            .expect("thread");
                    }
                });
            };
            run(0, warm);
            let (t, u0, th0) = (Instant::now(), usage(), threads());
            run(warm, warm + n);
            report("http", n, callers, t, u0, &th0);
            drop(conns);
            server.shutdown();
        }
    }
}
