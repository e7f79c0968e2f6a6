//! store: one commit's planning with no SQLite and no threads
//! (`store::bench_internals::DetachedRepo`): a `createRecord` of a seeded
//! post on top of a 10k-record account, its MST edit (nodes decoded from
//! memory, cold cache), covering proof, signed commit and `#commit` CAR
//! slice. The rev and every hash in it are fixed by the inputs (see
//! `crates/store/src/bench_internals/plan_detached.rs`); the signing context is set up by
//! the base commit's signature in setup, not in the count.

use std::hint::black_box;

use gungraun::{library_benchmark, library_benchmark_group};
use repo::crypto::{Algorithm, Keypair};
use store::bench_internals::{DetachedRepo, PlannedCommit};

fn dag_cbor(value: &serde_json::Value) -> Vec<u8> {
    let value = repo::cbor::json::from_json_value(value).expect("datagen records are atproto JSON");
    repo::cbor::to_vec(&value)
}

fn keypair() -> Keypair {
    Keypair::from_bytes(Algorithm::K256, &datagen::store::signing_secret(0)).expect("valid secret")
}

/// Account 0 with its first `n` seeded records, and the post to create.
fn account(n: usize) -> (DetachedRepo, (&'static str, String, Vec<u8>)) {
    let records: Vec<(&str, String, Vec<u8>)> = datagen::store::records(0, n)
        .into_iter()
        .map(|r| (r.collection, r.rkey, dag_cbor(&r.value)))
        .collect();
    let refs: Vec<(&str, &str, Vec<u8>)> = records
        .iter()
        .map(|(c, r, b)| (*c, r.as_str(), b.clone()))
        .collect();
    let repo = DetachedRepo::new(&datagen::store::did(0), keypair(), &refs).expect("builds");
    let post = datagen::store::post(0, 1);
    (repo, (post.collection, post.rkey, dag_cbor(&post.value)))
}

fn check_plan((planned, repo): (PlannedCommit, DetachedRepo)) {
    assert_ne!(planned.data, repo.data(), "the tree changed");
    let car = repo::car::CarSlice::parse(&planned.car, true).expect("the CAR verifies");
    let commit = repo::commit::CommitRef::decode(car.get(&planned.commit).expect("commit block"))
        .expect("commit decodes");
    commit
        .verify(&keypair().public_key())
        .expect("signed by the account key");
    assert!(planned.new_nodes > 0, "new MST nodes");
}

#[library_benchmark]
#[bench::ours__10k(args = (10_000), setup = account, teardown = check_plan)]
fn plan_commit(
    (repo, (collection, rkey, record)): (DetachedRepo, (&'static str, String, Vec<u8>)),
) -> (PlannedCommit, DetachedRepo) {
    let planned = repo
        .plan_create(collection, black_box(&rkey), record)
        .expect("plans");
    (planned, repo)
}

library_benchmark_group!(
    name = store_group;
    benchmarks = plan_commit
);
