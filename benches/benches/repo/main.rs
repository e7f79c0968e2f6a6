//! `--bench repo`: the atproto data model (`crates/repo`) beside its peers:
//! DAG-CBOR codecs (serde_ipld_dagcbor, serde_cbor, ciborium), CIDs, the MST
//! (atrium-repo; `mst_diff.rs`: the diff of two trees beside every peer
//! crate that has one), signed commits, CAR export/import and firehose
//! frames.
//!
//! Inputs are real where the project has them: the like, post and profile
//! records, the 148 `#commit` frames and their authors' keys come from the
//! jetstream corpus vendored in `crates/repo/tests/corpus/`. Synthetic inputs
//! (MST keys, repos for CAR) are seeded and built once in setup.

use benches::target::{BenchTarget, Budget};

mod cbor;
mod mst;
mod mst_diff;
mod peer_roles;
mod peers;
mod sync;
mod versions;

// One module per Rust peer crate beyond those wired in cbor.rs and mst.rs.
#[cfg(feature = "peers-rust")]
mod peer_atproto_repo;
mod peer_dagcbor06;
mod peer_dasl;
mod peer_iroh_car;
#[cfg(feature = "peers-rust")]
mod peer_jacquard;
mod peer_proto_blue;
#[cfg(feature = "peers-rust")]
mod peer_rsky;

fn main() {
    let mut target = BenchTarget::new(
        "repo",
        Budget {
            full_min: 4.5,
            quick_min: 1.5,
        },
    );
    versions::record();
    let corpus = benches::corpus::Corpus::load();
    cbor::run(&mut target, &corpus);
    mst::run(&mut target);
    mst_diff::run(&mut target);
    sync::run(&mut target, &corpus);
    // `BENCH_PEERS=1`: `@atproto/repo` through the same units of work.
    benches::peers::run_after_ours(
        benches::peers::ATPROTO_REPO,
        target.preset(),
        &target.seen_groups(),
        |dir, mode| benches::peers::repo_inputs::build(dir, mode, &corpus),
    );
    target.finish();
}
