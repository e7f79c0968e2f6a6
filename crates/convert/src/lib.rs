//! The data-gateway conversions of atbench (`docs/design/hotpath.md`,
//! "crates/convert"): JSON <-> `google.protobuf.Struct`/`Value` as
//! `prost-types` defines them, dispatch-line parsing, context merging and
//! SQL rows -> record sets.
//!
//! | concept | module | entry points |
//! |---|---|---|
//! | JSON DOM <-> protobuf | [`value`] | [`struct_to_json`], [`json_to_struct`] (borrow + clone), [`json_into_struct`] (consume + move), [`json_to_prost_value`], `_checked` variants |
//! | many rows at once | [`batch`] | [`json_to_structs`], [`json_into_structs`] (looks ahead) |
//! | JSON text <-> protobuf | [`text`] | [`struct_from_json_str`], [`struct_from_json_str_into`] (reuse), [`write_struct_json`] |
//! | dispatch lines | [`dispatch`] | [`parse_sql_dispatch`], [`parse_object_dispatch`], [`parse_rest_dispatch`], [`object_bytes_from_json`] |
//! | BLOB cells | [`cell`] | [`base64_cell`] |
//! | request context | [`context`] | [`merge_context`] |
//! | result sets | [`record_set`] | [`rows_to_record_set`] |
//!
//! # Integers past 2^53
//!
//! A protobuf `NumberValue` is an f64. The infallible conversions
//! ([`json_to_struct`], [`json_into_struct`], [`json_to_prost_value`])
//! round such an integer to the nearest f64, because their signature
//! cannot say anything else; every conversion that returns a `Result`
//! reports it instead, naming its path: the `_checked` DOM variants and the
//! text parser return [`PrecisionLoss`], [`rows_to_record_set`] writes an
//! inexact `Int` cell as its decimal string (the proto3 JSON mapping's
//! int64 convention) and refuses one inside a JSON cell. The dispatch
//! parsers keep numbers as `serde_json` numbers, which are exact.
//!
//! # Errors and panics
//!
//! Every malformed line or value is a typed error ([`DispatchError`],
//! [`TextError`], [`PrecisionLoss`], [`RecordSetError`]) naming the field
//! or path. No input-dependent path unwraps; property tests and a
//! fuzz-style test (random bytes, mutated datagen lines) check that nothing
//! panics.
//!
//! All base64 goes through the `codec` crate.

pub mod batch;
pub mod cell;
pub mod context;
pub mod dispatch;
pub mod error;
pub mod record_set;
pub mod text;
pub mod value;

#[cfg(feature = "bench-internals")]
#[doc(hidden)]
pub mod bench_internals;

pub use batch::{json_into_structs, json_to_structs};
pub use cell::{BASE64_CELL_PREFIX, base64_cell, base64_cell_bytes, base64_cell_into};
pub use context::{Consistency, Context, merge_context};
pub use dispatch::{
    INLINE_PAYLOAD_CAP, InlinePayload, Method, ObjectDispatch, ObjectOp, PayloadEncoding, RestBody,
    RestDispatch, SqlDispatch, object_bytes_from_json, object_bytes_into, parse_object_dispatch,
    parse_rest_dispatch, parse_rest_dispatch_value, parse_sql_dispatch,
};
pub use error::{DispatchError, JsonPath, PathSegment, PrecisionLoss, TextError};
pub use record_set::{Cell, RecordSet, RecordSetError, RecordSetMode, rows_to_record_set};
pub use text::{struct_from_json_str, struct_from_json_str_into, write_struct_json};
pub use value::{
    json_into_prost_value, json_into_prost_value_checked, json_into_struct,
    json_into_struct_checked, json_to_prost_value, json_to_prost_value_checked, json_to_struct,
    json_to_struct_checked, prost_value_into_json, prost_value_to_json, struct_into_json,
    struct_to_json,
};

/// The protobuf types this crate converts to and from (re-exported so
/// callers need not pin `prost-types` themselves).
pub use prost_types;
