//! Batch row writes: many JSON objects -> `Struct`s in one call.
//!
//! A gateway converts the rows of a result or a request batch together.
//! [`json_to_structs`] and [`json_into_structs`] give the same Structs as
//! calling [`json_to_struct`] / [`json_into_struct`] on each object in
//! turn (a test checks it); what the batch adds is the chance to look at
//! the objects that come next.
//!
//! # Look-ahead (the consuming path)
//!
//! The consuming conversion does little besides walking its input, so on
//! a batch that is out of cache it waits on one B-tree node after another.
//! [`json_into_structs`] starts those loads a few objects ahead, in three
//! stages, each reading only what the stage before it brought in:
//!
//! | distance | stage |
//! |---|---|
//! | [`NODES_AHEAD`] | the object's first and last leaf (loads its root and both ends) |
//! | [`KEYS_AHEAD`] | every entry: its key's bytes and each array's buffer prefetched, each nested object's ends loaded |
//! | [`NESTED_AHEAD`] | the nested objects: the same as the stage above, one level down |
//!
//! Deeper levels are left to the conversion's own per-map prefetch. None
//! of it changes a result. Against mapping `json_into_struct` over the
//! bench batch it takes less time on both the cold batch and the warm
//! slices (`examples/convert_ab.rs`, interleaved rounds; the bench rows are
//! `convert.json_to_struct/move/{8k,8k.warm}`). What is left of the cold
//! batch's extra time is mostly
//! the first stage's own loads (a record's root, then its leaves: two
//! misses in a row that nothing can start earlier through the map's API).
//!
//! The borrowing path does not look ahead: it allocates a copy of every
//! key and string, and its time is those allocations. The same stages,
//! with the strings' bytes prefetched too, measured no faster there.
//!
//! [`json_to_struct`]: crate::json_to_struct
//! [`json_into_struct`]: crate::json_into_struct

use prost_types::Struct;
use serde_json::{Map, Value};

use crate::value::{prefetch, struct_copied, struct_moved};

/// How far ahead (in objects) the first stage loads an object's leaves.
pub const NODES_AHEAD: usize = 6;
/// How far ahead the second stage prefetches keys and nested leaves.
pub const KEYS_AHEAD: usize = 4;
/// How far ahead the third stage does the same one level down.
pub const NESTED_AHEAD: usize = 2;

/// Many JSON objects -> `Struct`s, borrowing (every key and string is
/// cloned). Equals mapping [`crate::json_to_struct`] over `maps`.
pub fn json_to_structs(maps: &[Map<String, Value>]) -> Vec<Struct> {
    maps.iter().map(struct_copied).collect()
}

/// Many JSON objects -> `Struct`s, consuming them (keys, strings and arrays
/// move). Equals mapping [`crate::json_into_struct`] over `maps`; loads the
/// objects ahead of the conversion (module docs).
pub fn json_into_structs(maps: Vec<Map<String, Value>>) -> Vec<Struct> {
    let mut out = Vec::with_capacity(maps.len());
    let mut rest = maps.into_iter();
    loop {
        let ahead = rest.as_slice();
        if let Some(m) = ahead.get(NODES_AHEAD) {
            load_ends(m);
        }
        if let Some(m) = ahead.get(KEYS_AHEAD) {
            load_entries(m);
        }
        if let Some(m) = ahead.get(NESTED_AHEAD) {
            for v in m.values() {
                if let Value::Object(inner) = v {
                    load_entries(inner);
                }
            }
        }
        let Some(map) = rest.next() else { break };
        out.push(struct_moved(map));
    }
    out
}

/// Loads `map`'s first and last leaf (and so its root): the only way to
/// reach a B-tree node through the map's API is to read it.
#[inline(always)]
fn load_ends(map: &Map<String, Value>) {
    if let Some((key, _)) = map.iter().next() {
        prefetch(key);
    }
    if let Some((key, _)) = map.iter().next_back() {
        prefetch(key);
    }
}

/// For every entry of `map` (its nodes loaded by [`load_ends`] earlier):
/// prefetches the key's bytes and an array's buffer, loads a nested
/// object's ends.
#[inline(always)]
fn load_entries(map: &Map<String, Value>) {
    for (key, v) in map {
        prefetch(key.as_ptr());
        match v {
            Value::Object(inner) => load_ends(inner),
            Value::Array(items) => prefetch(items.as_ptr()),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn objects(n: usize) -> Vec<Map<String, Value>> {
        (0..n)
            .map(|i| {
                let v = json!({
                    "id": format!("r{i}"), "seq": i, "tags": ["a", "b"],
                    "meta": {"source": {"kind": "k", "n": i}, "lang": "en"},
                    "k00": 0, "k01": 1, "k02": 2, "k03": 3, "k04": 4, "k05": 5,
                    "k06": 6, "k07": 7, "k08": 8, "k09": 9, "k10": null,
                });
                v.as_object().cloned().unwrap_or_default()
            })
            .collect()
    }

    #[test]
    fn batches_equal_the_per_object_conversions() {
        // Shorter and longer than every look-ahead distance.
        for n in [0, 1, NESTED_AHEAD, KEYS_AHEAD + 1, NODES_AHEAD + 1, 40] {
            let maps = objects(n);
            let one_by_one: Vec<Struct> = maps.iter().map(crate::json_to_struct).collect();
            assert_eq!(json_to_structs(&maps), one_by_one);
            assert_eq!(json_into_structs(maps), one_by_one);
        }
    }

    #[test]
    fn empty_objects_pass_among_full_ones() {
        let maps = vec![Map::new(), objects(1).remove(0), Map::new()];
        let expected: Vec<Struct> = maps.iter().map(crate::json_to_struct).collect();
        assert_eq!(json_into_structs(maps), expected);
    }
}
