//! JSON text <-> `Struct` without a `serde_json::Value` in between.
//!
//! * [`struct_from_json_str`]: a serde visitor builds the protobuf values
//!   straight from the text (parse + row write in one pass).
//! * [`struct_from_json_str_into`]: the same into an existing `Struct`,
//!   reusing its keys, strings and lists: a stream of same-shaped rows
//!   decoded into one `Struct` allocates only the map nodes and whatever
//!   outgrows its previous capacity.
//! * [`write_struct_json`]: `Struct` -> JSON text appended to a buffer (row
//!   read for a response body), with no allocation beyond the buffer's
//!   growth.
//!
//! Numbers follow [`crate::value`]: an integer an f64 cannot hold exactly is
//! refused with [`TextError::PrecisionLoss`] naming its path (the API
//! returns a `Result`, so it can say so); the writer prints integral values
//! up to 2^53 as integers and NaN/infinities as `null`.

use std::collections::BTreeMap;
use std::fmt;

use prost_types::value::Kind;
use prost_types::{ListValue, Struct, Value};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

use crate::error::{JsonPath, PathSegment, PrecisionLoss, TextError};
use crate::value::{EXACT_INT, i64_is_exact, u64_is_exact};

/// Where a visitor parks the typed error it raised (serde's error type
/// cannot carry it), with the path filled in while unwinding.
type Slot = Option<PrecisionLoss>;

/// Deserializes one JSON value into `target`, reusing what it holds.
struct InPlace<'a, 's> {
    target: &'a mut Value,
    slot: &'s mut Slot,
}

/// Deserializes one JSON object into `target`'s fields, reusing entries
/// whose key recurs.
struct InPlaceStruct<'a, 's> {
    target: &'a mut Struct,
    slot: &'s mut Slot,
}

fn replace(target: &mut Value, kind: Kind) {
    target.kind = Some(kind);
}

fn check_i64<E: de::Error>(i: i64, slot: &mut Slot) -> Result<f64, E> {
    if i64_is_exact(i) {
        Ok(i as f64)
    } else {
        Err(raise(slot, i.to_string()))
    }
}

fn check_u64<E: de::Error>(u: u64, slot: &mut Slot) -> Result<f64, E> {
    if u64_is_exact(u) {
        Ok(u as f64)
    } else {
        Err(raise(slot, u.to_string()))
    }
}

#[cold]
fn raise<E: de::Error>(slot: &mut Slot, number: String) -> E {
    *slot = Some(PrecisionLoss {
        path: JsonPath::default(),
        number,
    });
    E::custom("precision loss")
}

#[cold]
fn locate(slot: &mut Slot, segment: impl FnOnce() -> PathSegment) {
    if let Some(e) = slot.as_mut() {
        e.path.prepend(segment());
    }
}

impl<'de> DeserializeSeed<'de> for InPlace<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for InPlace<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<(), E> {
        replace(self.target, Kind::BoolValue(b));
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, i: i64) -> Result<(), E> {
        let n = check_i64(i, self.slot)?;
        replace(self.target, Kind::NumberValue(n));
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, u: u64) -> Result<(), E> {
        let n = check_u64(u, self.slot)?;
        replace(self.target, Kind::NumberValue(n));
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, n: f64) -> Result<(), E> {
        replace(self.target, Kind::NumberValue(n));
        Ok(())
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<(), E> {
        match &mut self.target.kind {
            Some(Kind::StringValue(old)) => {
                old.clear();
                old.push_str(s);
            }
            _ => replace(self.target, Kind::StringValue(s.to_owned())),
        }
        Ok(())
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<(), E> {
        match &mut self.target.kind {
            Some(Kind::StringValue(old)) if old.capacity() >= s.len() => {
                old.clear();
                old.push_str(&s);
            }
            _ => replace(self.target, Kind::StringValue(s)),
        }
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        replace(self.target, Kind::NullValue(0));
        Ok(())
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.visit_unit()
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        if !matches!(self.target.kind, Some(Kind::ListValue(_))) {
            replace(self.target, Kind::ListValue(ListValue::default()));
        }
        let Some(Kind::ListValue(list)) = &mut self.target.kind else {
            return Err(de::Error::custom("unreachable: list just set"));
        };
        let values = &mut list.values;
        let mut n = 0;
        loop {
            if n == values.len() {
                values.push(Value { kind: None });
            }
            let seed = InPlace {
                target: &mut values[n],
                slot: &mut *self.slot,
            };
            match seq.next_element_seed(seed) {
                Ok(Some(())) => n += 1,
                Ok(None) => break,
                Err(e) => {
                    locate(self.slot, || PathSegment::Index(n));
                    return Err(e);
                }
            }
        }
        values.truncate(n);
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        if !matches!(self.target.kind, Some(Kind::StructValue(_))) {
            replace(self.target, Kind::StructValue(Struct::default()));
        }
        let Some(Kind::StructValue(target)) = &mut self.target.kind else {
            return Err(de::Error::custom("unreachable: struct just set"));
        };
        InPlaceStruct {
            target,
            slot: self.slot,
        }
        .visit_map(map)
    }
}

impl<'de> DeserializeSeed<'de> for InPlaceStruct<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

/// A map key, borrowed from the text when it has no escapes.
struct Key<'de>(std::borrow::Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Owned(s.to_owned())))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Owned(s)))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

impl<'de> Visitor<'de> for InPlaceStruct<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        // Entries of the previous content are taken out by key and put
        // back, so a recurring key keeps its String and its value's
        // buffers; keys that do not recur are dropped with `old`.
        let mut old = std::mem::take(&mut self.target.fields);
        let fields: &mut BTreeMap<String, Value> = &mut self.target.fields;
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            let (key, mut value) = match old.remove_entry(key.as_ref()) {
                Some(entry) => entry,
                None => match fields.remove_entry(key.as_ref()) {
                    // A duplicate key: the last one wins, as in serde_json.
                    Some(entry) => entry,
                    None => (key.into_owned(), Value { kind: None }),
                },
            };
            let seed = InPlace {
                target: &mut value,
                slot: &mut *self.slot,
            };
            if let Err(e) = map.next_value_seed(seed) {
                locate(self.slot, || PathSegment::Key(key.clone()));
                return Err(e);
            }
            fields.insert(key, value);
        }
        Ok(())
    }
}

fn finish(
    result: Result<(), serde_json::Error>,
    slot: Slot,
    top_is_object: bool,
) -> Result<(), TextError> {
    match (result, slot) {
        (_, Some(loss)) => Err(TextError::PrecisionLoss(loss)),
        (Ok(()), None) => Ok(()),
        (Err(_), None) if !top_is_object => Err(TextError::NotAnObject),
        (Err(e), None) => Err(TextError::Syntax(e)),
    }
}

/// Whether the first non-blank byte opens an object (to tell "not an
/// object" from a syntax error inside one).
fn opens_object(text: &str) -> bool {
    text.trim_start_matches([' ', '\t', '\n', '\r'])
        .starts_with('{')
}

/// Parses a JSON object text straight into a new `Struct`.
///
/// # Errors
/// [`TextError::Syntax`] for malformed JSON (or trailing bytes),
/// [`TextError::NotAnObject`] when the top level is another kind of value,
/// [`TextError::PrecisionLoss`] for an integer an f64 cannot hold exactly.
pub fn struct_from_json_str(text: &str) -> Result<Struct, TextError> {
    let mut out = Struct::default();
    struct_from_json_str_into(text, &mut out)?;
    Ok(out)
}

/// Parses a JSON object text into `out`, replacing its content but reusing
/// its allocations: entries whose key recurs keep their key `String`, and
/// their strings and lists are overwritten in place. Keys absent from
/// `text` are removed. On error `out` holds a valid but unspecified mix.
///
/// # Errors
/// As [`struct_from_json_str`].
pub fn struct_from_json_str_into(text: &str, out: &mut Struct) -> Result<(), TextError> {
    let mut slot = None;
    let mut de = serde_json::Deserializer::from_str(text);
    let result = InPlaceStruct {
        target: out,
        slot: &mut slot,
    }
    .deserialize(&mut de)
    .and_then(|()| de.end());
    finish(result, slot, opens_object(text))
}

/// Serializes a protobuf `Value` as JSON (see the module docs for numbers).
pub struct JsonValue<'a>(pub &'a Value);

/// Serializes a `Struct` as a JSON object.
pub struct JsonStruct<'a>(pub &'a Struct);

impl Serialize for JsonStruct<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.fields.len()))?;
        for (key, value) in &self.0.fields {
            map.serialize_entry(key, &JsonValue(value))?;
        }
        map.end()
    }
}

impl Serialize for JsonValue<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.0.kind {
            None | Some(Kind::NullValue(_)) => s.serialize_unit(),
            Some(Kind::BoolValue(b)) => s.serialize_bool(*b),
            Some(Kind::NumberValue(n)) => {
                if n.fract() == 0.0 && n.abs() <= EXACT_INT as f64 {
                    s.serialize_i64(*n as i64)
                } else if n.is_finite() {
                    s.serialize_f64(*n)
                } else {
                    s.serialize_unit()
                }
            }
            Some(Kind::StringValue(v)) => s.serialize_str(v),
            Some(Kind::ListValue(list)) => {
                let mut seq = s.serialize_seq(Some(list.values.len()))?;
                for v in &list.values {
                    seq.serialize_element(&JsonValue(v))?;
                }
                seq.end()
            }
            Some(Kind::StructValue(st)) => JsonStruct(st).serialize(s),
        }
    }
}

/// Appends the JSON text of `s` to `out` (row read for a response body).
/// The text parses back to [`crate::struct_to_json`]'s value.
pub fn write_struct_json(s: &Struct, out: &mut Vec<u8>) {
    // Writing into a Vec cannot fail, and every key is a string.
    if serde_json::to_writer(&mut *out, &JsonStruct(s)).is_err() {
        out.extend_from_slice(b"null");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by `fuzz/fuzz_targets/json_text.rs`: a long integer parsed one
    /// ulp off the nearest f64, so writing the Struct and parsing it again
    /// gave another number. Every number must parse to the nearest f64
    /// (what Rust's own `str::parse::<f64>` gives) and survive the trip.
    #[test]
    fn numbers_parse_to_the_nearest_double_and_survive_a_round_trip() {
        let digits = "7".repeat(106);
        for number in [
            digits.as_str(),
            "61.0918",
            "0.529592",
            "1e308",
            "2.2250738585072014e-308",
        ] {
            let text = format!("{{\"n\":{number}}}");
            let parsed = struct_from_json_str(&text).expect("valid JSON");
            let want: f64 = number.parse().expect("a float");
            match parsed.fields["n"].kind {
                Some(prost_types::value::Kind::NumberValue(got)) => {
                    assert_eq!(got.to_bits(), want.to_bits(), "{number}")
                }
                ref other => panic!("{number}: {other:?}"),
            }
            let mut written = Vec::new();
            write_struct_json(&parsed, &mut written);
            let again = struct_from_json_str(std::str::from_utf8(&written).expect("UTF-8"))
                .expect("written JSON parses");
            assert_eq!(again, parsed, "{number}");
        }
    }

    #[test]
    fn text_and_dom_paths_agree() {
        let text = r#"{"a":[1,{"b":"x\"y"}],"c":null,"d":-2.5,"e":true,"f":{}}"#;
        let dom: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
        let s = struct_from_json_str(text).unwrap_or_default();
        assert_eq!(
            s,
            crate::json_to_struct(dom.as_object().unwrap_or(&serde_json::Map::new()))
        );
        let mut out = Vec::new();
        write_struct_json(&s, &mut out);
        let back: serde_json::Value = serde_json::from_slice(&out).unwrap_or_default();
        assert_eq!(back, dom);
    }

    #[test]
    fn reuse_replaces_everything() {
        let mut s = struct_from_json_str(r#"{"a":"long string","b":[1,2,3],"c":{"x":1}}"#)
            .unwrap_or_default();
        struct_from_json_str_into(r#"{"a":"s","b":[true],"d":"new","c":{"y":2}}"#, &mut s)
            .unwrap_or_default();
        assert_eq!(
            s,
            struct_from_json_str(r#"{"a":"s","b":[true],"c":{"y":2},"d":"new"}"#)
                .unwrap_or_default()
        );
    }

    #[test]
    fn errors_are_typed() {
        assert!(matches!(
            struct_from_json_str("[1]"),
            Err(TextError::NotAnObject)
        ));
        assert!(matches!(
            struct_from_json_str("{\"a\":"),
            Err(TextError::Syntax(_))
        ));
        assert!(matches!(
            struct_from_json_str("{} x"),
            Err(TextError::Syntax(_))
        ));
        match struct_from_json_str(r#"{"k":{"l":[0,18446744073709551615]}}"#) {
            Err(TextError::PrecisionLoss(e)) => assert_eq!(e.path.to_string(), "k.l[1]"),
            other => panic!("{other:?}"),
        }
    }
}
