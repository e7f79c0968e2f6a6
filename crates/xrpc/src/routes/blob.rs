//! Blobs: `repo.uploadBlob` (streamed into one buffer, refused as soon as
//! it passes `blobUploadLimit`), `repo.listMissingBlobs`, `sync.getBlob`
//! (HTTP Range, HEAD without reading the bytes, a large blob streamed in
//! chunks) and `sync.listBlobs` (a page of at most 1,000 CIDs, about
//! 64 KB: bounded in bytes by its limit).

use std::sync::Arc;

use bytes::Bytes;
use http::request::Parts;
use http::{HeaderValue, Response, StatusCode, header};
use hyper::body::Incoming;
use repo::cbor::json::push_json_str;

use crate::app::{App, Run};
use crate::error::{XResult, XrpcError};
use crate::params::Params;
use crate::request::read_body;
use crate::response::{Body, end_page, ok, push_cid};

/// `com.atproto.repo.uploadBlob`.
pub async fn upload_blob(app: &Arc<App>, parts: &Parts, body: Incoming) -> XResult<Response<Body>> {
    let did = app.access_did(parts)?;
    let declared = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    // Rate limits are charged before the body is read, as in the
    // reference PDS.
    app.charge(parts, crate::rate_limit::Charge::UploadBlob)?;
    // One buffer, sized from Content-Length when declared, moved into the
    // store: the bytes are not copied again on the way.
    let bytes = read_body(app, parts, body, app.config.blob_upload_limit).await?;
    let size = bytes.len();
    // Any Content-Type is taken (`*/*` is the lexicon's encoding); the
    // stored type comes from the bytes first (crate::mime).
    let mime = crate::mime::blob_mime(declared.as_deref(), &bytes);
    let mime2 = mime.clone();
    // A store write (it takes the store's writer), never inline: it may
    // copy megabytes.
    let cid = app
        .write(Run::Blocking, move |store| {
            store.put_blob(&did, bytes, &mime2)
        })
        .await??;
    let mut s = String::with_capacity(160);
    s.push_str("{\"blob\":{\"$type\":\"blob\",\"ref\":{\"$link\":\"");
    cid.push_str(&mut s);
    s.push_str("\"},\"mimeType\":");
    push_json_str(&mime, &mut s);
    s.push_str(",\"size\":");
    s.push_str(&size.to_string());
    s.push_str("}}");
    Ok(ok(s))
}

/// `com.atproto.repo.listMissingBlobs` (the token's account).
pub async fn list_missing_blobs(app: &Arc<App>, parts: &Parts) -> XResult<Response<Body>> {
    let did = app.access_did(parts)?;
    let p = Params::parse(parts.uri.query())?;
    let limit = p.int("limit", 1, 1000, 500)? as usize;
    let cursor = p.opt_cid("cursor")?;
    let did2 = did.clone();
    let missing = app
        .read(move |store| Ok(store.missing_blobs(&did2, cursor.as_ref(), limit)?))
        .await?;
    let mut s = String::with_capacity(32 + missing.len() * 160);
    s.push_str("{\"blobs\":[");
    for (i, (cid, path)) in missing.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str("{\"cid\":\"");
        cid.push_str(&mut s);
        s.push_str("\",\"recordUri\":");
        // A DID and a record path (NSID, record key) hold no character
        // JSON escapes (their syntax): the parts go in as they are.
        s.push_str("\"at://");
        s.push_str(&did);
        s.push('/');
        s.push_str(path);
        s.push_str("\"}");
    }
    Ok(end_page(s, &missing, limit, |(cid, _), s| push_cid(cid, s)))
}

/// A parsed `Range: bytes=...` header: `(first, last)` inclusive, clamped
/// to `size`; `Err` for a range that cannot be satisfied.
fn parse_range(h: &str, size: u64) -> Option<Result<(u64, u64), ()>> {
    let spec = h.trim().strip_prefix("bytes=")?;
    if spec.contains(',') {
        // Several ranges: answer the whole blob, as RFC 9110 allows.
        return None;
    }
    let (a, b) = spec.split_once('-')?;
    let (a, b) = (a.trim(), b.trim());
    let range = if a.is_empty() {
        let n: u64 = b.parse().ok()?;
        if n == 0 || size == 0 {
            return Some(Err(()));
        }
        (size.saturating_sub(n), size - 1)
    } else {
        let first: u64 = a.parse().ok()?;
        let last = if b.is_empty() {
            size.saturating_sub(1)
        } else {
            b.parse::<u64>().ok()?.min(size.saturating_sub(1))
        };
        if first >= size || last < first {
            return Some(Err(()));
        }
        (first, last)
    };
    Some(Ok(range))
}

/// Blobs (and ranges) up to this size are answered from one read; a
/// larger one is streamed in slices of this size, each read on the read
/// pool under its own short transaction (`Store::read_blob_at`).
const BLOB_CHUNK: u64 = 256 << 10;

/// The bytes `[at, end)` of a blob still to stream.
struct BlobRest {
    did: String,
    cid: repo::Cid,
    at: u64,
    end: u64,
}

fn blob_chunk(store: &store::Store, mut rest: BlobRest) -> XResult<Option<(Bytes, BlobRest)>> {
    if rest.at >= rest.end {
        return Ok(None);
    }
    let want = (rest.end - rest.at).min(BLOB_CHUNK) as usize;
    let mut buf = vec![0u8; want];
    let n = store
        .read_blob_at(&rest.did, &rest.cid, rest.at, &mut buf)?
        .ok_or_else(|| XrpcError::internal("the blob went away while it was being sent"))?;
    if n < want {
        return Err(XrpcError::internal(
            "the blob shrank while it was being sent",
        ));
    }
    rest.at += n as u64;
    Ok(Some((Bytes::from(buf), rest)))
}

/// `com.atproto.sync.getBlob`.
///
/// A blob or range of up to [`BLOB_CHUNK`] bytes is read in one lookup
/// and answered whole; a larger one is streamed chunk by chunk, so a
/// client that stops reading holds a few chunks, not the blob.
pub async fn get_blob(app: &Arc<App>, parts: &Parts) -> XResult<Response<Body>> {
    let p = Params::parse(parts.uri.query())?;
    let did = p.did("did")?.to_owned();
    let cid = p.cid("cid")?;
    serve_blob(app, parts, did, cid).await
}

/// `did`'s blob `cid`, whole or the request's `Range` (also
/// `com.atproto.space.getBlob`'s answer once it checked the space).
pub async fn serve_blob(
    app: &Arc<App>,
    parts: &Parts,
    did: String,
    cid: repo::Cid,
) -> XResult<Response<Body>> {
    let head = parts.method == http::Method::HEAD;
    let range = parts
        .headers
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let (did2, cid2) = (did.clone(), cid);
    let found = app
        .read(move |store| {
            // The common case (the whole of a small blob) is one lookup
            // for type, size and bytes.
            let inline = if head || range.is_some() {
                0
            } else {
                BLOB_CHUNK
            };
            let Some(b) = store.blob_head(&did2, &cid2, inline)? else {
                return Ok(None);
            };
            let range = match range.as_deref().and_then(|r| parse_range(r, b.size)) {
                None => None,
                Some(Ok(r)) => Some(r),
                Some(Err(())) => return Ok(Some((b.mime, b.size, Err(())))),
            };
            let bytes = match (head, range) {
                (false, Some((a, z))) if z - a < BLOB_CHUNK => {
                    let mut buf = vec![0u8; (z - a + 1) as usize];
                    match store.read_blob_at(&did2, &cid2, a, &mut buf)? {
                        Some(n) if n == buf.len() => Some(buf),
                        _ => return Ok(None),
                    }
                }
                _ => b.bytes,
            };
            Ok(Some((b.mime, b.size, Ok((range, bytes)))))
        })
        .await?;
    let Some((mime, size, body)) = found else {
        return Err(XrpcError::bad("BlobNotFound", "Blob not found"));
    };
    let mut r = Response::new(Body::empty());
    let (status, content_range, len) = match &body {
        Err(()) => (
            StatusCode::RANGE_NOT_SATISFIABLE,
            Some(format!("bytes */{size}")),
            None,
        ),
        Ok((Some((a, b)), _)) => (
            StatusCode::PARTIAL_CONTENT,
            Some(format!("bytes {a}-{b}/{size}")),
            Some(b - a + 1),
        ),
        Ok((None, _)) => (StatusCode::OK, None, Some(size)),
    };
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; sandbox"),
    );
    if let Some(cr) = content_range {
        h.insert(
            header::CONTENT_RANGE,
            HeaderValue::try_from(cr).map_err(XrpcError::fault)?,
        );
    }
    if let Some(len) = len {
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::try_from(mime)
                .unwrap_or(HeaderValue::from_static("application/octet-stream")),
        );
        h.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    }
    match body {
        Ok((_, Some(b))) => *r.body_mut() = Body::Full(Some(Bytes::from(b))),
        Ok((range, None)) if !head => {
            let (at, end) = range.map_or((0, size), |(a, b)| (a, b + 1));
            let rest = BlobRest { did, cid, at, end };
            *r.body_mut() = crate::stream::produced(app, None, rest, blob_chunk);
        }
        _ => {}
    }
    Ok(r)
}

/// `com.atproto.sync.listBlobs`.
pub async fn list_blobs(app: &Arc<App>, parts: &Parts) -> XResult<Response<Body>> {
    let p = Params::parse(parts.uri.query())?;
    let did = p.did("did")?.to_owned();
    let since = p.opt_tid("since")?.map(str::to_owned);
    let limit = p.int("limit", 1, 1000, 500)? as usize;
    let cursor = p.opt_cid("cursor")?;
    let cids = app
        .read(move |store| {
            if store.repo_root(&did)?.is_none() {
                return Err(XrpcError::bad(
                    "RepoNotFound",
                    format!("Could not find repo for DID: {did}"),
                ));
            }
            Ok(store.list_blobs(&did, since.as_deref(), cursor.as_ref(), limit)?)
        })
        .await?;
    let mut s = String::with_capacity(32 + cids.len() * 64);
    s.push_str("{\"cids\":[");
    for (i, c) in cids.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        push_cid(c, &mut s);
    }
    Ok(end_page(s, &cids, limit, push_cid))
}

#[cfg(test)]
mod tests {
    use super::parse_range;

    #[test]
    fn ranges() {
        assert_eq!(parse_range("bytes=0-9", 100), Some(Ok((0, 9))));
        assert_eq!(parse_range("bytes=90-", 100), Some(Ok((90, 99))));
        assert_eq!(parse_range("bytes=-10", 100), Some(Ok((90, 99))));
        assert_eq!(parse_range("bytes=50-500", 100), Some(Ok((50, 99))));
        assert_eq!(parse_range("bytes=100-", 100), Some(Err(())));
        assert_eq!(parse_range("bytes=5-2", 100), Some(Err(())));
        assert_eq!(parse_range("bytes=0-1,5-6", 100), None);
        assert_eq!(parse_range("items=0-1", 100), None);
        assert_eq!(parse_range("bytes=x-1", 100), None);
    }

    proptest::proptest! {
        #[test]
        fn never_panics(h in ".{0,40}", size in 0u64..1000) {
            if let Some(Ok((a, b))) = parse_range(&h, size) {
                proptest::prop_assert!(a <= b && b < size);
            }
        }
    }
}
