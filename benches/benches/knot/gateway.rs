//! `knot.writers/gateway/*`: the same N writers as the direct rows
//! (`writers.rs`), each with its own commit per round, pushing through
//! `knot gateway` (in this process, `knot::gateway::spawn`), which lands
//! each queue as one pack and one compare-and-swap. The gateway talks to
//! atpds through a latency proxy at the row's RTT, and the writers talk
//! to the gateway through another one at the same RTT (no locality for
//! free). One iteration is one round: every writer's `git push` returned
//! `ok`, i.e. its commit is on the PDS (elements = N). Between rounds,
//! outside the timing, each writer adopts what landed (`git pull
//! --rebase`, so its next push is its one new commit).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use benches::target::Group;
use criterion::Throughput;
use knot::proxy::LatencyProxy;

use crate::fixture::{Fixture, PASSWORD};

pub fn row(g: &mut Group<'_>, f: &Fixture, rtt: Duration, n: usize) {
    let ms = rtt.as_millis();
    let tier = format!("writers-{n}-rtt-{ms}ms");
    let repo = format!("gw-writers-{n}-{ms}");
    let pds_proxy = f.proxy(rtt);
    let mut cfg = knot::gateway::Config::new(
        &pds_proxy.url(),
        &f.did,
        "127.0.0.1:0".parse().expect("address"),
        f.root.join(format!("{repo}-scratch.git")),
    );
    cfg.password = Some(PASSWORD.into());
    let gw = knot::gateway::spawn(cfg).expect("the gateway starts");
    let gw_proxy = LatencyProxy::start(gw.addr(), rtt).expect("latency proxy");
    let url = f.url(&pds_proxy, &repo);
    let seed = f.init(&format!("{repo}-seed"));
    f.commit(&seed, "README", "seed\n");
    f.git(&seed, &["remote", "add", "origin", &url]);
    f.git(&seed, &["push", "-q", "origin", "main"]);
    let clones: Vec<_> = (0..n)
        .map(|w| {
            let d = format!("{repo}-w{w}");
            f.git(&f.root, &["clone", "-q", &url, &d]);
            let d = f.root.join(d);
            f.git(&d, &["config", "knot.gateway", &gw_proxy.url()]);
            d
        })
        .collect();
    let id = g.id("gateway", &tier);
    let (landed, round) = (AtomicU64::new(0), AtomicU64::new(0));
    let (pds_rt, gw_rt) = (AtomicU64::new(0), AtomicU64::new(0));
    g.throughput(Throughput::Elements(n as u64));
    g.bench("gateway", &tier, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let r = round.fetch_add(1, Ordering::Relaxed);
                // Untimed: each writer adopts what landed, then commits.
                std::thread::scope(|s| {
                    for (w, d) in clones.iter().enumerate() {
                        s.spawn(move || {
                            f.git(d, &["pull", "-q", "--rebase", "origin", "main"]);
                            f.commit(d, &format!("w{w}.txt"), &format!("round {r}\n"));
                        });
                    }
                });
                let _ = (pds_proxy.take(), gw_proxy.take());
                let start = Instant::now();
                std::thread::scope(|s| {
                    for d in &clones {
                        let landed = &landed;
                        s.spawn(move || {
                            let o = f.try_git(d, &["push", "-q", "origin", "main"]);
                            assert!(
                                o.status.success(),
                                "a push through the gateway failed: {}",
                                String::from_utf8_lossy(&o.stderr)
                            );
                            landed.fetch_add(1, Ordering::Relaxed);
                        });
                    }
                });
                total += start.elapsed();
                pds_rt.fetch_add(pds_proxy.take().round_trips, Ordering::Relaxed);
                gw_rt.fetch_add(gw_proxy.take().round_trips, Ordering::Relaxed);
            }
            total
        });
    });
    // Verified outside the timing: every writer's every round is on the
    // branch, and the repository the PDS holds is whole.
    f.git(&seed, &["pull", "-q", "--rebase", "origin", "main"]);
    f.git(&seed, &["fsck", "--strict"]);
    let commits: u64 = f
        .git(&seed, &["rev-list", "--count", "HEAD"])
        .parse()
        .expect("count");
    let rounds = round.load(Ordering::Relaxed);
    assert_eq!(
        commits,
        1 + rounds * n as u64,
        "a landed commit is missing from the branch"
    );
    // Zero when a Criterion filter skipped this row: the gateway then landed
    // nothing either.
    let landed = landed.load(Ordering::Relaxed);
    let s = gw.stats();
    let get = |k: &str| s[k].as_u64().unwrap_or(0);
    assert_eq!(get("landed"), landed, "the gateway's count differs: {s}");
    let l = landed.max(1);
    let per = |x: u64| ((x as f64 / l as f64) * 100.0).round() / 100.0;
    // Retries: pushes refused or re-landed after a failed swap (a writer
    // of this row never needs one: there is no writer outside the gateway).
    let retries = get("refused") + get("swap_retries");
    eprintln!(
        "atbench: {id}: {l} commits landed in {rounds} rounds by {} flushes ({} replayed), {:.2} PDS round trips and {:.2} gateway round trips per landed commit, {retries} retries",
        get("flushes"),
        get("rebased"),
        per(pds_rt.load(Ordering::Relaxed)),
        per(gw_rt.load(Ordering::Relaxed)),
    );
    f.note(&id, "landed_pushes", l.into());
    f.note(&id, "flushes", get("flushes").into());
    f.note(&id, "replayed", get("rebased").into());
    f.note(&id, "retries_per_landed_push", per(retries).into());
    f.note(
        &id,
        "round_trips_per_landed_commit",
        per(pds_rt.load(Ordering::Relaxed)).into(),
    );
    f.note(
        &id,
        "gateway_round_trips_per_landed_commit",
        per(gw_rt.load(Ordering::Relaxed)).into(),
    );
}
