//! Interleaved A/B of the `json_to_struct` write paths on the bench sample
//! (8000 records), for judging a change on a noisy machine: each round runs
//! every path once on a fresh clone of the parsed records, so all paths see
//! the same machine state; medians and minima over the rounds are printed.
//!
//! ```text
//! cargo run --release --features bench-internals --example convert_ab -- 40
//! ```
//!
//! `cold`: the whole batch is cloned, then converted (the bench's `8k`
//! tier); `warm`: slices of 256 records, each cloned right before its
//! conversion (the `8k.warm` tier). The per-record paths map
//! `json_to_struct` / `json_into_struct` over the batch; the batch paths
//! are `json_to_structs` / `json_into_structs` (the move one looks ahead).
//! The allocator policy of `--bench hotpath` is applied first.

use std::hint::black_box;
use std::time::Instant;

use convert::prost_types::Struct;
use serde_json::{Map, Value};

type Records = Vec<Map<String, Value>>;
/// A path: converts its input, returns the Structs and whatever input it
/// did not consume (dropped after the timing).
type Path = fn(Records) -> (Vec<Struct>, Records);

const PATHS: [(&str, Path); 4] = [
    ("clone, per record", |r| {
        (r.iter().map(convert::json_to_struct).collect(), r)
    }),
    ("move, per record", |r| {
        (
            r.into_iter().map(convert::json_into_struct).collect(),
            Vec::new(),
        )
    }),
    ("clone, batch", |r| (convert::json_to_structs(&r), r)),
    ("move, batch", |r| {
        (convert::json_into_structs(r), Vec::new())
    }),
];

const WARM_SLICE: usize = 256;

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20)
        .max(1);
    eprintln!("{}", benches::alloc_policy::apply());
    let records: Records = datagen::hotpath::load_sample()
        .records
        .iter()
        .filter_map(|l| match serde_json::from_str(l) {
            Ok(Value::Object(m)) => Some(m),
            _ => None,
        })
        .collect();
    let expected: Vec<Struct> = records.iter().map(convert::json_to_struct).collect();
    let mut cold = vec![Vec::new(); PATHS.len()];
    let mut warm = vec![Vec::new(); PATHS.len()];
    for round in 0..rounds {
        for (i, (name, path)) in PATHS.iter().enumerate() {
            let input = records.clone();
            let start = Instant::now();
            let (out, rest) = path(black_box(input));
            cold[i].push(start.elapsed().as_secs_f64() * 1e3);
            if round == 0 {
                assert!(out == expected, "{name}: output differs");
            }
            drop(black_box((out, rest)));

            let mut total = 0.0;
            let mut kept = Vec::new();
            for slice in records.chunks(WARM_SLICE) {
                let input = slice.to_vec();
                let start = Instant::now();
                let o = path(black_box(input));
                total += start.elapsed().as_secs_f64() * 1e3;
                kept.push(o);
            }
            warm[i].push(total);
            if round == 0 {
                let slices = kept.iter().flat_map(|(out, _)| out);
                assert!(slices.eq(&expected), "{name}: warm-slice output differs");
            }
            drop(black_box(kept));
        }
    }
    for (tier, times) in [("cold", &mut cold), ("warm", &mut warm)] {
        for ((name, _), t) in PATHS.iter().zip(times.iter_mut()) {
            t.sort_by(f64::total_cmp);
            println!(
                "{tier} {name:<18} median {:6.2} ms  min {:6.2} ms",
                t[t.len() / 2],
                t[0]
            );
        }
    }
}
