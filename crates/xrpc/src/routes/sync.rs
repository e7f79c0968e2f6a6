//! `com.atproto.sync.*` reads: getRepo (the store's export streamed in
//! 64 KiB chunks through a bounded channel, so memory stays constant
//! whatever the repository's size), getRecord (a proof CAR of the key's
//! path only),
//! getLatestCommit, getRepoStatus, listRepos.

use std::io::Write;
use std::sync::Arc;

use bytes::Bytes;
use http::request::Parts;
use http::{HeaderValue, Response, header};
use repo::car::write_car_vec;
use repo::cbor::json::push_json_str;
use tokio::sync::mpsc;

use crate::app::App;
use crate::error::{XResult, XrpcError};
use crate::params::Params;
use crate::response::{Body, end_page, ok};

const CHUNK: usize = 64 << 10;
/// Chunks in flight between the export and the socket.
const CHUNKS_IN_FLIGHT: usize = 4;
const CAR: HeaderValue = HeaderValue::from_static("application/vnd.ipld.car");

fn repo_not_found(did: &str) -> XrpcError {
    XrpcError::bad(
        "RepoNotFound",
        format!("Could not find repo for DID: {did}"),
    )
}

/// A `Write` that hands 64 KiB chunks to the response body; a client that
/// went away fails the next write, which stops the export.
struct Chunks {
    tx: mpsc::Sender<Result<Bytes, std::io::Error>>,
    buf: Vec<u8>,
}

impl Chunks {
    fn send(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK));
        self.tx
            .blocking_send(Ok(Bytes::from(chunk)))
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "client went away"))
    }
}

impl Write for Chunks {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(b);
        if self.buf.len() >= CHUNK {
            self.send()?;
        }
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.send()
    }
}

/// `com.atproto.sync.getRepo`.
pub async fn get_repo(app: &Arc<App>, parts: &Parts) -> XResult<Response<Body>> {
    let p = Params::parse(parts.uri.query())?;
    let did = p.did("did")?.to_owned();
    let since = p.opt_tid("since")?.map(str::to_owned);
    let did2 = did.clone();
    if app
        .read(move |store| Ok(store.repo_root(&did2)?))
        .await?
        .is_none()
    {
        return Err(repo_not_found(&did));
    }
    let mut r = Response::new(Body::empty());
    r.headers_mut().insert(header::CONTENT_TYPE, CAR);
    if parts.method == http::Method::HEAD {
        return Ok(r);
    }
    let (tx, rx) = mpsc::channel(CHUNKS_IN_FLIGHT);
    let store = app.store.clone();
    tokio::task::spawn_blocking(move || {
        let mut out = Chunks {
            tx: tx.clone(),
            buf: Vec::with_capacity(CHUNK),
        };
        let result = store
            .export_repo(&did, since.as_deref(), &mut out)
            .map_err(|e| std::io::Error::other(e.to_string()))
            .and_then(|_| out.send());
        if let Err(e) = result {
            // Ends the body with an error: the client sees a truncated
            // response, never a CAR that looks whole.
            let _ = tx.blocking_send(Err(e));
        }
    });
    *r.body_mut() = Body::Stream(rx);
    Ok(r)
}

/// The proof CAR of one record: the commit block, the MST nodes covering
/// the key, the record block (`Store::record_proof`).
fn proof_car(
    store: &store::Store,
    did: &str,
    collection: &str,
    rkey: &str,
) -> XResult<Option<Vec<u8>>> {
    match store.record_proof(did, collection, rkey) {
        Ok(Some(p)) => Ok(Some(write_car_vec(
            &[p.root],
            p.blocks.iter().map(|(c, b)| (c, b.as_slice())),
        ))),
        Ok(None) => Ok(None),
        Err(store::StoreError::UnknownAccount(_)) => Err(repo_not_found(did)),
        Err(e) => Err(e.into()),
    }
}

/// `com.atproto.sync.getRecord`.
pub async fn get_record(app: &Arc<App>, parts: &Parts) -> XResult<Response<Body>> {
    let p = Params::parse(parts.uri.query())?;
    let did = p.did("did")?.to_owned();
    let collection = p.nsid("collection")?.to_owned();
    let rkey = p.rkey("rkey")?.to_owned();
    let car = app
        .read(move |store| proof_car(store, &did, &collection, &rkey))
        .await?;
    let car = car.ok_or_else(|| XrpcError::bad("RecordNotFound", "Could not locate record"))?;
    let mut r = Response::new(Body::Full(Some(Bytes::from(car))));
    r.headers_mut().insert(header::CONTENT_TYPE, CAR);
    Ok(r)
}

/// `com.atproto.sync.getLatestCommit`.
pub async fn get_latest_commit(app: &Arc<App>, parts: &Parts) -> XResult<Response<Body>> {
    let p = Params::parse(parts.uri.query())?;
    let did = p.did("did")?.to_owned();
    let did2 = did.clone();
    let root = app
        .read(move |store| Ok(store.repo_root(&did2)?))
        .await?
        .ok_or_else(|| repo_not_found(&did))?;
    let mut s = String::with_capacity(96);
    s.push_str("{\"cid\":\"");
    root.commit.push_str(&mut s);
    s.push_str("\",\"rev\":\"");
    s.push_str(&root.rev);
    s.push_str("\"}");
    Ok(ok(s))
}

fn push_status(s: &mut String, state: &store::AccountState) {
    s.push_str(if state.active {
        "\"active\":true"
    } else {
        "\"active\":false"
    });
    if let Some(st) = &state.status {
        s.push_str(",\"status\":");
        push_json_str(st, s);
    }
}

/// `com.atproto.sync.getRepoStatus`.
pub async fn get_repo_status(app: &Arc<App>, parts: &Parts) -> XResult<Response<Body>> {
    let p = Params::parse(parts.uri.query())?;
    let did = p.did("did")?.to_owned();
    let did2 = did.clone();
    let (state, root) = app
        .read(move |store| Ok((store.account_state(&did2)?, store.repo_root(&did2)?)))
        .await?;
    let (Some(state), Some(root)) = (state, root) else {
        return Err(repo_not_found(&did));
    };
    let mut s = String::with_capacity(128);
    s.push_str("{\"did\":");
    push_json_str(&did, &mut s);
    s.push(',');
    push_status(&mut s, &state);
    if state.active {
        s.push_str(",\"rev\":\"");
        s.push_str(&root.rev);
        s.push('"');
    }
    s.push('}');
    Ok(ok(s))
}

/// `com.atproto.sync.listRepos`: in DID order, `cursor` the last DID of
/// the previous page.
pub async fn list_repos(app: &Arc<App>, parts: &Parts) -> XResult<Response<Body>> {
    let p = Params::parse(parts.uri.query())?;
    let limit = p.int("limit", 1, 1000, 500)? as usize;
    let cursor = match p.get("cursor") {
        None | Some("") => None,
        Some(_) => Some(p.did("cursor")?.to_owned()),
    };
    let page = app
        .read(move |store| Ok(store.list_repos(cursor.as_deref(), limit)?))
        .await?;
    let mut s = String::with_capacity(32 + page.len() * 200);
    s.push_str("{\"repos\":[");
    for (i, (did, root, state)) in page.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str("{\"did\":");
        push_json_str(did, &mut s);
        s.push_str(",\"head\":\"");
        root.commit.push_str(&mut s);
        s.push_str("\",\"rev\":\"");
        s.push_str(&root.rev);
        s.push_str("\",");
        push_status(&mut s, state);
        s.push('}');
    }
    Ok(end_page(s, &page, limit, |(did, _, _), s| {
        push_json_str(did, s)
    }))
}
