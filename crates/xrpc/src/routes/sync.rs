//! `com.atproto.sync.*` reads: getRepo, getRecord (a proof CAR of the
//! key's path only), getBlocks, getLatestCommit, getRepoStatus, listRepos.
//!
//! getRepo spools the store's export into an unlinked file beside the
//! database on the read pool, under one read transaction that lasts as
//! long as the export runs at disk speed, then streams the file in 64 KiB
//! chunks, each read on the read pool. So a client that stops reading
//! holds no read transaction (the WAL keeps checkpointing), no thread (the
//! writers' blocking pool keeps its capacity) and no more than a few
//! chunks of memory; what it holds is a file the size of the repository,
//! until the write deadline drops it. getRecord's proof CAR of a large
//! record (past one chunk) is spooled and streamed the same way.

use std::io::{Seek, Write};
use std::sync::Arc;

use bytes::Bytes;
use http::request::Parts;
use http::{HeaderValue, Response, header};
use repo::car::write_car_vec;
use repo::cbor::json::push_json_str;

use crate::app::App;
use crate::error::{XResult, XrpcError};
use crate::params::Params;
use crate::response::{Body, end_page, ok};

use crate::stream::CHUNK;
const CAR: HeaderValue = HeaderValue::from_static("application/vnd.ipld.car");

fn repo_not_found(did: &str) -> XrpcError {
    XrpcError::bad(
        "RepoNotFound",
        format!("Could not find repo for DID: {did}"),
    )
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
    let dir = app.spool_dir();
    let spool = app
        .read(move |store| {
            let mut file = tempfile::tempfile_in(&dir)
                .map_err(|e| XrpcError::internal(format!("getRepo spool: {e}")))?;
            let mut out = std::io::BufWriter::with_capacity(CHUNK, &mut file);
            store.export_repo(&did, since.as_deref(), &mut out)?;
            out.flush()
                .map_err(|e| XrpcError::internal(format!("getRepo spool: {e}")))?;
            drop(out);
            file.seek(std::io::SeekFrom::Start(0))
                .map_err(|e| XrpcError::internal(format!("getRepo spool: {e}")))?;
            Ok(file)
        })
        .await?;
    *r.body_mut() = crate::stream::spooled(app, spool, "getRepo");
    Ok(r)
}

/// A proof CAR, in memory when small, else spooled (see [`get_record`]).
enum Proof {
    Small(Vec<u8>),
    Spooled(std::fs::File),
}

/// The proof CAR of one record: the commit block, the MST nodes covering
/// the key, the record block (`Store::record_proof`). One larger than a
/// chunk (a large record) is written to an unlinked file in `dir`, so the
/// memory it took is freed before the response waits on the client.
fn proof_car(
    store: &store::Store,
    dir: &std::path::Path,
    did: &str,
    collection: &str,
    rkey: &str,
) -> XResult<Option<Proof>> {
    let p = match store.record_proof(did, collection, rkey) {
        Ok(Some(p)) => p,
        Ok(None) => return Ok(None),
        Err(store::StoreError::UnknownAccount(_)) => return Err(repo_not_found(did)),
        Err(e) => return Err(e.into()),
    };
    let car = write_car_vec(&[p.root], p.blocks.iter().map(|(c, b)| (c, b.as_slice())));
    drop(p);
    if car.len() <= CHUNK {
        return Ok(Some(Proof::Small(car)));
    }
    let spool = |e: std::io::Error| XrpcError::internal(format!("getRecord spool: {e}"));
    let mut file = tempfile::tempfile_in(dir).map_err(spool)?;
    file.write_all(&car).map_err(spool)?;
    file.seek(std::io::SeekFrom::Start(0)).map_err(spool)?;
    Ok(Some(Proof::Spooled(file)))
}

/// `com.atproto.sync.getRecord`.
pub async fn get_record(app: &Arc<App>, parts: &Parts) -> XResult<Response<Body>> {
    let p = Params::parse(parts.uri.query())?;
    let did = p.did("did")?.to_owned();
    let collection = p.nsid("collection")?.to_owned();
    let rkey = p.rkey("rkey")?.to_owned();
    let dir = app.spool_dir();
    let car = app
        .read(move |store| proof_car(store, &dir, &did, &collection, &rkey))
        .await?;
    let car = car.ok_or_else(|| XrpcError::bad("RecordNotFound", "Could not locate record"))?;
    let body = match car {
        Proof::Small(car) => Body::Full(Some(Bytes::from(car))),
        Proof::Spooled(file) => crate::stream::spooled(app, file, "getRecord"),
    };
    let mut r = Response::new(body);
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

/// Most CIDs one getBlocks call may name (the URL cap allows about 140).
const MAX_BLOCKS: usize = 256;

/// `com.atproto.sync.getBlocks`: the named blocks of the repository as a
/// CAR without roots; 400 `BlockNotFound` naming the CIDs it does not
/// hold (as the reference, nothing is sent then).
pub async fn get_blocks(app: &Arc<App>, parts: &Parts) -> XResult<Response<Body>> {
    let p = Params::parse(parts.uri.query())?;
    let did = p.did("did")?.to_owned();
    let mut cids = Vec::new();
    for v in p.all("cids") {
        if cids.len() == MAX_BLOCKS {
            return Err(XrpcError::invalid(format!(
                "cids: at most {MAX_BLOCKS} per call"
            )));
        }
        cids.push(crate::params::parse_cid("cids", v)?);
    }
    if cids.is_empty() {
        return Err(XrpcError::invalid(
            "Error: Params must have the property \"cids\"",
        ));
    }
    let did2 = did.clone();
    let found = app
        .read(move |store| Ok(store.repo_blocks(&did2, &cids)?))
        .await?
        .ok_or_else(|| repo_not_found(&did))?;
    if !found.missing.is_empty() {
        let names: Vec<String> = found.missing.iter().map(|c| c.to_string()).collect();
        return Err(XrpcError::bad(
            "BlockNotFound",
            format!("Could not find cids: {}", names.join(", ")),
        ));
    }
    let car = write_car_vec(&[], found.found.iter().map(|(c, b)| (c, b.as_slice())));
    let mut r = Response::new(Body::Full(Some(Bytes::from(car))));
    r.headers_mut().insert(header::CONTENT_TYPE, CAR);
    Ok(r)
}
