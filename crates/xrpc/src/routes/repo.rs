//! `com.atproto.repo.*`: the record writes (createRecord, putRecord,
//! deleteRecord, applyWrites) and reads (getRecord, listRecords,
//! describeRepo). Writes need an access token whose account is the `repo`
//! (else 403, before anything is written); records arrive as atproto JSON
//! and are stored as DAG-CBOR; answers are rendered straight into one
//! string.

use std::sync::Arc;

use bytes::Bytes;
use http::request::Parts;
use http::{Response, StatusCode};
use hyper::body::Incoming;
use repo::Cid;
use repo::cbor::json::push_json_str;
use serde::Deserialize;
use store::{CommitInfo, ListOptions, RecordWrite, StoreError, WriteAction};

use crate::app::{App, Run};
use crate::error::{XResult, XrpcError};
use crate::params::{Id, Params, at_identifier, parse_cid};
use crate::rate_limit::{Charge, write_points};
use crate::request::json_body;
use crate::response::{Body, end_page, ok, ok_stream};

const MAX_WRITES: usize = 200;

/// `Some(None)` for an explicit `null`, `None` when absent.
fn nullable<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CreateInput {
    repo: String,
    collection: String,
    rkey: Option<String>,
    record: serde_json::Value,
    swap_commit: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PutInput {
    repo: String,
    collection: String,
    rkey: String,
    record: serde_json::Value,
    #[serde(default, deserialize_with = "nullable")]
    swap_record: Option<Option<String>>,
    swap_commit: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DeleteInput {
    repo: String,
    collection: String,
    rkey: String,
    swap_record: Option<String>,
    swap_commit: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApplyInput {
    repo: String,
    writes: Vec<serde_json::Value>,
    swap_commit: Option<String>,
}

/// Whether `repo` names the account `did`, compared in place (a write
/// makes no copy of either).
fn same_repo(app: &App, did: &str, repo: &str) -> XResult<()> {
    let mine = match at_identifier("repo", repo)? {
        Id::Did(d) => d == did,
        Id::Handle(h) => match app.accounts.by_handle(h) {
            Some(a) => a.did == did,
            None => return Err(XrpcError::invalid(format!("Could not find repo: {h}"))),
        },
    };
    if !mine {
        return Err(XrpcError::new(
            StatusCode::FORBIDDEN,
            "Forbidden",
            "the access token's account may not write to this repo",
        ));
    }
    Ok(())
}

/// A record of `collection` as DAG-CBOR, from its JSON (moved, not
/// copied: its strings become the record's). A record that is not an
/// object is refused by the conversion ("top level must be an object").
/// One without `$type` (absent, `null` or empty) gets `collection` as its
/// `$type`, as the reference PDS does (`setCollectionName` in its
/// `repo/prepare.ts`); the store then checks that a `$type` equals the
/// collection.
fn record_cbor(collection: &str, mut v: serde_json::Value) -> XResult<Vec<u8>> {
    if let Some(obj) = v.as_object_mut() {
        let untyped = match obj.get("$type") {
            None | Some(serde_json::Value::Null) => true,
            Some(serde_json::Value::String(t)) => t.is_empty(),
            Some(_) => false,
        };
        if untyped {
            obj.insert("$type".to_owned(), collection.into());
        }
    }
    let value = repo::cbor::json::from_json_value_owned(v)
        .map_err(|e| XrpcError::invalid(format!("record: {e}")))?;
    Ok(repo::cbor::to_vec(&value))
}

fn opt_cid(name: &str, v: Option<&str>) -> XResult<Option<Cid>> {
    v.map(|s| parse_cid(name, s)).transpose()
}

fn push_commit(s: &mut String, info: &CommitInfo) {
    s.push_str("\"commit\":{\"cid\":\"");
    info.commit.push_str(s);
    s.push_str("\",\"rev\":\"");
    s.push_str(&info.rev);
    s.push_str("\"}");
}

/// `{"uri","cid","commit","validationStatus"}` of a one-write commit.
fn write_answer(info: &CommitInfo) -> XResult<String> {
    let w = info
        .results
        .first()
        .ok_or_else(|| XrpcError::internal("commit without a result"))?;
    let mut s = String::with_capacity(256);
    s.push_str("{\"uri\":");
    push_json_str(&w.uri, &mut s);
    if let Some(cid) = &w.cid {
        s.push_str(",\"cid\":\"");
        cid.push_str(&mut s);
        s.push('"');
    }
    s.push(',');
    push_commit(&mut s, info);
    s.push_str(",\"validationStatus\":\"unknown\"}");
    Ok(s)
}

/// Charges the write points of `actions` to `did` (`rate_limit.rs`;
/// nothing when rate limits are off).
fn charge_writes(app: &App, parts: &Parts, did: &str, actions: &[WriteAction]) -> XResult<()> {
    if app.limits.is_none() {
        return Ok(());
    }
    let points = actions.iter().map(|a| write_points(*a)).sum();
    app.charge(parts, Charge::Writes { did, points })
}

/// Commits `writes` ([`App::write`]: inline when alone). The outer error
/// is the server's (a worker that failed), the inner one the store's,
/// still typed so that a caller can tell its refusals apart
/// (`delete_record`).
async fn commit(
    app: &Arc<App>,
    did: String,
    writes: Vec<RecordWrite>,
    swap: Option<Cid>,
) -> XResult<Result<CommitInfo, StoreError>> {
    app.write(Run::InlineIfAlone, move |store| {
        store.apply_writes(&did, writes, swap)
    })
    .await
}

/// `com.atproto.repo.createRecord`.
pub async fn create_record(
    app: &Arc<App>,
    parts: &Parts,
    body: Incoming,
) -> XResult<Response<Body>> {
    let did = app.access_did(parts)?;
    let input: CreateInput = json_body(app, parts, body).await?;
    same_repo(app, &did, &input.repo)?;
    let record = record_cbor(&input.collection, input.record)?;
    let swap = opt_cid("swapCommit", input.swap_commit.as_deref())?;
    let write = RecordWrite::create(&input.collection, input.rkey.as_deref(), record);
    charge_writes(app, parts, &did, &[write.action])?;
    let info = commit(app, did, vec![write], swap).await??;
    Ok(ok(write_answer(&info)?))
}

/// `com.atproto.repo.putRecord`.
pub async fn put_record(app: &Arc<App>, parts: &Parts, body: Incoming) -> XResult<Response<Body>> {
    let did = app.access_did(parts)?;
    let input: PutInput = json_body(app, parts, body).await?;
    same_repo(app, &did, &input.repo)?;
    let record = record_cbor(&input.collection, input.record)?;
    let swap = opt_cid("swapCommit", input.swap_commit.as_deref())?;
    let mut write = RecordWrite::update(&input.collection, &input.rkey, record);
    write.swap_record = match input.swap_record {
        None => None,
        Some(None) => Some(None),
        Some(Some(c)) => Some(Some(parse_cid("swapRecord", &c)?)),
    };
    // An update's points even when it creates, as in the reference PDS.
    charge_writes(app, parts, &did, &[write.action])?;
    let info = commit(app, did, vec![write], swap).await??;
    Ok(ok(write_answer(&info)?))
}

/// `com.atproto.repo.deleteRecord` (deleting a missing record is a no-op
/// without a commit, as in the reference PDS).
pub async fn delete_record(
    app: &Arc<App>,
    parts: &Parts,
    body: Incoming,
) -> XResult<Response<Body>> {
    let did = app.access_did(parts)?;
    let input: DeleteInput = json_body(app, parts, body).await?;
    same_repo(app, &did, &input.repo)?;
    let swap = opt_cid("swapCommit", input.swap_commit.as_deref())?;
    let mut write = RecordWrite::delete(&input.collection, &input.rkey);
    write.swap_record = opt_cid("swapRecord", input.swap_record.as_deref())?.map(Some);
    let no_swap = write.swap_record.is_none() && swap.is_none();
    charge_writes(app, parts, &did, &[write.action])?;
    match commit(app, did, vec![write], swap).await? {
        Ok(info) => {
            let mut s = String::with_capacity(128);
            s.push('{');
            push_commit(&mut s, &info);
            s.push('}');
            Ok(ok(s))
        }
        Err(StoreError::RecordNotFound(_)) if no_swap => Ok(ok("{}")),
        Err(e) => Err(e.into()),
    }
}

fn field<'v>(w: &'v serde_json::Value, name: &str, i: usize) -> XResult<&'v str> {
    w.get(name)
        .and_then(|v| v.as_str())
        .ok_or_else(|| XrpcError::invalid(format!("writes/{i} must have the property \"{name}\"")))
}

/// One `applyWrites` write from its JSON union member (its record moved
/// out of it).
fn parse_write(mut w: serde_json::Value, i: usize) -> XResult<RecordWrite> {
    let record = w.get_mut("value").map(serde_json::Value::take);
    let w = &w;
    let t = field(w, "$type", i)?;
    let kind = t.strip_prefix("com.atproto.repo.applyWrites").unwrap_or("");
    let collection = field(w, "collection", i)?;
    let value = || -> XResult<Vec<u8>> {
        let record = record.ok_or_else(|| {
            XrpcError::invalid(format!("writes/{i} must have the property \"value\""))
        })?;
        record_cbor(collection, record)
    };
    Ok(match kind {
        "#create" => {
            let rkey = w.get("rkey").and_then(|v| v.as_str());
            RecordWrite::create(collection, rkey, value()?)
        }
        "#update" => RecordWrite::update(collection, field(w, "rkey", i)?, value()?),
        "#delete" => RecordWrite::delete(collection, field(w, "rkey", i)?),
        _ => {
            return Err(XrpcError::invalid(format!(
                "writes/{i} has an unknown $type {t:?}"
            )));
        }
    })
}

/// `com.atproto.repo.applyWrites`.
pub async fn apply_writes(
    app: &Arc<App>,
    parts: &Parts,
    body: Incoming,
) -> XResult<Response<Body>> {
    let did = app.access_did(parts)?;
    let input: ApplyInput = json_body(app, parts, body).await?;
    same_repo(app, &did, &input.repo)?;
    if input.writes.len() > MAX_WRITES {
        return Err(XrpcError::invalid(format!(
            "Too many writes. Max: {MAX_WRITES}"
        )));
    }
    let writes = input
        .writes
        .into_iter()
        .enumerate()
        .map(|(i, w)| parse_write(w, i))
        .collect::<XResult<Vec<_>>>()?;
    let actions: Vec<WriteAction> = writes.iter().map(|w| w.action).collect();
    charge_writes(app, parts, &did, &actions)?;
    let swap = opt_cid("swapCommit", input.swap_commit.as_deref())?;
    let info = commit(app, did, writes, swap).await??;
    let mut s = String::with_capacity(128 + 160 * actions.len());
    s.push('{');
    push_commit(&mut s, &info);
    s.push_str(",\"results\":[");
    for (i, (r, a)) in info.results.iter().zip(&actions).enumerate() {
        if i > 0 {
            s.push(',');
        }
        let t = match a {
            WriteAction::Create => "createResult",
            WriteAction::Update => "updateResult",
            WriteAction::Delete => "deleteResult",
        };
        s.push_str("{\"$type\":\"com.atproto.repo.applyWrites#");
        s.push_str(t);
        s.push('"');
        if let (Some(cid), false) = (&r.cid, *a == WriteAction::Delete) {
            s.push_str(",\"uri\":");
            push_json_str(&r.uri, &mut s);
            s.push_str(",\"cid\":\"");
            cid.push_str(&mut s);
            s.push_str("\",\"validationStatus\":\"unknown\"");
        }
        s.push('}');
    }
    s.push_str("]}");
    Ok(ok(s))
}

/// `com.atproto.repo.getRecord`.
pub async fn get_record(app: &Arc<App>, parts: &Parts) -> XResult<Response<Body>> {
    let p = Params::parse(parts.uri.query())?;
    let did = app.repo_did(&p.at_identifier("repo")?, "RecordNotFound")?;
    let collection = p.nsid("collection")?.to_owned();
    let rkey = p.rkey("rkey")?.to_owned();
    let want = p.opt_cid("cid")?;
    let view = app
        .read(move |store| Ok(store.get_record(&did, &collection, &rkey)?))
        .await?;
    match view {
        Some(v) if want.is_none_or(|c| c == v.cid) => Ok(ok(v.json)),
        _ => Err(XrpcError::bad("RecordNotFound", "Could not locate record")),
    }
}

/// The byte target of a listRecords chunk: a page whose records fit in
/// it is answered whole from one read; a larger one is streamed, a chunk
/// of records (at least one, whatever its size) per read.
const PAGE_CHUNK_BYTES: usize = 256 << 10;

/// What is left of a listRecords page being streamed.
struct PageRest {
    did: String,
    collection: String,
    reverse: bool,
    /// The key of the last record sent.
    after: String,
    /// Records the page may still hold.
    left: usize,
    done: bool,
}

/// The next chunk of a streamed listRecords page: the records after
/// `rest.after`, each preceded by a comma (the first chunk holds at
/// least one record), and the end of the answer once the page is full
/// (with its cursor) or the collection ends.
fn page_chunk(store: &store::Store, mut rest: PageRest) -> XResult<Option<(Bytes, PageRest)>> {
    if rest.done {
        return Ok(None);
    }
    let opts = ListOptions {
        limit: rest.left,
        cursor: Some(&rest.after),
        reverse: rest.reverse,
    };
    let records =
        store.list_records_within(&rest.did, &rest.collection, &opts, PAGE_CHUNK_BYTES)?;
    let bytes: usize = records.iter().map(|r| r.json.len() + 1).sum();
    let mut s = String::with_capacity(bytes + 64);
    for r in &records {
        s.push(',');
        s.push_str(&r.json);
    }
    rest.left -= records.len().min(rest.left);
    match records.last() {
        Some(last) if rest.left == 0 => {
            s.push_str("],\"cursor\":");
            push_json_str(&last.rkey, &mut s);
            s.push('}');
            rest.done = true;
        }
        Some(last) if bytes >= PAGE_CHUNK_BYTES => rest.after = last.rkey.clone(),
        _ => {
            s.push_str("]}");
            rest.done = true;
        }
    }
    Ok(Some((Bytes::from(s), rest)))
}

/// `com.atproto.repo.listRecords`.
///
/// A page whose records come to [`PAGE_CHUNK_BYTES`] or more is streamed:
/// each further chunk of records is read on demand, under its own short
/// read transaction, so a client that stops reading holds a few chunks,
/// not the page (100 records of up to a megabyte each), and pins neither
/// a thread nor the WAL. Such a page is not one snapshot: a record
/// written or deleted past the chunks already sent while it streams may
/// or may not be in it, as with a page boundary; no record is sent twice
/// and the order holds.
pub async fn list_records(app: &Arc<App>, parts: &Parts) -> XResult<Response<Body>> {
    let p = Params::parse(parts.uri.query())?;
    // An account this server does not hold is an error, as in the
    // reference PDS ("Could not find repo"), not an empty page.
    let repo = p.at_identifier("repo")?;
    let did = app.account(&repo).map(|a| a.did.clone()).ok_or_else(|| {
        XrpcError::invalid(format!(
            "Could not find repo: {}",
            p.get("repo").unwrap_or("")
        ))
    })?;
    let collection = p.nsid("collection")?.to_owned();
    let limit = p.int("limit", 1, 100, 50)? as usize;
    let cursor = p.opt_rkey("cursor")?.map(str::to_owned);
    let reverse = p.bool("reverse")?;
    let (did2, collection2) = (did.clone(), collection.clone());
    let records = app
        .read(move |store| {
            let opts = ListOptions {
                limit,
                cursor: cursor.as_deref(),
                reverse,
            };
            Ok(store.list_records_within(&did2, &collection2, &opts, PAGE_CHUNK_BYTES)?)
        })
        .await?;
    let bytes = records.iter().map(|r| r.json.len() + 1).sum::<usize>();
    let mut s = String::with_capacity(32 + bytes);
    s.push_str("{\"records\":[");
    for (i, r) in records.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&r.json);
    }
    match records.last() {
        Some(last) if records.len() < limit && bytes >= PAGE_CHUNK_BYTES => {
            let rest = PageRest {
                did,
                collection,
                reverse,
                after: last.rkey.clone(),
                left: limit - records.len(),
                done: false,
            };
            let body = crate::stream::produced(app, Some(Bytes::from(s)), rest, page_chunk);
            Ok(ok_stream(body))
        }
        _ => Ok(end_page(s, &records, limit, |r, s| {
            push_json_str(&r.rkey, s)
        })),
    }
}

/// `com.atproto.repo.describeRepo`.
pub async fn describe_repo(app: &Arc<App>, parts: &Parts) -> XResult<Response<Body>> {
    let p = Params::parse(parts.uri.query())?;
    let id = p.at_identifier("repo")?;
    let account = app
        .account(&id)
        .ok_or_else(|| XrpcError::bad("RepoNotFound", "Could not find repo"))?;
    let did = account.did.clone();
    let collections = app.read(move |store| Ok(store.collections(&did)?)).await?;
    let mut s = String::with_capacity(768);
    s.push_str("{\"handle\":");
    push_json_str(&account.handle, &mut s);
    s.push_str(",\"did\":");
    push_json_str(&account.did, &mut s);
    s.push_str(",\"didDoc\":");
    s.push_str(&account.did_doc);
    s.push_str(",\"collections\":[");
    for (i, c) in collections.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        push_json_str(c, &mut s);
    }
    s.push_str("],\"handleIsCorrect\":true}");
    Ok(ok(s))
}
