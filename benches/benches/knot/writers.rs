//! `knot.writers`: N clones pushing straight to one branch, each with its
//! own commit per round; a writer refused (`fetch first`) fetches,
//! rebases and pushes again until it lands. One iteration is one round:
//! every writer's commit landed (elements = N). Retries and round trips
//! per landed push are recorded beside the time. Each (RTT, N) is followed
//! by the same N writers through the gateway (`gateway.rs`), in the same
//! group and run.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use benches::target::{BenchTarget, Group};
use criterion::Throughput;

use crate::fixture::Fixture;

pub fn run(target: &mut BenchTarget, f: &Fixture, rtts: &[Duration], counts: &[usize]) {
    let mut g = target.group("knot.writers");
    g.criterion().sample_size(10);
    for &rtt in rtts {
        for &n in counts {
            direct(&mut g, f, rtt, n);
            crate::gateway::row(&mut g, f, rtt, n);
        }
    }
    g.finish();
}

fn direct(g: &mut Group<'_>, f: &Fixture, rtt: Duration, n: usize) {
    let proxy = f.proxy(rtt);
    let tier_rtt = format!("rtt-{}ms", rtt.as_millis());
    {
        let repo = format!("writers-{n}-{}", rtt.as_millis());
        let url = f.url(&proxy, &repo);
        let seed = f.init(&format!("{repo}-seed"));
        f.commit(&seed, "README", "seed\n");
        f.git(&seed, &["remote", "add", "origin", &url]);
        f.git(&seed, &["push", "-q", "origin", "main"]);
        let clones: Vec<_> = (0..n)
            .map(|w| {
                let d = format!("{repo}-w{w}");
                f.git(&f.root, &["clone", "-q", &url, &d]);
                f.root.join(d)
            })
            .collect();
        let tier = format!("writers-{n}-{tier_rtt}");
        let id = g.id("atpds", &tier);
        let (landed, retries, round) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
        let round_trips = AtomicU64::new(0);
        g.throughput(Throughput::Elements(n as u64));
        g.bench("atpds", &tier, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let r = round.fetch_add(1, Ordering::Relaxed);
                    // Each writer's commit is made before the clock starts.
                    for (w, d) in clones.iter().enumerate() {
                        f.commit(d, &format!("w{w}.txt"), &format!("round {r}\n"));
                    }
                    let _ = proxy.take();
                    let start = Instant::now();
                    std::thread::scope(|s| {
                        for d in &clones {
                            let (landed, retries) = (&landed, &retries);
                            s.spawn(move || {
                                for _ in 0..200 {
                                    let o = f.try_git(d, &["push", "-q", "origin", "main"]);
                                    if o.status.success() {
                                        landed.fetch_add(1, Ordering::Relaxed);
                                        return;
                                    }
                                    let e = String::from_utf8_lossy(&o.stderr);
                                    assert!(
                                        e.contains("fetch first")
                                            || e.contains("non-fast-forward")
                                            || e.contains("rejected"),
                                        "unexpected push failure: {e}"
                                    );
                                    retries.fetch_add(1, Ordering::Relaxed);
                                    f.git(d, &["fetch", "-q", "origin"]);
                                    f.git(d, &["rebase", "-q", "origin/main"]);
                                }
                                panic!("a writer did not land in 200 tries");
                            });
                        }
                    });
                    total += start.elapsed();
                    round_trips.fetch_add(proxy.take().round_trips, Ordering::Relaxed);
                }
                total
            });
        });
        // Verified outside the timing: every writer's every round is on the branch.
        f.git(&seed, &["pull", "-q", "--rebase", "origin", "main"]);
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
        let l = landed.load(Ordering::Relaxed).max(1);
        let per = retries.load(Ordering::Relaxed) as f64 / l as f64;
        eprintln!(
            "atbench: {id}: {l} pushes landed in {rounds} rounds, {per:.2} retries per landed push (each retry = fetch + rebase + push)"
        );
        f.note(&id, "landed_pushes", l.into());
        f.note(
            &id,
            "retries_per_landed_push",
            serde_json::json!((per * 100.0).round() / 100.0),
        );
        let rt = round_trips.load(Ordering::Relaxed) as f64 / l as f64;
        eprintln!("atbench: {id}: {rt:.2} round trips per landed commit");
        f.note(
            &id,
            "round_trips_per_landed_commit",
            serde_json::json!((rt * 100.0).round() / 100.0),
        );
        let _ = proxy.take();
    }
}
