//! `knot.floor`: the bound the client and the machine set, beside the
//! helper's rows in the same run. The same git commands as `knot.push_one`
//! (warm), `knot.noop_fetch` (warm) and `knot.clone`, against
//! - `local-path`: a bare repository named by its path (git's own process
//!   cost: `git push` spawns `git receive-pack` directly, no network, no
//!   helper);
//! - `git-daemon`: plain `git daemon` (git:// over TCP, receive-pack
//!   enabled) behind the same [`knot::proxy::LatencyProxy`] at each RTT
//!   tier, so its requests and round trips (in the run context, as for
//!   the helper's rows) sit beside ours.
//!
//! Only the git command is timed; each iteration's result is checked
//! outside the timing (ls-remote or rev-parse against the writer).

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use benches::target::BenchTarget;
use knot::proxy::LatencyProxy;

use crate::fixture::Fixture;

/// A `git daemon` this bench started (killed by its pid when dropped).
struct Daemon {
    child: Child,
    addr: SocketAddr,
}

impl Daemon {
    fn start(base: &Path) -> Daemon {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new("git")
            .args([
                "daemon",
                "--export-all",
                "--enable=receive-pack",
                "--reuseaddr",
                "--listen=127.0.0.1",
                &format!("--port={port}"),
                &format!("--base-path={}", base.display()),
            ])
            .arg(base)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("git daemon starts");
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(addr).is_err() {
            assert!(Instant::now() < deadline, "git daemon did not listen");
            std::thread::sleep(Duration::from_millis(20));
        }
        Daemon { child, addr }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Place {
    /// `local-path` or `git-daemon`.
    name: &'static str,
    tier: String,
    url: String,
    proxy: Option<LatencyProxy>,
    writer: PathBuf,
    reader: PathBuf,
}

fn bare(f: &Fixture, path: &Path) {
    std::fs::create_dir_all(path).expect("bare dir");
    f.git(path, &["init", "-q", "--bare", "-b", "main"]);
}

pub fn run(target: &mut BenchTarget, f: &Fixture, rtts: &[Duration]) {
    if !target.may_run("knot.floor") {
        return;
    }
    let base = f.root.join("floor");
    let daemon_base = base.join("daemon");
    std::fs::create_dir_all(&daemon_base).expect("floor dir");
    let daemon = Daemon::start(&daemon_base);
    let mut places = Vec::new();
    let local = base.join("local.git");
    bare(f, &local);
    places.push((
        "local-path",
        "rtt-0ms".to_owned(),
        local.display().to_string(),
        None,
    ));
    for rtt in rtts {
        let repo = format!("floor-{}.git", rtt.as_millis());
        bare(f, &daemon_base.join(&repo));
        let proxy = LatencyProxy::start(daemon.addr, *rtt).expect("latency proxy");
        let url = format!("git://{}/{repo}", proxy.addr());
        places.push((
            "git-daemon",
            format!("rtt-{}ms", rtt.as_millis()),
            url,
            Some(proxy),
        ));
    }
    let places: Vec<Place> = places
        .into_iter()
        .enumerate()
        .map(|(i, (name, tier, url, proxy))| {
            let writer = f.init(&format!("floor/w{i}"));
            f.commit(&writer, "README", "seed\n");
            f.git(&writer, &["remote", "add", "origin", &url]);
            f.git(&writer, &["push", "-q", "origin", "main"]);
            f.git(&base, &["clone", "-q", &url, &format!("r{i}")]);
            Place {
                name,
                tier,
                url,
                proxy,
                writer,
                reader: base.join(format!("r{i}")),
            }
        })
        .collect();
    let mut n = 0u64;
    let mut g = target.group("knot.floor");
    g.criterion().sample_size(10);
    for p in &places {
        let timed = |id: &str, run: &mut dyn FnMut()| -> Duration {
            if let Some(x) = &p.proxy {
                x.take();
            }
            let t = Instant::now();
            run();
            let d = t.elapsed();
            if let Some(x) = &p.proxy {
                f.record(id, x.take());
            }
            d
        };
        let imp = format!("{}.push_one", p.name);
        let id = g.id(&imp, &p.tier);
        g.bench(&imp, &p.tier, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    n += 1;
                    let c = f.commit(&p.writer, "log.txt", &format!("{n}\n"));
                    total += timed(&id, &mut || {
                        f.git(&p.writer, &["push", "-q", "origin", "main"]);
                    });
                    let out = f.git(&p.writer, &["ls-remote", &p.url, "refs/heads/main"]);
                    assert!(
                        out.starts_with(&c),
                        "{id}: remote main is {out}, pushed {c}"
                    );
                }
                total
            });
        });
        let imp = format!("{}.noop_fetch", p.name);
        let id = g.id(&imp, &p.tier);
        g.bench(&imp, &p.tier, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                f.git(&p.reader, &["fetch", "-q", "origin"]);
                for _ in 0..iters {
                    total += timed(&id, &mut || {
                        f.git(&p.reader, &["fetch", "-q", "origin"]);
                    });
                    assert_eq!(
                        f.git(&p.reader, &["rev-parse", "origin/main"]),
                        f.git(&p.writer, &["rev-parse", "HEAD"])
                    );
                }
                total
            });
        });
        let imp = format!("{}.clone", p.name);
        let id = g.id(&imp, &p.tier);
        g.bench(&imp, &p.tier, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    n += 1;
                    let dir = base.join(format!("clone-{n}"));
                    let dir_s = dir.display().to_string();
                    total += timed(&id, &mut || {
                        f.git(&base, &["clone", "-q", &p.url, &dir_s]);
                    });
                    assert_eq!(
                        f.git(&dir, &["rev-parse", "HEAD"]),
                        f.git(&p.writer, &["rev-parse", "HEAD"])
                    );
                    let _ = std::fs::remove_dir_all(&dir);
                }
                total
            });
        });
    }
    g.finish();
}
