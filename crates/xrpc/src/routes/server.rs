//! `com.atproto.server.*` (accounts and sessions),
//! `com.atproto.identity.resolveHandle` and `/.well-known/atproto-did`.

use std::sync::Arc;

use bytes::Bytes;
use http::request::Parts;
use http::{HeaderValue, Response, StatusCode, header};
use hyper::body::Incoming;
use repo::cbor::json::push_json_str;
use repo::syntax::validate_handle;

use crate::accounts::{Account, ReserveError};
use crate::app::{App, Run, blocking, new_key};
use crate::auth::{Grant, Scope};
use crate::error::{XResult, XrpcError};
use crate::params::Params;
use crate::request::json_body;
use crate::response::{Body, ok};
use crate::{password, plc};

/// Top-level domains atproto reserves (the handle spec): never registrable.
const RESERVED_TLDS: &[&str] = &[
    ".local",
    ".arpa",
    ".invalid",
    ".localhost",
    ".internal",
    ".example",
    ".onion",
    ".alt",
];

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct CreateAccountInput {
    handle: String,
    email: Option<String>,
    password: Option<String>,
    did: Option<String>,
    plc_op: Option<serde_json::Value>,
}

#[derive(serde::Deserialize)]
struct CreateSessionInput {
    identifier: String,
    password: String,
}

/// `{accessJwt?, refreshJwt?, handle, did, didDoc, email?, ...}`.
fn session_json(a: &Account, tokens: Option<(&str, &str)>) -> String {
    let mut s = String::with_capacity(1024);
    s.push('{');
    if let Some((access, refresh)) = tokens {
        s.push_str("\"accessJwt\":");
        push_json_str(access, &mut s);
        s.push_str(",\"refreshJwt\":");
        push_json_str(refresh, &mut s);
        s.push(',');
    }
    s.push_str("\"handle\":");
    push_json_str(&a.handle, &mut s);
    s.push_str(",\"did\":");
    push_json_str(&a.did, &mut s);
    s.push_str(",\"didDoc\":");
    s.push_str(&a.did_doc);
    if let Some(e) = &a.email {
        s.push_str(",\"email\":");
        push_json_str(e, &mut s);
        s.push_str(",\"emailConfirmed\":false");
    }
    s.push_str(",\"active\":true}");
    s
}

/// A new token pair for `a`; the refresh token's id is recorded.
pub(super) async fn issue(
    app: &Arc<App>,
    a: &Account,
    grant: Grant<'_>,
) -> XResult<(String, String)> {
    let mut jti = [0u8; 16];
    getrandom::fill(&mut jti).map_err(XrpcError::fault)?;
    let jti = data_encoding::BASE64URL_NOPAD.encode(&jti);
    let access = app
        .tokens
        .access(&a.did, app.config.access_ttl.as_secs() as i64, grant);
    let (refresh, exp) =
        app.tokens
            .refresh(&a.did, &jti, app.config.refresh_ttl.as_secs() as i64, grant);
    let (app2, did) = (app.clone(), a.did.clone());
    blocking(move || {
        app2.accounts
            .add_refresh(&jti, &did, exp)
            .map_err(XrpcError::fault)
    })
    .await?;
    Ok((access, refresh))
}

fn check_handle(handle: &str) -> XResult<()> {
    validate_handle(handle).map_err(|e| XrpcError::bad("InvalidHandle", e.to_string()))?;
    if RESERVED_TLDS.iter().any(|t| handle.ends_with(t)) {
        return Err(XrpcError::bad(
            "InvalidHandle",
            "Handle TLD is reserved and cannot be registered",
        ));
    }
    Ok(())
}

/// `com.atproto.server.createAccount`.
pub async fn create_account(
    app: &Arc<App>,
    parts: &Parts,
    body: Incoming,
) -> XResult<Response<Body>> {
    let input: CreateAccountInput = json_body(app, parts, body).await?;
    let handle = input.handle.to_ascii_lowercase();
    check_handle(&handle)?;
    if input.did.is_some() || input.plc_op.is_some() {
        return Err(XrpcError::invalid(
            "bringing an existing DID or PLC operation is not supported",
        ));
    }
    let Some(pass) = input.password.filter(|p| !p.is_empty()) else {
        return Err(XrpcError::bad("InvalidPassword", "Password is required"));
    };
    if pass.len() > 256 {
        return Err(XrpcError::bad("InvalidPassword", "Password too long"));
    }
    let email = match input.email {
        Some(e) if !e.contains('@') || e.len() > 320 => {
            return Err(XrpcError::invalid("Invalid email"));
        }
        Some(e) => Some(e.to_ascii_lowercase()),
        None => None,
    };
    if app.accounts.by_handle(&handle).is_some() {
        return Err(XrpcError::bad("HandleNotAvailable", "Handle already taken"));
    }
    if let Some(e) = &email
        && app.accounts.by_identifier(e).is_some()
    {
        return Err(XrpcError::invalid(format!("Email already taken: {e}")));
    }
    let key = new_key().map_err(XrpcError::internal)?;
    let genesis = plc::genesis(&app.rotation, &key, &handle, &app.public_url);
    let log_n = app.config.scrypt_log_n;
    // The permit bounds the hashes' memory only: it goes as soon as the
    // hash is made, not held across the PLC submission and the writes.
    let kdf = app.kdf_slot().await?;
    let hash = blocking(move || password::hash(&pass, log_n).map_err(XrpcError::fault)).await;
    drop(kdf);
    let hash = hash?;
    let account = Account::new(
        genesis.did.clone(),
        handle.clone(),
        email,
        hash,
        key.public_key().to_did_key(),
        &app.public_url,
    );
    let app2 = app.clone();
    let account = blocking(move || match app2.accounts.reserve(account) {
        Ok(a) => Ok(a),
        Err(ReserveError::Taken) => Err(XrpcError::bad(
            "HandleNotAvailable",
            "Handle or email already taken",
        )),
        Err(e) => Err(XrpcError::fault(e)),
    })
    .await?;
    let created = async {
        if let Some(url) = &app.config.plc_url {
            plc::submit(url, &genesis).await.map_err(|e| {
                XrpcError::new(StatusCode::BAD_GATEWAY, "UpstreamFailure", e.to_string())
            })?;
        }
        let did = account.did.clone();
        // Its #identity, #account, #sync and #identity events reach the
        // firehose from the store's writer, like every write's.
        app.write(Run::Blocking, move |store| {
            store.create_account(&did, &key)?;
            store.update_identity(&did, Some(&handle))
        })
        .await??;
        Ok::<(), XrpcError>(())
    }
    .await;
    if let Err(e) = created {
        let (app2, did) = (app.clone(), account.did.clone());
        let _ = blocking(move || app2.accounts.remove(&did).map_err(XrpcError::fault)).await;
        return Err(e);
    }
    let (access, refresh) = issue(app, &account, Grant::Full).await?;
    Ok(ok(session_json(&account, Some((&access, &refresh)))))
}

/// `com.atproto.server.createSession`.
pub async fn create_session(
    app: &Arc<App>,
    parts: &Parts,
    body: Incoming,
) -> XResult<Response<Body>> {
    let input: CreateSessionInput = json_body(app, parts, body).await?;
    // Keyed by the identifier as sent and the client IP, as in the
    // reference PDS.
    app.charge(
        parts,
        crate::rate_limit::Charge::Session {
            identifier: &input.identifier,
        },
    )?;
    let id = input.identifier.trim().to_ascii_lowercase();
    let account = app.accounts.by_identifier(&id);
    // An unknown identifier is checked against the dummy hash (same
    // cost): the answer takes one scrypt either way, so its timing does
    // not tell which accounts exist.
    let stored = match &account {
        Some(a) => a.password.clone(),
        None => app.dummy_hash.clone(),
    };
    let kdf = app.kdf_slot().await?;
    // As the reference: the account password first, then, for a
    // password of the app-password shape, the account's app passwords
    // (one more scrypt: `app_passwords.rs`).
    let app_passes = match &account {
        Some(a) if crate::accounts::app_passwords::is_app_password(&input.password) => {
            app.accounts.app_passwords(&a.did)
        }
        _ => Vec::new(),
    };
    let did = account.as_ref().map(|a| a.did.clone()).unwrap_or_default();
    let matched = blocking(move || {
        if password::verify(&input.password, &stored).map_err(XrpcError::fault)? {
            return Ok(Some(None));
        }
        if app_passes.is_empty() {
            return Ok(None);
        }
        let salt = crate::accounts::app_passwords::salt(&did);
        let mut hashed: Vec<(u8, String)> = Vec::new();
        for ap in app_passes {
            let Some(n) = password::stored_log_n(&ap.hash) else {
                continue;
            };
            let candidate = match hashed.iter().find(|(m, _)| *m == n) {
                Some((_, h)) => h.clone(),
                None => {
                    let h = password::hash_salted(&input.password, &salt, n)
                        .map_err(XrpcError::fault)?;
                    hashed.push((n, h.clone()));
                    h
                }
            };
            if password::ct_eq(candidate.as_bytes(), ap.hash.as_bytes()) {
                return Ok(Some(Some((ap.id, ap.privileged))));
            }
        }
        Ok(None)
    })
    .await;
    // Released before the refresh token's insert: the permit bounds the
    // hashes' memory, not the account file's writes.
    drop(kdf);
    let (Some(account), Some(matched)) = (account, matched?) else {
        return Err(XrpcError::login_refused());
    };
    let grant = match &matched {
        None => Grant::Full,
        Some((id, privileged)) => Grant::AppPass {
            id,
            privileged: *privileged,
        },
    };
    let (access, refresh) = issue(app, &account, grant).await?;
    Ok(ok(session_json(&account, Some((&access, &refresh)))))
}

pub(super) fn session_account(
    app: &App,
    parts: &Parts,
    scope: Scope,
) -> XResult<(Arc<Account>, crate::auth::Claims)> {
    let claims = app.session(parts, scope)?;
    let account = app
        .accounts
        .by_did(&claims.sub)
        .ok_or_else(|| XrpcError::auth_required("Account of this token not found"))?;
    Ok((account, claims))
}

/// `com.atproto.server.getSession`.
pub fn get_session(app: &Arc<App>, parts: &Parts) -> XResult<Response<Body>> {
    let (account, _) = session_account(app, parts, Scope::Access)?;
    Ok(ok(session_json(&account, None)))
}

/// Takes the refresh token of the request out of the live set.
async fn revoke(app: &Arc<App>, claims: crate::auth::Claims) -> XResult<()> {
    let app2 = app.clone();
    let live = blocking(move || {
        let jti = claims.jti.unwrap_or_default();
        app2.accounts
            .take_refresh(&jti, &claims.sub)
            .map_err(XrpcError::fault)
    })
    .await?;
    if live {
        Ok(())
    } else {
        Err(XrpcError::bad("ExpiredToken", "Token has been revoked"))
    }
}

/// `com.atproto.server.refreshSession`: rotates the refresh token.
pub async fn refresh_session(app: &Arc<App>, parts: &Parts) -> XResult<Response<Body>> {
    let (account, claims) = session_account(app, parts, Scope::Refresh)?;
    let apw = claims.apw.clone();
    revoke(app, claims).await?;
    // The new pair keeps the grant of the old (the app password's
    // privilege as it is now).
    let privileged = apw.as_ref().is_some_and(|id| {
        app.accounts
            .app_passwords(&account.did)
            .iter()
            .any(|a| &a.id == id && a.privileged)
    });
    let grant = match &apw {
        None => Grant::Full,
        Some(id) => Grant::AppPass { id, privileged },
    };
    let (access, refresh) = issue(app, &account, grant).await?;
    Ok(ok(session_json(&account, Some((&access, &refresh)))))
}

/// `com.atproto.server.deleteSession`.
pub async fn delete_session(app: &Arc<App>, parts: &Parts) -> XResult<Response<Body>> {
    let (_, claims) = session_account(app, parts, Scope::Refresh)?;
    revoke(app, claims).await?;
    Ok(Response::new(Body::empty()))
}

/// `com.atproto.identity.resolveHandle`.
pub fn resolve_handle(app: &Arc<App>, parts: &Parts) -> XResult<Response<Body>> {
    let params = Params::parse(parts.uri.query())?;
    let handle = params.handle("handle")?;
    let account = app
        .accounts
        .by_handle(handle)
        .ok_or_else(|| XrpcError::bad("HandleNotFound", "Unable to resolve handle"))?;
    let mut s = String::with_capacity(48);
    s.push_str("{\"did\":");
    push_json_str(&account.did, &mut s);
    s.push('}');
    Ok(ok(s))
}

/// `/.well-known/atproto-did`: the DID of the handle the Host header names.
pub fn well_known_did(app: &Arc<App>, parts: &Parts) -> XResult<Response<Body>> {
    let host = parts
        .headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    let host = host.rsplit_once(':').map_or(host, |(h, _)| h);
    let not_found = || XrpcError::new(StatusCode::NOT_FOUND, "NotFound", "User not found");
    if validate_handle(host).is_err() {
        return Err(not_found());
    }
    let account = app.accounts.by_handle(host).ok_or_else(not_found)?;
    let mut r = Response::new(Body::Full(Some(Bytes::from(account.did.clone()))));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    Ok(r)
}
