//! `--bench hotpath`: the data-gateway hot paths — base64, CRC-32, and the
//! JSON <-> protobuf conversions of the convert crate.

use benches::target::{BenchTarget, Budget};

mod codec;

fn main() {
    let mut target = BenchTarget::new(
        "hotpath",
        Budget {
            full_min: 3.5,
            quick_min: 1.0,
        },
    );
    codec::run(&mut target);
    target.finish();
}
