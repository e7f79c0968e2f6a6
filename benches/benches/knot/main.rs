//! `--bench knot`: git hosted in a PDS (`crates/knot`, `docs/design/knot.md`):
//! real `git` driving the `git-remote-at` helper (as `knot_bench_helper`,
//! the same code, linked on PATH) against atpds in this process, through
//! the latency proxy ([`knot::proxy`]) at RTT 0 and 50 ms.
//!
//! Groups, in run order, on one store under `BENCH_DIR`:
//! - `knot.clone`, `knot.noop_fetch`, `knot.fetch_one`, `knot.push_one`,
//!   `knot.new_branch`, `knot.delete` (`ops.rs`): cold and warm at each RTT;
//! - `knot.floor` (`floor.rs`): the same push, no-op fetch and clone
//!   against a local bare repository and plain `git daemon` behind the
//!   same proxy (the bound the client and machine set; probes);
//! - `knot.compact` (`compact.rs`): one compaction of 20 packs, with its
//!   write-point account;
//! - `knot.writers` (`writers.rs`, `writers/gateway.rs`): 1, 4, 16 writers on one
//!   branch at RTT 0 and 50 ms, with direct CAS (`atpds`) and through
//!   `knot gateway` (`gateway`) (1 and 4 under `--test`);
//! - `knot.large_push`, `knot.large_clone` (`large.rs`): generated
//!   repositories of 10 and 100 MiB (250 MiB in the full preset; 10 MiB
//!   only under `--test`), with the helper's peak RSS;
//! - `knot.page`, `knot.card`, `knot.page_load` (`pages.rs`): knot-serve's
//!   pages and social cards over a generated mirror, warm and cold, and
//!   its server under an in-process load generator at 10 and 50
//!   connections.
//!
//! Requests, round trips and connects per id (from the proxy), landed
//! pushes and retries, and the peak RSS per size go to the run context
//! (`context/knot.json`) and stderr: Criterion has no column for them.
//!
//! Peer rows (`official-pds.cold` / `official-pds.warm` of the operation
//! groups, `official-pds` of the large-repository groups), under `BENCH_PEERS=1` outside `--test`: the official PDS
//! (`@atproto/pds` 0.4.217 as a full server, [`benches::official_pds`])
//! started in its own directory, an account created on it, and the same
//! operations run through the same helper behind the same proxies in the
//! same groups, verified the same way. When it cannot start the rows are
//! skipped with the reason printed (`BENCH_REQUIRE_LIVE=1` fails instead).

use std::time::Duration;

use benches::config::Preset;
use benches::target::{BenchTarget, Budget};

mod compact;
mod fixture;
mod floor;
mod large;
mod ops;
mod pages;
mod writers;

/// The large-repository groups.
const LARGE: [&str; 2] = ["knot.large_push", "knot.large_clone"];

/// The official PDS's fixture, or `None` after printing why its rows
/// do not run.
fn peer_store(target: &mut BenchTarget, root: &std::path::Path) -> Option<fixture::Fixture> {
    if std::env::var("BENCH_PEERS").as_deref() != Ok("1") {
        return None;
    }
    let pds = match benches::peers::skip_reason() {
        None => benches::official_pds::OfficialPds::start_or_skip("knot"),
        Some(reason) => {
            eprintln!("atbench: knot: official-pds rows skipped: {reason}");
            None
        }
    };
    let Some(pds) = pds else {
        let why = "the official PDS does not run here (reason above)";
        for g in ops::GROUPS {
            for imp in ["official-pds.cold", "official-pds.warm"] {
                if g != "knot.clone" || imp.ends_with("cold") {
                    target.skip_rows(g, imp, why);
                }
            }
        }
        for g in LARGE {
            target.skip_rows(g, "official-pds", why);
        }
        return None;
    };
    Some(fixture::Fixture::official(root, pds))
}

fn main() {
    let mut target = BenchTarget::new(
        "knot",
        Budget {
            full_min: 12.0,
            quick_min: 5.0,
        },
    );
    let smoke = target.is_smoke();
    let dir = benches::sidecar::scratch_dir("knot");
    let f = fixture::Fixture::start(dir.path());
    let rtts = [Duration::ZERO, Duration::from_millis(50)];
    let sizes: &[usize] = if smoke {
        &[10]
    } else if target.preset() == Preset::Full {
        &[10, 100, 250]
    } else {
        &[10, 100]
    };
    benches::sidecar::context(
        "knot_setup",
        serde_json::json!({
            "store_dir": dir.path().display().to_string(),
            "rtts_ms": [0, 50],
            "large_sizes_mib": sizes,
            "concurrency": knot::helper::CONCURRENCY,
            "part_bytes": knot::records::PART_SIZE,
            "client": "git (real processes) + git-remote-at, one helper process per git command; atpds in this process behind knot::proxy",
        }),
    );
    let peer = if ops::GROUPS.iter().chain(&LARGE).any(|g| target.may_run(g)) {
        peer_store(&mut target, &dir.path().join("official-pds"))
    } else {
        None
    };
    if ops::GROUPS.iter().any(|g| target.may_run(g)) {
        let mut stores = vec![&f];
        stores.extend(peer.as_ref());
        ops::run(&mut target, &stores, &rtts);
    }
    floor::run(&mut target, &f, &rtts);
    compact::run(&mut target, &f);
    if target.may_run("knot.writers") {
        // 16 writers take one rebase round per landed push: not in the smoke run.
        let writers: &[usize] = if smoke { &[1, 4] } else { &[1, 4, 16] };
        writers::run(&mut target, &f, &rtts, writers);
    }
    if LARGE.iter().any(|g| target.may_run(g)) {
        let mut stores = vec![&f];
        stores.extend(peer.as_ref());
        large::run(&mut target, &stores, sizes);
    }
    if pages::GROUPS.iter().any(|g| target.may_run(g)) {
        pages::run(&mut target, dir.path());
    }
    let mut counts = f.counts.lock().unwrap_or_else(|e| e.into_inner()).clone();
    if let Some(p) = &peer {
        counts.extend(p.counts.lock().unwrap_or_else(|e| e.into_inner()).clone());
    }
    for (id, v) in &counts {
        eprintln!("atbench: {id}: {v}");
    }
    benches::sidecar::context("knot", serde_json::to_value(&counts).unwrap_or_default());
    target.finish();
}
