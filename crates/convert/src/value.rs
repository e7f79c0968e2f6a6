//! `serde_json::Value` <-> `google.protobuf.Struct`/`Value` (`prost-types`).
//!
//! # Two write paths
//!
//! * [`json_to_struct`] / [`json_to_prost_value`] borrow the JSON and clone
//!   every key and string into the protobuf value (the input stays usable).
//! * [`json_into_struct`] / [`json_into_prost_value`] consume the JSON and
//!   move its keys, strings and arrays' elements: only the map nodes and the
//!   list buffers of the protobuf side are allocated.
//!
//! Both produce identical values (`tests/dataset.rs` proves it on the whole
//! datagen sample).
//!
//! # Cache misses
//!
//! Converting a batch reads maps that are mostly out of cache, one node
//! after another. [`json_into_struct`] starts the loads of a map's nested
//! nodes and array buffers together before it walks them (`prefetch`);
//! it changes no result. The borrowing paths do not: their key and string
//! copies already overlap those misses, and prefetching there did not
//! measure faster on the bench batch (AMD EPYC). For a batch of objects,
//! [`crate::batch`] also starts the loads of the objects that come next.
//!
//! # Numbers
//!
//! A protobuf `NumberValue` is an f64. A JSON integer whose magnitude is past
//! 2^53 may not survive that. The plain functions round it to the nearest
//! f64 (the only thing an infallible signature can do); the `_checked`
//! variants return [`PrecisionLoss`] naming the path of the first integer
//! that would change, and convert nothing. Integers that an f64 holds
//! exactly (every one up to 2^53, and larger ones such as 2^60) pass.
//!
//! The read direction ([`struct_to_json`]) writes an integral f64 of
//! magnitude up to 2^53 as a JSON integer (so `{"seq": 7}` round-trips to
//! `7`, not `7.0`), any other finite f64 as a JSON float, and a NaN or an
//! infinity (which JSON cannot hold) as `null`.

use prost_types::value::Kind;
use prost_types::{ListValue, Struct, Value};
use serde_json::{Map, Number};

use crate::error::{JsonPath, PathSegment, PrecisionLoss};

/// 2^53: every integer of at most this magnitude is exact in an f64.
pub(crate) const EXACT_INT: u64 = 1 << 53;

/// Map building. Both sides' maps are key-ordered (`Struct::fields` and
/// serde_json's `Map` are `BTreeMap`s), so a conversion sees the entries
/// sorted. Maps with at least this many entries are built by collecting
/// them, which `BTreeMap` turns into one bulk build: no search per key and
/// full nodes, for one temporary vector. Smaller maps fit one node and are
/// cheaper inserted one by one (measured with callgrind: bulk-building
/// them too, or inserting them in descending order, costs more). A map
/// that is not sorted would only be sorted first: same result.
pub(crate) const BULK_MIN: usize = 12;

/// Asks the CPU to start loading the cache line at `p`, without waiting.
///
/// A prefetch reads nothing architecturally and never faults, whatever
/// the address (an empty `Vec`'s dangling pointer included); off x86-64
/// it is a no-op.
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of the x86-64 baseline, and `prefetcht0` has no
    // architectural effect (it cannot fault on any address).
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// A protobuf `NullValue`.
#[inline]
pub(crate) fn null() -> Value {
    Value {
        kind: Some(Kind::NullValue(0)),
    }
}

#[inline]
pub(crate) fn number_value(n: f64) -> Value {
    Value {
        kind: Some(Kind::NumberValue(n)),
    }
}

#[inline]
pub(crate) fn string_value(s: String) -> Value {
    Value {
        kind: Some(Kind::StringValue(s)),
    }
}

/// Whether `i` survives the trip through an f64.
#[inline]
pub(crate) fn i64_is_exact(i: i64) -> bool {
    i.unsigned_abs() <= EXACT_INT || (i as f64) as i128 == i128::from(i)
}

/// Whether `u` survives the trip through an f64.
#[inline]
pub(crate) fn u64_is_exact(u: u64) -> bool {
    u <= EXACT_INT || (u as f64) as i128 == i128::from(u)
}

/// The f64 of a JSON number; `Err` when `CHECK` and it is an integer an f64
/// cannot hold exactly.
#[inline]
fn number<const CHECK: bool>(n: &Number) -> Result<f64, PrecisionLoss> {
    if let Some(i) = n.as_i64() {
        if CHECK && !i64_is_exact(i) {
            return Err(loss(n));
        }
        Ok(i as f64)
    } else if let Some(u) = n.as_u64() {
        if CHECK && !u64_is_exact(u) {
            return Err(loss(n));
        }
        Ok(u as f64)
    } else {
        // Without serde_json's arbitrary_precision every other number is an
        // f64 already.
        Ok(n.as_f64().unwrap_or(f64::NAN))
    }
}

#[cold]
fn loss(n: &Number) -> PrecisionLoss {
    PrecisionLoss {
        path: JsonPath::default(),
        number: n.to_string(),
    }
}

#[cold]
fn at(mut e: PrecisionLoss, segment: PathSegment) -> PrecisionLoss {
    e.path.prepend(segment);
    e
}

fn value_ref<const CHECK: bool>(v: &serde_json::Value) -> Result<Value, PrecisionLoss> {
    let kind = match v {
        serde_json::Value::Null => Kind::NullValue(0),
        serde_json::Value::Bool(b) => Kind::BoolValue(*b),
        serde_json::Value::Number(n) => Kind::NumberValue(number::<CHECK>(n)?),
        serde_json::Value::String(s) => Kind::StringValue(s.clone()),
        serde_json::Value::Array(items) => {
            let mut values = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                values.push(value_ref::<CHECK>(item).map_err(|e| at(e, PathSegment::Index(i)))?);
            }
            Kind::ListValue(ListValue { values })
        }
        serde_json::Value::Object(map) => Kind::StructValue(struct_ref::<CHECK>(map)?),
    };
    Ok(Value { kind: Some(kind) })
}

fn struct_ref<const CHECK: bool>(
    map: &Map<String, serde_json::Value>,
) -> Result<Struct, PrecisionLoss> {
    // In key order, so the first lossy integer is the one reported; the
    // unchecked conversions are `struct_copied` / `struct_moved`.
    let mut out = Struct::default();
    for (key, v) in map {
        let v = value_ref::<CHECK>(v).map_err(|e| at(e, PathSegment::Key(key.clone())))?;
        out.fields.insert(key.clone(), v);
    }
    Ok(out)
}

fn value_owned<const CHECK: bool>(v: serde_json::Value) -> Result<Value, PrecisionLoss> {
    let kind = match v {
        serde_json::Value::Null => Kind::NullValue(0),
        serde_json::Value::Bool(b) => Kind::BoolValue(b),
        serde_json::Value::Number(n) => Kind::NumberValue(number::<CHECK>(&n)?),
        serde_json::Value::String(s) => Kind::StringValue(s),
        serde_json::Value::Array(items) => {
            // Collected in place: a JSON value and a protobuf `Value` have the
            // same size and alignment (a test checks it), so the list keeps the
            // array's buffer instead of allocating one and freeing the other.
            let values = items
                .into_iter()
                .enumerate()
                .map(|(i, item)| {
                    value_owned::<CHECK>(item).map_err(|e| at(e, PathSegment::Index(i)))
                })
                .collect::<Result<Vec<Value>, PrecisionLoss>>()?;
            Kind::ListValue(ListValue { values })
        }
        serde_json::Value::Object(map) => Kind::StructValue(struct_owned::<CHECK>(map)?),
    };
    Ok(Value { kind: Some(kind) })
}

/// The f64 of a JSON number, an integer past 2^53 rounded to the nearest
/// one (`number::<false>` without a `Result`).
#[inline]
fn number_lossy(n: &Number) -> f64 {
    // Without serde_json's arbitrary_precision every number has an f64.
    n.as_f64().unwrap_or(f64::NAN)
}

/// The unchecked borrowing conversion (integers past 2^53 round): the same
/// result as `value_ref`, with no `Result` travelling through the recursion.
fn value_copied(v: &serde_json::Value) -> Value {
    let kind = match v {
        serde_json::Value::Null => Kind::NullValue(0),
        serde_json::Value::Bool(b) => Kind::BoolValue(*b),
        serde_json::Value::Number(n) => Kind::NumberValue(number_lossy(n)),
        serde_json::Value::String(s) => Kind::StringValue(s.clone()),
        serde_json::Value::Array(items) => Kind::ListValue(ListValue {
            values: items.iter().map(value_copied).collect(),
        }),
        serde_json::Value::Object(map) => Kind::StructValue(struct_copied(map)),
    };
    Value { kind: Some(kind) }
}

pub(crate) fn struct_copied(map: &Map<String, serde_json::Value>) -> Struct {
    let entry = |(key, v): (&String, _)| (key.clone(), value_copied(v));
    if map.len() >= BULK_MIN {
        return Struct {
            fields: map.iter().map(entry).collect(),
        };
    }
    let mut out = Struct::default();
    for (key, v) in map.iter().map(entry) {
        out.fields.insert(key, v);
    }
    out
}

/// The unchecked consuming conversion (integers past 2^53 round): the same
/// result as `value_owned`, with no `Result` travelling through the
/// recursion.
fn value_moved(v: serde_json::Value) -> Value {
    let kind = match v {
        serde_json::Value::Null => Kind::NullValue(0),
        serde_json::Value::Bool(b) => Kind::BoolValue(b),
        serde_json::Value::Number(n) => Kind::NumberValue(number_lossy(&n)),
        serde_json::Value::String(s) => Kind::StringValue(s),
        // In place, as in `value_owned`.
        serde_json::Value::Array(items) => Kind::ListValue(ListValue {
            values: items.into_iter().map(value_moved).collect(),
        }),
        serde_json::Value::Object(map) => Kind::StructValue(struct_moved(map)),
    };
    Value { kind: Some(kind) }
}

/// Starts, all at once, the loads a conversion of `map` will wait for one
/// after another: the first node of each nested object (read here, its
/// first value slot prefetched) and the buffer of each array (prefetched).
/// A batch's parsed maps are mostly out of cache; without this each nested
/// object's node is a cache miss only when the conversion reaches it.
/// Used by the consuming path, which otherwise does little besides
/// walking the input (see the module docs for the borrowing paths).
#[inline]
fn prefetch_json_children(map: &Map<String, serde_json::Value>) {
    for v in map.values() {
        match v {
            serde_json::Value::Object(inner) => {
                if let Some((_, first)) = inner.iter().next() {
                    prefetch(first);
                }
            }
            serde_json::Value::Array(items) => prefetch(items.as_ptr()),
            _ => {}
        }
    }
}

pub(crate) fn struct_moved(map: Map<String, serde_json::Value>) -> Struct {
    prefetch_json_children(&map);
    let entry = |(key, v)| (key, value_moved(v));
    if map.len() >= BULK_MIN {
        return Struct {
            fields: map.into_iter().map(entry).collect(),
        };
    }
    let mut out = Struct::default();
    for (key, v) in map.into_iter().map(entry) {
        out.fields.insert(key, v);
    }
    out
}

fn struct_owned<const CHECK: bool>(
    map: Map<String, serde_json::Value>,
) -> Result<Struct, PrecisionLoss> {
    // In key order, so the first lossy integer is the one reported; the
    // unchecked conversions are `struct_copied` / `struct_moved`.
    let mut out = Struct::default();
    for (key, v) in map {
        match value_owned::<CHECK>(v) {
            Ok(v) => {
                out.fields.insert(key, v);
            }
            Err(e) => return Err(at(e, PathSegment::Key(key))),
        }
    }
    Ok(out)
}

/// Any JSON value -> a protobuf `Value`, borrowing the input (keys and
/// strings are cloned). Integers past 2^53 are rounded to the nearest f64;
/// see [`json_to_prost_value_checked`].
pub fn json_to_prost_value(v: &serde_json::Value) -> Value {
    value_copied(v)
}

/// [`json_to_prost_value`], refusing (with the path) any integer an f64
/// cannot hold exactly.
pub fn json_to_prost_value_checked(v: &serde_json::Value) -> Result<Value, PrecisionLoss> {
    value_ref::<true>(v)
}

/// Any JSON value -> a protobuf `Value`, consuming the input: keys, strings
/// and array elements are moved, not copied.
pub fn json_into_prost_value(v: serde_json::Value) -> Value {
    value_moved(v)
}

/// [`json_into_prost_value`], refusing (with the path) any integer an f64
/// cannot hold exactly. On error the input is consumed.
pub fn json_into_prost_value_checked(v: serde_json::Value) -> Result<Value, PrecisionLoss> {
    value_owned::<true>(v)
}

/// A JSON object -> a `Struct` (row write), borrowing the input and cloning
/// every key and string.
pub fn json_to_struct(map: &Map<String, serde_json::Value>) -> Struct {
    struct_copied(map)
}

/// [`json_to_struct`], refusing (with the path) any integer an f64 cannot
/// hold exactly.
pub fn json_to_struct_checked(
    map: &Map<String, serde_json::Value>,
) -> Result<Struct, PrecisionLoss> {
    struct_ref::<true>(map)
}

/// A JSON object -> a `Struct` (row write), consuming the input and moving
/// keys, strings and arrays. The result equals [`json_to_struct`]'s.
pub fn json_into_struct(map: Map<String, serde_json::Value>) -> Struct {
    struct_moved(map)
}

/// [`json_into_struct`], refusing (with the path) any integer an f64 cannot
/// hold exactly.
pub fn json_into_struct_checked(
    map: Map<String, serde_json::Value>,
) -> Result<Struct, PrecisionLoss> {
    struct_owned::<true>(map)
}

/// The JSON number of an f64: an integer when it is integral and at most
/// 2^53 in magnitude, `None` for NaN and infinities.
#[inline]
pub(crate) fn json_number(n: f64) -> Option<Number> {
    if n.fract() == 0.0 && n.abs() <= EXACT_INT as f64 {
        Some(Number::from(n as i64))
    } else {
        Number::from_f64(n)
    }
}

fn json_of_number(n: f64) -> serde_json::Value {
    json_number(n).map_or(serde_json::Value::Null, serde_json::Value::Number)
}

/// A protobuf `Value` -> JSON, borrowing (keys and strings are cloned). A
/// `Value` with no kind set reads as `null`.
pub fn prost_value_to_json(v: &Value) -> serde_json::Value {
    match &v.kind {
        None | Some(Kind::NullValue(_)) => serde_json::Value::Null,
        Some(Kind::BoolValue(b)) => serde_json::Value::Bool(*b),
        Some(Kind::NumberValue(n)) => json_of_number(*n),
        Some(Kind::StringValue(s)) => serde_json::Value::String(s.clone()),
        Some(Kind::ListValue(list)) => {
            serde_json::Value::Array(list.values.iter().map(prost_value_to_json).collect())
        }
        Some(Kind::StructValue(s)) => struct_to_json(s),
    }
}

/// A `Struct` -> a JSON object (row read), borrowing the input.
pub fn struct_to_json(s: &Struct) -> serde_json::Value {
    if s.fields.len() >= BULK_MIN {
        // Bulk-built from the sorted fields (see `BULK_MIN`).
        return serde_json::Value::Object(
            s.fields
                .iter()
                .map(|(key, v)| (key.clone(), prost_value_to_json(v)))
                .collect(),
        );
    }
    let mut map = Map::new();
    for (key, v) in &s.fields {
        map.insert(key.clone(), prost_value_to_json(v));
    }
    serde_json::Value::Object(map)
}

/// A protobuf `Value` -> JSON, consuming the input (strings and keys move).
pub fn prost_value_into_json(v: Value) -> serde_json::Value {
    match v.kind {
        None | Some(Kind::NullValue(_)) => serde_json::Value::Null,
        Some(Kind::BoolValue(b)) => serde_json::Value::Bool(b),
        Some(Kind::NumberValue(n)) => json_of_number(n),
        Some(Kind::StringValue(s)) => serde_json::Value::String(s),
        Some(Kind::ListValue(list)) => {
            serde_json::Value::Array(list.values.into_iter().map(prost_value_into_json).collect())
        }
        Some(Kind::StructValue(s)) => struct_into_json(s),
    }
}

/// A `Struct` -> a JSON object, consuming the input (keys and strings move).
pub fn struct_into_json(s: Struct) -> serde_json::Value {
    let mut map = Map::new();
    for (key, v) in s.fields {
        map.insert(key, prost_value_into_json(v));
    }
    serde_json::Value::Object(map)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kinds_round_trip() {
        let j = json!({"a": null, "b": true, "c": 1.5, "d": "x", "e": [1, "y"], "f": {"g": -3}});
        let map = j.as_object().cloned().unwrap_or_default();
        let s = json_to_struct(&map);
        assert_eq!(s, json_into_struct(map));
        assert_eq!(struct_to_json(&s), j);
        assert_eq!(struct_into_json(s), j);
    }

    #[test]
    fn big_integers_are_reported_by_the_checked_paths() {
        let exact = json!({"n": 9007199254740992u64, "m": 1u64 << 60, "k": -9007199254740992i64});
        let map = exact.as_object().cloned().unwrap_or_default();
        assert!(json_to_struct_checked(&map).is_ok());
        let lossy = json!({"outer": {"list": [0, 9007199254740993u64]}});
        let err = json_to_prost_value_checked(&lossy).unwrap_err();
        assert_eq!(err.path.to_string(), "outer.list[1]");
        assert_eq!(err.number, "9007199254740993");
        let err = json_into_prost_value_checked(lossy.clone()).unwrap_err();
        assert_eq!(err.path.to_string(), "outer.list[1]");
        // The unchecked path rounds.
        let v = json_to_prost_value(&json!(9007199254740993u64));
        assert_eq!(v.kind, Some(Kind::NumberValue(9007199254740992.0)));
        assert!(json_to_prost_value_checked(&json!(i64::MIN)).is_ok());
        assert!(json_to_prost_value_checked(&json!(i64::MAX)).is_err());
        assert!(json_to_prost_value_checked(&json!(u64::MAX)).is_err());
    }

    #[test]
    fn moved_lists_keep_their_buffer() {
        // The in-place collects of `value_owned` / `value_moved` rely on equal layouts.
        assert_eq!(
            std::alloc::Layout::new::<serde_json::Value>(),
            std::alloc::Layout::new::<Value>()
        );
        let items: Vec<serde_json::Value> = (0..10).map(|i| json!(i)).collect();
        let buffer = items.as_ptr() as usize;
        let Some(Kind::ListValue(list)) =
            json_into_prost_value(serde_json::Value::Array(items)).kind
        else {
            panic!("not a list");
        };
        assert_eq!(list.values.as_ptr() as usize, buffer);
        assert_eq!(list.values.len(), 10);
        assert_eq!(list.values[9], number_value(9.0));
    }

    #[test]
    fn bulk_built_maps_equal_the_inserted_ones() {
        // Sizes around `BULK_MIN`, nested, keys whose order differs from
        // their insertion order; the `_checked` paths insert one by one.
        for n in [0, 1, BULK_MIN - 1, BULK_MIN, BULK_MIN + 1, 40] {
            let mut map = Map::new();
            for i in (0..n).rev() {
                let mut inner = Map::new();
                for j in 0..n {
                    inner.insert(format!("k{j:02}"), json!([i, j, "s"]));
                }
                map.insert(format!("key-{i}"), serde_json::Value::Object(inner));
            }
            let cloned = json_to_struct(&map);
            assert_eq!(cloned.fields.len(), n);
            assert_eq!(Ok(&cloned), json_to_struct_checked(&map).as_ref());
            assert_eq!(cloned, json_into_struct(map.clone()));
            assert_eq!(Ok(&cloned), json_into_struct_checked(map.clone()).as_ref());
            let dom = serde_json::Value::Object(map);
            assert_eq!(struct_to_json(&cloned), dom);
            assert_eq!(struct_into_json(cloned), dom);
        }
    }

    #[test]
    fn numbers_read_back_as_integers_when_integral() {
        assert_eq!(prost_value_to_json(&number_value(7.0)), json!(7));
        assert_eq!(prost_value_to_json(&number_value(-0.5)), json!(-0.5));
        assert_eq!(prost_value_to_json(&number_value(1e300)), json!(1e300));
        assert_eq!(prost_value_to_json(&number_value(f64::NAN)), json!(null));
        assert_eq!(prost_value_to_json(&Value { kind: None }), json!(null));
    }
}
