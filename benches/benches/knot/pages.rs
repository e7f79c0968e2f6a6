//! `knot.page`, `knot.card`, `knot.page_load`: knot-serve (issue 39 item
//! 5, the page rows) over a generated repository made with real git: 60
//! commits, a README, nested directories and a 40 KiB Rust source file.
//!
//! - `knot.page/ours.warm/<kind>`: [`App::handle`] of one page path, with
//!   the highlight and README caches filled and the mirror opened;
//! - `knot.page/ours.cold/<kind>`: the same path after [`App::reopen`]
//!   (a freshly opened mirror: pack indexes and refs not read; caches
//!   empty) outside the timing; the syntax set stays loaded;
//! - `knot.card/ours.first/<kind>` (caches cleared outside the timing:
//!   the card is drawn and encoded) and `ours.cached/<kind>`;
//! - `knot.page_load/ours/conns-N`: the server over loopback, N kept-alive
//!   HTTP/1.1 connections from a client runtime in this process, each
//!   sending its share of a batch of requests that rotates through the
//!   warm page kinds; p50/p99 latency of each request goes to the context
//!   (`knot_page_load`) and stderr.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use benches::target::BenchTarget;
use bytes::Bytes;
use criterion::Throughput;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use knot_serve::server::{self, ServerConfig};
use knot_serve::{App, Limits};

pub const GROUPS: [&str; 3] = ["knot.page", "knot.card", "knot.page_load"];

/// Requests in one `knot.page_load` iteration.
const BATCH: u64 = 600;

fn git(dir: &Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .env("GIT_AUTHOR_NAME", "Bench Author")
        .env("GIT_AUTHOR_EMAIL", "bench@example.com")
        .env("GIT_COMMITTER_NAME", "Bench Author")
        .env("GIT_COMMITTER_EMAIL", "bench@example.com")
        .env("GIT_AUTHOR_DATE", "2026-12-01T10:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-12-01T10:00:00Z")
        .env_remove("GIT_DIR")
        .output()
        .expect("git runs");
    assert!(
        o.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).trim().to_owned()
}

/// Deterministic Rust of at least `bytes` bytes (whole items): structs,
/// impls, matches, strings, numbers and comments, so every highlighting
/// rule of the syntax is exercised.
pub fn rust_source(bytes: usize) -> String {
    let mut s = String::from(
        "//! Generated for the knot.page bench: a 40 KiB source file.\n\nuse std::collections::HashMap;\n\n",
    );
    let mut i = 0u32;
    while s.len() < bytes {
        s.push_str(&format!(
            "/// Item {i}: a record with a name and a weight.\n\
             #[derive(Debug, Clone, PartialEq)]\n\
             pub struct Item{i} {{\n    pub name: String,\n    pub weight: u64,\n    tags: Vec<&'static str>,\n}}\n\n\
             impl Item{i} {{\n    pub fn new(name: &str) -> Self {{\n        // Weights grow with the index.\n        \
             Item{i} {{ name: name.to_owned(), weight: {w}, tags: vec![\"a{i}\", \"b\"] }}\n    }}\n\n    \
             pub fn score(&self, m: &HashMap<String, u64>) -> Option<u64> {{\n        match m.get(&self.name) {{\n            \
             Some(v) if *v > {i} => Some(v * 2 + self.weight),\n            Some(_) => None,\n            \
             None => Some(0x{i:x}),\n        }}\n    }}\n}}\n\n",
            w = u64::from(i) * 37 % 1000
        ));
        i += 1;
    }
    s
}

/// The generated repository's bare mirror, and its commits (oldest first).
fn make_repo(root: &Path) -> (PathBuf, Vec<String>) {
    let work = root.join("pages-work");
    std::fs::create_dir_all(&work).expect("work dir");
    git(&work, &["init", "-q", "-b", "main"]);
    let w = |rel: &str, content: &str| {
        let p = work.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("dirs");
        std::fs::write(p, content).expect("write");
    };
    let mut readme = String::from("# pages-bench\n\nA generated repository for `knot.page`.\n\n");
    for k in 0..40 {
        readme.push_str(&format!(
            "- item {k}: *emphasis*, `code`, [a link](https://example.com/{k})\n"
        ));
    }
    readme.push_str("\n| a | b |\n|---|---|\n| 1 | 2 |\n");
    w("README.md", &readme);
    w("src/big.rs", &rust_source(40 << 10));
    for d in 0..6 {
        for f in 0..8 {
            w(
                &format!("src/mod{d}/file{f}.rs"),
                &rust_source(1500 + 200 * f),
            );
        }
    }
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "initial import"]);
    let mut commits = vec![git(&work, &["rev-parse", "HEAD"])];
    for c in 1..60 {
        let d = c % 6;
        let f = c % 8;
        let rel = format!("src/mod{d}/file{f}.rs");
        let mut text = std::fs::read_to_string(work.join(&rel)).expect("read");
        text = text.replacen("Weights grow", &format!("Weights (rev {c}) grow"), 3);
        text.push_str(&format!("\npub const REV_{c}: u32 = {c};\n"));
        w(&rel, &text);
        git(
            &work,
            &[
                "commit",
                "-q",
                "-am",
                &format!("mod{d}: revision {c} of file{f}"),
            ],
        );
        commits.push(git(&work, &["rev-parse", "HEAD"]));
    }
    git(&work, &["tag", "v1", &commits[10]]);
    let mirror = root.join("pages-mirror.git");
    git(
        root,
        &[
            "clone",
            "-q",
            "--bare",
            "pages-work",
            mirror.to_str().expect("utf-8"),
        ],
    );
    git(&mirror, &["gc", "-q"]);
    (mirror, commits)
}

struct Kind {
    tier: &'static str,
    path: String,
    /// Bytes the reply must contain (checked outside the timing).
    marker: String,
}

fn kinds(commits: &[String]) -> Vec<Kind> {
    let last = commits.last().expect("commits");
    vec![
        Kind {
            tier: "repo",
            path: "/".into(),
            marker: "<h1>pages-bench</h1>".into(),
        },
        Kind {
            tier: "tree",
            path: "/tree/main/src/mod3".into(),
            marker: "/blob/main/src/mod3/file7.rs".into(),
        },
        Kind {
            tier: "file",
            path: "/blob/main/src/mod2/file1.rs".into(),
            marker: "class=\"hl-".into(),
        },
        Kind {
            tier: "file-40KiB",
            path: "/blob/main/src/big.rs".into(),
            marker: "Item".into(),
        },
        Kind {
            tier: "commit",
            path: format!("/commit/{last}"),
            marker: "<span class=\"add\">+pub const REV_59".into(),
        },
        Kind {
            tier: "log",
            path: "/log/main".into(),
            marker: "revision 59 of".into(),
        },
        Kind {
            tier: "refs",
            path: "/refs".into(),
            marker: "refs/tags/v1".into(),
        },
    ]
}

fn check(app: &App, k: &Kind) -> usize {
    let r = app
        .handle(&k.path)
        .unwrap_or_else(|e| panic!("{}: {e}", k.path));
    let body = std::str::from_utf8(&r.body).expect("utf-8 page");
    assert!(
        body.contains(&k.marker),
        "{}: marker {:?} missing",
        k.path,
        k.marker
    );
    if k.tier == "file-40KiB" {
        assert!(
            body.matches("hl-").count() > 1000,
            "the 40 KiB file is not highlighted"
        );
    }
    r.body.len()
}

/// PNG signature and IHDR size of a card.
fn check_card(b: &Bytes) {
    assert!(b.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    let w = u32::from_be_bytes(b[16..20].try_into().expect("ihdr"));
    let h = u32::from_be_bytes(b[20..24].try_into().expect("ihdr"));
    assert_eq!((w, h), (1200, 630));
    assert!(
        (8 << 10..64 << 10).contains(&b.len()),
        "card of {} bytes",
        b.len()
    );
}

pub fn run(target: &mut BenchTarget, root: &Path) {
    let (mirror, commits) = make_repo(root);
    let mut app = App::open("pages-bench", &mirror, Limits::default()).expect("app opens");
    let kinds = kinds(&commits);
    let mut sizes = serde_json::Map::new();
    for k in &kinds {
        sizes.insert(k.tier.into(), check(&app, k).into());
    }
    if target.may_run("knot.page") {
        let mut g = target.group("knot.page");
        for k in &kinds {
            check(&app, k);
            g.bench("ours.warm", k.tier, |b| {
                b.iter(|| std::hint::black_box(app.handle(&k.path)))
            });
        }
        for k in &kinds {
            g.bench("ours.cold", k.tier, |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        app.reopen().expect("reopen");
                        let t = Instant::now();
                        let r = app.handle(&k.path);
                        total += t.elapsed();
                        std::hint::black_box(r).expect("page");
                    }
                    total
                })
            });
            check(&app, k);
        }
        g.finish();
    }
    let cards = [
        ("repo", "/card.png".to_owned()),
        ("file", "/card/main/src/big.rs".to_owned()),
    ];
    if target.may_run("knot.card") {
        let mut g = target.group("knot.card");
        for (tier, path) in &cards {
            g.bench("ours.first", tier, |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        app.clear_caches();
                        let t = Instant::now();
                        let r = app.handle(path);
                        total += t.elapsed();
                        std::hint::black_box(r).expect("card");
                    }
                    total
                })
            });
            let first = app.handle(path).expect("card").body;
            check_card(&first);
            g.bench("ours.cached", tier, |b| {
                b.iter(|| std::hint::black_box(app.handle(path)))
            });
            let again = app.handle(path).expect("card").body;
            assert_eq!(
                first.as_ptr(),
                again.as_ptr(),
                "{path}: the cached card was drawn again"
            );
            sizes.insert(format!("card-{tier}"), first.len().into());
        }
        g.finish();
    }
    benches::sidecar::context("knot_pages", serde_json::Value::Object(sizes.clone()));
    eprintln!(
        "atbench: knot.page reply bytes: {}",
        serde_json::Value::Object(sizes)
    );
    if target.may_run("knot.page_load") {
        load(target, app, &kinds);
    }
}

fn load(target: &mut BenchTarget, app: App, kinds: &[Kind]) {
    let expected: Vec<usize> = kinds.iter().map(|k| check(&app, k)).collect();
    let app = Arc::new(app);
    let srv = server::spawn(
        app,
        "127.0.0.1:0".parse().expect("addr"),
        ServerConfig::default(),
        2,
    )
    .expect("server starts");
    let addr = srv.addr();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("client runtime");
    let paths: Arc<Vec<String>> = Arc::new(kinds.iter().map(|k| k.path.clone()).collect());
    let expected = Arc::new(expected);
    let mut report = serde_json::Map::new();
    let mut g = target.group("knot.page_load");
    g.throughput(Throughput::Elements(BATCH));
    g.criterion().sample_size(10);
    for conns in [10usize, 50] {
        let tier = format!("conns-{conns}");
        let senders = rt.block_on(async {
            let mut v = Vec::new();
            for _ in 0..conns {
                let s = tokio::net::TcpStream::connect(addr).await.expect("connect");
                s.set_nodelay(true).expect("nodelay");
                let (tx, conn) =
                    hyper::client::conn::http1::handshake::<_, Empty<Bytes>>(TokioIo::new(s))
                        .await
                        .expect("handshake");
                tokio::spawn(conn);
                v.push(tx);
            }
            v
        });
        let hist = std::sync::Mutex::new(
            hdrhistogram::Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("histogram"),
        );
        let bad = AtomicU64::new(0);
        let mut senders = Some(senders);
        g.bench("ours", &tier, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let s = senders.take().expect("senders");
                    let (elapsed, s, replies) =
                        rt.block_on(batch(s, &paths, &expected, &hist, &bad));
                    debug_assert_eq!(replies, BATCH);
                    total += elapsed;
                    senders = Some(s);
                }
                total
            })
        });
        assert_eq!(
            bad.load(Ordering::Relaxed),
            0,
            "{tier}: wrong replies under load"
        );
        let h = hist.lock().unwrap_or_else(|e| e.into_inner());
        let (p50, p99) = (h.value_at_quantile(0.5), h.value_at_quantile(0.99));
        eprintln!(
            "atbench: knot.page_load/ours/{tier}: p50 {p50} us, p99 {p99} us over {} requests",
            h.len()
        );
        report.insert(
            tier,
            serde_json::json!({"p50_us": p50, "p99_us": p99, "requests": h.len()}),
        );
    }
    g.finish();
    report.insert("server_workers".into(), 2.into());
    benches::sidecar::context("knot_page_load", serde_json::Value::Object(report));
    drop(srv);
}

type Sender = hyper::client::conn::http1::SendRequest<Empty<Bytes>>;

/// One batch of [`BATCH`] requests spread over the connections (each
/// sends its share one after the other); returns the wall time, the
/// connections, and the replies counted.
async fn batch(
    senders: Vec<Sender>,
    paths: &Arc<Vec<String>>,
    expected: &Arc<Vec<usize>>,
    hist: &std::sync::Mutex<hdrhistogram::Histogram<u64>>,
    bad: &AtomicU64,
) -> (Duration, Vec<Sender>, u64) {
    let n = senders.len() as u64;
    let start = Instant::now();
    let futs = senders.into_iter().enumerate().map(|(c, mut tx)| {
        let share = BATCH / n + u64::from((c as u64) < BATCH % n);
        let (paths, expected) = (paths.clone(), expected.clone());
        async move {
            let mut lat = Vec::with_capacity(share as usize);
            let mut wrong = 0u64;
            for i in 0..share {
                let k = (c as u64 + i) as usize % paths.len();
                let req = hyper::Request::get(paths[k].as_str())
                    .header(hyper::header::HOST, "bench")
                    .body(Empty::<Bytes>::new())
                    .expect("request");
                let t = Instant::now();
                let ok = match tx.send_request(req).await {
                    Ok(resp) => {
                        let st = resp.status();
                        match resp.into_body().collect().await {
                            Ok(b) => st == 200 && b.to_bytes().len() == expected[k],
                            Err(_) => false,
                        }
                    }
                    Err(_) => false,
                };
                lat.push(t.elapsed());
                wrong += u64::from(!ok);
            }
            (tx, lat, wrong)
        }
    });
    let results = futures_util::future::join_all(futs).await;
    let elapsed = start.elapsed();
    let mut count = 0;
    let mut back = Vec::with_capacity(results.len());
    let mut h = hist.lock().unwrap_or_else(|e| e.into_inner());
    for (tx, lat, wrong) in results {
        back.push(tx);
        bad.fetch_add(wrong, Ordering::Relaxed);
        for l in lat {
            count += 1;
            let _ = h.record(u64::try_from(l.as_micros()).unwrap_or(u64::MAX).max(1));
        }
    }
    (elapsed, back, count)
}
