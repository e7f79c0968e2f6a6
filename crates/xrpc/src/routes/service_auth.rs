//! `com.atproto.server.getServiceAuth` (a service-auth JWT the account's
//! repository key signs: `service_jwt.rs`) and
//! `com.atproto.server.checkAccountStatus` (its `validDid` asks the
//! configured PLC directory).
//!
//! getServiceAuth's bounds are the reference PDS's: an `exp` in the past,
//! more than an hour ahead, or, for a token bound to no method (`lxm`
//! absent), more than a minute ahead is 400 `BadExpiration`; a method that
//! manages the account itself (app passwords, email, handle, PLC
//! operations, the session) cannot be asked for; an app-password session
//! that is not privileged cannot ask for a privileged method (`chat.bsky.*`,
//! `createAccount`).

use std::sync::Arc;

use http::Response;
use http::request::Parts;
use http_body_util::BodyExt;
use repo::cbor::json::push_json_str;

use crate::app::App;
use crate::auth::{Scope, now};
use crate::error::{XResult, XrpcError};
use crate::methods::{is_privileged_method, is_protected_method};
use crate::params::Params;
use crate::response::{Body, ok};
use crate::service_jwt::{DEFAULT_TTL, ServiceClaims};

const MINUTE: i64 = 60;
const HOUR: i64 = 3600;

fn bad_exp(message: &str) -> XrpcError {
    XrpcError::bad("BadExpiration", message)
}

/// Checks a requested expiry against the bounds; the expiry to sign.
fn expiry(exp: Option<i64>, lxm: Option<&str>, now: i64) -> XResult<i64> {
    let Some(exp) = exp else {
        return Ok(now + DEFAULT_TTL);
    };
    let diff = exp - now;
    if diff < 0 {
        return Err(bad_exp("expiration is in past"));
    }
    if diff > HOUR {
        return Err(bad_exp(
            "cannot request a token with an expiration more than an hour in the future",
        ));
    }
    if lxm.is_none() && diff > MINUTE {
        return Err(bad_exp(
            "cannot request a method-less token with an expiration more than a minute in the future",
        ));
    }
    Ok(exp)
}

/// `com.atproto.server.getServiceAuth`.
pub async fn get_service_auth(app: &Arc<App>, parts: &Parts) -> XResult<Response<Body>> {
    let claims = app.session(parts, Scope::Access)?;
    let p = Params::parse(parts.uri.query())?;
    let aud = p.required("aud")?;
    // A DID, optionally with a `#service` fragment (the form a proxied
    // call's audience takes).
    let (aud_did, frag) = aud.split_once('#').unwrap_or((aud, ""));
    if repo::syntax::validate_did(aud_did).is_err()
        || frag.len() > 64
        || !frag
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(XrpcError::invalid("aud must be a valid did"));
    }
    let exp = match p.get("exp") {
        None => None,
        Some(v) => Some(
            v.parse::<i64>()
                .map_err(|_| XrpcError::invalid("exp must be an integer"))?,
        ),
    };
    let lxm = match p.get("lxm") {
        None => None,
        Some(_) => Some(p.nsid("lxm")?),
    };
    let exp = expiry(exp, lxm, now())?;
    if let Some(m) = lxm {
        if is_protected_method(m) {
            return Err(XrpcError::invalid(format!(
                "cannot request a service auth token for the following protected method: {m}"
            )));
        }
        if !claims.is_privileged() && is_privileged_method(m) {
            return Err(XrpcError::invalid(format!(
                "insufficient access to request a service auth token for the following method: {m}"
            )));
        }
    }
    let (iss, aud, lxm) = (claims.sub, aud.to_owned(), lxm.map(str::to_owned));
    let token = app
        .read(move |store| {
            crate::service_jwt::sign(
                store,
                &ServiceClaims {
                    iss: &iss,
                    aud: &aud,
                    exp,
                    lxm: lxm.as_deref(),
                },
            )
        })
        .await?;
    let mut s = String::with_capacity(token.len() + 16);
    s.push_str("{\"token\":");
    push_json_str(&token, &mut s);
    s.push('}');
    Ok(ok(s))
}

/// `com.atproto.server.checkAccountStatus`: the session account's state
/// and counts.
pub async fn check_account_status(app: &Arc<App>, parts: &Parts) -> XResult<Response<Body>> {
    let did = app.access_did(parts)?;
    let did2 = did.clone();
    let (state, root, counts) = app
        .read(move |store| {
            Ok((
                store.account_state(&did2)?,
                store.repo_root(&did2)?,
                store.account_counts(&did2)?,
            ))
        })
        .await?;
    let (Some(state), Some(root), Some(c)) = (state, root, counts) else {
        return Err(XrpcError::invalid(format!(
            "account not found in the store: {did}"
        )));
    };
    let valid_did = match app.accounts.by_did(&did) {
        Some(account) => did_resolves_here(app, &account).await,
        None => false,
    };
    let mut s = String::with_capacity(256);
    s.push_str("{\"activated\":");
    s.push_str(if state.active { "true" } else { "false" });
    s.push_str(",\"validDid\":");
    s.push_str(if valid_did { "true" } else { "false" });
    s.push_str(",\"repoCommit\":");
    push_json_str(&root.commit.to_string(), &mut s);
    s.push_str(",\"repoRev\":");
    push_json_str(&root.rev, &mut s);
    s.push_str(&format!(
        ",\"repoBlocks\":{},\"indexedRecords\":{},\"privateStateValues\":0,\
         \"expectedBlobs\":{},\"importedBlobs\":{}}}",
        c.repo_blocks, c.indexed_records, c.expected_blobs, c.imported_blobs
    ));
    Ok(ok(s))
}

/// Whether the account's DID resolves, at the configured PLC directory,
/// to a document naming this server's endpoint and the account's signing
/// key (the reference's `validDid`). No directory configured, a DID that
/// is not did:plc, a directory that does not answer within 5 s: `false`
/// (atpds resolves nothing else over the network).
async fn did_resolves_here(app: &Arc<App>, account: &crate::accounts::Account) -> bool {
    let Some(plc) = &app.config.plc_url else {
        return false;
    };
    if !account.did.starts_with("did:plc:") {
        return false;
    }
    let Ok(uri) = format!("{}/{}", plc.trim_end_matches('/'), account.did).parse::<http::Uri>()
    else {
        return false;
    };
    let client = app.proxy.client();
    let fetch = async {
        let resp = client.get(uri).await.ok()?;
        if !resp.status().is_success() {
            return None;
        }
        let body = http_body_util::Limited::new(resp.into_body(), 64 << 10)
            .collect()
            .await
            .ok()?
            .to_bytes();
        serde_json::from_slice::<serde_json::Value>(&body).ok()
    };
    let Ok(Some(doc)) = tokio::time::timeout(std::time::Duration::from_secs(5), fetch).await else {
        return false;
    };
    // Any encoding of the key a directory serves (Multikey, or the legacy
    // verification method types) reads to the same public key.
    let key_ok = repo::crypto::PublicKey::from_did_document(&doc)
        .is_ok_and(|k| k.to_did_key() == account.key);
    let pds_ok = doc["service"].as_array().is_some_and(|ss| {
        ss.iter().any(|sv| {
            sv["id"]
                .as_str()
                .is_some_and(|id| id.ends_with("#atproto_pds"))
                && sv["serviceEndpoint"]
                    .as_str()
                    .map(|e| e.trim_end_matches('/'))
                    == Some(app.public_url.as_str())
        })
    });
    key_ok && pds_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_bounds_are_the_references() {
        let now = 1_000_000;
        assert_eq!(expiry(None, None, now).unwrap(), now + 60);
        assert_eq!(expiry(Some(now + 60), None, now).unwrap(), now + 60);
        let e = expiry(Some(now + 61), None, now).unwrap_err();
        assert_eq!((e.status.as_u16(), e.error), (400, "BadExpiration"));
        assert_eq!(
            expiry(Some(now + 3600), Some("app.bsky.feed.getTimeline"), now).unwrap(),
            now + 3600
        );
        let e = expiry(Some(now + 3601), Some("app.bsky.feed.getTimeline"), now).unwrap_err();
        assert_eq!(e.error, "BadExpiration");
        let e = expiry(Some(now - 1), Some("app.bsky.feed.getTimeline"), now).unwrap_err();
        assert_eq!(e.error, "BadExpiration");
    }
}
