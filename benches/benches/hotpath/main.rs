//! `--bench hotpath`: the data-gateway hot paths — base64, CRC-32, and the
//! JSON <-> protobuf conversions of the convert crate.

use benches::target::{BenchTarget, Budget};

mod codec;
mod convert;
mod fixtures;
mod json_parse;

fn main() {
    let mut target = BenchTarget::new(
        "hotpath",
        Budget {
            // codec ~3.5 min, convert + json.parse ~3 min.
            full_min: 6.5,
            quick_min: 2.0,
        },
    );
    codec::run(&mut target);
    let sample = datagen::hotpath::load_sample();
    convert::run(&mut target, &sample);
    json_parse::run(&mut target, &sample);
    target.finish();
}
