//! The appview stand-in: a small HTTP/1.1 server on a loopback port that
//! answers the two proxied appview reads of `xrpc.mix`
//! (`app.bsky.actor.getProfile`, `app.bsky.feed.getTimeline`), so both
//! PDSes proxy to something live and the mix can time their proxy path.
//!
//! What this module owns: the server (its own thread and current-thread
//! tokio runtime, bounded), the check of each request's service-auth
//! token, the answers' content (its child `views.rs`: deterministic,
//! lexicon-shaped JSON built from datagen's seeded text) and the counts
//! of what it served and refused.
//!
//! The token check: `Authorization: Bearer <header>.<payload>.<sig>`,
//! header `alg` ES256K, and the payload's claims (base64url JSON) `aud` =
//! [`STANDIN_DID`], `lxm` = the called NSID, `iss` = an actor added with
//! [`AppviewStandin::add_actors`] (the callers), `exp` in the future. The
//! signature is NOT verified: the stand-in resolves no DID document, so it
//! has no key to verify with. A request that fails the check is answered
//! 401 and counted ([`AppviewStandin::refused`]).
//!
//! The answers:
//! - `getProfile?actor=<did or handle>` of an added actor: its
//!   `app.bsky.actor.defs#profileViewDetailed` (handle as added, display
//!   name and description from datagen's profile text, counts, avatar and
//!   banner URLs, a pinned post for half of them, and a viewer state that
//!   depends on the caller), [`PROFILE_BYTES`] or so; an actor never added
//!   is the appview's 400 `InvalidRequest` "Profile not found".
//! - `getTimeline?limit=N[&cursor=C]` (N 1..=100, default 50): page of
//!   the caller's timeline, [`TIMELINE_DEPTH`] `feedViewPost`s deep,
//!   newest first, by [`AUTHORS`] synthetic authors: post views with the
//!   author's basic profile, the record (datagen's post text), counts, a
//!   viewer state and labels; a quarter are replies (with their root's and
//!   parent's post views, as an appview hydrates them), a tenth come as a
//!   repost (with the reposter's basic profile), a quarter carry one or two
//!   images (record embed and image view). A page of 30 is about
//!   [`TIMELINE_30_BYTES`]. The cursor is opaque (`o<offset>`); the last
//!   page has none.
//!
//! Every answer carries `atproto-repo-rev`, a TID of the moment it is
//! made: the stand-in claims to have indexed every caller's repo up to now
//! (an appview caught up with the firehose), so a PDS's read-after-write
//! check finds none of the caller's records newer than it.
//!
//! Answers are rendered once per (caller, query) and then served from
//! memory (up to [`CACHE_MAX`] of them), so the stand-in's own CPU per
//! request is an HTTP exchange, a token decode and a map lookup: its cost
//! lands on the same cores as the servers it serves, and is the same for
//! each of them.
//!
//! Bounds: request head at most [`MAX_HEAD_BYTES`] in [`MAX_HEADERS`]
//! headers (hyper answers 431 past them), GET only (anything else is 405
//! and its body is never read), [`MAX_CONNECTIONS`] connections at once
//! (more wait in the accept queue), a head within 30 s.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::{Value, json};
use tokio::sync::{Semaphore, watch};

mod views;
use views::{profile_detailed, timeline};

/// The stand-in's DID: the `aud` its tokens must name.
pub const STANDIN_DID: &str = "did:web:appview.atbench.test";
/// `feedViewPost`s in each caller's timeline (the last page has no cursor).
pub const TIMELINE_DEPTH: usize = 300;
/// Synthetic authors the timelines are drawn from.
pub const AUTHORS: u64 = 200;
/// About the bytes of one `getProfile` answer (checked by a test within
/// ±25 %).
pub const PROFILE_BYTES: usize = 1_000;
/// About the bytes of one `getTimeline?limit=30` answer (checked by a
/// test within ±25 %).
pub const TIMELINE_30_BYTES: usize = 65_000;
/// Rendered answers kept in memory.
pub const CACHE_MAX: usize = 50_000;
/// Largest request head.
pub const MAX_HEAD_BYTES: usize = 16 << 10;
/// Most headers in a request.
pub const MAX_HEADERS: usize = 64;
/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 512;

const PROFILE: &str = "app.bsky.actor.getProfile";
const TIMELINE: &str = "app.bsky.feed.getTimeline";

/// What the stand-in counted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// `getProfile` answered 200.
    pub profiles: u64,
    /// `getTimeline` answered 200.
    pub timelines: u64,
    /// Refused with 401 (the token check failed).
    pub refused: u64,
    /// Anything else that was not a 200 (unknown method, bad parameter,
    /// unknown actor, not a GET).
    pub other: u64,
}

#[derive(Default)]
struct State {
    /// Added actors: DID → handle.
    actors: RwLock<HashMap<String, String>>,
    /// Rendered answers by (caller DID, path and query).
    cache: Mutex<HashMap<(String, String), Bytes>>,
    profiles: AtomicU64,
    timelines: AtomicU64,
    refused: AtomicU64,
    other: AtomicU64,
    /// Why the first refused request was refused.
    first_refusal: Mutex<Option<String>>,
}

/// A running stand-in; dropping it stops the server and joins its thread.
pub struct AppviewStandin {
    addr: SocketAddr,
    state: Arc<State>,
    stop: watch::Sender<bool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for AppviewStandin {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl AppviewStandin {
    /// Binds a free loopback port and serves on a thread of its own.
    pub fn start() -> std::io::Result<AppviewStandin> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let state = Arc::new(State::default());
        let (stop, stopped) = watch::channel(false);
        let served = state.clone();
        let thread = std::thread::Builder::new()
            .name("appview-standin".into())
            .spawn(move || {
                rt.block_on(async move {
                    match tokio::net::TcpListener::from_std(listener) {
                        Ok(l) => serve(l, served, stopped).await,
                        Err(e) => eprintln!("atbench: appview stand-in: listener: {e}"),
                    }
                });
            })?;
        Ok(AppviewStandin {
            addr,
            state,
            stop,
            thread: Some(thread),
        })
    }

    /// Its address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Its DID ([`STANDIN_DID`]).
    pub fn did(&self) -> &'static str {
        STANDIN_DID
    }

    /// The appview setting that points a server at it.
    pub fn appview(&self) -> xrpc::Appview {
        xrpc::Appview {
            url: self.url(),
            did: STANDIN_DID.to_owned(),
        }
    }

    /// Adds actors (DID, handle): their profiles can be asked for, and
    /// their tokens are accepted (`iss`).
    pub fn add_actors<'a>(&self, actors: impl IntoIterator<Item = (&'a str, &'a str)>) {
        let mut map = self.state.actors.write().unwrap_or_else(|p| p.into_inner());
        for (did, handle) in actors {
            map.insert(did.to_owned(), handle.to_owned());
        }
    }

    /// What it has counted so far.
    pub fn counts(&self) -> Counts {
        let s = &self.state;
        Counts {
            profiles: s.profiles.load(Ordering::Relaxed),
            timelines: s.timelines.load(Ordering::Relaxed),
            refused: s.refused.load(Ordering::Relaxed),
            other: s.other.load(Ordering::Relaxed),
        }
    }

    /// Why the first refused request was refused, if one was.
    pub fn first_refusal(&self) -> Option<String> {
        self.state
            .first_refusal
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The answer body it gives `caller` for `path_and_query` (rendered
    /// afresh, not from its cache), for checks of what a PDS passed on.
    pub fn expected(&self, caller: &str, path_and_query: &str) -> Result<Bytes, String> {
        let (nsid, query) = split_path(path_and_query).ok_or("not an /xrpc/ path")?;
        render(&self.state, caller, nsid, query).map_err(|(_, _, m)| m)
    }
}

async fn serve(
    listener: tokio::net::TcpListener,
    state: Arc<State>,
    mut stop: watch::Receiver<bool>,
) {
    let permits = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let permit = tokio::select! {
            p = permits.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => return },
            _ = stop.wait_for(|s| *s) => return,
        };
        let stream = tokio::select! {
            r = listener.accept() => match r {
                Ok((s, _)) => s,
                Err(_) => { tokio::time::sleep(Duration::from_millis(20)).await; continue; }
            },
            _ = stop.wait_for(|s| *s) => return,
        };
        let _ = stream.set_nodelay(true);
        let state = state.clone();
        let mut stop = stop.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let svc = service_fn(move |req: Request<Incoming>| {
                let state = state.clone();
                async move { Ok::<_, Infallible>(respond(&state, &req)) }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .max_buf_size(MAX_HEAD_BYTES)
                .max_headers(MAX_HEADERS)
                .keep_alive(true)
                .timer(TokioTimer::new())
                .header_read_timeout(Duration::from_secs(30))
                .serve_connection(TokioIo::new(stream), svc);
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = stop.wait_for(|s| *s) => {}
            }
        });
    }
}

fn error(status: StatusCode, name: &str, message: &str) -> Response<Full<Bytes>> {
    let body = json!({"error": name, "message": message}).to_string();
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json; charset=utf-8"),
    );
    r
}

/// `/xrpc/<nsid>?<query>` → (nsid, query).
fn split_path(path_and_query: &str) -> Option<(&str, &str)> {
    let rest = path_and_query.strip_prefix("/xrpc/")?;
    Some(rest.split_once('?').unwrap_or((rest, "")))
}

fn respond(state: &State, req: &Request<Incoming>) -> Response<Full<Bytes>> {
    let other = || {
        state.other.fetch_add(1, Ordering::Relaxed);
    };
    if req.method() != Method::GET {
        other();
        return error(
            StatusCode::METHOD_NOT_ALLOWED,
            "InvalidRequest",
            "only GET is served",
        );
    }
    let pq = req.uri().path_and_query().map_or("/", |p| p.as_str());
    let Some((nsid, query)) = split_path(pq) else {
        other();
        return error(StatusCode::NOT_FOUND, "NotFound", "not an XRPC path");
    };
    if nsid != PROFILE && nsid != TIMELINE {
        other();
        return error(
            StatusCode::NOT_IMPLEMENTED,
            "MethodNotImplemented",
            "Method Not Implemented",
        );
    }
    let caller = match check_token(state, req.headers(), nsid) {
        Ok(iss) => iss,
        Err(why) => {
            if state.refused.fetch_add(1, Ordering::Relaxed) == 0 {
                *state
                    .first_refusal
                    .lock()
                    .unwrap_or_else(|p| p.into_inner()) = Some(why.clone());
            }
            return error(StatusCode::UNAUTHORIZED, "AuthenticationRequired", &why);
        }
    };
    let key = (caller, pq.to_owned());
    let cached = state
        .cache
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&key)
        .cloned();
    let body = match cached {
        Some(b) => b,
        None => match render(state, &key.0, nsid, query) {
            Ok(b) => {
                let mut cache = state.cache.lock().unwrap_or_else(|p| p.into_inner());
                if cache.len() < CACHE_MAX {
                    cache.insert(key, b.clone());
                }
                b
            }
            Err((status, name, message)) => {
                other();
                return error(status, name, &message);
            }
        },
    };
    if nsid == PROFILE {
        state.profiles.fetch_add(1, Ordering::Relaxed);
    } else {
        state.timelines.fetch_add(1, Ordering::Relaxed);
    }
    let mut r = Response::new(Full::new(body));
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json; charset=utf-8"),
    );
    if let Ok(rev) = HeaderValue::from_str(&now_rev()) {
        h.insert("atproto-repo-rev", rev);
    }
    r
}

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// A TID of this microsecond: the repo revision the stand-in claims to
/// have indexed.
fn now_rev() -> String {
    datagen::store::tid(now_us(), 0)
}

/// The caller's DID when the token passes the check, else why not.
fn check_token(state: &State, headers: &HeaderMap, nsid: &str) -> Result<String, String> {
    let auth = headers
        .get(header::AUTHORIZATION)
        .ok_or("no Authorization header")?
        .to_str()
        .map_err(|_| "Authorization is not text")?;
    let jwt = auth
        .strip_prefix("Bearer ")
        .ok_or("Authorization is not a Bearer token")?;
    let parts: Vec<&str> = jwt.split('.').collect();
    let [head, payload, sig] = parts[..] else {
        return Err(format!("a JWT has 3 parts, this one {}", parts.len()));
    };
    if sig.is_empty() {
        return Err("the JWT has no signature".into());
    }
    let decode = |part: &str, what: &str| -> Result<Value, String> {
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(part.trim_end_matches('='))
            .map_err(|e| format!("JWT {what}: not base64url ({e})"))?;
        serde_json::from_slice(&bytes).map_err(|e| format!("JWT {what}: not JSON ({e})"))
    };
    let head = decode(head, "header")?;
    if head["alg"] != "ES256K" {
        return Err(format!("JWT alg is {}, not ES256K", head["alg"]));
    }
    let claims = decode(payload, "payload")?;
    if claims["aud"] != STANDIN_DID {
        return Err(format!("aud is {}, not {STANDIN_DID}", claims["aud"]));
    }
    if claims["lxm"] != nsid {
        return Err(format!("lxm is {}, not {nsid}", claims["lxm"]));
    }
    let exp = claims["exp"].as_u64().ok_or("no numeric exp")?;
    let now = now_us() / 1_000_000;
    if exp <= now {
        return Err(format!("the token expired at {exp} (now {now})"));
    }
    let iss = claims["iss"].as_str().ok_or("no iss")?;
    let known = state
        .actors
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .contains_key(iss);
    if !known {
        return Err(format!("iss {iss} is not a known caller"));
    }
    Ok(iss.to_owned())
}

/// One query parameter, percent-decoded.
fn param(query: &str, name: &str) -> Option<String> {
    query.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == name).then(|| percent_decode(v))
    })
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (b[i], b.get(i + 1).copied(), b.get(i + 2).copied()) {
            (b'%', Some(h), Some(l)) if hex(h).is_some() && hex(l).is_some() => {
                let v = hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0);
                out.push(v as u8);
                i += 3;
            }
            (b'+', _, _) => {
                out.push(b' ');
                i += 1;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

type Refusal = (StatusCode, &'static str, String);

fn invalid(message: impl Into<String>) -> Refusal {
    (StatusCode::BAD_REQUEST, "InvalidRequest", message.into())
}

fn render(state: &State, caller: &str, nsid: &str, query: &str) -> Result<Bytes, Refusal> {
    let v = if nsid == PROFILE {
        let actor = param(query, "actor")
            .ok_or_else(|| invalid("Error: Params must have the property \"actor\""))?;
        let actors = state.actors.read().unwrap_or_else(|p| p.into_inner());
        let found = actors
            .get_key_value(&actor)
            .or_else(|| actors.iter().find(|(_, h)| **h == actor));
        let (did, handle) = found.ok_or_else(|| invalid("Profile not found"))?;
        profile_detailed(caller, did, handle)
    } else if nsid == TIMELINE {
        let limit = match param(query, "limit") {
            None => 50,
            Some(l) => l
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=100).contains(n))
                .ok_or_else(|| invalid(format!("limit must be 1..=100, not {l}")))?,
        };
        let offset = match param(query, "cursor") {
            None => 0,
            Some(c) => c
                .strip_prefix('o')
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|n| *n <= TIMELINE_DEPTH)
                .ok_or_else(|| invalid(format!("malformed cursor {c}")))?,
        };
        timeline(caller, limit, offset)
    } else {
        return Err((
            StatusCode::NOT_IMPLEMENTED,
            "MethodNotImplemented",
            "Method Not Implemented".into(),
        ));
    };
    serde_json::to_vec(&v).map(Bytes::from).map_err(|e| {
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalServerError",
            e.to_string(),
        )
    })
}

#[cfg(test)]
mod tests;
