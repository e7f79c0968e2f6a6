//! Service proxying and relay notification against small upstreams the
//! test starts (raw TCP, so they can also stall and answer garbage): the
//! forwarded call carries a service-auth JWT that verifies against the
//! caller's DID document key with `aud` and `lxm` as the reference sets
//! them; answers stream back with their headers; upstream errors, a stall,
//! a size past the cap and garbage map to the reference's errors; the
//! `atproto-proxy` header's forms are checked; `requestCrawl` reaches the
//! relay once per interval.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use data_encoding::BASE64URL_NOPAD as B64;
use repo::crypto::PublicKey;
use serde_json::{Value, json};
use support::{TestServer, start_with};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const APPVIEW_DID: &str = "did:web:appview.test";

/// One request the upstream saw.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Reads one request head and body (by content-length).
async fn read_request(sock: &mut TcpStream) -> Option<Seen> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = sock.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let path = lines.next()?.split(' ').nth(1)?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < len {
        let n = sock.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(Seen {
        path,
        headers,
        body,
    })
}

/// An appview double: answers by path, records what it saw.
async fn upstream() -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let seen = seen2.clone();
            tokio::spawn(async move {
                while let Some(req) = read_request(&mut sock).await {
                    seen.lock().unwrap().push(req.clone());
                    let method = req.path.trim_start_matches("/xrpc/");
                    let method = method.split('?').next().unwrap_or("");
                    let w = |s: &'static str| s.as_bytes().to_vec();
                    let out: Vec<u8> = match method {
                        "app.bsky.feed.getTimeline" => {
                            // Chunked, in several writes.
                            let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json; charset=utf-8\r\n\
                                        atproto-repo-rev: 3kabc\r\nx-secret: no\r\ntransfer-encoding: chunked\r\n\r\n";
                            if sock.write_all(head.as_bytes()).await.is_err() {
                                return;
                            }
                            for part in ["{\"feed\":[", "1,2,3", "],\"echo\":\"ok\"}"] {
                                let c = format!("{:x}\r\n{part}\r\n", part.len());
                                if sock.write_all(c.as_bytes()).await.is_err() {
                                    return;
                                }
                                tokio::time::sleep(Duration::from_millis(20)).await;
                            }
                            w("0\r\n\r\n")
                        }
                        "app.bsky.actor.echoPost" => {
                            let body = String::from_utf8_lossy(&req.body).into_owned();
                            format!(
                                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                                body.len()
                            )
                            .into_bytes()
                        }
                        "app.bsky.feed.slow" => {
                            tokio::time::sleep(Duration::from_secs(5)).await;
                            return;
                        }
                        "app.bsky.feed.garbage" => {
                            let _ = sock.write_all(b"\x00\x01 this is not HTTP\r\n\r\n").await;
                            return;
                        }
                        "app.bsky.feed.huge" => w(
                            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 999999999\r\n\r\n{",
                        ),
                        "app.bsky.feed.fail" => w(
                            "HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\ncontent-length: 46\r\n\r\n{\"error\":\"Boom\",\"message\":\"the appview broke\"}",
                        ),
                        _ => w(
                            "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 52\r\n\r\n{\"error\":\"InvalidRequest\",\"message\":\"no such thing\"}",
                        ),
                    };
                    if sock.write_all(&out).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (url, seen)
}

fn claims_of(jwt: &str, key: &PublicKey) -> Value {
    let (signed, sig) = jwt.rsplit_once('.').unwrap();
    key.verify(signed.as_bytes(), &B64.decode(sig.as_bytes()).unwrap())
        .expect("the service-auth JWT verifies against the DID document's key");
    let payload = signed.split_once('.').unwrap().1;
    serde_json::from_slice(&B64.decode(payload.as_bytes()).unwrap()).unwrap()
}

async fn key_of(s: &TestServer, token: &str) -> PublicKey {
    let sess = s
        .get_auth("/xrpc/com.atproto.server.getSession", token)
        .await
        .ok_json();
    PublicKey::from_did_document(&sess["didDoc"]).unwrap()
}

fn with_appview(url: &str) -> TestServer {
    let url = url.to_owned();
    start_with(move |c| {
        c.appview = Some(xrpc::Appview {
            url,
            did: APPVIEW_DID.into(),
        });
        c.proxy_timeout = Duration::from_millis(700);
        c.proxy_max_bytes = 1 << 20;
    })
}

#[tokio::test]
async fn proxied_calls_carry_a_service_jwt_and_stream_back() {
    let (url, seen) = upstream().await;
    let s = with_appview(&url);
    let (did, token, _) = s.account("alice.test").await;
    let key = key_of(&s, &token).await;

    let a = s
        .get_auth("/xrpc/app.bsky.feed.getTimeline?limit=3", &token)
        .await;
    assert_eq!(a.status, 200, "{:?}", a.body);
    assert_eq!(a.json(), json!({"feed": [1, 2, 3], "echo": "ok"}));
    assert_eq!(a.headers.get("atproto-repo-rev").unwrap(), "3kabc");
    assert!(a.headers.get("x-secret").is_none());
    let req = seen.lock().unwrap().last().unwrap().clone();
    assert_eq!(req.path, "/xrpc/app.bsky.feed.getTimeline?limit=3");
    let jwt = req
        .header("authorization")
        .unwrap()
        .strip_prefix("Bearer ")
        .unwrap();
    let c = claims_of(jwt, &key);
    assert_eq!(c["iss"], did.as_str());
    assert_eq!(c["aud"], APPVIEW_DID);
    assert_eq!(c["lxm"], "app.bsky.feed.getTimeline");

    // The header form: the audience carries the service id.
    let auth = format!("Bearer {token}");
    let a = s
        .request(
            hyper::Method::GET,
            "/xrpc/app.bsky.feed.getTimeline",
            &[
                ("authorization", &auth),
                ("atproto-proxy", "did:web:appview.test#bsky_appview"),
            ],
            bytes::Bytes::new(),
        )
        .await;
    assert_eq!(a.status, 200);
    let req = seen.lock().unwrap().last().unwrap().clone();
    let jwt = req
        .header("authorization")
        .unwrap()
        .strip_prefix("Bearer ")
        .unwrap();
    assert_eq!(
        claims_of(jwt, &key)["aud"],
        "did:web:appview.test#bsky_appview"
    );

    // A procedure's body goes through.
    let a = s
        .post(
            "/xrpc/app.bsky.actor.echoPost",
            Some(&token),
            &json!({"hello": "appview"}),
        )
        .await;
    assert_eq!(a.json(), json!({"hello": "appview"}));

    // Methods served here stay here.
    s.get_auth("/xrpc/app.bsky.actor.getPreferences", &token)
        .await
        .ok_json();
    assert!(
        !seen
            .lock()
            .unwrap()
            .iter()
            .any(|r| r.path.contains("getPreferences"))
    );
}

#[tokio::test]
async fn upstream_failures_are_mapped() {
    let (url, _) = upstream().await;
    let s = with_appview(&url);
    let (_, token, _) = s.account("alice.test").await;
    let get = |m: &'static str| {
        let s = &s;
        let token = token.clone();
        async move { s.get_auth(&format!("/xrpc/{m}"), &token).await }
    };
    get("app.bsky.feed.slow")
        .await
        .expect_error(504, "UpstreamTimeout");
    get("app.bsky.feed.garbage")
        .await
        .expect_error(502, "UpstreamFailure");
    get("app.bsky.feed.huge")
        .await
        .expect_error(502, "UpstreamFailure");
    let e = get("app.bsky.feed.fail").await;
    assert_eq!(e.status, 502);
    assert_eq!(e.json()["message"], "the appview broke");
    get("app.bsky.feed.other")
        .await
        .expect_error(400, "InvalidRequest");
    s.get("/xrpc/app.bsky.feed.getTimeline")
        .await
        .expect_error(401, "AuthRequired");

    // An appview that is not there.
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let s2 = with_appview(&dead);
    let (_, t2, _) = s2.account("bob.test").await;
    s2.get_auth("/xrpc/app.bsky.feed.getTimeline", &t2)
        .await
        .expect_error(502, "UpstreamFailure");
}

#[tokio::test]
async fn proxy_header_forms_and_unconfigured_services() {
    let (url, _) = upstream().await;
    let s = with_appview(&url);
    let (_, token, _) = s.account("alice.test").await;
    let auth = format!("Bearer {token}");
    for (value, message) in [
        ("#bsky_appview", "no did specified in proxy header"),
        (
            "did:web:appview.test",
            "no service id specified in proxy header",
        ),
        (
            "did:web:appview.test#",
            "no service id specified in proxy header",
        ),
        ("did:web:appview.test#a#b", "invalid proxy header format"),
        (
            "did:web:other.test#bsky_appview",
            "could not resolve proxy did",
        ),
        (
            "did:web:appview.test#bsky_chat",
            "could not resolve proxy did service url",
        ),
    ] {
        let a = s
            .request(
                hyper::Method::GET,
                "/xrpc/app.bsky.feed.getTimeline",
                &[("authorization", &auth), ("atproto-proxy", value)],
                bytes::Bytes::new(),
            )
            .await;
        a.expect_error(400, "InvalidRequest");
        assert_eq!(a.json()["message"], message, "{value}");
    }
    // A method outside app.bsky.* with no header has no service.
    let a = s
        .request(
            hyper::Method::GET,
            "/xrpc/chat.bsky.convo.listConvos",
            &[
                ("authorization", &auth),
                ("atproto-proxy", "did:web:x.test#y"),
            ],
            bytes::Bytes::new(),
        )
        .await;
    a.expect_error(400, "InvalidRequest");
    // Without an appview, app.bsky.* stays unimplemented.
    let plain = start_with(|_| {});
    let (_, t, _) = plain.account("carol.test").await;
    plain
        .get_auth("/xrpc/app.bsky.feed.getTimeline", &t)
        .await
        .expect_error(501, "MethodNotImplemented");
}

#[tokio::test]
async fn writes_send_request_crawl_once_per_interval() {
    let (relay, seen) = upstream().await;
    let s = start_with(move |c| {
        c.relay_urls = vec![relay];
        c.crawl_interval = Duration::from_millis(600);
    });
    let (did, token, _) = s.account("alice.test").await;
    let crawls = |seen: &Arc<Mutex<Vec<Seen>>>| -> Vec<Seen> {
        seen.lock()
            .unwrap()
            .iter()
            .filter(|r| r.path == "/xrpc/com.atproto.sync.requestCrawl")
            .cloned()
            .collect()
    };
    for i in 0..5 {
        s.post_record(&did, &token, &format!("p{i}")).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let first = crawls(&seen);
    assert_eq!(first.len(), 1, "one requestCrawl for a burst of writes");
    let body: Value = serde_json::from_slice(&first[0].body).unwrap();
    assert_eq!(
        body["hostname"],
        s.url.trim_start_matches("http://"),
        "the public URL's authority"
    );
    tokio::time::sleep(Duration::from_millis(700)).await;
    s.post_record(&did, &token, "later").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(crawls(&seen).len(), 2, "again once the interval passed");
}
