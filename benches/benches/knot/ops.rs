//! `knot.<operation>` groups: clone, no-op fetch, fetch of one new commit,
//! push of one commit, new branch, delete; cold (the clone's warm state
//! removed first) and warm, at each RTT tier. Only the git command is
//! timed; the proxy's request and round-trip counts of the same command
//! are recorded per id.

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
    name: String,
    proxy: &'a LatencyProxy,
    url: String,
    writer: std::path::PathBuf,
    reader: std::path::PathBuf,
}

fn timed(f: &Fixture, t: &Tier<'_>, id: &str, run: impl FnOnce()) -> Duration {
    t.proxy.take();
    let start = Instant::now();
    run();
    let d = start.elapsed();
    f.record(id, t.proxy.take());
    d
}

pub fn run(target: &mut BenchTarget, f: &Fixture, rtts: &[Duration]) {
    let proxies: Vec<LatencyProxy> = rtts.iter().map(|r| f.proxy(*r)).collect();
    let tiers: Vec<Tier<'_>> = rtts
        .iter()
        .zip(&proxies)
        .map(|(rtt, proxy)| {
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
            let id = g.id("atpds.cold", &t.name);
            g.bench("atpds.cold", &t.name, |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let dir = format!("clone-{}", bump());
                        total += timed(f, t, &id, || {
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
                let imp = if cold { "atpds.cold" } else { "atpds.warm" };
                let id = g.id(imp, &t.name);
                let k = bump();
                g.bench(imp, &t.name, |b| {
                    b.iter_custom(|iters| {
                        let mut total = Duration::ZERO;
                        for _ in 0..iters {
                            total += op.once(f, t, &id, cold, &format!("b{k}-{}", bump()));
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
    fn once(self, f: &Fixture, t: &Tier<'_>, id: &str, cold: bool, tag: &str) -> Duration {
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
                let d = timed(f, t, id, || {
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
                let d = timed(f, t, id, || {
                    f.git(r, &["fetch", "-q", "origin"]);
                });
                assert_eq!(f.git(r, &["rev-parse", "origin/main"]), c);
                d
            }
            Op::PushOne => {
                let c = f.commit(w, "log.txt", &format!("{tag}\n"));
                cool(w);
                let d = timed(f, t, id, || {
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
                let d = timed(f, t, id, || {
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
                let d = timed(f, t, id, || {
                    f.git(w, &["push", "-q", "origin", &format!(":{name}")]);
                });
                assert_eq!(f.remote_ref(w, &t.url, &name), None);
                d
            }
        }
    }
}
