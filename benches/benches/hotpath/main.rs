//! `--bench hotpath`: the data-gateway hot paths — base64, CRC-32, and the
//! JSON <-> protobuf conversions of the convert crate.
//!
//! Allocator policy: before anything else the target pins glibc's trim and
//! mmap thresholds (`mallopt`), the same for every row, so a whole-batch
//! iteration reuses the heap its previous iteration freed instead of
//! page-faulting it back in; see `benches::alloc_policy`. `HOTPATH_MALLOC=default`
//! runs with glibc's defaults instead.

use benches::target::{BenchTarget, Budget};

mod codec;
mod convert;
mod json_parse;

fn main() {
    let policy = benches::alloc_policy::apply();
    let mut target = BenchTarget::new(
        "hotpath",
        Budget {
            // codec ~3.5 min, convert + json.parse ~3 min.
            full_min: 6.5,
            quick_min: 2.0,
        },
    );
    eprintln!("atbench: hotpath {policy}");
    codec::run(&mut target);
    let sample = datagen::hotpath::load_sample();
    convert::run(&mut target, &sample);
    json_parse::run(&mut target, &sample);
    target.finish();
}
