//! The field readers every request parser shares: where a field is
//! ([`At`], written out as FastAPI's `loc`), what was wrong with it
//! ([`Invalid`]), and the readers of each JSON type Prefect's models use,
//! each refusing with Pydantic's error type and message.

use serde_json::{Map, Value};

use crate::model::StateType;
use crate::rest::time;
use crate::uuid::Uuid;

/// One part of a field's location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Loc {
    /// A key.
    Key(&'static str),
    /// A key from the request.
    Name(String),
    /// An array index.
    Index(usize),
}

/// One refused field (FastAPI's `exception_detail` entry).
#[derive(Debug, Clone, PartialEq)]
pub struct Invalid {
    /// Pydantic's error type (`missing`, `enum`, `extra_forbidden`, ...).
    pub kind: &'static str,
    /// Where, from `body`.
    pub loc: Vec<Loc>,
    /// What was wrong.
    pub msg: String,
    /// The refused value (boxed: with serde_json's `preserve_order`, which
    /// a benches feature's peer crates turn on, a `Value` alone is 80 bytes
    /// and every `Res` would carry it).
    pub input: Box<Value>,
}

/// A parse's result: the value, or the field refused.
pub(super) type Res<T> = Result<T, Invalid>;

/// A location under `body`.
#[derive(Clone, Copy)]
pub(super) struct At<'a> {
    parent: Option<&'a At<'a>>,
    part: Part<'a>,
}

#[derive(Clone, Copy)]
enum Part<'a> {
    Body,
    Key(&'static str),
    Name(&'a str),
    Index(usize),
}

impl<'a> At<'a> {
    pub(super) const BODY: At<'static> = At {
        parent: None,
        part: Part::Body,
    };

    pub(super) fn key(&'a self, k: &'static str) -> At<'a> {
        At {
            parent: Some(self),
            part: Part::Key(k),
        }
    }

    pub(super) fn name(&'a self, k: &'a str) -> At<'a> {
        At {
            parent: Some(self),
            part: Part::Name(k),
        }
    }

    pub(super) fn index(&'a self, i: usize) -> At<'a> {
        At {
            parent: Some(self),
            part: Part::Index(i),
        }
    }

    fn loc(&self) -> Vec<Loc> {
        let mut out = match self.parent {
            Some(p) => p.loc(),
            None => Vec::new(),
        };
        match self.part {
            Part::Body => out.push(Loc::Key("body")),
            Part::Key(k) => out.push(Loc::Key(k)),
            Part::Name(k) => out.push(Loc::Name(k.to_owned())),
            Part::Index(i) => out.push(Loc::Index(i)),
        }
        out
    }

    pub(super) fn bad(&self, kind: &'static str, msg: impl Into<String>, input: &Value) -> Invalid {
        Invalid {
            kind,
            loc: self.loc(),
            msg: msg.into(),
            input: Box::new(input.clone()),
        }
    }
}

/// The object at `at`.
pub(super) fn object<'v>(v: &'v Value, at: &At<'_>) -> Res<&'v Map<String, Value>> {
    v.as_object().ok_or_else(|| {
        at.bad(
            "model_attributes_type",
            "Input should be a valid dictionary or object to extract fields from",
            v,
        )
    })
}

/// Refuses keys of `m` outside `honoured` and `not_used` (as Prefect's
/// `extra="forbid"` models do), then each key of `not_used` at a value
/// other than "not used" ([`unused`]).
pub(super) fn keys(
    m: &Map<String, Value>,
    honoured: &[&str],
    not_used: &[&'static str],
    at: &At<'_>,
) -> Res<()> {
    let known = |k: &str| honoured.contains(&k) || not_used.contains(&k);
    if let Some((k, v)) = m.iter().find(|(k, _)| !known(k)) {
        return Err(at
            .name(k)
            .bad("extra_forbidden", "Extra inputs are not permitted", v));
    }
    not_used.iter().try_for_each(|k| unused(m, k, at))
}

/// `m[k]`, refused as `missing` when absent.
pub(super) fn required<'v>(
    m: &'v Map<String, Value>,
    k: &'static str,
    at: &At<'_>,
) -> Res<&'v Value> {
    m.get(k)
        .ok_or_else(|| at.key(k).bad("missing", "Field required", &Value::Null))
}

/// A read route's body: an object, or `null` (an empty body) for every
/// default, read as `empty`.
pub(super) fn read_body<'v>(
    v: &'v Value,
    empty: &'v Map<String, Value>,
    at: &At<'_>,
) -> Res<&'v Map<String, Value>> {
    if v.is_null() {
        Ok(empty)
    } else {
        object(v, at)
    }
}

/// `m[k]` unless absent or null.
pub(super) fn field<'v>(m: &'v Map<String, Value>, k: &str) -> Option<&'v Value> {
    m.get(k).filter(|v| !v.is_null())
}

pub(super) fn string(v: &Value, at: &At<'_>) -> Res<String> {
    v.as_str()
        .map(str::to_owned)
        .ok_or_else(|| at.bad("string_type", "Input should be a valid string", v))
}

pub(super) fn uuid(v: &Value, at: &At<'_>) -> Res<Uuid> {
    let bad = || at.bad("uuid_parsing", "Input should be a valid UUID", v);
    let s = v.as_str().ok_or_else(bad)?;
    Uuid::parse(&s.to_ascii_lowercase()).map_err(|_| bad())
}

/// The list at `at`, each item read by `item`.
pub(super) fn list<T>(v: &Value, at: &At<'_>, item: fn(&Value, &At<'_>) -> Res<T>) -> Res<Vec<T>> {
    let items = v
        .as_array()
        .ok_or_else(|| at.bad("list_type", "Input should be a valid list", v))?;
    items
        .iter()
        .enumerate()
        .map(|(i, s)| item(s, &at.index(i)))
        .collect()
}

pub(super) fn datetime(v: &Value, at: &At<'_>) -> Res<i64> {
    v.as_str().and_then(time::parse).ok_or_else(|| {
        at.bad(
            "datetime_from_date_parsing",
            "Input should be a valid datetime",
            v,
        )
    })
}

pub(super) fn state_type(v: &Value, at: &At<'_>) -> Res<StateType> {
    v.as_str().and_then(|s| StateType::parse(s).ok()).ok_or_else(|| {
        at.bad(
            "enum",
            "Input should be 'SCHEDULED', 'PENDING', 'RUNNING', 'COMPLETED', 'FAILED', 'CANCELLED', 'CRASHED', 'PAUSED' or 'CANCELLING'",
            v,
        )
    })
}

pub(super) fn boolean(v: &Value, at: &At<'_>) -> Res<bool> {
    v.as_bool()
        .ok_or_else(|| at.bad("bool_type", "Input should be a valid boolean", v))
}

/// Accepts `v` only when it means "not used" (null, false, 0, "", [] or
/// {}); this server does not honour the field otherwise.
pub(super) fn unused(m: &Map<String, Value>, k: &'static str, at: &At<'_>) -> Res<()> {
    let Some(v) = m.get(k) else { return Ok(()) };
    let empty = match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    };
    if empty {
        Ok(())
    } else {
        Err(at.key(k).bad(
            "not_supported",
            format!("{k} is not supported by this server (the appview's Prefect subset)"),
            v,
        ))
    }
}
