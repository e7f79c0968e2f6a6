//! The two value trees: [`ValueRef`] (borrowed) and [`Value`] (owned).
//!
//! Maps keep their entries in DAG-CBOR canonical key order (length, then
//! bytes) at all times, so encoding never sorts and a decoded map is already
//! in that order. Lookups binary-search with the same ordering.

use super::key_cmp;
use crate::cid::Cid;

/// A borrowed data-model value: text and bytes point into the decoded input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueRef<'a> {
    /// `null`.
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer (i64 range).
    Int(i64),
    /// A text string.
    Text(&'a str),
    /// A byte string.
    Bytes(&'a [u8]),
    /// A list.
    List(Vec<ValueRef<'a>>),
    /// A map with text keys.
    Map(MapRef<'a>),
    /// A CID link (tag 42).
    Link(Cid),
}

/// An owned data-model value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// `null`.
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer (i64 range).
    Int(i64),
    /// A text string.
    Text(String),
    /// A byte string.
    Bytes(Vec<u8>),
    /// A list.
    List(Vec<Value>),
    /// A map with text keys.
    Map(Map),
    /// A CID link (tag 42).
    Link(Cid),
}

/// A borrowed map, entries in canonical key order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MapRef<'a> {
    entries: Vec<(&'a str, ValueRef<'a>)>,
}

/// An owned map, entries in canonical key order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Map {
    entries: Vec<(String, Value)>,
}

impl<'a> MapRef<'a> {
    /// Wraps entries the caller guarantees are in canonical order without
    /// duplicates (as the decoder produces them).
    pub(crate) fn from_sorted(entries: Vec<(&'a str, ValueRef<'a>)>) -> Self {
        MapRef { entries }
    }

    /// Builds a map from entries in any order; later duplicates win.
    pub fn from_entries(mut entries: Vec<(&'a str, ValueRef<'a>)>) -> Self {
        entries.sort_by(|a, b| key_cmp(a.0, b.0));
        dedup_last(&mut entries, |e| e.0);
        MapRef { entries }
    }

    /// The value under `key`.
    pub fn get(&self, key: &str) -> Option<&ValueRef<'a>> {
        self.entries
            .binary_search_by(|e| key_cmp(e.0, key))
            .ok()
            .map(|i| &self.entries[i].1)
    }

    /// Entry count.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries, in canonical order.
    pub fn entries(&self) -> &[(&'a str, ValueRef<'a>)] {
        &self.entries
    }

    /// An owned copy.
    pub fn to_owned_map(&self) -> Map {
        Map {
            entries: self
                .entries
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.to_owned_value()))
                .collect(),
        }
    }
}

impl Map {
    /// An empty map.
    pub fn new() -> Self {
        Map::default()
    }

    pub(crate) fn from_sorted(entries: Vec<(String, Value)>) -> Self {
        Map { entries }
    }

    /// The value under `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.find(key).ok().map(|i| &self.entries[i].1)
    }

    fn find(&self, key: &str) -> Result<usize, usize> {
        self.entries.binary_search_by(|e| key_cmp(&e.0, key))
    }

    /// Inserts or replaces; returns the previous value.
    pub fn insert(&mut self, key: impl Into<String>, value: Value) -> Option<Value> {
        let key = key.into();
        match self.find(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.entries[i].1, value)),
            Err(i) => {
                self.entries.insert(i, (key, value));
                None
            }
        }
    }

    /// Removes `key`; returns its value.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        self.find(key).ok().map(|i| self.entries.remove(i).1)
    }

    /// Entry count.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries, in canonical order.
    pub fn entries(&self) -> &[(String, Value)] {
        &self.entries
    }

    /// Iterates (key, value) in canonical order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v))
    }
}

impl FromIterator<(String, Value)> for Map {
    fn from_iter<T: IntoIterator<Item = (String, Value)>>(iter: T) -> Self {
        let mut entries: Vec<(String, Value)> = iter.into_iter().collect();
        // Stable sort keeps insertion order among equal keys; keep the last.
        entries.sort_by(|a, b| key_cmp(&a.0, &b.0));
        dedup_last(&mut entries, |e| e.0.as_str());
        Map { entries }
    }
}

fn dedup_last<T>(entries: &mut Vec<T>, key: impl Fn(&T) -> &str) {
    // `dedup_by` keeps the earlier element; swap so the later one survives.
    entries.dedup_by(|later, earlier| {
        if key(later) == key(earlier) {
            std::mem::swap(later, earlier);
            true
        } else {
            false
        }
    });
}

impl<'a> ValueRef<'a> {
    /// An owned copy.
    pub fn to_owned_value(&self) -> Value {
        match self {
            ValueRef::Null => Value::Null,
            ValueRef::Bool(b) => Value::Bool(*b),
            ValueRef::Int(i) => Value::Int(*i),
            ValueRef::Text(s) => Value::Text((*s).to_owned()),
            ValueRef::Bytes(b) => Value::Bytes(b.to_vec()),
            ValueRef::List(l) => Value::List(l.iter().map(ValueRef::to_owned_value).collect()),
            ValueRef::Map(m) => Value::Map(m.to_owned_map()),
            ValueRef::Link(c) => Value::Link(*c),
        }
    }

    /// The map, if this is one.
    pub fn as_map(&self) -> Option<&MapRef<'a>> {
        match self {
            ValueRef::Map(m) => Some(m),
            _ => None,
        }
    }

    /// The text, if this is text.
    pub fn as_text(&self) -> Option<&'a str> {
        match self {
            ValueRef::Text(s) => Some(s),
            _ => None,
        }
    }

    /// Looks up `key` when this is a map.
    pub fn get(&self, key: &str) -> Option<&ValueRef<'a>> {
        self.as_map().and_then(|m| m.get(key))
    }
}

impl Value {
    /// A borrowed view of this value (allocates the list/map spines).
    pub fn as_value_ref(&self) -> ValueRef<'_> {
        match self {
            Value::Null => ValueRef::Null,
            Value::Bool(b) => ValueRef::Bool(*b),
            Value::Int(i) => ValueRef::Int(*i),
            Value::Text(s) => ValueRef::Text(s),
            Value::Bytes(b) => ValueRef::Bytes(b),
            Value::List(l) => ValueRef::List(l.iter().map(Value::as_value_ref).collect()),
            Value::Map(m) => ValueRef::Map(MapRef::from_sorted(
                m.entries
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_value_ref()))
                    .collect(),
            )),
            Value::Link(c) => ValueRef::Link(*c),
        }
    }

    /// The map, if this is one.
    pub fn as_map(&self) -> Option<&Map> {
        match self {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    /// The text, if this is text.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Value::Text(s) => Some(s),
            _ => None,
        }
    }

    /// Looks up `key` when this is a map.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.as_map().and_then(|m| m.get(key))
    }
}

/// A view shared by both trees, so the encoder and the JSON writer are
/// written once.
pub(crate) enum Kind<'v, N: Node> {
    Null,
    Bool(bool),
    Int(i64),
    Text(&'v str),
    Bytes(&'v [u8]),
    List(&'v [N]),
    Map(&'v [(N::Key, N)]),
    Link(Cid),
}

/// Implemented by [`Value`] and [`ValueRef`].
pub(crate) trait Node: Sized {
    type Key: AsRef<str>;
    fn kind(&self) -> Kind<'_, Self>;
}

impl Node for Value {
    type Key = String;
    #[inline]
    fn kind(&self) -> Kind<'_, Self> {
        match self {
            Value::Null => Kind::Null,
            Value::Bool(b) => Kind::Bool(*b),
            Value::Int(i) => Kind::Int(*i),
            Value::Text(s) => Kind::Text(s),
            Value::Bytes(b) => Kind::Bytes(b),
            Value::List(l) => Kind::List(l),
            Value::Map(m) => Kind::Map(&m.entries),
            Value::Link(c) => Kind::Link(*c),
        }
    }
}

impl<'a> Node for ValueRef<'a> {
    type Key = &'a str;
    #[inline]
    fn kind(&self) -> Kind<'_, Self> {
        match self {
            ValueRef::Null => Kind::Null,
            ValueRef::Bool(b) => Kind::Bool(*b),
            ValueRef::Int(i) => Kind::Int(*i),
            ValueRef::Text(s) => Kind::Text(s),
            ValueRef::Bytes(b) => Kind::Bytes(b),
            ValueRef::List(l) => Kind::List(l),
            ValueRef::Map(m) => Kind::Map(&m.entries),
            ValueRef::Link(c) => Kind::Link(*c),
        }
    }
}
