//! `com.atproto.server.createAppPassword` / `listAppPasswords` /
//! `revokeAppPassword` (the rows: `app_passwords.rs`).
//!
//! Scopes as the reference: creating and revoking take the account
//! password's session (an app-password session is 401 `InvalidToken`),
//! listing takes any session. A privileged app password can only be made
//! by the account password's session too.

use std::sync::Arc;

use http::Response;
use http::request::Parts;
use hyper::body::Incoming;
use repo::cbor::json::push_json_str;

use crate::accounts::app_passwords::{AppPassword, CreateError, MAX_NAME_BYTES, generate, salt};
use crate::app::{App, blocking};
use crate::auth::Scope;
use crate::error::{XResult, XrpcError};
use crate::password;
use crate::request::json_body;
use crate::response::{Body, ok};

#[derive(serde::Deserialize)]
struct CreateInput {
    name: String,
    #[serde(default)]
    privileged: Option<bool>,
}

#[derive(serde::Deserialize)]
struct RevokeInput {
    name: String,
}

fn check_name(name: &str) -> XResult<&str> {
    let name = name.trim();
    if name.is_empty() {
        return Err(XrpcError::invalid("name must not be empty"));
    }
    if name.len() > MAX_NAME_BYTES || name.chars().any(char::is_control) {
        return Err(XrpcError::invalid(format!(
            "name must be at most {MAX_NAME_BYTES} bytes of printable text"
        )));
    }
    Ok(name)
}

/// Milliseconds since the epoch.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// `com.atproto.server.createAppPassword`.
pub async fn create(app: &Arc<App>, parts: &Parts, body: Incoming) -> XResult<Response<Body>> {
    let did = app.session(parts, Scope::Full)?.sub;
    let input: CreateInput = json_body(app, parts, body).await?;
    let name = check_name(&input.name)?.to_owned();
    let privileged = input.privileged.unwrap_or(false);
    let plain = generate().map_err(XrpcError::fault)?;
    let mut id = [0u8; 12];
    getrandom::fill(&mut id).map_err(XrpcError::fault)?;
    let id = data_encoding::BASE64URL_NOPAD.encode(&id);
    let log_n = app.config.scrypt_log_n;
    let kdf = app.kdf_slot().await?;
    let (p2, did2) = (plain.clone(), did.clone());
    let hash =
        blocking(move || password::hash_salted(&p2, &salt(&did2), log_n).map_err(XrpcError::fault))
            .await;
    drop(kdf);
    let created_at = codec::datetime::rfc3339_millis(now_ms());
    let ap = AppPassword {
        id,
        name: name.clone(),
        hash: hash?,
        privileged,
        created_at: created_at.clone(),
    };
    let app2 = app.clone();
    blocking(move || match app2.accounts.add_app_password(&did, ap) {
        Ok(()) => Ok(()),
        Err(CreateError::Taken) => Err(XrpcError::invalid(
            "could not create app-specific password: the name is taken",
        )),
        Err(e @ CreateError::TooMany) => Err(XrpcError::invalid(e.to_string())),
        Err(e) => Err(XrpcError::fault(e)),
    })
    .await?;
    let mut s = String::with_capacity(160);
    s.push_str("{\"name\":");
    push_json_str(&name, &mut s);
    s.push_str(",\"password\":");
    push_json_str(&plain, &mut s);
    s.push_str(",\"createdAt\":");
    push_json_str(&created_at, &mut s);
    s.push_str(if privileged {
        ",\"privileged\":true}"
    } else {
        ",\"privileged\":false}"
    });
    Ok(ok(s))
}

/// `com.atproto.server.listAppPasswords`.
pub fn list(app: &Arc<App>, parts: &Parts) -> XResult<Response<Body>> {
    let did = app.access_did(parts)?;
    let mut s = String::with_capacity(256);
    s.push_str("{\"passwords\":[");
    for (i, ap) in app.accounts.app_passwords(&did).iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str("{\"name\":");
        push_json_str(&ap.name, &mut s);
        s.push_str(",\"createdAt\":");
        push_json_str(&ap.created_at, &mut s);
        s.push_str(if ap.privileged {
            ",\"privileged\":true}"
        } else {
            ",\"privileged\":false}"
        });
    }
    s.push_str("]}");
    Ok(ok(s))
}

/// `com.atproto.server.revokeAppPassword`: the sessions made with it end
/// at once. Revoking a name that does not exist is not an error (as the
/// reference: the outcome is the same).
pub async fn revoke(app: &Arc<App>, parts: &Parts, body: Incoming) -> XResult<Response<Body>> {
    let did = app.session(parts, Scope::Full)?.sub;
    let input: RevokeInput = json_body(app, parts, body).await?;
    let name = check_name(&input.name)?.to_owned();
    let app2 = app.clone();
    blocking(move || {
        app2.accounts
            .revoke_app_password(&did, &name)
            .map_err(XrpcError::fault)
    })
    .await?;
    Ok(Response::new(Body::empty()))
}
