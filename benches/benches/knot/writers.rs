//! `knot.writers`: N clones pushing to one branch, each with its own
//! commit per round. One iteration is one round: every writer's commit
//! landed (elements = N). This module owns the row driver both kinds of
//! row share (the seeded repository and its clones, the timed rounds, the
//! check that every round's commits are on the branch) and the direct
//! rows' push step: a writer refused (`fetch first`) fetches, rebases and
//! pushes again until it lands, and retries and round trips per landed
//! push are recorded beside the time. Each (RTT, N) is followed by the
//! same N writers through the gateway (`writers/gateway.rs`'s step), in the same
//! group and run.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use benches::target::{BenchTarget, Group};
use criterion::Throughput;
use knot::proxy::LatencyProxy;

use crate::fixture::Fixture;

// The gateway rows' push step, a child: it implements this module's `Step`.
mod gateway;

pub fn run(target: &mut BenchTarget, f: &Fixture, rtts: &[Duration], counts: &[usize]) {
    let mut g = target.group("knot.writers");
    g.criterion().sample_size(10);
    for &rtt in rtts {
        for &n in counts {
            direct(&mut g, f, rtt, n);
            gateway::row(&mut g, f, rtt, n);
        }
    }
    g.finish();
}

/// How one row's writers push: what differs between direct CAS and the
/// gateway. Shared with every writer's thread, hence `Sync`.
pub trait Step: Sync {
    /// The row's implementation (`atpds`, `gateway`).
    const IMP: &'static str;

    /// The proxy in front of the PDS, which the remote URL names.
    fn pds_proxy(&self) -> &LatencyProxy;

    /// Untimed, once per fresh clone.
    fn configure(&self, _f: &Fixture, _clone: &Path) {}

    /// Untimed, before round `r`'s pushes: each writer's commit, and the
    /// proxies' counts reset.
    fn before_round(&self, f: &Fixture, clones: &[PathBuf], r: u64);

    /// Timed, in the writer's own thread: returns once its commit landed.
    fn push(&self, f: &Fixture, clone: &Path);

    /// Untimed, after each round: its round trips counted.
    fn after_round(&self);
}

/// A row after its check: `landed` pushes (0 when a Criterion filter
/// skipped the row) in `rounds` rounds, every one on `seed`'s branch.
pub struct Landed {
    pub id: String,
    pub seed: PathBuf,
    pub landed: u64,
    pub rounds: u64,
}

/// One `knot.writers` row at `rtt` with `n` writers: a seeded repository
/// `repo`, `n` clones of it, and rounds in which every clone pushes its
/// one new commit through `step` (a thread each; only the pushes are
/// timed). Verified outside the timing: every writer's every round is on
/// the branch.
pub fn row<S: Step>(
    g: &mut Group<'_>,
    f: &Fixture,
    rtt: Duration,
    n: usize,
    repo: &str,
    step: &S,
) -> Landed {
    let tier = format!("writers-{n}-rtt-{}ms", rtt.as_millis());
    let url = f.url(step.pds_proxy(), repo);
    let seed = f.init(&format!("{repo}-seed"));
    f.commit(&seed, "README", "seed\n");
    f.git(&seed, &["remote", "add", "origin", &url]);
    f.git(&seed, &["push", "-q", "origin", "main"]);
    let clones: Vec<_> = (0..n)
        .map(|w| {
            let d = format!("{repo}-w{w}");
            f.git(&f.root, &["clone", "-q", &url, &d]);
            let d = f.root.join(d);
            step.configure(f, &d);
            d
        })
        .collect();
    let id = g.id(S::IMP, &tier);
    let (landed, round) = (AtomicU64::new(0), AtomicU64::new(0));
    g.throughput(Throughput::Elements(n as u64));
    g.bench(S::IMP, &tier, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let r = round.fetch_add(1, Ordering::Relaxed);
                step.before_round(f, &clones, r);
                let start = Instant::now();
                std::thread::scope(|s| {
                    for d in &clones {
                        let landed = &landed;
                        s.spawn(move || {
                            step.push(f, d);
                            landed.fetch_add(1, Ordering::Relaxed);
                        });
                    }
                });
                total += start.elapsed();
                step.after_round();
            }
            total
        });
    });
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
    Landed {
        id,
        seed,
        landed: landed.load(Ordering::Relaxed),
        rounds,
    }
}

/// Straight to the PDS (compare-and-swap on the ref record), retrying
/// with fetch + rebase when refused.
struct Direct {
    proxy: LatencyProxy,
    retries: AtomicU64,
    round_trips: AtomicU64,
}

impl Step for Direct {
    const IMP: &'static str = "atpds";

    fn pds_proxy(&self) -> &LatencyProxy {
        &self.proxy
    }

    fn before_round(&self, f: &Fixture, clones: &[PathBuf], r: u64) {
        for (w, d) in clones.iter().enumerate() {
            f.commit(d, &format!("w{w}.txt"), &format!("round {r}\n"));
        }
        let _ = self.proxy.take();
    }

    fn push(&self, f: &Fixture, d: &Path) {
        for _ in 0..200 {
            let o = f.try_git(d, &["push", "-q", "origin", "main"]);
            if o.status.success() {
                return;
            }
            let e = String::from_utf8_lossy(&o.stderr);
            assert!(
                e.contains("fetch first")
                    || e.contains("non-fast-forward")
                    || e.contains("rejected"),
                "unexpected push failure: {e}"
            );
            self.retries.fetch_add(1, Ordering::Relaxed);
            f.git(d, &["fetch", "-q", "origin"]);
            f.git(d, &["rebase", "-q", "origin/main"]);
        }
        panic!("a writer did not land in 200 tries");
    }

    fn after_round(&self) {
        self.round_trips
            .fetch_add(self.proxy.take().round_trips, Ordering::Relaxed);
    }
}

fn direct(g: &mut Group<'_>, f: &Fixture, rtt: Duration, n: usize) {
    let step = Direct {
        proxy: f.proxy(rtt),
        retries: AtomicU64::new(0),
        round_trips: AtomicU64::new(0),
    };
    let repo = format!("writers-{n}-{}", rtt.as_millis());
    let Landed {
        id, landed, rounds, ..
    } = row(g, f, rtt, n, &repo, &step);
    let l = landed.max(1);
    let per = step.retries.load(Ordering::Relaxed) as f64 / l as f64;
    eprintln!(
        "atbench: {id}: {l} pushes landed in {rounds} rounds, {per:.2} retries per landed push (each retry = fetch + rebase + push)"
    );
    f.note(&id, "landed_pushes", l.into());
    f.note(
        &id,
        "retries_per_landed_push",
        serde_json::json!((per * 100.0).round() / 100.0),
    );
    let rt = step.round_trips.load(Ordering::Relaxed) as f64 / l as f64;
    eprintln!("atbench: {id}: {rt:.2} round trips per landed commit");
    f.note(
        &id,
        "round_trips_per_landed_commit",
        serde_json::json!((rt * 100.0).round() / 100.0),
    );
    let _ = step.proxy.take();
}
