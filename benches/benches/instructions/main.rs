//! `--bench instructions`: instruction counts (gungraun on callgrind) of
//! the deterministic hot paths, one or more per product crate. Counts do
//! not move with the machine's load, so `scripts/instructions.py check`
//! can gate CI on them where wall-clock medians cannot (see
//! `docs/design/history.md` section 3 and the README).
//!
//! Runs with `--features instructions` and the `gungraun-runner` the
//! project pins (`scripts/instructions.py install` puts it in
//! `target/tools/bin/`; `scripts/instructions.py run` points the build at
//! it). Each benchmark's input is built by its `setup` function, which
//! callgrind does not count; only the call under test is counted, in a
//! process of its own.
//!
//! Ids: a benchmark function `f` with the case `impl__tier` is the atbench
//! id `instructions.f/impl/tier`; an `_` stands for the `.` of a variant
//! inside `impl` (`ours_cold` is `ours.cold`) and for a `-` inside `tier`
//! (`4096_mix` is `4096-mix`). Every id is registered in
//! `benches/units.toml` under the group `instructions.f`.
//!
//! Determinism: inputs are seeded or vendored; no counted path reads the
//! clock or a randomly seeded hasher except where a module's docs say how
//! that is made deterministic. The two-run test in
//! `scripts/tests/test_instructions.py` checks the counts repeat exactly.

// Case ids carry the tier as the id spells it (`scalar__16KiB`), and `__`
// between the implementation and the tier, which the lint reads as bad case.
#![allow(non_snake_case)]

use gungraun::main;

mod codec_counts;
mod convert_counts;
mod repo_counts;
mod segment_counts;
mod store_counts;

use self::codec_counts::codec_group;
use self::convert_counts::convert_group;
use self::repo_counts::repo_group;
use self::segment_counts::segment_group;
use self::store_counts::store_group;

main!(
    library_benchmark_groups = codec_group,
    convert_group,
    repo_group,
    segment_group,
    store_group
);
