//! Baselines the benches compare against, not part of the API (feature
//! `bench-internals`).

/// `convert.parse_rest_dispatch/clone-body`: the reference gateway's shape
/// (parse to a DOM, read fields by reference, deep-clone the body). Returns
/// the same requests as [`crate::parse_rest_dispatch`].
pub use crate::dispatch::rest::parse_rest_dispatch_clone_body;

/// `convert.parse_object_dispatch/visitor`: the serde-visitor parse alone
/// (the fallback and reference of [`crate::parse_object_dispatch`], which
/// scans the line first). Same results, errors included.
pub use crate::dispatch::object::parse_object_visitor as parse_object_dispatch_visitor;
