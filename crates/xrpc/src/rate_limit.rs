//! Write points and rate limits (`--rate-limits`; off by default, as in
//! the reference PDS, which enables them with `PDS_RATE_LIMITS_ENABLED`).
//! This module owns the counters; the router (`routes/mod.rs`) and the
//! routes with limits of their own (record writes, uploadBlob,
//! createSession) charge them.
//!
//! The reference's semantics, kept exactly because clients (the knot
//! helper among them) plan around them:
//! - Fixed windows per key: a key's window starts at its first charge and
//!   lasts the limit's duration; every charge adds its points, and one
//!   that takes the total past the limit is refused (its points still
//!   count, as with the reference's `rate-limiter-flexible`).
//! - The limits: record writes per DID, 5,000 points an hour and 35,000 a
//!   day (create 3, update 2, delete 1; putRecord 2 even when it creates;
//!   applyWrites the sum of its writes); every XRPC request, 3,000 per 5
//!   minutes per client IP; uploadBlob 1,000 a day per IP; createSession 30
//!   per 5 minutes and 300 a day per identifier and IP.
//! - A route's own limits and the global one are charged together, all of
//!   them even when one refuses. The answer carries `RateLimit-Limit`,
//!   `RateLimit-Remaining`, `RateLimit-Reset` (unix seconds) and
//!   `RateLimit-Policy` (`<limit>;w=<seconds>`) of the tightest (the least
//!   remaining; on a refusal, the first limit that refused, in the order
//!   route limits, then global), and a refusal is 429 `RateLimitExceeded`
//!   with `Retry-After` (seconds until that window ends, rounded up).
//! - A route with limits of its own charges them after its token and body
//!   are checked (a refused token costs nothing), as the reference does.
//!
//! # Deviations
//!
//! - Routes with only the global limit are charged by the router before
//!   the route runs, so a request refused for its token or parameters
//!   counts too (the reference counts only the requests that pass their
//!   checks). `_health`, `subscribeRepos`, unknown methods and the
//!   non-XRPC paths are not limited, as in the reference.
//! - The counters are bounded: each limit tracks at most
//!   [`RateLimits::max_keys`] keys. A full table first drops the keys
//!   whose window ended; if it is still full, the half whose windows end
//!   soonest goes (their counts restart), so memory stays bounded whatever
//!   the number of addresses, accounts or identifiers a client makes up.
//! - The client IP is the socket's peer address (no forwarding header is
//!   trusted).

use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use http::request::Parts;
use http::{HeaderMap, HeaderValue, StatusCode};

use crate::error::{XResult, XrpcError};

/// One limit: `points` per `window`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    /// Points a key may spend in one window.
    pub points: u32,
    /// The window, from a key's first charge.
    pub window: Duration,
}

impl Limit {
    /// `points` per `secs` seconds.
    pub const fn per(points: u32, secs: u64) -> Limit {
        Limit {
            points,
            window: Duration::from_secs(secs),
        }
    }
}

/// The limits [`ServerConfig::rate_limits`](crate::ServerConfig::rate_limits)
/// turns on. [`RateLimits::reference`] gives the reference PDS's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimits {
    /// Record-write points per DID, the shorter window (5,000 an hour).
    pub writes_hour: Limit,
    /// Record-write points per DID, the longer window (35,000 a day).
    pub writes_day: Limit,
    /// Every XRPC request per client IP (3,000 per 5 minutes).
    pub global: Limit,
    /// uploadBlob per client IP (1,000 a day).
    pub upload_blob: Limit,
    /// createSession per identifier and IP, the shorter window (30 per 5
    /// minutes).
    pub session_short: Limit,
    /// createSession per identifier and IP, the longer window (300 a day).
    pub session_day: Limit,
    /// Keys each limit tracks at most (see the module doc).
    pub max_keys: usize,
}

impl RateLimits {
    /// The reference PDS's limits.
    pub fn reference() -> RateLimits {
        const MINUTE: u64 = 60;
        const HOUR: u64 = 60 * MINUTE;
        const DAY: u64 = 24 * HOUR;
        RateLimits {
            writes_hour: Limit::per(5_000, HOUR),
            writes_day: Limit::per(35_000, DAY),
            global: Limit::per(3_000, 5 * MINUTE),
            upload_blob: Limit::per(1_000, DAY),
            session_short: Limit::per(30, 5 * MINUTE),
            session_day: Limit::per(300, DAY),
            max_keys: 50_000,
        }
    }
}

/// Write points of one record write (`WriteAction`): create 3, update 2,
/// delete 1. putRecord is an update whether or not the record exists.
pub fn write_points(action: store::WriteAction) -> u32 {
    match action {
        store::WriteAction::Create => 3,
        store::WriteAction::Update => 2,
        store::WriteAction::Delete => 1,
    }
}

/// What one limit says after a charge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status {
    /// The limit's points.
    pub limit: u32,
    /// Its window, in seconds.
    pub window_secs: u64,
    /// Points left in the key's window (0 once past the limit).
    pub remaining: u32,
    /// Time until the key's window ends.
    pub before_next: Duration,
    /// Whether this charge took the key past the limit.
    pub exceeded: bool,
}

impl Status {
    /// Sets the `RateLimit-*` headers (and `Retry-After` on a refusal).
    pub fn apply(&self, h: &mut HeaderMap) {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let reset = (now + self.before_next).as_secs();
        h.insert("ratelimit-limit", HeaderValue::from(self.limit));
        h.insert("ratelimit-reset", HeaderValue::from(reset));
        h.insert("ratelimit-remaining", HeaderValue::from(self.remaining));
        if let Ok(v) = HeaderValue::try_from(format!("{};w={}", self.limit, self.window_secs)) {
            h.insert("ratelimit-policy", v);
        }
        if self.exceeded {
            let ms = self.before_next.as_millis();
            h.insert(
                http::header::RETRY_AFTER,
                HeaderValue::from(ms.div_ceil(1000) as u64),
            );
        }
    }
}

/// The tightest of several statuses, in charge order: the first that
/// refused, else the one with the fewest points left (the first of
/// equals).
fn tightest(all: &[Status]) -> Option<Status> {
    if let Some(s) = all.iter().find(|s| s.exceeded) {
        return Some(*s);
    }
    let mut low: Option<Status> = None;
    for s in all {
        if low.is_none_or(|l| s.remaining < l.remaining) {
            low = Some(*s);
        }
    }
    low
}

struct Entry {
    ends: Instant,
    used: u64,
}

/// One limit's fixed windows, keyed by `K`, at most `max_keys` of them.
struct Windows<K> {
    limit: Limit,
    max_keys: usize,
    keys: Mutex<HashMap<K, Entry>>,
}

impl<K: Hash + Eq + Clone> Windows<K> {
    fn new(limit: Limit, max_keys: usize) -> Self {
        Windows {
            limit,
            max_keys: max_keys.max(2),
            keys: Mutex::new(HashMap::new()),
        }
    }

    fn charge(&self, key: &K, points: u32, now: Instant) -> Status {
        let mut keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        if !keys.contains_key(key) && keys.len() >= self.max_keys {
            evict(&mut keys, self.max_keys, now);
        }
        let fresh = Entry {
            ends: now + self.limit.window,
            used: 0,
        };
        let e = match keys.get_mut(key) {
            Some(e) if e.ends > now => e,
            Some(e) => {
                *e = fresh;
                e
            }
            None => keys.entry(key.clone()).or_insert(fresh),
        };
        e.used = e.used.saturating_add(u64::from(points));
        let limit = u64::from(self.limit.points);
        Status {
            limit: self.limit.points,
            window_secs: self.limit.window.as_secs(),
            remaining: limit.saturating_sub(e.used) as u32,
            before_next: e.ends.saturating_duration_since(now),
            exceeded: e.used > limit,
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.keys.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

/// Makes room in a full table: the keys whose window ended go; if that
/// frees less than a quarter, the half whose windows end soonest goes too
/// (one sort per half-table of new keys).
fn evict<K: Hash + Eq + Clone>(keys: &mut HashMap<K, Entry>, max: usize, now: Instant) {
    keys.retain(|_, e| e.ends > now);
    if keys.len() < max - max / 4 {
        return;
    }
    let mut ends: Vec<Instant> = keys.values().map(|e| e.ends).collect();
    let half = ends.len() / 2;
    let (_, cut, _) = ends.select_nth_unstable(half);
    let cut = *cut;
    let mut dropped = 0;
    keys.retain(|_, e| {
        if e.ends < cut || (e.ends == cut && dropped < half) {
            dropped += 1;
            false
        } else {
            true
        }
    });
}

/// What a route with limits of its own charges
/// ([`RateLimiter::charge`]).
pub enum Charge<'a> {
    /// Record writes by `did`, of `points` in all.
    Writes { did: &'a str, points: u32 },
    /// One uploadBlob.
    UploadBlob,
    /// One createSession for `identifier` (as the client sent it).
    Session { identifier: &'a str },
}

/// Which limits an XRPC method is under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// None (`_health`, the firehose, unknown methods).
    Free,
    /// The global limit only, charged by the router.
    Global,
    /// Limits of its own beside the global one, charged by the route.
    Own,
}

/// The limits that apply to XRPC method `m`.
pub fn class(m: &str) -> Class {
    match m {
        "com.atproto.repo.createRecord"
        | "com.atproto.repo.putRecord"
        | "com.atproto.repo.deleteRecord"
        | "com.atproto.repo.applyWrites"
        | "com.atproto.repo.uploadBlob"
        | "com.atproto.server.createSession" => Class::Own,
        "com.atproto.server.describeServer"
        | "com.atproto.server.createAccount"
        | "com.atproto.server.getSession"
        | "com.atproto.server.refreshSession"
        | "com.atproto.server.deleteSession"
        | "com.atproto.identity.resolveHandle"
        | "com.atproto.repo.getRecord"
        | "com.atproto.repo.listRecords"
        | "com.atproto.repo.describeRepo"
        | "com.atproto.repo.listMissingBlobs"
        | "com.atproto.sync.getBlob"
        | "com.atproto.sync.listBlobs"
        | "com.atproto.sync.getRepo"
        | "com.atproto.sync.getRecord"
        | "com.atproto.sync.getLatestCommit"
        | "com.atproto.sync.getRepoStatus"
        | "com.atproto.sync.listRepos"
        | "com.atproto.sync.getBlocks"
        | "com.atproto.server.getServiceAuth"
        | "com.atproto.server.checkAccountStatus"
        | "com.atproto.server.createAppPassword"
        | "com.atproto.server.listAppPasswords"
        | "com.atproto.server.revokeAppPassword" => Class::Global,
        // getPreferences / putPreferences, and the calls the proxy forwards.
        m if m.starts_with("app.bsky.") || m.starts_with("chat.bsky.") => Class::Global,
        // `_health`, the firehose (a subscription), unknown methods.
        _ => Class::Free,
    }
}

/// The counters of every limit.
pub struct RateLimiter {
    writes_hour: Windows<Arc<str>>,
    writes_day: Windows<Arc<str>>,
    global: Windows<IpAddr>,
    upload_blob: Windows<IpAddr>,
    session_short: Windows<String>,
    session_day: Windows<String>,
}

/// A request's place in the rate limits, put in its extensions by the
/// router when limits are on: the client address and, once charged, the
/// status the answer carries.
#[derive(Clone)]
pub struct Ticket {
    /// The client IP.
    pub peer: IpAddr,
    /// The status to answer with, set by the route's charge.
    pub status: Arc<Mutex<Option<Status>>>,
}

impl RateLimiter {
    /// Counters for `limits`.
    pub fn new(limits: &RateLimits) -> RateLimiter {
        let n = limits.max_keys;
        RateLimiter {
            writes_hour: Windows::new(limits.writes_hour, n),
            writes_day: Windows::new(limits.writes_day, n),
            global: Windows::new(limits.global, n),
            upload_blob: Windows::new(limits.upload_blob, n),
            session_short: Windows::new(limits.session_short, n),
            session_day: Windows::new(limits.session_day, n),
        }
    }

    /// Charges one request to `peer`'s global limit.
    pub fn charge_global(&self, peer: IpAddr) -> Status {
        self.global.charge(&peer, 1, Instant::now())
    }

    /// Charges a route's own limits and the global one (all of them, as
    /// the reference does), returning the tightest status.
    pub fn charge(&self, peer: IpAddr, what: &Charge<'_>) -> Status {
        let now = Instant::now();
        let mut all = [None, None, None];
        match what {
            Charge::Writes { did, points } => {
                // Zero points charge nothing (the reference skips them).
                if *points > 0 {
                    let did: Arc<str> = Arc::from(*did);
                    all[0] = Some(self.writes_hour.charge(&did, *points, now));
                    all[1] = Some(self.writes_day.charge(&did, *points, now));
                }
            }
            Charge::UploadBlob => all[0] = Some(self.upload_blob.charge(&peer, 1, now)),
            Charge::Session { identifier } => {
                let key = format!("{identifier}-{peer}");
                all[0] = Some(self.session_day.charge(&key, 1, now));
                all[1] = Some(self.session_short.charge(&key, 1, now));
            }
        }
        all[2] = Some(self.global.charge(&peer, 1, now));
        let all: Vec<Status> = all.into_iter().flatten().collect();
        // `all` holds at least the global status.
        tightest(&all).unwrap_or(all[all.len() - 1])
    }
}

/// The refusal of a charge past a limit.
pub fn exceeded() -> XrpcError {
    XrpcError::new(
        StatusCode::TOO_MANY_REQUESTS,
        "RateLimitExceeded",
        "Rate Limit Exceeded",
    )
}

/// Charges a route's own limits when rate limits are on (the request
/// carries a [`Ticket`]); a no-op otherwise. The status is kept for the
/// answer's headers; past a limit, the 429.
pub fn charge(limiter: Option<&RateLimiter>, parts: &Parts, what: Charge<'_>) -> XResult<()> {
    let (Some(limiter), Some(ticket)) = (limiter, parts.extensions.get::<Ticket>()) else {
        return Ok(());
    };
    let status = limiter.charge(ticket.peer, &what);
    *ticket.status.lock().unwrap_or_else(|p| p.into_inner()) = Some(status);
    if status.exceeded {
        Err(exceeded())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_windows_count_refused_charges_too() {
        let w = Windows::new(Limit::per(5, 60), 100);
        let t = Instant::now();
        let k = "did:plc:a".to_owned();
        let s = w.charge(&k, 3, t);
        assert_eq!((s.remaining, s.exceeded), (2, false));
        assert_eq!(s.before_next, Duration::from_secs(60));
        let s = w.charge(&k, 2, t + Duration::from_secs(10));
        assert_eq!((s.remaining, s.exceeded), (0, false));
        assert_eq!(s.before_next, Duration::from_secs(50));
        let s = w.charge(&k, 1, t + Duration::from_secs(20));
        assert_eq!((s.remaining, s.exceeded), (0, true));
        // The window ends: a fresh one from the next charge.
        let s = w.charge(&k, 1, t + Duration::from_secs(61));
        assert_eq!((s.remaining, s.exceeded), (4, false));
        assert_eq!(s.before_next, Duration::from_secs(60));
    }

    #[test]
    fn tightest_is_the_first_refusal_else_the_least_remaining() {
        let st = |remaining, exceeded| Status {
            limit: 10,
            window_secs: 1,
            remaining,
            before_next: Duration::ZERO,
            exceeded,
        };
        assert_eq!(
            tightest(&[st(5, false), st(3, false), st(3, false)]),
            Some(st(3, false))
        );
        assert_eq!(
            tightest(&[st(5, false), st(0, true), st(9, true)]),
            Some(st(0, true))
        );
        assert_eq!(tightest(&[]), None);
    }

    #[test]
    fn a_full_table_stays_bounded() {
        let w = Windows::new(Limit::per(5, 60), 64);
        let t = Instant::now();
        for i in 0..10_000u32 {
            w.charge(&i, 1, t + Duration::from_millis(u64::from(i)));
            assert!(w.len() <= 64);
        }
        // The newest keys survive an eviction.
        let s = w.charge(&9_999, 1, t + Duration::from_secs(10));
        assert_eq!(s.remaining, 3);
    }

    #[test]
    fn classes() {
        assert_eq!(class("com.atproto.repo.createRecord"), Class::Own);
        assert_eq!(class("com.atproto.repo.listRecords"), Class::Global);
        assert_eq!(class("com.atproto.sync.subscribeRepos"), Class::Free);
        assert_eq!(class("_health"), Class::Free);
        assert_eq!(class("io.example.nothing"), Class::Free);
        assert_eq!(class("com.atproto.server.getServiceAuth"), Class::Global);
        assert_eq!(class("app.bsky.feed.getTimeline"), Class::Global);
        assert_eq!(class("com.atproto.unknown.method"), Class::Free);
    }

    #[test]
    fn headers() {
        let mut h = HeaderMap::new();
        Status {
            limit: 3000,
            window_secs: 300,
            remaining: 0,
            before_next: Duration::from_millis(1500),
            exceeded: true,
        }
        .apply(&mut h);
        assert_eq!(h["ratelimit-limit"], "3000");
        assert_eq!(h["ratelimit-remaining"], "0");
        assert_eq!(h["ratelimit-policy"], "3000;w=300");
        assert_eq!(h["retry-after"], "2");
        let reset: u64 = h["ratelimit-reset"].to_str().unwrap().parse().unwrap();
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        assert!(reset >= now && reset <= now + 2);
    }
}
