//! The stand-in's answers (shape, size, determinism) and its token check,
//! driven over HTTP.

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

use super::*;

const CALLER: &str = "did:plc:callercallercallercaller";
const OTHER: &str = "did:plc:otherotherotherotherothe";

fn b64(v: &Value) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
}

/// A token with `claims` (unsigned: the stand-in does not verify).
fn token(alg: &str, claims: &Value) -> String {
    format!(
        "{}.{}.c2lnbmF0dXJl",
        b64(&json!({"typ": "JWT", "alg": alg})),
        b64(claims)
    )
}

fn claims(aud: &str, lxm: &str, iss: &str, exp_in: i64) -> Value {
    let now = (now_us() / 1_000_000) as i64;
    json!({"iat": now, "iss": iss, "aud": aud, "lxm": lxm, "exp": now + exp_in, "jti": "00"})
}

fn get(
    s: &AppviewStandin,
    method: Method,
    path: &str,
    auth: Option<&str>,
) -> (StatusCode, hyper::HeaderMap, Bytes) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let addr = s.addr();
    rt.block_on(async move {
        let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .expect("handshake");
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let mut b = Request::builder()
            .method(method)
            .uri(path)
            .header("host", addr.to_string());
        if let Some(t) = auth {
            b = b.header("authorization", t);
        }
        let resp = sender
            .send_request(b.body(Full::new(Bytes::new())).expect("request"))
            .await
            .expect("answer");
        let (parts, body) = resp.into_parts();
        let body = body.collect().await.expect("body").to_bytes();
        (parts.status, parts.headers, body)
    })
}

#[test]
fn answers_are_lexicon_shaped_deterministic_and_sized_as_documented() {
    let state = State::default();
    state
        .actors
        .write()
        .expect("lock")
        .insert(OTHER.into(), "other.test".into());
    let profile = render(&state, CALLER, PROFILE, &format!("actor={OTHER}")).expect("profile");
    assert_eq!(
        profile,
        render(&state, CALLER, PROFILE, "actor=other.test").expect("by handle")
    );
    let p: Value = serde_json::from_slice(&profile).expect("JSON");
    assert_eq!(p["did"], OTHER);
    assert_eq!(p["handle"], "other.test");
    assert!(p["displayName"].is_string() && p["followersCount"].is_u64());
    let within = |n: usize, want: usize| n * 4 >= want * 3 && n * 4 <= want * 5;
    assert!(
        within(profile.len(), PROFILE_BYTES),
        "{} bytes",
        profile.len()
    );

    let page = render(&state, CALLER, TIMELINE, "limit=30").expect("timeline");
    assert_eq!(
        page,
        render(&state, CALLER, TIMELINE, "limit=30").expect("again")
    );
    eprintln!(
        "profile {} bytes, timeline page of 30 {} bytes",
        profile.len(),
        page.len()
    );
    assert!(
        within(page.len(), TIMELINE_30_BYTES),
        "{} bytes",
        page.len()
    );
    let t: Value = serde_json::from_slice(&page).expect("JSON");
    let feed = t["feed"].as_array().expect("feed");
    assert_eq!(feed.len(), 30);
    assert_eq!(t["cursor"], "o30");
    assert!(
        feed.iter()
            .any(|i| i["reply"]["parent"]["$type"] == "app.bsky.feed.defs#postView")
    );
    assert!(
        feed.iter()
            .any(|i| i["reason"]["$type"] == "app.bsky.feed.defs#reasonRepost")
    );
    assert!(
        feed.iter()
            .any(|i| i["post"]["embed"]["$type"] == "app.bsky.embed.images#view")
    );
    let times: Vec<&str> = feed
        .iter()
        .map(|i| {
            i["post"]["record"]["createdAt"]
                .as_str()
                .expect("createdAt")
        })
        .collect();
    assert!(times.windows(2).all(|w| w[0] > w[1]), "newest first");
    // A reply's record names the parent the view shows.
    for i in feed.iter().filter(|i| i["reply"].is_object()) {
        assert_eq!(
            i["post"]["record"]["reply"]["parent"]["uri"],
            i["reply"]["parent"]["uri"]
        );
        assert_eq!(
            i["post"]["record"]["reply"]["parent"]["cid"],
            i["reply"]["parent"]["cid"]
        );
    }
    // Another caller's timeline differs; the next page follows on.
    assert_ne!(
        page,
        render(&state, OTHER, TIMELINE, "limit=30").expect("other")
    );
    let next: Value = serde_json::from_slice(
        &render(&state, CALLER, TIMELINE, "limit=30&cursor=o30").expect("next"),
    )
    .expect("JSON");
    assert_eq!(next["cursor"], "o60");
    let last: Value = serde_json::from_slice(
        &render(
            &state,
            CALLER,
            TIMELINE,
            &format!("limit=100&cursor=o{}", TIMELINE_DEPTH - 10),
        )
        .expect("last"),
    )
    .expect("JSON");
    assert_eq!(last["feed"].as_array().map(Vec::len), Some(10));
    assert!(last.get("cursor").is_none());
    assert!(render(&state, CALLER, TIMELINE, "limit=101").is_err());
    assert!(render(&state, CALLER, TIMELINE, "cursor=x").is_err());
    assert!(render(&state, CALLER, PROFILE, "actor=did:plc:nobody").is_err());
}

#[test]
fn it_serves_good_tokens_and_refuses_and_counts_bad_ones() {
    let s = AppviewStandin::start().expect("start");
    s.add_actors([(CALLER, "caller.test"), (OTHER, "other.test")]);
    let profile_path = format!("/xrpc/{PROFILE}?actor={}", OTHER.replace(':', "%3A"));
    let good = format!(
        "Bearer {}",
        token("ES256K", &claims(STANDIN_DID, PROFILE, CALLER, 60))
    );
    let (status, headers, body) = get(&s, Method::GET, &profile_path, Some(&good));
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    assert_eq!(body, s.expected(CALLER, &profile_path).expect("expected"));
    let rev = headers["atproto-repo-rev"].to_str().expect("rev");
    assert_eq!(rev.len(), 13);
    // Served again from its cache, the same bytes.
    assert_eq!(get(&s, Method::GET, &profile_path, Some(&good)).2, body);
    let timeline_path = format!("/xrpc/{TIMELINE}?limit=30");
    let t = format!(
        "Bearer {}",
        token("ES256K", &claims(STANDIN_DID, TIMELINE, CALLER, 60))
    );
    let (status, _, body) = get(&s, Method::GET, &timeline_path, Some(&t));
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, s.expected(CALLER, &timeline_path).expect("expected"));
    assert_eq!(
        s.counts(),
        Counts {
            profiles: 2,
            timelines: 1,
            refused: 0,
            other: 0
        }
    );

    let bad = [
        None,
        Some("Basic dXNlcjpwYXNz".to_owned()),
        Some("Bearer not-a-jwt".to_owned()),
        Some(format!(
            "Bearer {}",
            token(
                "ES256K",
                &claims("did:web:elsewhere.test", PROFILE, CALLER, 60)
            )
        )),
        Some(format!(
            "Bearer {}",
            token("ES256K", &claims(STANDIN_DID, TIMELINE, CALLER, 60))
        )),
        Some(format!(
            "Bearer {}",
            token(
                "ES256K",
                &claims(STANDIN_DID, PROFILE, "did:plc:stranger", 60)
            )
        )),
        Some(format!(
            "Bearer {}",
            token("ES256K", &claims(STANDIN_DID, PROFILE, CALLER, -5))
        )),
        Some(format!(
            "Bearer {}",
            token("HS256", &claims(STANDIN_DID, PROFILE, CALLER, 60))
        )),
    ];
    for auth in &bad {
        let (status, _, body) = get(&s, Method::GET, &profile_path, auth.as_deref());
        assert_eq!(
            status,
            StatusCode::UNAUTHORIZED,
            "{auth:?}: {}",
            String::from_utf8_lossy(&body)
        );
    }
    assert_eq!(s.counts().refused, bad.len() as u64);
    assert_eq!(
        s.first_refusal().as_deref(),
        Some("no Authorization header")
    );

    // Not a 200, and not a refusal: counted apart.
    let unknown = format!("/xrpc/{PROFILE}?actor=did:plc:nobody");
    assert_eq!(
        get(&s, Method::GET, &unknown, Some(&good)).0,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        get(&s, Method::POST, &profile_path, Some(&good)).0,
        StatusCode::METHOD_NOT_ALLOWED
    );
    let other = format!(
        "Bearer {}",
        token(
            "ES256K",
            &claims(STANDIN_DID, "app.bsky.feed.getFeed", CALLER, 60)
        )
    );
    assert_eq!(
        get(
            &s,
            Method::GET,
            "/xrpc/app.bsky.feed.getFeed?feed=x",
            Some(&other)
        )
        .0,
        StatusCode::NOT_IMPLEMENTED
    );
    assert_eq!(s.counts().other, 3);
    let addr = s.addr();
    drop(s);
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "still listening at {addr}"
    );
}
