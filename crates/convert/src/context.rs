//! `merge_context`: the request context from what the caller sent (the wire
//! side) and what the gateway authenticated.
//!
//! | fields | taken from |
//! |---|---|
//! | tenant, project, consistency, catalog version, service identity, decision id | always the authenticated side (security-bound) |
//! | user, correlation id, purpose, target backend, target instance, routing policy, read fence | the wire when non-blank after trimming (trimmed), else the authenticated side |
//! | `dry_run`, `trace` | OR of both sides |
//! | max replica lag | the wire when > 0, else the authenticated side |
//! | scopes | the wire when non-empty, else the authenticated side |
//!
//! # Allocation
//!
//! The wire context is taken by value: a field taken from it is moved (and
//! trimmed in place), never copied. The security-bound strings are
//! `Arc<str>`, so taking them from the authenticated side (a per-connection
//! value that outlives many requests) is a reference-count increment, as are
//! the scopes (`Arc<[String]>`). The only allocations are copies of
//! authenticated-side strings for wire fields left blank: at most one per
//! such field, none when the authenticated value is empty too.

use std::sync::Arc;

/// Read consistency a request runs at.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Consistency {
    /// Whatever replica answers first.
    #[default]
    Eventual,
    /// At least the caller's own writes.
    ReadYourWrites,
    /// The primary.
    Strong,
}

/// A request context: the wire side, the authenticated side and the merge
/// result share this type.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Context {
    /// Tenant (security-bound).
    pub tenant: Arc<str>,
    /// Project (security-bound).
    pub project: Arc<str>,
    /// Consistency (security-bound).
    pub consistency: Consistency,
    /// Catalog version the authorisation decision was made against
    /// (security-bound).
    pub catalog_version: u64,
    /// Identity of the calling service (security-bound).
    pub service_identity: Arc<str>,
    /// Id of the authorisation decision (security-bound).
    pub decision_id: Arc<str>,
    /// End user on whose behalf the call is made.
    pub user: String,
    /// Correlation id for tracing.
    pub correlation_id: String,
    /// Declared purpose of the access.
    pub purpose: String,
    /// Backend the caller asks for.
    pub target_backend: String,
    /// Backend instance the caller asks for.
    pub target_instance: String,
    /// Routing policy name.
    pub routing_policy: String,
    /// Read fence (a position the read must be at or after).
    pub read_fence: String,
    /// Validate without applying (OR of both sides).
    pub dry_run: bool,
    /// Trace the request (OR of both sides).
    pub trace: bool,
    /// Largest acceptable replica lag in milliseconds; 0 means unset.
    pub max_replica_lag_ms: u64,
    /// Granted scopes.
    pub scopes: Arc<[String]>,
}

/// `wire` trimmed in place when it is non-blank, else a copy of `auth`.
#[inline]
fn overridable(mut wire: String, auth: &str) -> String {
    let end = wire.trim_end().len();
    if end == 0 {
        return auth.to_owned();
    }
    wire.truncate(end);
    let start = wire.len() - wire.trim_start().len();
    if start > 0 {
        wire.drain(..start);
    }
    wire
}

/// Merges the context a caller sent (`wire`, consumed) with the one the
/// gateway authenticated, by the rules in the module docs.
pub fn merge_context(wire: Context, authenticated: &Context) -> Context {
    let auth = authenticated;
    Context {
        tenant: Arc::clone(&auth.tenant),
        project: Arc::clone(&auth.project),
        consistency: auth.consistency,
        catalog_version: auth.catalog_version,
        service_identity: Arc::clone(&auth.service_identity),
        decision_id: Arc::clone(&auth.decision_id),
        user: overridable(wire.user, &auth.user),
        correlation_id: overridable(wire.correlation_id, &auth.correlation_id),
        purpose: overridable(wire.purpose, &auth.purpose),
        target_backend: overridable(wire.target_backend, &auth.target_backend),
        target_instance: overridable(wire.target_instance, &auth.target_instance),
        routing_policy: overridable(wire.routing_policy, &auth.routing_policy),
        read_fence: overridable(wire.read_fence, &auth.read_fence),
        dry_run: wire.dry_run || auth.dry_run,
        trace: wire.trace || auth.trace,
        max_replica_lag_ms: if wire.max_replica_lag_ms > 0 {
            wire.max_replica_lag_ms
        } else {
            auth.max_replica_lag_ms
        },
        scopes: if wire.scopes.is_empty() {
            Arc::clone(&auth.scopes)
        } else {
            wire.scopes
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn authenticated() -> Context {
        Context {
            tenant: "tenant-007".into(),
            project: "atlas-01".into(),
            consistency: Consistency::Strong,
            catalog_version: 42,
            service_identity: "spiffe://gw/api".into(),
            decision_id: "dec-1".into(),
            user: "alice".into(),
            routing_policy: "nearest".into(),
            max_replica_lag_ms: 500,
            scopes: vec!["read".to_owned()].into(),
            trace: true,
            ..Context::default()
        }
    }

    #[test]
    fn rules() {
        let auth = authenticated();
        let wire = Context {
            tenant: "evil".into(),
            project: "evil".into(),
            consistency: Consistency::Eventual,
            catalog_version: 1,
            service_identity: "evil".into(),
            decision_id: "evil".into(),
            user: "  bob\t".into(),
            correlation_id: "c-1".into(),
            purpose: "   ".into(),
            dry_run: true,
            max_replica_lag_ms: 0,
            ..Context::default()
        };
        let merged = merge_context(wire, &auth);
        assert_eq!(&*merged.tenant, "tenant-007");
        assert_eq!(&*merged.project, "atlas-01");
        assert_eq!(merged.consistency, Consistency::Strong);
        assert_eq!(merged.catalog_version, 42);
        assert_eq!(&*merged.service_identity, "spiffe://gw/api");
        assert_eq!(&*merged.decision_id, "dec-1");
        assert_eq!(merged.user, "bob");
        assert_eq!(merged.correlation_id, "c-1");
        assert_eq!(merged.purpose, "");
        assert_eq!(merged.routing_policy, "nearest");
        assert!(merged.dry_run && merged.trace);
        assert_eq!(merged.max_replica_lag_ms, 500);
        assert_eq!(&*merged.scopes, ["read".to_owned()]);
        let wire = Context {
            max_replica_lag_ms: 5,
            scopes: vec!["write".to_owned()].into(),
            ..Context::default()
        };
        let merged = merge_context(wire, &auth);
        assert_eq!(merged.max_replica_lag_ms, 5);
        assert_eq!(&*merged.scopes, ["write".to_owned()]);
        assert_eq!(merged.user, "alice");
        assert!(!merged.dry_run);
    }
}
