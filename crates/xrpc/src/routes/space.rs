//! `com.atproto.space.*` and the space-management methods
//! (`com.atproto.simplespace.*` of E2, `com.atproto.space.createSpace` of
//! E4) over the `space` crate (`spaces.rs` holds the state).
//!
//! Who may call what:
//! - management (createSpace, addMember, removeMember, deleteSpace): an
//!   access token; the space's authority only (createSpace anchors the
//!   space on the caller);
//! - writes: an access token whose DID is the `repo` and a member with
//!   write access;
//! - reads: an access token of a member with read access, or a space
//!   credential for this space (`Atproto-Space-Credential`), its holder
//!   checked again.
//!
//! Era per response: getRepo answers a STAR (E4) when the request accepts
//! `application/vnd.dasl.star`, else the two-root CAR (E2); a request that
//! carries `Atproto-Space-Mac: …;key-share="did:key:…"` gets E4 commits and
//! MAC headers, others E2 signed commits. getBlob serves `Range` (206, 416)
//! and only blobs a record in the space references.

use std::sync::Arc;

use bytes::Bytes;
use http::request::Parts;
use http::{HeaderValue, Response, StatusCode, header};
use hyper::body::Incoming;
use repo::cbor::json::{push_json_str, to_json, value_to_json};
use serde::Deserialize;
use space::envelope::{Envelope, RequestAuth, parse_request_header};
use space::{ListParams, Need, OpsParams, Policy, SpaceRef, Write};

use crate::app::{App, blocking};
use crate::error::{XResult, XrpcError};
use crate::params::Params;
use crate::request::json_body;
use crate::response::{Body, ok};
use crate::spaces::xrpc_error;

const CREDENTIAL_SCHEME: &str = "Atproto-Space-Credential ";

fn space_param(s: &str) -> XResult<SpaceRef> {
    SpaceRef::parse(s).map_err(xrpc_error)
}

/// The reader's DID: a space credential for `space`, else the session.
fn reader(app: &App, parts: &Parts, space: &SpaceRef) -> XResult<String> {
    let cred = parts
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix(CREDENTIAL_SCHEME));
    match cred {
        Some(token) => app.spaces.verify(token.trim(), space, crate::auth::now()),
        None => app.access_did(parts),
    }
}

fn request_auth(parts: &Parts) -> RequestAuth {
    RequestAuth {
        key_share: parts
            .headers
            .get(space::envelope::MAC_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_request_header),
    }
}

fn envelope<'a>(app: &'a App, req: &RequestAuth) -> &'a dyn Envelope {
    if req.key_share.is_some() {
        &app.spaces.e4
    } else {
        &app.spaces.e2
    }
}

fn with_headers(mut r: Response<Body>, headers: Vec<(String, String)>) -> XResult<Response<Body>> {
    for (k, v) in headers {
        let name = header::HeaderName::try_from(k).map_err(XrpcError::fault)?;
        r.headers_mut()
            .insert(name, HeaderValue::try_from(v).map_err(XrpcError::fault)?);
    }
    Ok(r)
}

fn space_result<T>(r: space::Result<T>) -> XResult<T> {
    r.map_err(xrpc_error)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CreateSpaceInput {
    #[serde(alias = "spaceType")]
    r#type: String,
    skey: Option<String>,
    policy: Option<serde_json::Value>,
}

fn policy_of(v: Option<&serde_json::Value>) -> XResult<Policy> {
    let Some(v) = v else {
        return Ok(Policy::MemberList);
    };
    let t = v.get("$type").and_then(|t| t.as_str()).unwrap_or("");
    let name = t.rsplit(['#', '.']).next().unwrap_or(t);
    let p = match name {
        "memberListPolicy" | "memberspace" => Some(Policy::MemberList),
        "publicPolicy" => Some(Policy::Public),
        "personalspace" | "policy" if t.contains("personalspace") => Some(Policy::Personal),
        "policy" if t.contains("memberspace") => Some(Policy::MemberList),
        _ => None,
    };
    p.ok_or_else(|| XrpcError::bad("UnsupportedPolicy", format!("Unsupported policy {t:?}")))
}

/// `simplespace.createSpace` / `space.createSpace`.
pub async fn create_space(
    app: &Arc<App>,
    parts: &Parts,
    body: Incoming,
) -> XResult<Response<Body>> {
    let did = app.access_did(parts)?;
    let input: CreateSpaceInput = json_body(app, parts, body).await?;
    let policy = policy_of(input.policy.as_ref())?;
    let store = app.spaces.store.clone();
    let sp = blocking(move || {
        space_result(store.create_space(&did, &input.r#type, input.skey.as_deref(), policy, "open"))
    })
    .await?;
    let mut out = String::from("{\"uri\":");
    push_json_str(&sp.to_uri(), &mut out);
    out.push('}');
    Ok(ok(out))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MemberInput {
    space: String,
    did: String,
    #[serde(default = "yes")]
    read: bool,
    #[serde(default)]
    write: bool,
}

fn yes() -> bool {
    true
}

/// `simplespace.addMember` (with E4's read/write access) and `removeMember`.
pub async fn member(
    app: &Arc<App>,
    parts: &Parts,
    body: Incoming,
    add: bool,
) -> XResult<Response<Body>> {
    let did = app.access_did(parts)?;
    let input: MemberInput = json_body(app, parts, body).await?;
    let sp = space_param(&input.space)?;
    let store = app.spaces.store.clone();
    blocking(move || {
        space_result(store.authorize(&sp, &did, Need::Admin))?;
        space_result(if add {
            store.put_member(&sp, &input.did, input.read, input.write)
        } else {
            store.remove_member(&sp, &input.did)
        })
    })
    .await?;
    Ok(ok(Bytes::from_static(b"{}")))
}

#[derive(Deserialize)]
struct SpaceOnly {
    space: String,
}

/// `space.getSpaceCredential`: a read credential for the caller.
pub async fn get_credential(
    app: &Arc<App>,
    parts: &Parts,
    body: Incoming,
) -> XResult<Response<Body>> {
    let did = app.access_did(parts)?;
    let input: SpaceOnly = json_body(app, parts, body).await?;
    let sp = space_param(&input.space)?;
    let store = app.spaces.store.clone();
    let (sp2, did2) = (sp.clone(), did.clone());
    blocking(move || space_result(store.authorize(&sp2, &did2, Need::Read))).await?;
    let (token, exp) = app.spaces.mint(&did, &sp, crate::auth::now());
    Ok(ok(format!(
        "{{\"credential\":\"{token}\",\"expiresAt\":{exp}}}"
    )))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WriteInput {
    space: String,
    repo: String,
    collection: String,
    rkey: Option<String>,
    record: Option<serde_json::Value>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum WriteKind {
    Create,
    Put,
    Delete,
}

fn drisl(v: serde_json::Value) -> XResult<Vec<u8>> {
    let v = repo::cbor::json::from_json_value_owned(v)
        .map_err(|e| XrpcError::invalid(format!("Invalid record: {e}")))?;
    Ok(repo::cbor::to_vec(&v))
}

/// `space.createRecord` / `putRecord` / `deleteRecord`.
pub async fn write(
    app: &Arc<App>,
    parts: &Parts,
    body: Incoming,
    kind: WriteKind,
) -> XResult<Response<Body>> {
    let did = app.access_did(parts)?;
    let input: WriteInput = json_body(app, parts, body).await?;
    let sp = space_param(&input.space)?;
    let rkey = || {
        input
            .rkey
            .clone()
            .ok_or_else(|| XrpcError::invalid("Missing rkey"))
    };
    let record = || {
        input
            .record
            .clone()
            .ok_or_else(|| XrpcError::invalid("Missing record"))
            .and_then(drisl)
    };
    let w = match kind {
        WriteKind::Create => Write::Create {
            collection: input.collection.clone(),
            rkey: input.rkey.clone(),
            value: record()?,
        },
        WriteKind::Put => Write::Update {
            collection: input.collection.clone(),
            rkey: rkey()?,
            value: record()?,
        },
        WriteKind::Delete => Write::Delete {
            collection: input.collection.clone(),
            rkey: rkey()?,
        },
    };
    let store = app.spaces.store.clone();
    let repo_did = input.repo.clone();
    let (sp2, repo2) = (sp.clone(), repo_did.clone());
    let res = blocking(move || {
        space_result(store.authorize(&sp2, &did, Need::Write { repo: &repo2 }))?;
        space_result(store.apply_writes(&sp2, &repo2, vec![w]))
    })
    .await?;
    let r = &res.results[0];
    let mut out = String::from("{");
    if let Some(cid) = &r.cid {
        out.push_str("\"uri\":");
        push_json_str(&sp.record_uri(&repo_did, &r.collection, &r.rkey), &mut out);
        out.push_str(",\"cid\":\"");
        cid.push_str(&mut out);
        out.push_str("\",\"rev\":\"");
    } else {
        out.push_str("\"rev\":\"");
    }
    out.push_str(&res.rev);
    out.push_str("\"}");
    Ok(ok(out))
}

/// `space.getRecord`.
pub async fn get_record(app: &Arc<App>, parts: &Parts) -> XResult<Response<Body>> {
    let p = Params::parse(parts.uri.query())?;
    let sp = space_param(p.required("space")?)?;
    let repo = p.did("repo")?.to_owned();
    let collection = p.nsid("collection")?.to_owned();
    let rkey = p.rkey("rkey")?.to_owned();
    let did = reader(app, parts, &sp)?;
    let store = app.spaces.store.clone();
    let sp2 = sp.clone();
    let (repo2, c2, r2) = (repo.clone(), collection.clone(), rkey.clone());
    let (cid, value) = blocking(move || {
        space_result(store.authorize(&sp2, &did, Need::Read))?;
        space_result(store.get_record(&sp2, &repo2, &c2, &r2))
    })
    .await?;
    let uri = sp.record_uri(&repo, &collection, &rkey);
    let req = request_auth(parts);
    let headers = space_result(envelope(app, &req).record(&uri, &cid, &req))?;
    let v = repo::cbor::decode(&value).map_err(XrpcError::fault)?;
    let mut out = String::from("{\"uri\":");
    push_json_str(&uri, &mut out);
    out.push_str(",\"cid\":\"");
    cid.push_str(&mut out);
    out.push_str("\",\"value\":");
    out.push_str(&to_json(&v));
    out.push('}');
    with_headers(ok(out), headers)
}

/// `space.listRecords`.
pub async fn list_records(app: &Arc<App>, parts: &Parts) -> XResult<Response<Body>> {
    let p = Params::parse(parts.uri.query())?;
    let sp = space_param(p.required("space")?)?;
    let repo = p.did("repo")?.to_owned();
    let lp = ListParams {
        collection: p.get("collection").map(str::to_owned),
        limit: Some(p.int("limit", 1, 1000, 50)? as u32),
        cursor: p.get("cursor").map(str::to_owned),
        reverse: p.bool("reverse")?,
        exclude_values: p.bool("excludeValues")?,
    };
    let did = reader(app, parts, &sp)?;
    let store = app.spaces.store.clone();
    let page = blocking(move || {
        space_result(store.authorize(&sp, &did, Need::Read))?;
        space_result(store.list_records(&sp, &repo, &lp))
    })
    .await?;
    let mut out = String::with_capacity(64 + page.records.len() * 128);
    out.push('{');
    if let Some(c) = &page.cursor {
        out.push_str("\"cursor\":");
        push_json_str(c, &mut out);
        out.push(',');
    }
    out.push_str("\"records\":[");
    for (i, r) in page.records.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"collection\":");
        push_json_str(&r.collection, &mut out);
        out.push_str(",\"rkey\":");
        push_json_str(&r.rkey, &mut out);
        out.push_str(",\"cid\":\"");
        r.cid.push_str(&mut out);
        out.push('"');
        if let Some(v) = &r.value {
            out.push_str(",\"value\":");
            out.push_str(&to_json(&repo::cbor::decode(v).map_err(XrpcError::fault)?));
        }
        out.push('}');
    }
    out.push_str("]}");
    Ok(ok(out))
}

/// `space.listRepoOps`: the commit on the last page only.
pub async fn list_repo_ops(app: &Arc<App>, parts: &Parts) -> XResult<Response<Body>> {
    let p = Params::parse(parts.uri.query())?;
    let sp = space_param(p.required("space")?)?;
    let repo = p.did("repo")?.to_owned();
    let op = OpsParams {
        since: p.opt_tid("since")?.map(str::to_owned),
        limit: Some(p.int("limit", 1, 1000, 100)? as u32),
        cursor: p.get("cursor").map(str::to_owned),
        exclude_values: p.bool("excludeValues")?,
    };
    let did = reader(app, parts, &sp)?;
    let store = app.spaces.store.clone();
    let (sp2, repo2) = (sp.clone(), repo.clone());
    let page = blocking(move || {
        space_result(store.authorize(&sp2, &did, Need::Read))?;
        space_result(store.list_repo_ops(&sp2, &repo2, &op))
    })
    .await?;
    let mut out = String::with_capacity(64 + page.ops.len() * 160);
    out.push_str("{\"ops\":[");
    for (i, o) in page.ops.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"rev\":\"");
        out.push_str(&o.rev);
        out.push_str("\",\"collection\":");
        push_json_str(&o.collection, &mut out);
        out.push_str(",\"rkey\":");
        push_json_str(&o.rkey, &mut out);
        for (k, c) in [("cid", &o.cid), ("prev", &o.prev)] {
            out.push_str(",\"");
            out.push_str(k);
            out.push_str("\":");
            match c {
                Some(c) => {
                    out.push('"');
                    c.push_str(&mut out);
                    out.push('"');
                }
                None => out.push_str("null"),
            }
        }
        if let Some(v) = &o.value {
            out.push_str(",\"value\":");
            out.push_str(&to_json(&repo::cbor::decode(v).map_err(XrpcError::fault)?));
        }
        out.push('}');
    }
    out.push(']');
    let mut headers = Vec::new();
    if let Some(c) = &page.cursor {
        out.push_str(",\"cursor\":");
        push_json_str(c, &mut out);
    }
    if let Some(state) = &page.state {
        let req = request_auth(parts);
        let a = space_result(envelope(app, &req).commit(&sp, &repo, state, &req))?;
        out.push_str(",\"commit\":");
        out.push_str(&value_to_json(&a.commit));
        headers = a.headers;
    }
    out.push('}');
    with_headers(ok(out), headers)
}

/// `space.getLatestCommit`.
pub async fn get_latest_commit(app: &Arc<App>, parts: &Parts) -> XResult<Response<Body>> {
    let p = Params::parse(parts.uri.query())?;
    let sp = space_param(p.required("space")?)?;
    let repo = p.did("repo")?.to_owned();
    let did = reader(app, parts, &sp)?;
    let store = app.spaces.store.clone();
    let (sp2, repo2) = (sp.clone(), repo.clone());
    let state = blocking(move || {
        space_result(store.authorize(&sp2, &did, Need::Read))?;
        space_result(store.repo_state(&sp2, &repo2))
    })
    .await?;
    let req = request_auth(parts);
    let a = space_result(envelope(app, &req).commit(&sp, &repo, &state, &req))?;
    with_headers(
        ok(format!("{{\"commit\":{}}}", value_to_json(&a.commit))),
        a.headers,
    )
}

/// `space.getRepo`: E2 CAR, or E4 STAR when the client accepts it.
pub async fn get_repo(app: &Arc<App>, parts: &Parts) -> XResult<Response<Body>> {
    let p = Params::parse(parts.uri.query())?;
    let sp = space_param(p.required("space")?)?;
    let repo = p.did("repo")?.to_owned();
    let exclude = p.bool("excludeValues")?;
    let did = reader(app, parts, &sp)?;
    let star = parts
        .headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("application/vnd.dasl.star"));
    let req = request_auth(parts);
    let app2 = app.clone();
    let (ctype, bytes, headers) = blocking(move || {
        let spaces = &app2.spaces;
        space_result(spaces.store.authorize(&sp, &did, Need::Read))?;
        let env: &dyn Envelope = if star { &spaces.e4 } else { &spaces.e2 };
        let mut out = Vec::new();
        let a = space_result(env.get_repo(&spaces.store, &sp, &repo, exclude, &req, &mut out))?;
        Ok((env.repo_content_type(), out, a.headers))
    })
    .await?;
    let mut r = Response::new(Body::Full(Some(Bytes::from(bytes))));
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(ctype));
    with_headers(r, headers)
}

/// `space.getBlob`: only a blob a record of the space references, with
/// `Range` served by the public getBlob's code.
pub async fn get_blob(app: &Arc<App>, parts: &Parts) -> XResult<Response<Body>> {
    let p = Params::parse(parts.uri.query())?;
    let sp = space_param(p.required("space")?)?;
    let repo = p.did("repo")?.to_owned();
    let cid = p.cid("cid")?;
    let did = reader(app, parts, &sp)?;
    let store = app.spaces.store.clone();
    let referenced = blocking(move || {
        space_result(store.authorize(&sp, &did, Need::Read))?;
        space_result(store.blob_in_space(&sp, &cid))
    })
    .await?;
    if !referenced {
        return Err(XrpcError::bad(
            "BlobNotFound",
            "Blob not found in this space",
        ));
    }
    let mut r = super::blob::serve_blob(app, parts, repo, cid).await?;
    if r.status() == StatusCode::OK || r.status() == StatusCode::PARTIAL_CONTENT {
        r.headers_mut().insert(
            header::CONTENT_DISPOSITION,
            HeaderValue::from_static("attachment"),
        );
    }
    Ok(r)
}
