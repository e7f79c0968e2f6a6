//! The permissioned-data slice (`crates/space`, `com.atproto.space.*`):
//! seven groups, each run in process (`lib`: the `space` library, the
//! access check included, as a route calls it) and over HTTP (`http`:
//! atpds in this process on loopback, one keep-alive connection per
//! caller, the `xrpc.route` load generator), at 1 and 10 callers (the
//! caller count is the implementation's variant, so latest.md draws one
//! latency curve per implementation), beside the public repo's equivalent
//! in the same run (`public-repo`: the `store` library on the same
//! records) where there is one:
//!
//! | group | unit | public-repo row |
//! |---|---|---|
//! | `space.create_space` | createSpace | — |
//! | `space.write` | putRecord of a seeded post | `store.put_record` (`store.apply_commit`'s path) |
//! | `space.get_record` | getRecord | `store.get_record` |
//! | `space.list_records` | a page of 50 likes below a cursor | `store.list_records` |
//! | `space.get_repo` | the whole writer repo, E2 CAR or E4 STAR | `store.export_repo` |
//! | `space.get_blob_range` | 64 KiB of a 1 MiB blob a record references | the same range through the store |
//! | `space.oplog_catchup` | listRepoOps from zero or the middle to the last page | — |
//!
//! Tiers: the seeded space's size (`1k`, `10k`; `64KiB` for the blob).
//! Every result is checked outside the timing (`reads.rs`, `archive.rs`,
//! `writes.rs`); the writes run last, so every read row reads the seeded
//! state. The fixture is `fixture.rs`.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use benches::callers::bench_callers;
use bytes::Bytes;
use criterion::{SamplingMode, Throughput};
use hyper::StatusCode;

use crate::client::{Answer, Call, Conn, Outcomes};

mod archive;
mod fixture;
mod reads;
mod writes;

pub use fixture::Fixture;

/// Caller counts of every row.
pub const CALLERS: [usize; 2] = [1, 10];

/// The groups this module registers, in run order.
pub const GROUPS: [&str; 7] = [
    "space.create_space",
    "space.get_record",
    "space.list_records",
    "space.get_repo",
    "space.get_blob_range",
    "space.oplog_catchup",
    "space.write",
];

/// Whether any space group may run under this command line.
pub fn may_run(target: &benches::BenchTarget) -> bool {
    GROUPS.iter().any(|g| target.may_run(g))
}

/// Builds the fixture under `dir` and runs the groups.
pub fn run(target: &mut benches::BenchTarget, dir: &std::path::Path) {
    let (server, fx) = fixture::build(dir);
    writes::create_space(target, &fx);
    reads::get_record(target, &fx);
    reads::list_records(target, &fx);
    archive::get_repo(target, &fx);
    reads::get_blob_range(target, &fx);
    archive::oplog_catchup(target, &fx);
    writes::write(target, &fx);
    drop(server);
}

/// A group its caller opened with a literal name (what the units
/// registry test reads), given the route groups' sampling (flat, 10
/// samples: a getRepo of 10k records takes milliseconds).
fn sampled(mut g: benches::Group<'_>) -> benches::Group<'_> {
    g.criterion()
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10);
    g.throughput(Throughput::Elements(1));
    g
}

/// Results kept for the checks after the timing: a few, since a getRepo's
/// answer is megabytes and Criterion runs dozens of batches.
const KEPT: usize = 4;

fn keep<R>(kept: &Mutex<Vec<R>>, r: R) {
    let mut k = kept.lock().unwrap_or_else(|p| p.into_inner());
    if k.len() < KEPT {
        k.push(r);
    }
}

/// One in-process row per caller count: `op(caller, i)` is one operation;
/// the first results of the callers' batches (up to [`KEPT`]) are given to
/// `check` after the timing.
fn lib_rows<R: Send>(
    g: &mut benches::Group<'_>,
    implementation: &str,
    tier: &str,
    op: impl Fn(usize, u64) -> R + Sync,
    check: impl Fn(&R),
) {
    for callers in CALLERS {
        let name = format!("{implementation}.callers-{callers}");
        let kept: Mutex<Vec<R>> = Mutex::new(Vec::new());
        let ran = AtomicBool::new(false);
        bench_callers(g, &name, tier, callers, |caller| {
            ran.store(true, Ordering::Relaxed);
            let (op, kept) = (&op, &kept);
            move |i: u64| {
                let r = op(caller, i);
                if i == 0 {
                    keep(kept, r);
                } else {
                    std::hint::black_box(r);
                }
            }
        });
        let kept = kept.into_inner().unwrap_or_else(|p| p.into_inner());
        // Nothing ran when Criterion's filter left the row out.
        assert!(
            !ran.into_inner() || !kept.is_empty(),
            "{}: no result kept",
            g.id(&name, tier)
        );
        kept.iter().for_each(&check);
    }
}

/// One HTTP row per caller count: `call(caller, i)` is one request, whose
/// answer must have status `expected` (every answer's status is counted);
/// the first answers of the callers' batches (up to [`KEPT`]) are given to
/// `check` after the timing.
fn http_rows(
    g: &mut benches::Group<'_>,
    fx: &Fixture,
    tier: &str,
    implementation: &str,
    expected: StatusCode,
    call: impl Fn(usize, u64) -> (Call, Bytes) + Sync,
    check: impl Fn(&Answer) -> Result<(), String>,
) {
    let addr = fx.addr;
    for callers in CALLERS {
        let name = format!("{implementation}.callers-{callers}");
        let id = g.id(&name, tier);
        let outcomes = Outcomes::default();
        let kept: Mutex<Vec<Answer>> = Mutex::new(Vec::new());
        let ran = AtomicBool::new(false);
        bench_callers(g, &name, tier, callers, |caller| {
            ran.store(true, Ordering::Relaxed);
            let mut conn = Conn::open(addr);
            let (call, outcomes, kept) = (&call, &outcomes, &kept);
            move |i: u64| {
                let (c, body) = call(caller, i);
                let answer = conn.answer(&c, body);
                outcomes.record(expected, &answer, false);
                if i == 0 && answer.status == expected {
                    keep(kept, answer);
                } else {
                    std::hint::black_box(answer);
                }
            }
        });
        outcomes.check(&id);
        let samples = kept.into_inner().unwrap_or_else(|p| p.into_inner());
        assert!(
            !ran.into_inner() || !samples.is_empty(),
            "{id}: no answer kept"
        );
        for s in &samples {
            if let Err(e) = check(s) {
                panic!("{id}: a sampled answer is wrong: {e}");
            }
        }
    }
}

/// A GET with the owner's session (a member with read access).
fn get(fx: &Fixture, path: String) -> (Call, Bytes) {
    (Call::get(path).bearer(&fx.owner.access), Bytes::new())
}
