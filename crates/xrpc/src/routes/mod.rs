//! The router: `/xrpc/<method>` dispatched by a `match` on the method name
//! (no allocation, no table), the URL cap and the HTTP-method check.
//! Handlers read bodies with `request.rs` and answer with `response.rs`.
//!
//! | module | methods |
//! |---|---|
//! | `actor` | `app.bsky.actor.getPreferences` / `putPreferences` |
//! | `server` | `com.atproto.server.*` accounts and sessions, `identity.resolveHandle`, `/.well-known/atproto-did` |
//! | `app_passwords` | `server.createAppPassword` / `listAppPasswords` / `revokeAppPassword` |
//! | `service_auth` | `server.getServiceAuth`, `server.checkAccountStatus` |
//! | `repo` | `com.atproto.repo.*` writes and reads |
//! | `blob` | `repo.uploadBlob`, `repo.listMissingBlobs`, `sync.getBlob`, `sync.listBlobs` |
//! | `well_known` | `/.well-known/did.json` (the server's did:web document), the OAuth discovery documents and `/oauth/jwks` |
//! | `sync` | `com.atproto.sync.*` reads, `getBlocks` (the firehose is `subscribe.rs`) |
//! | `space` | `com.atproto.space.*`, `com.atproto.simplespace.*` (permissioned data) |

mod actor;
mod app_passwords;
mod blob;
mod repo;
mod server;
mod service_auth;
mod space;
mod sync;
mod well_known;

use std::net::IpAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::request::Parts;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use hyper::body::Incoming;

use crate::app::App;
use crate::error::{XResult, XrpcError};
use crate::rate_limit::{Class, Ticket};
use crate::response::{Body, error, json, ok};

/// Which HTTP methods an XRPC method takes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// GET (and HEAD).
    Query,
    /// POST.
    Procedure,
}

fn check_method(method: &Method, kind: Kind) -> XResult<()> {
    let ok = match kind {
        Kind::Query => method == Method::GET || method == Method::HEAD,
        Kind::Procedure => method == Method::POST,
    };
    if ok {
        Ok(())
    } else {
        Err(XrpcError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "InvalidRequest",
            format!(
                "Incorrect HTTP method ({method}) expected {}",
                if kind == Kind::Query { "GET" } else { "POST" }
            ),
        ))
    }
}

/// Answers one request from `peer` (CORS around it: `cors.rs`).
pub async fn handle(app: Arc<App>, req: Request<Incoming>, peer: IpAddr) -> Response<Body> {
    if let Some(r) = crate::cors::preflight(req.method(), req.headers()) {
        return r;
    }
    let mut resp = answer(app, req, peer).await;
    crate::cors::decorate(resp.headers_mut());
    resp
}

async fn answer(app: Arc<App>, req: Request<Incoming>, peer: IpAddr) -> Response<Body> {
    let (mut parts, body) = req.into_parts();
    let url_len = parts.uri.path().len() + parts.uri.query().map_or(0, |q| q.len() + 1);
    if url_len > app.config.max_url_bytes {
        return error(&XrpcError::new(
            StatusCode::URI_TOO_LONG,
            "InvalidRequest",
            format!("URL longer than {} bytes", app.config.max_url_bytes),
        ));
    }
    // Rate limits, when on (`rate_limit.rs`): one branch when off.
    let ticket = match &app.limits {
        None => None,
        Some(limiter) => match rate_limit_class(&parts) {
            Class::Free => None,
            Class::Global => {
                let status = limiter.charge_global(peer);
                if status.exceeded {
                    let mut resp = error(&crate::rate_limit::exceeded());
                    status.apply(resp.headers_mut());
                    return resp;
                }
                Some(Ticket {
                    peer,
                    status: Arc::new(std::sync::Mutex::new(Some(status))),
                })
            }
            Class::Own => {
                // The route charges its own limits once its token and
                // body are checked (`App::charge`).
                let t = Ticket {
                    peer,
                    status: Arc::new(std::sync::Mutex::new(None)),
                };
                parts.extensions.insert(t.clone());
                Some(t)
            }
        },
    };
    // A heavy response takes its slot before any work (`admission.rs`).
    let slot = match parts.uri.path().strip_prefix("/xrpc/") {
        Some(m) if crate::admission::is_heavy(m) => match app.heavy.admit(peer) {
            Ok(slot) => Some(slot),
            Err(e) => {
                let mut resp = error(&e);
                apply_ticket(ticket.as_ref(), &mut resp);
                resp.headers_mut().insert(
                    header::RETRY_AFTER,
                    HeaderValue::from(crate::admission::RETRY_AFTER_SECS),
                );
                return resp;
            }
        },
        _ => None,
    };
    let head = parts.method == Method::HEAD;
    let result = route(&app, &mut parts, body).await;
    let mut resp = match result {
        Ok(r) => r,
        Err(e) => error(&e),
    };
    apply_ticket(ticket.as_ref(), &mut resp);
    if resp.status() == StatusCode::REQUEST_TIMEOUT {
        // The rest of a body past its deadline is not waited for: the
        // connection goes once the answer is out.
        resp.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    if head {
        // hyper sends no body for HEAD, but the length must stay.
        if let Body::Full(Some(b)) = resp.body() {
            let len = b.len();
            resp.headers_mut()
                .entry(header::CONTENT_LENGTH)
                .or_insert_with(|| HeaderValue::from(len));
        }
    }
    match slot {
        Some(slot) => resp.map(|b| Body::Admitted(Box::new(b), Arc::new(slot))),
        None => resp,
    }
}

/// The `RateLimit-*` headers of the request's charge, if any.
fn apply_ticket(ticket: Option<&Ticket>, resp: &mut Response<Body>) {
    if let Some(t) = ticket {
        let status = *t.status.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(status) = status {
            status.apply(resp.headers_mut());
        }
    }
}

fn rate_limit_class(parts: &Parts) -> Class {
    match parts.uri.path().strip_prefix("/xrpc/") {
        Some(m) => crate::rate_limit::class(m),
        None => Class::Free,
    }
}

async fn route(app: &Arc<App>, parts: &mut Parts, body: Incoming) -> XResult<Response<Body>> {
    let path = parts.uri.path();
    let Some(method) = path.strip_prefix("/xrpc/") else {
        return match path {
            "/.well-known/atproto-did" => server::well_known_did(app, parts),
            "/.well-known/did.json" => Ok(well_known::did_json(app)),
            "/.well-known/oauth-protected-resource" => {
                Ok(well_known::oauth_protected_resource(app))
            }
            "/.well-known/oauth-authorization-server" => {
                Ok(well_known::oauth_authorization_server(app))
            }
            "/oauth/jwks" => Ok(well_known::oauth_jwks()),
            "/" => Ok(json(
                StatusCode::OK,
                Bytes::from_static(
                    b"\"This is an atproto PDS (atpds). Most API routes are under /xrpc/\"",
                ),
            )),
            _ => Err(XrpcError::new(
                StatusCode::NOT_FOUND,
                "NotFound",
                "Not Found",
            )),
        };
    };
    let m = &parts.method;
    use Kind::{Procedure as P, Query as Q};
    match method {
        "_health" => {
            check_method(m, Q)?;
            Ok(ok(Bytes::from_static(b"{\"version\":\"atpds 0.1.0\"}")))
        }
        "com.atproto.server.describeServer" => {
            check_method(m, Q)?;
            Ok(ok(app.describe.clone()))
        }
        "com.atproto.server.createAccount" => {
            check_method(m, P)?;
            server::create_account(app, parts, body).await
        }
        "com.atproto.server.createSession" => {
            check_method(m, P)?;
            server::create_session(app, parts, body).await
        }
        "com.atproto.server.getSession" => {
            check_method(m, Q)?;
            server::get_session(app, parts)
        }
        "com.atproto.server.refreshSession" => {
            check_method(m, P)?;
            server::refresh_session(app, parts).await
        }
        "com.atproto.server.deleteSession" => {
            check_method(m, P)?;
            server::delete_session(app, parts).await
        }
        "com.atproto.server.getServiceAuth" => {
            check_method(m, Q)?;
            service_auth::get_service_auth(app, parts).await
        }
        "com.atproto.server.checkAccountStatus" => {
            check_method(m, Q)?;
            service_auth::check_account_status(app, parts).await
        }
        "com.atproto.server.createAppPassword" => {
            check_method(m, P)?;
            app_passwords::create(app, parts, body).await
        }
        "com.atproto.server.listAppPasswords" => {
            check_method(m, Q)?;
            app_passwords::list(app, parts)
        }
        "com.atproto.server.revokeAppPassword" => {
            check_method(m, P)?;
            app_passwords::revoke(app, parts, body).await
        }
        "app.bsky.actor.getPreferences" => {
            check_method(m, Q)?;
            actor::get_preferences(app, parts).await
        }
        "app.bsky.actor.putPreferences" => {
            check_method(m, P)?;
            actor::put_preferences(app, parts, body).await
        }
        "com.atproto.identity.resolveHandle" => {
            check_method(m, Q)?;
            server::resolve_handle(app, parts)
        }
        "com.atproto.repo.createRecord" => {
            check_method(m, P)?;
            repo::create_record(app, parts, body).await
        }
        "com.atproto.repo.putRecord" => {
            check_method(m, P)?;
            repo::put_record(app, parts, body).await
        }
        "com.atproto.repo.deleteRecord" => {
            check_method(m, P)?;
            repo::delete_record(app, parts, body).await
        }
        "com.atproto.repo.applyWrites" => {
            check_method(m, P)?;
            repo::apply_writes(app, parts, body).await
        }
        "com.atproto.repo.getRecord" => {
            check_method(m, Q)?;
            repo::get_record(app, parts).await
        }
        "com.atproto.repo.listRecords" => {
            check_method(m, Q)?;
            repo::list_records(app, parts).await
        }
        "com.atproto.repo.describeRepo" => {
            check_method(m, Q)?;
            repo::describe_repo(app, parts).await
        }
        "com.atproto.repo.uploadBlob" => {
            check_method(m, P)?;
            blob::upload_blob(app, parts, body).await
        }
        "com.atproto.repo.listMissingBlobs" => {
            check_method(m, Q)?;
            blob::list_missing_blobs(app, parts).await
        }
        "com.atproto.sync.getBlob" => {
            check_method(m, Q)?;
            blob::get_blob(app, parts).await
        }
        "com.atproto.sync.listBlobs" => {
            check_method(m, Q)?;
            blob::list_blobs(app, parts).await
        }
        "com.atproto.sync.getRepo" => {
            check_method(m, Q)?;
            sync::get_repo(app, parts).await
        }
        "com.atproto.sync.getRecord" => {
            check_method(m, Q)?;
            sync::get_record(app, parts).await
        }
        "com.atproto.sync.getBlocks" => {
            check_method(m, Q)?;
            sync::get_blocks(app, parts).await
        }
        "com.atproto.sync.getLatestCommit" => {
            check_method(m, Q)?;
            sync::get_latest_commit(app, parts).await
        }
        "com.atproto.sync.getRepoStatus" => {
            check_method(m, Q)?;
            sync::get_repo_status(app, parts).await
        }
        "com.atproto.sync.listRepos" => {
            check_method(m, Q)?;
            sync::list_repos(app, parts).await
        }
        m_ if m_.starts_with("com.atproto.space.")
            || m_.starts_with("com.atproto.simplespace.") =>
        {
            let method = method.to_owned();
            space_route(app, parts, body, &method).await
        }
        "com.atproto.sync.subscribeRepos" => {
            check_method(m, Q)?;
            crate::subscribe::upgrade(app, parts)
        }
        _ if crate::proxy::wants(app, parts, method) => {
            let nsid = method.to_owned();
            crate::proxy::forward(app, parts, body, &nsid).await
        }
        _ => Err(XrpcError::new(
            StatusCode::NOT_IMPLEMENTED,
            "MethodNotImplemented",
            "Method Not Implemented",
        )),
    }
}

/// The permissioned-data methods (`space.rs`).
async fn space_route(
    app: &Arc<App>,
    parts: &Parts,
    body: Incoming,
    method: &str,
) -> XResult<Response<Body>> {
    use Kind::{Procedure as P, Query as Q};
    use space::WriteKind as W;
    let m = &parts.method;
    match method {
        "com.atproto.space.createSpace" | "com.atproto.simplespace.createSpace" => {
            check_method(m, P)?;
            space::create_space(app, parts, body).await
        }
        "com.atproto.simplespace.addMember" => {
            check_method(m, P)?;
            space::member(app, parts, body, true).await
        }
        "com.atproto.simplespace.removeMember" => {
            check_method(m, P)?;
            space::member(app, parts, body, false).await
        }
        "com.atproto.space.getSpaceCredential" => {
            check_method(m, P)?;
            space::get_credential(app, parts, body).await
        }
        "com.atproto.space.createRecord" => {
            check_method(m, P)?;
            space::write(app, parts, body, W::Create).await
        }
        "com.atproto.space.putRecord" => {
            check_method(m, P)?;
            space::write(app, parts, body, W::Put).await
        }
        "com.atproto.space.deleteRecord" => {
            check_method(m, P)?;
            space::write(app, parts, body, W::Delete).await
        }
        "com.atproto.space.getRecord" => {
            check_method(m, Q)?;
            space::get_record(app, parts).await
        }
        "com.atproto.space.listRecords" => {
            check_method(m, Q)?;
            space::list_records(app, parts).await
        }
        "com.atproto.space.listRepoOps" => {
            check_method(m, Q)?;
            space::list_repo_ops(app, parts).await
        }
        "com.atproto.space.getLatestCommit" => {
            check_method(m, Q)?;
            space::get_latest_commit(app, parts).await
        }
        "com.atproto.space.getRepo" => {
            check_method(m, Q)?;
            space::get_repo(app, parts).await
        }
        "com.atproto.space.getBlob" => {
            check_method(m, Q)?;
            space::get_blob(app, parts).await
        }
        _ => Err(XrpcError::new(
            StatusCode::NOT_IMPLEMENTED,
            "MethodNotImplemented",
            "Method Not Implemented",
        )),
    }
}
