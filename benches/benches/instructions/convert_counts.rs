//! convert: `json_to_structs` (clone) and `json_into_structs` (move) over
//! the first 256 seeded sample records, and `parse_rest_dispatch` (the
//! move-body entry point) over the first 256 REST dispatch lines: the same
//! inputs as the head of `--bench hotpath`'s `convert.*` batches.
//!
//! Outputs go to the teardown, so their checks and their drop are not
//! counted. So does an input the path under count only borrows; a consumed
//! input's drop is counted (the move path frees it as it goes, which is
//! part of what it does).

use std::hint::black_box;

use convert::prost_types::Struct;
use convert::{DispatchError, RestDispatch};
use datagen::hotpath::{Kind, lines};
use gungraun::{library_benchmark, library_benchmark_group};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

const RECORDS: usize = 256;

type Records = Vec<Map<String, Value>>;
/// A conversion under count: the structs, and the input if it survives.
type ToStructs = fn(Records) -> (Vec<Struct>, Records);

fn clone_path(maps: Records) -> (Vec<Struct>, Records) {
    let out = convert::json_to_structs(black_box(&maps));
    (out, maps)
}

fn move_path(maps: Records) -> (Vec<Struct>, Records) {
    (convert::json_into_structs(black_box(maps)), Vec::new())
}

fn records(n: usize) -> Records {
    lines(Kind::Records, n)
        .iter()
        .map(|l| match serde_json::from_str(l) {
            Ok(Value::Object(map)) => map,
            other => panic!("sample record is not an object: {other:?}"),
        })
        .collect()
}

fn struct_input(path: ToStructs, n: usize) -> (ToStructs, Records) {
    (path, records(n))
}

/// Both paths give the structs the clone path gives outside the count.
fn check_structs((out, _input): (Vec<Struct>, Records)) {
    assert_eq!(out.len(), RECORDS, "one struct per record");
    assert_eq!(out, convert::json_to_structs(&records(RECORDS)));
}

#[library_benchmark]
#[bench::clone__256(args = (clone_path, RECORDS), setup = struct_input, teardown = check_structs)]
#[bench::move__256(args = (move_path, RECORDS), setup = struct_input, teardown = check_structs)]
fn json_to_struct((path, maps): (ToStructs, Records)) -> (Vec<Struct>, Records) {
    path(maps)
}

type Parsed = Vec<Result<RestDispatch<Box<RawValue>>, DispatchError>>;

fn rest_lines(n: usize) -> Vec<String> {
    lines(Kind::RestDispatch, n)
}

fn check_requests((out, _lines): (Parsed, Vec<String>)) {
    assert_eq!(out.len(), RECORDS, "one request per line");
    assert!(
        out.iter().all(Result::is_ok),
        "a sample line fails to parse"
    );
}

#[library_benchmark]
#[bench::move__256(args = (RECORDS), setup = rest_lines, teardown = check_requests)]
fn parse_rest_dispatch(lines: Vec<String>) -> (Parsed, Vec<String>) {
    let out = black_box(&lines)
        .iter()
        .map(|l| convert::parse_rest_dispatch(l))
        .collect();
    (out, lines)
}

library_benchmark_group!(
    name = convert_group;
    benchmarks = json_to_struct, parse_rest_dispatch
);
