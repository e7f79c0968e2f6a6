//! [`RedisExecutor`]: key-value dispatch lines on Redis through the
//! `redis` crate: `size` multiplexed connections (the crate's
//! `ConnectionManager`, which reconnects after a failure), lines spread
//! over them round robin and pipelined.
//!
//! Each slot connects on first use. A connection that dies fails the
//! requests in flight on it once ([`GatewayError::ConnectionLost`]) and
//! reconnects in the background; the next lines wait for it. An
//! exclusive-checkout pool (`deadpool-redis`) was the first design: its
//! check-out sends a `PING`, a second round trip per line
//! (`live.redis_get` showed it).
//!
//! # The line
//!
//! A JSON object, one request per line (a shape of our own):
//!
//! | `op` | fields | Redis | outcome |
//! |---|---|---|---|
//! | `get` | `key`: string | `GET` | `KvOutcome::Value` |
//! | `set` | `key`: string, `value`: string, `ttl_ms`?: integer > 0 | `SET` (`PX ttl_ms`) | `KvOutcome::Stored` |
//! | `del` | `key`: string or non-empty array of strings | `DEL` | `KvOutcome::Deleted` (how many existed) |
//! | `mget` | `key`: non-empty array of strings | `MGET` | `KvOutcome::Values` |
//!
//! Keys are non-blank strings (at most [`MAX_KEYS`] per line); the
//! executor's `key_prefix` is prepended to each, so a tenant never names a
//! key outside its prefix. Values are the string's UTF-8 bytes. Unknown
//! fields are ignored, as in every dispatch line; a missing, repeated or
//! mistyped field, an unknown op, `value` or `ttl_ms` on an op that does
//! not take it, is a [`GatewayError::BadLine`] naming the field.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use convert::DispatchError;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{ErrorKind, RedisError};
use serde_json::Value;
use tokio::sync::OnceCell;

use crate::config::{RedisConfig, endpoint_of};
use crate::error::{Backend, GatewayError};
use crate::executor::{Executor, KvOutcome, Outcome};

const BACKEND: Backend = Backend::Redis;
/// The most keys one `del` or `mget` line may name.
pub const MAX_KEYS: usize = 1024;

/// A parsed key-value line (keys already prefixed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KvRequest {
    /// `GET key`.
    Get(String),
    /// `SET key value [PX ttl_ms]`.
    Set {
        /// Prefixed key.
        key: String,
        /// The bytes stored.
        value: Vec<u8>,
        /// Expiry in milliseconds.
        ttl_ms: Option<u64>,
    },
    /// `DEL key...`.
    Del(Vec<String>),
    /// `MGET key...`.
    Mget(Vec<String>),
}

fn invalid(field: &'static str, reason: impl Into<String>) -> GatewayError {
    GatewayError::BadLine(DispatchError::InvalidField {
        field,
        reason: reason.into(),
    })
}

fn key_text(prefix: &str, v: &Value) -> Result<String, GatewayError> {
    match v.as_str() {
        Some(k) if !k.trim().is_empty() => Ok(format!("{prefix}{k}")),
        _ => Err(invalid("key", "expected a non-blank string")),
    }
}

fn keys(prefix: &str, v: &Value) -> Result<Vec<String>, GatewayError> {
    match v {
        Value::Array(items) if !items.is_empty() && items.len() <= MAX_KEYS => {
            items.iter().map(|k| key_text(prefix, k)).collect()
        }
        Value::Array(items) => Err(invalid(
            "key",
            format!("{} keys; a line names 1..={MAX_KEYS}", items.len()),
        )),
        _ => Err(invalid("key", "expected a non-empty array of strings")),
    }
}

/// The line's fields of ours, read in one pass (unknown fields skipped;
/// a repeated one of ours recorded, since a map would keep only the last).
#[derive(Default)]
struct Fields {
    op: Option<Value>,
    key: Option<Value>,
    value: Option<Value>,
    ttl_ms: Option<Value>,
    duplicate: Option<&'static str>,
}

struct FieldsVisitor<'a>(&'a mut Fields);

impl<'de> serde::de::Visitor<'de> for FieldsVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(name) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            let (field, place) = match name.as_ref() {
                "op" => ("op", &mut self.0.op),
                "key" => ("key", &mut self.0.key),
                "value" => ("value", &mut self.0.value),
                "ttl_ms" => ("ttl_ms", &mut self.0.ttl_ms),
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                    continue;
                }
            };
            if place.is_some() {
                self.0.duplicate = Some(field);
                return Err(serde::de::Error::custom("repeated field"));
            }
            *place = Some(map.next_value()?);
        }
        Ok(())
    }
}

fn read_fields(line: &str) -> Result<Fields, GatewayError> {
    let mut fields = Fields::default();
    let mut de = serde_json::Deserializer::from_str(line);
    let read = serde::Deserializer::deserialize_any(&mut de, FieldsVisitor(&mut fields))
        .and_then(|()| de.end());
    match read {
        Ok(()) => Ok(fields),
        Err(e) => Err(GatewayError::BadLine(match fields.duplicate {
            Some(field) => DispatchError::DuplicateField { field },
            None if e.classify() == serde_json::error::Category::Data => DispatchError::NotAnObject,
            None => DispatchError::Syntax(e),
        })),
    }
}

/// Parses a key-value line (see the module docs), prefixing its keys.
///
/// # Errors
/// [`GatewayError::BadLine`] naming the field.
pub fn parse_kv_line(line: &str, prefix: &str) -> Result<KvRequest, GatewayError> {
    let fields = read_fields(line)?;
    // `null` is as good as absent.
    let present = |v: &Option<Value>| v.clone().filter(|v| !v.is_null());
    let (op, key, value, ttl_ms) = (
        present(&fields.op),
        present(&fields.key),
        present(&fields.value),
        present(&fields.ttl_ms),
    );
    let op = match &op {
        None => {
            return Err(GatewayError::BadLine(DispatchError::MissingField {
                field: "op",
            }));
        }
        Some(Value::String(s)) => s.as_str(),
        Some(_) => return Err(invalid("op", "expected a string")),
    };
    let key = key.ok_or(GatewayError::BadLine(DispatchError::MissingField {
        field: "key",
    }))?;
    let key = &key;
    if op != "set" {
        for (field, v) in [("value", &value), ("ttl_ms", &ttl_ms)] {
            if v.is_some() {
                return Err(invalid(field, format!("`{op}` takes no `{field}`")));
            }
        }
    }
    Ok(match op {
        "get" => KvRequest::Get(key_text(prefix, key)?),
        "mget" => KvRequest::Mget(keys(prefix, key)?),
        "del" => KvRequest::Del(match key {
            Value::String(_) => vec![key_text(prefix, key)?],
            _ => keys(prefix, key)?,
        }),
        "set" => {
            let value = match value {
                None => {
                    return Err(GatewayError::BadLine(DispatchError::MissingField {
                        field: "value",
                    }));
                }
                Some(Value::String(s)) => s.into_bytes(),
                Some(_) => return Err(invalid("value", "expected a string")),
            };
            let ttl_ms = match ttl_ms {
                None => None,
                Some(v) => Some(
                    v.as_u64()
                        .filter(|&t| t > 0)
                        .ok_or_else(|| invalid("ttl_ms", "expected an integer > 0"))?,
                ),
            };
            KvRequest::Set {
                key: key_text(prefix, key)?,
                value,
                ttl_ms,
            }
        }
        other => {
            return Err(GatewayError::BadLine(DispatchError::UnsupportedValue {
                field: "op",
                value: other.to_string(),
            }));
        }
    })
}

/// Key-value lines on Redis.
pub struct RedisExecutor {
    client: redis::Client,
    /// Timeouts and retries of every slot's connection.
    manager: ConnectionManagerConfig,
    slots: Vec<OnceCell<ConnectionManager>>,
    next: AtomicUsize,
    prefix: String,
    endpoint: String,
    connect_timeout: Duration,
    statement_timeout: Duration,
}

impl RedisExecutor {
    /// An executor for `config` (no connection is opened until the first line).
    ///
    /// # Errors
    /// [`GatewayError::Config`] for a URL that does not parse.
    pub fn new(config: &RedisConfig) -> Result<Self, GatewayError> {
        let client =
            redis::Client::open(config.url.as_str()).map_err(|e| GatewayError::Config {
                backend: BACKEND,
                reason: e.to_string(),
            })?;
        let manager = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(config.pool.connect_timeout))
            .set_response_timeout(Some(config.pool.statement_timeout))
            .set_number_of_retries(1);
        Ok(RedisExecutor {
            client,
            manager,
            slots: (0..config.pool.size.max(1))
                .map(|_| OnceCell::new())
                .collect(),
            next: AtomicUsize::new(0),
            prefix: config.key_prefix.clone(),
            endpoint: endpoint_of(&config.url),
            connect_timeout: config.pool.connect_timeout,
            statement_timeout: config.pool.statement_timeout,
        })
    }

    /// The prefix put before every key.
    pub fn key_prefix(&self) -> &str {
        &self.prefix
    }

    /// The connection of the next slot, opened on first use.
    async fn connection(&self) -> Result<ConnectionManager, GatewayError> {
        let slot = &self.slots[self.next.fetch_add(1, Ordering::Relaxed) % self.slots.len()];
        slot.get_or_try_init(|| {
            ConnectionManager::new_with_config(self.client.clone(), self.manager.clone())
        })
        .await
        .cloned()
        .map_err(|e| {
            if e.is_timeout() {
                GatewayError::Timeout {
                    backend: BACKEND,
                    what: "connect",
                    after: self.connect_timeout,
                }
            } else {
                GatewayError::Unreachable {
                    backend: BACKEND,
                    endpoint: self.endpoint.clone(),
                    reason: e.to_string(),
                }
            }
        })
    }

    async fn run(&self, request: &KvRequest) -> Result<Outcome, GatewayError> {
        let mut conn = self.connection().await?;
        let kv = match request {
            KvRequest::Get(key) => {
                let v: Option<Vec<u8>> = redis::cmd("GET")
                    .arg(key)
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| self.error(e))?;
                KvOutcome::Value(v)
            }
            KvRequest::Set { key, value, ttl_ms } => {
                let mut cmd = redis::cmd("SET");
                cmd.arg(key).arg(value.as_slice());
                if let Some(ttl) = ttl_ms {
                    cmd.arg("PX").arg(*ttl);
                }
                let () = cmd
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| self.error(e))?;
                KvOutcome::Stored
            }
            KvRequest::Del(keys) => {
                let n: u64 = redis::cmd("DEL")
                    .arg(keys)
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| self.error(e))?;
                KvOutcome::Deleted(n)
            }
            KvRequest::Mget(keys) => {
                let v: Vec<Option<Vec<u8>>> = redis::cmd("MGET")
                    .arg(keys)
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| self.error(e))?;
                KvOutcome::Values(v)
            }
        };
        Ok(Outcome::Kv(kv))
    }

    fn error(&self, e: RedisError) -> GatewayError {
        if e.is_timeout() {
            return GatewayError::Timeout {
                backend: BACKEND,
                what: "request",
                after: self.statement_timeout,
            };
        }
        redis_error(e)
    }
}

fn redis_error(e: RedisError) -> GatewayError {
    if e.is_connection_dropped() || e.is_io_error() || e.is_connection_refusal() {
        return GatewayError::ConnectionLost {
            backend: BACKEND,
            reason: e.to_string(),
        };
    }
    match e.kind() {
        ErrorKind::Server(_) | ErrorKind::Extension => GatewayError::Server {
            backend: BACKEND,
            code: e.code().unwrap_or("ERR").to_string(),
            message: e.detail().unwrap_or_default().to_string(),
        },
        _ => GatewayError::Protocol {
            backend: BACKEND,
            reason: e.to_string(),
        },
    }
}

impl Executor for RedisExecutor {
    type Request = KvRequest;

    fn backend(&self) -> Backend {
        BACKEND
    }

    fn parse(&self, line: &str) -> Result<KvRequest, GatewayError> {
        parse_kv_line(line, &self.prefix)
    }

    /// The response timeout is the connection's own (`statement_timeout`).
    async fn execute(&self, request: &KvRequest) -> Result<Outcome, GatewayError> {
        self.run(request).await
    }
}

#[cfg(test)]
mod tests {
    use super::{KvRequest, parse_kv_line};
    use crate::error::GatewayError;
    use proptest::prelude::*;

    #[test]
    fn lines_parse_with_the_prefix_on_every_key() {
        let p = |l| parse_kv_line(l, "t:");
        assert_eq!(
            p(r#"{"op":"get","key":"a"}"#).ok(),
            Some(KvRequest::Get("t:a".into()))
        );
        assert_eq!(
            p(r#"{"op":"set","key":"a","value":"v","ttl_ms":5,"extra":1}"#).ok(),
            Some(KvRequest::Set {
                key: "t:a".into(),
                value: b"v".to_vec(),
                ttl_ms: Some(5)
            })
        );
        assert_eq!(
            p(r#"{"op":"del","key":["a","b"]}"#).ok(),
            Some(KvRequest::Del(vec!["t:a".into(), "t:b".into()]))
        );
        assert_eq!(
            p(r#"{"op":"mget","key":["a"]}"#).ok(),
            Some(KvRequest::Mget(vec!["t:a".into()]))
        );
    }

    #[test]
    fn bad_lines_name_their_field() {
        let field = |l: &str| match parse_kv_line(l, "") {
            Err(GatewayError::BadLine(e)) => e.to_string(),
            other => panic!("{l}: {other:?}"),
        };
        assert!(field(r#"{"key":"a"}"#).contains("`op`"));
        assert!(field(r#"{"op":"get"}"#).contains("`key`"));
        assert!(field(r#"{"op":"get","key":" "}"#).contains("`key`"));
        assert!(field(r#"{"op":"set","key":"a"}"#).contains("`value`"));
        assert!(field(r#"{"op":"set","key":"a","value":1}"#).contains("`value`"));
        assert!(field(r#"{"op":"set","key":"a","value":"v","ttl_ms":0}"#).contains("`ttl_ms`"));
        assert!(field(r#"{"op":"get","key":"a","value":"v"}"#).contains("`value`"));
        assert!(field(r#"{"op":"mget","key":"a"}"#).contains("`key`"));
        assert!(field(r#"{"op":"mget","key":[]}"#).contains("`key`"));
        assert!(field(r#"{"op":"incr","key":"a"}"#).contains("`op`"));
        assert!(field(r#"{"op":"get","key":"a","key":"b"}"#).contains("`key`"));
        assert!(field("[1]").contains("not a JSON object"));
        assert!(field(r#"{"op":"get""#).contains("invalid JSON"));
    }

    proptest! {
        #[test]
        fn arbitrary_text_never_panics(s in "\\PC{0,80}") {
            let _ = parse_kv_line(&s, "p:");
        }
    }
}
