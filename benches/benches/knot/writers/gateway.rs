//! `knot.writers/gateway/*`: the same N writers as the direct rows
//! (`writers.rs`), each with its own commit per round, pushing through
//! `knot gateway` (in this process, `knot::gateway::spawn`), which lands
//! each queue as one pack and one compare-and-swap. The gateway talks to
//! atpds through a latency proxy at the row's RTT, and the writers talk
//! to the gateway through another one at the same RTT (no locality for
//! free). One iteration is one round: every writer's `git push` returned
//! `ok`, i.e. its commit is on the PDS (elements = N). Between rounds,
//! outside the timing, each writer adopts what landed (`git pull
//! --rebase`, so its next push is its one new commit). The rounds and
//! their check are `writers.rs`'s driver; this module owns the gateway's
//! push step and what the row reports.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use benches::target::Group;
use knot::proxy::LatencyProxy;

use super::{Landed, Step};
use crate::fixture::{Fixture, PASSWORD};

/// Through the gateway, which talks to the PDS through `pds_proxy`; the
/// writers reach it through `gw_proxy`. (Fields in the order they are
/// dropped: the writers' proxy, the gateway, then the PDS's proxy.)
struct Gateway {
    gw_proxy: LatencyProxy,
    gw: knot::gateway::Running,
    pds_proxy: LatencyProxy,
    pds_rt: AtomicU64,
    gw_rt: AtomicU64,
}

impl Step for Gateway {
    const IMP: &'static str = "gateway";

    fn pds_proxy(&self) -> &LatencyProxy {
        &self.pds_proxy
    }

    fn configure(&self, f: &Fixture, clone: &Path) {
        f.git(clone, &["config", "knot.gateway", &self.gw_proxy.url()]);
    }

    fn before_round(&self, f: &Fixture, clones: &[PathBuf], r: u64) {
        // Each writer adopts what landed, then commits.
        std::thread::scope(|s| {
            for (w, d) in clones.iter().enumerate() {
                s.spawn(move || {
                    f.git(d, &["pull", "-q", "--rebase", "origin", "main"]);
                    f.commit(d, &format!("w{w}.txt"), &format!("round {r}\n"));
                });
            }
        });
        let _ = (self.pds_proxy.take(), self.gw_proxy.take());
    }

    fn push(&self, f: &Fixture, d: &Path) {
        let o = f.try_git(d, &["push", "-q", "origin", "main"]);
        assert!(
            o.status.success(),
            "a push through the gateway failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }

    fn after_round(&self) {
        self.pds_rt
            .fetch_add(self.pds_proxy.take().round_trips, Ordering::Relaxed);
        self.gw_rt
            .fetch_add(self.gw_proxy.take().round_trips, Ordering::Relaxed);
    }
}

pub fn row(g: &mut Group<'_>, f: &Fixture, rtt: Duration, n: usize) {
    let repo = format!("gw-writers-{n}-{}", rtt.as_millis());
    let pds_proxy = f.proxy(rtt);
    let mut cfg = knot::gateway::Config::new(
        &pds_proxy.url(),
        &f.did,
        "127.0.0.1:0".parse().expect("address"),
        f.root.join(format!("{repo}-scratch.git")),
    );
    cfg.password = Some(PASSWORD.into());
    let gw = knot::gateway::spawn(cfg).expect("the gateway starts");
    let step = Gateway {
        gw_proxy: LatencyProxy::start(gw.addr(), rtt).expect("latency proxy"),
        gw,
        pds_proxy,
        pds_rt: AtomicU64::new(0),
        gw_rt: AtomicU64::new(0),
    };
    let Landed {
        id,
        seed,
        landed,
        rounds,
    } = super::row(g, f, rtt, n, &repo, &step);
    // The repository the PDS holds is whole.
    f.git(&seed, &["fsck", "--strict"]);
    // Zero when a Criterion filter skipped this row: the gateway then landed
    // nothing either.
    let s = step.gw.stats();
    let get = |k: &str| s[k].as_u64().unwrap_or(0);
    assert_eq!(get("landed"), landed, "the gateway's count differs: {s}");
    let l = landed.max(1);
    let per = |x: u64| ((x as f64 / l as f64) * 100.0).round() / 100.0;
    let (pds_rt, gw_rt) = (
        step.pds_rt.load(Ordering::Relaxed),
        step.gw_rt.load(Ordering::Relaxed),
    );
    // Retries: pushes refused or re-landed after a failed swap (a writer
    // of this row never needs one: there is no writer outside the gateway).
    let retries = get("refused") + get("swap_retries");
    eprintln!(
        "atbench: {id}: {l} commits landed in {rounds} rounds by {} flushes ({} replayed), {:.2} PDS round trips and {:.2} gateway round trips per landed commit, {retries} retries",
        get("flushes"),
        get("rebased"),
        per(pds_rt),
        per(gw_rt),
    );
    f.note(&id, "landed_pushes", l.into());
    f.note(&id, "flushes", get("flushes").into());
    f.note(&id, "replayed", get("rebased").into());
    f.note(&id, "retries_per_landed_push", per(retries).into());
    f.note(&id, "round_trips_per_landed_commit", per(pds_rt).into());
    f.note(
        &id,
        "gateway_round_trips_per_landed_commit",
        per(gw_rt).into(),
    );
}
