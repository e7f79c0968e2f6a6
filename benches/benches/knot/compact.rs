//! `knot.compact`: one compaction of a repository whose main branch names
//! 20 one-commit packs (pushed through the helper outside the timing),
//! through [`knot::compact::Compactor`] in this process against atpds
//! behind the latency proxy at RTT 0: the packs downloaded into a scratch
//! repository, repacked with fresh deltas, the new pack uploaded, its
//! record written, the ref switched under compare-and-swap and the 20 old
//! pack records deleted (grace 0). The write-point account of the last
//! iteration goes to stderr and the run context; the result (one pack
//! named, old pack records gone, a clone's HEAD equal to the writer's) is
//! checked outside the timing.

use std::time::{Duration, Instant};

use benches::target::BenchTarget;
use knot::Remote;
use knot::compact::Budget;
use knot::compact::{CompactOptions, Compactor, Ended, prepare_dir};

use crate::fixture::Fixture;

/// Packs folded per iteration.
pub const PACKS: usize = 20;

pub fn run(target: &mut BenchTarget, f: &Fixture) {
    if !target.may_run("knot.compact") {
        return;
    }
    let proxy = f.proxy(Duration::ZERO);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut n = 0u64;
    let mut g = target.group("knot.compact");
    g.criterion().sample_size(10);
    let tier = format!("packs-{PACKS}");
    let id = g.id("atpds", &tier);
    g.bench("atpds", &tier, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                n += 1;
                let repo = format!("compact-{n}");
                let url = f.url(&proxy, &repo);
                let w = f.init(&format!("{repo}-writer"));
                f.git(&w, &["remote", "add", "origin", &url]);
                for i in 0..PACKS {
                    f.commit(&w, "log.txt", &format!("entry {i}\n").repeat(i + 1));
                    f.git(&w, &["push", "-q", "origin", "main"]);
                }
                let dir = f.root.join(format!("{repo}-state"));
                let raw = url.strip_prefix("at::").unwrap_or(&url).to_owned();
                proxy.take();
                let start = Instant::now();
                let report = rt.block_on(async {
                    let scratch = prepare_dir(&dir).expect("state dir");
                    let mut remote = Remote::open_with(&raw, Some(&scratch), Some(f.credentials()))
                        .await
                        .expect("remote");
                    let opts = CompactOptions {
                        grace: Duration::ZERO,
                        budget: Budget::default(),
                        ..CompactOptions::default()
                    };
                    Compactor::new(&remote, &dir, opts)
                        .expect("state")
                        .run(&mut remote)
                        .await
                        .expect("compaction")
                });
                total += start.elapsed();
                f.record(&id, proxy.take());
                assert_eq!(report.ended, Ended::Done);
                assert_eq!(report.switched, ["refs/heads/main"]);
                assert_eq!(report.deleted.len(), PACKS);
                let account = report.account.expect("an account");
                assert_eq!(account.packs, PACKS);
                f.note(
                    &id,
                    "account",
                    serde_json::json!({
                        "packs_folded": account.packs,
                        "new_pack_bytes": account.size,
                        "objects": account.objects,
                        "uploads": report.spent.uploads,
                        "write_points": report.spent.points,
                        "points_switch": account.switch_points(),
                        "points_deletes": account.delete_points(),
                    }),
                );
                eprintln!(
                    "atbench: {id}: {} packs -> 1 of {} bytes ({} objects): {} upload(s), {} write points ({} switch + {} deletes)",
                    account.packs,
                    account.size,
                    account.objects,
                    report.spent.uploads,
                    report.spent.points,
                    account.switch_points(),
                    account.delete_points()
                );
                let c = f.root.join(format!("{repo}-clone"));
                f.git(&f.root, &["clone", "-q", &url, c.to_str().expect("path")]);
                assert_eq!(
                    f.git(&c, &["rev-parse", "HEAD"]),
                    f.git(&w, &["rev-parse", "HEAD"])
                );
                let _ = std::fs::remove_dir_all(&c);
                let _ = std::fs::remove_dir_all(&dir);
            }
            total
        });
    });
    g.finish();
}
