//! [`S3Executor`]: object dispatch lines on an S3-compatible service
//! through `object_store`'s S3 client (SigV4, path-style or virtual-hosted
//! addressing, plain HTTP allowed for local servers).
//!
//! | `op` | S3 | outcome |
//! |---|---|---|
//! | `put`, `upsert` | `PutObject` (the inline payload, `content_type` as `Content-Type`) | `ObjectOutcome::Stored` |
//! | `get` | `GetObject` | `ObjectOutcome::Got` |
//! | `head` | `HeadObject` | `ObjectOutcome::Head` |
//! | `delete` | `DeleteObject` | `ObjectOutcome::Deleted` |
//! | `list` | `ListObjectsV2` under the key as a path prefix (`a/b` lists `a/b/...`) | `ObjectOutcome::Listed` |
//! | `append` | none: S3 objects cannot be appended to | [`GatewayError::Unsupported`] |
//!
//! Inline payloads become bytes through `convert::object_bytes_from_json`
//! (capped at `convert::INLINE_PAYLOAD_CAP`) at parse time. One client per
//! bucket is built on first use and kept; each pools its connections
//! (`PoolConfig::size` idle connections per host). Retries are off, so a
//! failure is reported at once rather than after the client's backoff.
//! Errors: a missing object is [`GatewayError::NotFound`]; a connect
//! failure [`GatewayError::Unreachable`]; a timeout
//! [`GatewayError::Timeout`]; a broken request
//! [`GatewayError::ConnectionLost`]; anything the service refused is
//! [`GatewayError::Server`] whose code is `object_store`'s error kind
//! (`PermissionDenied`, `Precondition`, `Generic`, ...).

use std::collections::HashMap;
use std::error::Error as _;
use std::sync::{Arc, RwLock};

use convert::{DispatchError, ObjectOp, object_bytes_from_json, parse_object_dispatch};
use futures_util::TryStreamExt;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::client::{HttpError, HttpErrorKind};
use object_store::path::Path;
use object_store::{
    Attribute, Attributes, ClientOptions, ObjectMeta, ObjectStore, PutOptions, PutPayload,
    RetryConfig,
};

use crate::config::{S3Config, endpoint_of};
use crate::error::{Backend, GatewayError};
use crate::executor::{Executor, ObjectEntry, ObjectOutcome, Outcome, within};

const BACKEND: Backend = Backend::S3;

/// A parsed object line: payload already decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectRequest {
    /// The operation.
    pub op: ObjectOp,
    /// Bucket.
    pub bucket: String,
    /// Key (for `list`, the prefix).
    pub key: Path,
    /// `Content-Type` to store (`put`, `upsert`).
    pub content_type: Option<String>,
    /// The bytes to store (`put`, `upsert`).
    pub bytes: Option<bytes::Bytes>,
}

/// Parses an object line (`convert::parse_object_dispatch`) and decodes its
/// payload.
///
/// # Errors
/// [`GatewayError::BadLine`] for a line `convert` refuses, a payload that
/// does not decode, or a key that is not a valid object path (empty
/// segments, `.` or `..`); [`GatewayError::Unsupported`] for `append`.
pub fn parse_object_line(line: &str) -> Result<ObjectRequest, GatewayError> {
    let d = parse_object_dispatch(line)?;
    if d.op == ObjectOp::Append {
        return Err(GatewayError::Unsupported {
            backend: BACKEND,
            op: "append",
        });
    }
    let key = Path::parse(&d.object).map_err(|e| {
        GatewayError::BadLine(DispatchError::InvalidField {
            field: "key",
            reason: e.to_string(),
        })
    })?;
    let bytes = match (&d.payload, d.op.writes()) {
        (Some(p), true) => Some(bytes::Bytes::from(object_bytes_from_json(p)?)),
        _ => None,
    };
    Ok(ObjectRequest {
        op: d.op,
        bucket: d.bucket,
        key,
        content_type: d.content_type,
        bytes,
    })
}

/// Object lines on S3.
pub struct S3Executor {
    config: S3Config,
    stores: RwLock<HashMap<String, Arc<AmazonS3>>>,
}

impl S3Executor {
    /// An executor for `config`; clients are built per bucket on first use.
    pub fn new(config: S3Config) -> Self {
        S3Executor {
            config,
            stores: RwLock::new(HashMap::new()),
        }
    }

    /// The client of `bucket`, built on first use.
    ///
    /// # Errors
    /// [`GatewayError::Config`] when the client cannot be built (a bad
    /// endpoint URL or bucket name).
    pub fn store(&self, bucket: &str) -> Result<Arc<AmazonS3>, GatewayError> {
        if let Some(s) = self
            .stores
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(bucket)
        {
            return Ok(Arc::clone(s));
        }
        let c = &self.config;
        let options = ClientOptions::new()
            .with_allow_http(true)
            .with_timeout(c.pool.statement_timeout)
            .with_connect_timeout(c.pool.connect_timeout)
            .with_pool_max_idle_per_host(c.pool.size.max(1));
        let retry = RetryConfig {
            max_retries: 0,
            retry_timeout: c.pool.statement_timeout,
            ..RetryConfig::default()
        };
        let store = AmazonS3Builder::new()
            .with_endpoint(&c.endpoint)
            .with_region(&c.region)
            .with_bucket_name(bucket)
            .with_access_key_id(&c.access_key)
            .with_secret_access_key(&c.secret_key)
            .with_virtual_hosted_style_request(!c.path_style)
            .with_client_options(options)
            .with_retry(retry)
            .build()
            .map_err(|e| GatewayError::Config {
                backend: BACKEND,
                reason: e.to_string(),
            })?;
        let store = Arc::new(store);
        self.stores
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(bucket.to_string(), Arc::clone(&store));
        Ok(store)
    }

    async fn run(&self, r: &ObjectRequest) -> Result<Outcome, GatewayError> {
        let store = self.store(&r.bucket)?;
        let err = |e| s3_error(e, r, &self.config);
        let outcome = match r.op {
            ObjectOp::Put | ObjectOp::Upsert => {
                let bytes = r.bytes.clone().unwrap_or_default();
                let size = bytes.len() as u64;
                let mut attributes = Attributes::new();
                if let Some(ct) = &r.content_type {
                    attributes.insert(Attribute::ContentType, ct.clone().into());
                }
                let put = store
                    .put_opts(
                        &r.key,
                        PutPayload::from(bytes),
                        PutOptions::from(attributes),
                    )
                    .await
                    .map_err(err)?;
                ObjectOutcome::Stored {
                    e_tag: put.e_tag,
                    size,
                }
            }
            ObjectOp::Get => {
                let got = store.get(&r.key).await.map_err(err)?;
                let content_type = got
                    .attributes
                    .get(&Attribute::ContentType)
                    .map(|v| v.to_string());
                let bytes = got.bytes().await.map_err(err)?;
                ObjectOutcome::Got {
                    bytes,
                    content_type,
                }
            }
            ObjectOp::Head => ObjectOutcome::Head(entry(store.head(&r.key).await.map_err(err)?)),
            ObjectOp::Delete => {
                store.delete(&r.key).await.map_err(err)?;
                ObjectOutcome::Deleted
            }
            ObjectOp::List => {
                let mut listed: Vec<ObjectEntry> = store
                    .list(Some(&r.key))
                    .map_ok(entry)
                    .try_collect()
                    .await
                    .map_err(err)?;
                listed.sort_by(|a, b| a.key.cmp(&b.key));
                ObjectOutcome::Listed(listed)
            }
            ObjectOp::Append => {
                return Err(GatewayError::Unsupported {
                    backend: BACKEND,
                    op: "append",
                });
            }
        };
        Ok(Outcome::Object(outcome))
    }
}

fn entry(meta: ObjectMeta) -> ObjectEntry {
    ObjectEntry {
        key: meta.location.to_string(),
        size: meta.size,
        e_tag: meta.e_tag,
    }
}

fn s3_error(e: object_store::Error, request: &ObjectRequest, config: &S3Config) -> GatewayError {
    if let object_store::Error::NotFound { .. } = e {
        return GatewayError::NotFound {
            bucket: request.bucket.clone(),
            key: request.key.to_string(),
        };
    }
    let mut source = e.source();
    while let Some(s) = source {
        if let Some(http) = s.downcast_ref::<HttpError>() {
            return match http.kind() {
                HttpErrorKind::Connect => GatewayError::Unreachable {
                    backend: BACKEND,
                    endpoint: endpoint_of(&config.endpoint),
                    reason: http.to_string(),
                },
                HttpErrorKind::Timeout => GatewayError::Timeout {
                    backend: BACKEND,
                    what: "request",
                    after: config.pool.statement_timeout,
                },
                _ => GatewayError::ConnectionLost {
                    backend: BACKEND,
                    reason: http.to_string(),
                },
            };
        }
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::*;
            return match io.kind() {
                ConnectionRefused | AddrNotAvailable | HostUnreachable | NetworkUnreachable => {
                    GatewayError::Unreachable {
                        backend: BACKEND,
                        endpoint: endpoint_of(&config.endpoint),
                        reason: io.to_string(),
                    }
                }
                TimedOut => GatewayError::Timeout {
                    backend: BACKEND,
                    what: "request",
                    after: config.pool.statement_timeout,
                },
                _ => GatewayError::ConnectionLost {
                    backend: BACKEND,
                    reason: io.to_string(),
                },
            };
        }
        source = s.source();
    }
    let code = match &e {
        object_store::Error::AlreadyExists { .. } => "AlreadyExists",
        object_store::Error::Precondition { .. } => "Precondition",
        object_store::Error::NotModified { .. } => "NotModified",
        object_store::Error::PermissionDenied { .. } => "PermissionDenied",
        object_store::Error::Unauthenticated { .. } => "Unauthenticated",
        object_store::Error::NotImplemented => "NotImplemented",
        _ => "Generic",
    };
    GatewayError::Server {
        backend: BACKEND,
        code: code.to_string(),
        message: e.to_string(),
    }
}

impl Executor for S3Executor {
    type Request = ObjectRequest;

    fn backend(&self) -> Backend {
        BACKEND
    }

    fn parse(&self, line: &str) -> Result<ObjectRequest, GatewayError> {
        parse_object_line(line)
    }

    async fn execute(&self, request: &ObjectRequest) -> Result<Outcome, GatewayError> {
        within(
            BACKEND,
            "request",
            self.config.pool.statement_timeout,
            self.run(request),
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::parse_object_line;
    use crate::error::GatewayError;
    use convert::ObjectOp;

    #[test]
    fn object_lines_decode_their_payload_and_refuse_bad_keys_and_append() {
        let r = parse_object_line(r#"{"op":"put","bucket":"b","key":"a/x.txt","data_text":"hi"}"#)
            .expect("parses");
        assert_eq!(
            (r.op, r.key.as_ref(), r.bytes.as_deref()),
            (ObjectOp::Put, "a/x.txt", Some(&b"hi"[..]))
        );
        let r = parse_object_line(r#"{"op":"get","bucket":"b","key":"a"}"#).expect("parses");
        assert!(r.bytes.is_none());
        assert!(matches!(
            parse_object_line(r#"{"op":"get","bucket":"b","key":"a//b"}"#),
            Err(GatewayError::BadLine(_))
        ));
        assert!(matches!(
            parse_object_line(r#"{"op":"append","bucket":"b","key":"a","data_text":"x"}"#),
            Err(GatewayError::Unsupported { op: "append", .. })
        ));
        assert!(matches!(
            parse_object_line(r#"{"op":"put","bucket":"b","key":"a","data_base64":"@@"}"#),
            Err(GatewayError::BadLine(_))
        ));
    }
}
