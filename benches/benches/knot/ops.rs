//! `knot.<operation>` groups: clone, no-op fetch, fetch of one new commit,
//! push of one commit, new branch, delete; cold (the clone's warm state
//! removed first) and warm, at each RTT tier. Only the git command is
//! timed; the proxy's request and round-trip counts of the same command
//! are recorded per id. Every store given (atpds, and the official PDS
//! under `BENCH_PEERS=1`) runs the same operations through the same helper
//! behind its own proxies, in the same group.

use std::path::Path;
use std::time::{Duration, Instant};

use benches::target::BenchTarget;
use knot::proxy::LatencyProxy;

use crate::fixture::Fixture;

/// The operation groups.
pub const GROUPS: [&str; 6] = [
    "knot.clone",
    "knot.noop_fetch",
    "knot.fetch_one",
    "knot.push_one",
    "knot.new_branch",
    "knot.delete",
];

struct Tier<'a> {
    f: &'a Fixture,
    name: String,
    proxy: &'a LatencyProxy,
    url: String,
    writer: std::path::PathBuf,
    reader: std::path::PathBuf,
}

fn timed(t: &Tier<'_>, id: &str, run: impl FnOnce()) -> Duration {
    t.proxy.take();
    let start = Instant::now();
    run();
    let d = start.elapsed();
    t.f.record(id, t.proxy.take());
    d
}

pub fn run(target: &mut BenchTarget, stores: &[&Fixture], rtts: &[Duration]) {
    let proxies: Vec<(&Fixture, Duration, LatencyProxy)> = stores
        .iter()
        .flat_map(|f| rtts.iter().map(move |r| (*f, *r, f.proxy(*r))))
        .collect();
    let tiers: Vec<Tier<'_>> = proxies
        .iter()
        .map(|&(f, rtt, ref proxy)| {
            let name = format!("rtt-{}ms", rtt.as_millis());
            let repo = format!("ops-{}", rtt.as_millis());
            let url = f.url(proxy, &repo);
            let writer = f.init(&format!("{repo}-writer"));
            f.commit(&writer, "README", "seed\n");
            f.git(&writer, &["remote", "add", "origin", &url]);
            f.git(&writer, &["push", "-q", "origin", "main"]);
            f.git(&f.root, &["clone", "-q", &url, &format!("{repo}-reader")]);
            let reader = f.root.join(format!("{repo}-reader"));
            Tier {
                f,
                name,
                proxy,
                url,
                writer,
                reader,
            }
        })
        .collect();
    let counter = std::cell::Cell::new(0u64);
    let bump = || {
        counter.set(counter.get() + 1);
        counter.get()
    };

    // Clone: always cold (a new repository has no warm state).
    if target.may_run("knot.clone") {
        let mut g = target.group("knot.clone");
        g.criterion().sample_size(10);
        for t in &tiers {
            let f = t.f;
            let imp = format!("{}.cold", f.name);
            let id = g.id(&imp, &t.name);
            g.bench(&imp, &t.name, |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let dir = format!("clone-{}", bump());
                        total += timed(t, &id, || {
                            f.git(&f.root, &["clone", "-q", &t.url, &dir]);
                        });
                        let d = f.root.join(&dir);
                        assert_eq!(
                            f.git(&d, &["rev-parse", "HEAD"]),
                            f.git(&t.writer, &["rev-parse", "HEAD"])
                        );
                        let _ = std::fs::remove_dir_all(&d);
                    }
                    total
                });
            });
        }
        g.finish();
    }

    for (group, op) in [
        ("knot.noop_fetch", Op::NoopFetch),
        ("knot.fetch_one", Op::FetchOne),
        ("knot.push_one", Op::PushOne),
        ("knot.new_branch", Op::NewBranch),
        ("knot.delete", Op::Delete),
    ] {
        if !target.may_run(group) {
            continue;
        }
        // Each group opened by its literal name: tests/units_registry.rs
        // reads the names from the source against units.toml.
        let mut g = match op {
            Op::NoopFetch => target.group("knot.noop_fetch"),
            Op::FetchOne => target.group("knot.fetch_one"),
            Op::PushOne => target.group("knot.push_one"),
            Op::NewBranch => target.group("knot.new_branch"),
            Op::Delete => target.group("knot.delete"),
        };
        g.criterion().sample_size(10);
        for t in &tiers {
            for cold in [true, false] {
                let imp = format!("{}.{}", t.f.name, if cold { "cold" } else { "warm" });
                let id = g.id(&imp, &t.name);
                let k = bump();
                g.bench(&imp, &t.name, |b| {
                    b.iter_custom(|iters| {
                        let mut total = Duration::ZERO;
                        for _ in 0..iters {
                            total += op.once(t, &id, cold, &format!("b{k}-{}", bump()));
                        }
                        total
                    });
                });
            }
        }
        g.finish();
    }
}

#[derive(Clone, Copy)]
enum Op {
    NoopFetch,
    FetchOne,
    PushOne,
    NewBranch,
    Delete,
}

impl Op {
    fn once(self, t: &Tier<'_>, id: &str, cold: bool, tag: &str) -> Duration {
        let f = t.f;
        let (w, r) = (t.writer.as_path(), t.reader.as_path());
        let cool = |d: &Path| {
            if cold {
                f.make_cold(d)
            }
        };
        match self {
            Op::NoopFetch => {
                f.git(r, &["fetch", "-q", "origin"]);
                cool(r);
                let d = timed(t, id, || {
                    f.git(r, &["fetch", "-q", "origin"]);
                });
                assert_eq!(
                    f.git(r, &["rev-parse", "origin/main"]),
                    f.git(w, &["rev-parse", "HEAD"])
                );
                d
            }
            Op::FetchOne => {
                f.git(r, &["fetch", "-q", "origin"]);
                let c = f.commit(w, "log.txt", &format!("{tag}\n"));
                f.git(w, &["push", "-q", "origin", "main"]);
                cool(r);
                let d = timed(t, id, || {
                    f.git(r, &["fetch", "-q", "origin"]);
                });
                assert_eq!(f.git(r, &["rev-parse", "origin/main"]), c);
                d
            }
            Op::PushOne => {
                let c = f.commit(w, "log.txt", &format!("{tag}\n"));
                cool(w);
                let d = timed(t, id, || {
                    f.git(w, &["push", "-q", "origin", "main"]);
                });
                assert_eq!(
                    f.remote_ref(w, &t.url, "refs/heads/main").as_deref(),
                    Some(c.as_str())
                );
                d
            }
            Op::NewBranch => {
                let name = format!("refs/heads/{tag}");
                cool(w);
                let d = timed(t, id, || {
                    f.git(w, &["push", "-q", "origin", &format!("main:{name}")]);
                });
                assert_eq!(
                    f.remote_ref(w, &t.url, &name),
                    Some(f.git(w, &["rev-parse", "HEAD"]))
                );
                f.git(w, &["push", "-q", "origin", &format!(":{name}")]);
                d
            }
            Op::Delete => {
                let name = format!("refs/heads/{tag}");
                f.git(w, &["push", "-q", "origin", &format!("main:{name}")]);
                cool(w);
                let d = timed(t, id, || {
                    f.git(w, &["push", "-q", "origin", &format!(":{name}")]);
                });
                assert_eq!(f.remote_ref(w, &t.url, &name), None);
                d
            }
        }
    }
}
