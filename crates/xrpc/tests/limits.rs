//! Request limits over real HTTP: body, blob, URL and header caps.

mod support;

use std::io::{Read, Write};

use bytes::Bytes;
use hyper::Method;
use serde_json::json;
use support::start_with;

/// Sends raw bytes and returns the status line's code (the client in
/// `support` would refuse some of these requests itself).
fn raw(addr: &str, request: &[u8]) -> u16 {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    // The server may answer and close before reading everything.
    let _ = s.write_all(request);
    let mut buf = [0u8; 64];
    let mut got = Vec::new();
    while got.len() < 12 {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&got);
    text.split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn bodies_blobs_urls_and_headers_are_capped() {
    let s = start_with(|c| c.blob_upload_limit = 4096);
    let (did, tok, _) = s.account("max.test").await;
    let auth = format!("Bearer {tok}");

    // JSON over 1 MB: refused by its declared length, and when chunked.
    let big = json!({"repo": did, "collection": "app.bsky.feed.post", "record": {"text": "x".repeat(1 << 20)}});
    s.post("/xrpc/com.atproto.repo.createRecord", Some(&tok), &big)
        .await
        .expect_error(413, "PayloadTooLarge");
    let addr = s.url.trim_start_matches("http://").to_owned();
    let mut chunked = format!(
        "POST /xrpc/com.atproto.repo.createRecord HTTP/1.1\r\nhost: x\r\nauthorization: {auth}\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
    )
    .into_bytes();
    for _ in 0..20 {
        chunked.extend_from_slice(format!("{:x}\r\n", 64 << 10).as_bytes());
        chunked.extend(std::iter::repeat_n(b' ', 64 << 10));
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let a2 = addr.clone();
    let code = tokio::task::spawn_blocking(move || raw(&a2, &chunked))
        .await
        .unwrap();
    assert_eq!(code, 413);

    // A blob over the limit; one at the limit passes.
    let up = |n: usize| {
        let (s, auth) = (&s, &auth);
        async move {
            s.request(
                Method::POST,
                "/xrpc/com.atproto.repo.uploadBlob",
                &[
                    ("authorization", auth),
                    ("content-type", "application/octet-stream"),
                ],
                Bytes::from(vec![7u8; n]),
            )
            .await
        }
    };
    up(4097).await.expect_error(413, "PayloadTooLarge");
    up(4096).await.ok_json();
    let mut chunked_blob = format!(
        "POST /xrpc/com.atproto.repo.uploadBlob HTTP/1.1\r\nhost: x\r\nauthorization: {auth}\r\ncontent-type: image/png\r\ntransfer-encoding: chunked\r\n\r\n"
    )
    .into_bytes();
    for _ in 0..3 {
        chunked_blob.extend_from_slice(b"800\r\n");
        chunked_blob.extend(std::iter::repeat_n(b'z', 0x800));
        chunked_blob.extend_from_slice(b"\r\n");
    }
    chunked_blob.extend_from_slice(b"0\r\n\r\n");
    let a2 = addr.clone();
    let code = tokio::task::spawn_blocking(move || raw(&a2, &chunked_blob))
        .await
        .unwrap();
    assert_eq!(code, 413);
    // A Content-Type that is no MIME type is not refused (the reference
    // PDS takes any): the blob is kept as application/octet-stream.
    let up = s
        .request(
            Method::POST,
            "/xrpc/com.atproto.repo.uploadBlob",
            &[("authorization", &auth), ("content-type", "nonsense")],
            Bytes::from_static(b"abc"),
        )
        .await
        .ok_json();
    assert_eq!(up["blob"]["mimeType"], "application/octet-stream");

    // A URL over 8 KiB.
    let long = format!(
        "/xrpc/com.atproto.identity.resolveHandle?handle={}",
        "a".repeat(9000)
    );
    s.get(&long).await.expect_error(414, "InvalidRequest");
    // A head over 16 KiB: hyper answers 431.
    let big_header = "x".repeat(20_000);
    let req = format!("GET /xrpc/_health HTTP/1.1\r\nhost: x\r\nx-big: {big_header}\r\n\r\n");
    let a2 = addr.clone();
    let code = tokio::task::spawn_blocking(move || raw(&a2, req.as_bytes()))
        .await
        .unwrap();
    assert_eq!(code, 431);
    // The server is still fine.
    s.get("/xrpc/_health").await.ok_json();
}

#[tokio::test]
async fn describe_server_reports_the_configured_blob_limit() {
    let s = start_with(|c| c.blob_upload_limit = 12345);
    let d = s
        .get("/xrpc/com.atproto.server.describeServer")
        .await
        .ok_json();
    assert_eq!(d["blobUploadLimit"], 12345);
}

#[tokio::test]
async fn shutdown_keeps_every_answered_write() {
    let mut s = start_with(|_| {});
    let (did, tok, _) = s.account("keep.test").await;
    let mut uris = Vec::new();
    for i in 0..10 {
        uris.push(s.post_record(&did, &tok, &format!("k{i}")).await.0);
    }
    s.shutdown();
    let db = s.dir.path().join("pds.sqlite");
    let mut c = xrpc::ServerConfig::new(&db);
    c.listen = "127.0.0.1:0".parse().unwrap();
    let again = xrpc::spawn(c).unwrap();
    let url = again.url();
    let client = &s.client;
    for uri in &uris {
        let rkey = uri.rsplit('/').next().unwrap();
        let req = hyper::Request::get(format!(
            "{url}/xrpc/com.atproto.repo.getRecord?repo=keep.test&collection=app.bsky.feed.post&rkey={rkey}"
        ))
        .body(http_body_util::Full::new(Bytes::new()))
        .unwrap();
        let resp = client.request(req).await.unwrap();
        assert_eq!(resp.status(), 200);
    }
    // Sessions survive the restart (the key is in the secret file).
    let req = hyper::Request::get(format!("{url}/xrpc/com.atproto.server.getSession"))
        .header("authorization", format!("Bearer {tok}"))
        .body(http_body_util::Full::new(Bytes::new()))
        .unwrap();
    assert_eq!(client.request(req).await.unwrap().status(), 200);
    again.shutdown();
}

#[test]
fn atpds_prints_its_address_first_and_stops_on_sigterm() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_atpds"))
        .args([
            "--db",
            dir.path().join("a.sqlite").to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let addr = line
        .trim()
        .strip_prefix("atpds listening on http://")
        .unwrap_or_else(|| panic!("first line: {line:?}"))
        .to_owned();
    let mut report = String::new();
    out.read_line(&mut report).unwrap();
    assert!(
        report.contains("storage") && report.contains("migrations") && report.contains("sequence"),
        "{report}"
    );
    let code = raw(
        &addr,
        b"GET /xrpc/_health HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    );
    assert_eq!(code, 200);
    // SAFETY: kill(2) on our own child's pid.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_during_writes_loses_no_answered_write() {
    let mut s = start_with(|_| {});
    let mut accounts = Vec::new();
    for i in 0..4 {
        accounts.push(s.account(&format!("w{i}.test")).await);
    }
    let answered = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut writers = Vec::new();
    for (did, tok, _) in accounts {
        let (url, answered) = (s.url.clone(), answered.clone());
        writers.push(tokio::spawn(async move {
            let client = hyper_util::client::legacy::Client::builder(
                hyper_util::rt::TokioExecutor::new(),
            )
            .build_http::<http_body_util::Full<Bytes>>();
            for i in 0.. {
                let body = json!({"repo": did, "collection": "app.bsky.feed.post", "record": {"text": format!("s{i}")}});
                let req = hyper::Request::post(format!("{url}/xrpc/com.atproto.repo.createRecord"))
                    .header("authorization", format!("Bearer {tok}"))
                    .header("content-type", "application/json")
                    .body(http_body_util::Full::new(Bytes::from(body.to_string())))
                    .unwrap();
                let Ok(resp) = client.request(req).await else {
                    return;
                };
                if resp.status() != 200 {
                    return;
                }
                let body = http_body_util::BodyExt::collect(resp.into_body()).await;
                let Ok(body) = body else { return };
                let v: serde_json::Value = serde_json::from_slice(&body.to_bytes()).unwrap();
                answered
                    .lock()
                    .unwrap()
                    .push(v["uri"].as_str().unwrap().to_owned());
            }
        }));
    }
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let server = s.server.take().unwrap();
    tokio::task::spawn_blocking(move || server.shutdown())
        .await
        .unwrap();
    for w in writers {
        w.await.unwrap();
    }
    let answered = answered.lock().unwrap().clone();
    assert!(
        answered.len() > 10,
        "only {} writes before shutdown",
        answered.len()
    );
    let store =
        store::Store::open(s.dir.path().join("pds.sqlite"), store::Config::default()).unwrap();
    for uri in &answered {
        let mut parts = uri.trim_start_matches("at://").split('/');
        let (did, col, rkey) = (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
        );
        assert!(
            store.get_record(did, col, rkey).unwrap().is_some(),
            "{uri} lost"
        );
    }
}
