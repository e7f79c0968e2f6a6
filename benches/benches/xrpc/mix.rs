//! `xrpc.mix/<server>/c{10,50}`: the route-mix traffic model ("for roughly
//! 100 hosted accounts, useful benchmarks should mirror real traffic"):
//! 100 accounts (10 under `--test`) seeded through the server's own
//! routes, each with 50 of datagen's records (one `applyWrites`), a 16 KiB
//! blob and a post holding it, then N connections, one per caller thread,
//! each logged in as account `caller % 100`, drawing operations in fixed
//! proportions.
//!
//! One operation is one slot of [`MIX`] (per 100 operations):
//!
//! | slot | per 100 | requests |
//! |---|---|---|
//! | getSession (the caller's token) | 10 | 1 |
//! | app.bsky.actor.getPreferences (the caller's) | 5 | 1 |
//! | createRecord (a post with its own text) | 10 | 1 |
//! | applyWrites (3 post creates) | 5 | 1 |
//! | getRecord (a seeded record of any account) | 25 | 1 |
//! | listRecords (50 posts, newest first, any account) | 10 | 1 |
//! | app.bsky.actor.getProfile (any account's), proxied | 5 | 1 |
//! | app.bsky.feed.getTimeline (limit 30, the caller's), proxied | 5 | 1 |
//! | uploadBlob (16 KiB of fresh bytes) then createRecord holding it | 2 | 2 |
//! | sync.getRepo (any account's whole CAR) | 2 | 1 |
//! | sync.getBlob (any account's seeded blob) | 8 | 1 |
//! | sync.getLatestCommit (any account) | 10 | 1 |
//! | sync.listRepos (limit 100) | 3 | 1 |
//!
//! Each account also put two preferences at seeding time. The proxied
//! reads (their 10 slots taken from getRecord and listRecords, plain reads
//! too) go through each server's proxy to the appview stand-in
//! (`benches::appview_standin`, one for the whole bench, each server's
//! default appview): the server signs a service-auth JWT (ES256K) per
//! call, forwards the call and passes the answer back; the stand-in checks
//! the token's claims (not its signature) and serves its rendered answer
//! from memory (a profile view of about 1 KB, a timeline page of 30 post
//! views of about 65 KB). The official PDS also looks, per call, for the
//! caller's records newer than the answer's `atproto-repo-rev` to patch in
//! (read-after-write); the stand-in's rev is always current, so it finds
//! none and passes the answer on as it came.
//! Every 100 operations are 102 requests.
//!
//! The order: the `n`th operation of caller `c` (counted across
//! Criterion's batches) takes slot `SCHEDULE[(37 n + 13 c) mod 100]`, a permutation of the 100 slots for every caller (37 is prime
//! to 100), so every caller runs the proportions exactly over any 100
//! consecutive operations, callers out of phase with each other.
//!
//! Before its rows, each server answers one getProfile and one getTimeline
//! through its proxy outside the timing, checked as below (a `--test` run,
//! one operation in all, reaches none of their slots).
//!
//! Every request's latency goes into its route's histogram (warm-up
//! included); every answer's status is checked (any non-200 fails the run
//! after the timing), and each caller's first answer of each route in a
//! batch is checked for content (the record's CID, the blob's bytes, the
//! CAR's root, ...; a proxied answer must be byte for byte the stand-in's
//! for that caller and query: the profile of the DID asked for, the
//! timeline page with its 30 items and cursor) after the timing, and the
//! stand-in must have refused no token. Printed per server and
//! concurrency: the mix's operations/s and requests/s, and per route the
//! count and p50/p95/p99; written to `<target>/atbench/mix/<id>.json`.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use benches::appview_standin::AppviewStandin;
use benches::callers::bench_callers;
use benches::target::BenchTarget;
use bytes::Bytes;
use criterion::{SamplingMode, Throughput};
use hdrhistogram::Histogram;
use hyper::StatusCode;
use serde_json::{Value, json};

use crate::client::{Answer, Call, Conn, Outcomes, json_ok, once_bytes};
use crate::seed::{Account, accounts};

mod check;
use check::{check, probe_proxied};

/// Accounts the mix runs over.
pub const ACCOUNTS: usize = 100;
/// Accounts under `--test` (a smoke run seeds a tenth).
const SMOKE_ACCOUNTS: usize = 10;

/// The accounts this run seeds.
fn account_count() -> usize {
    if benches::config::is_smoke() {
        SMOKE_ACCOUNTS
    } else {
        ACCOUNTS
    }
}
/// datagen records seeded per account.
pub const RECORDS: usize = 50;
/// Bytes of each account's seeded blob and of each uploaded one.
pub const BLOB_BYTES: usize = 16 << 10;
const BLOB_MIME: &str = "image/png";

/// The mix's routes (a histogram and a check each).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Route {
    GetSession,
    GetPreferences,
    CreateRecord,
    ApplyWrites,
    GetRecord,
    ListRecords,
    UploadBlob,
    CreateWithBlob,
    GetRepo,
    GetBlob,
    GetLatestCommit,
    ListRepos,
    GetProfile,
    GetTimeline,
}

const ROUTES: [Route; 14] = [
    Route::GetSession,
    Route::GetPreferences,
    Route::CreateRecord,
    Route::ApplyWrites,
    Route::GetRecord,
    Route::ListRecords,
    Route::UploadBlob,
    Route::CreateWithBlob,
    Route::GetRepo,
    Route::GetBlob,
    Route::GetLatestCommit,
    Route::ListRepos,
    Route::GetProfile,
    Route::GetTimeline,
];

impl Route {
    fn name(self) -> &'static str {
        match self {
            Route::GetSession => "getSession",
            Route::GetPreferences => "getPreferences",
            Route::CreateRecord => "createRecord",
            Route::ApplyWrites => "applyWrites",
            Route::GetRecord => "getRecord",
            Route::ListRecords => "listRecords",
            Route::UploadBlob => "uploadBlob",
            Route::CreateWithBlob => "createRecord+blob",
            Route::GetRepo => "sync.getRepo",
            Route::GetBlob => "sync.getBlob",
            Route::GetLatestCommit => "sync.getLatestCommit",
            Route::ListRepos => "sync.listRepos",
            Route::GetProfile => "proxy.getProfile",
            Route::GetTimeline => "proxy.getTimeline",
        }
    }

    fn index(self) -> usize {
        ROUTES.iter().position(|r| *r == self).unwrap_or(0)
    }
}

/// One slot kind of the mix (an upload slot is two requests).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Slot {
    One(Route),
    UploadThenRecord,
}

/// The proportions, per 100 operations.
const MIX: [(Slot, usize); 13] = [
    (Slot::One(Route::GetSession), 10),
    (Slot::One(Route::GetPreferences), 5),
    (Slot::One(Route::CreateRecord), 10),
    (Slot::One(Route::ApplyWrites), 5),
    (Slot::One(Route::GetRecord), 25),
    (Slot::One(Route::ListRecords), 10),
    (Slot::One(Route::GetProfile), 5),
    (Slot::One(Route::GetTimeline), 5),
    (Slot::UploadThenRecord, 2),
    (Slot::One(Route::GetRepo), 2),
    (Slot::One(Route::GetBlob), 8),
    (Slot::One(Route::GetLatestCommit), 10),
    (Slot::One(Route::ListRepos), 3),
];

/// Requests per operation of the mix (an upload slot is two).
fn requests_per_op() -> f64 {
    let requests: usize = MIX
        .iter()
        .map(|(s, n)| n * if *s == Slot::UploadThenRecord { 2 } else { 1 })
        .sum();
    requests as f64 / 100.0
}

fn schedule() -> Vec<Slot> {
    let slots: Vec<Slot> = MIX
        .iter()
        .flat_map(|(s, n)| std::iter::repeat_n(*s, *n))
        .collect();
    assert_eq!(slots.len(), 100, "the mix's proportions add up to 100");
    slots
}

/// One seeded account of the mix.
struct MixAccount {
    acct: Account,
    /// (collection, rkey, cid) of its seeded records.
    records: Vec<(String, String, String)>,
    blob_cid: String,
}

/// The seeded accounts on one server.
pub struct MixSeed {
    addr: SocketAddr,
    accounts: Vec<MixAccount>,
    blobs: HashMap<String, Vec<u8>>,
}

fn upload(addr: SocketAddr, access: &str, bytes: Vec<u8>) -> Value {
    let (status, body) = once_bytes(
        addr,
        &Call::post("/xrpc/com.atproto.repo.uploadBlob")
            .bearer(access)
            .content_type(BLOB_MIME),
        Bytes::from(bytes),
    );
    assert_eq!(
        status,
        StatusCode::OK,
        "uploadBlob: {}",
        String::from_utf8_lossy(&body)
    );
    let v: Value = serde_json::from_slice(&body).expect("uploadBlob: JSON");
    v["blob"].clone()
}

/// The preferences every mix account puts when seeded.
fn preferences() -> Value {
    json!([
        {"$type": "app.bsky.actor.defs#adultContentPref", "enabled": false},
        {"$type": "app.bsky.actor.defs#savedFeedsPrefV2", "items": [{"id": "3l6ovcmm2vd2j", "type": "timeline", "value": "following", "pinned": true}]},
    ])
}

fn post_with(blob: &Value, text: &str) -> Value {
    json!({
        "$type": "app.bsky.feed.post",
        "text": text,
        "createdAt": "2024-06-01T00:00:00.000Z",
        "embed": {"$type": "app.bsky.embed.images", "images": [{"alt": "mix bytes", "image": blob}]},
    })
}

fn seed_account(addr: SocketAddr, i: usize, acct: Account) -> (MixAccount, Vec<u8>) {
    let generated = datagen::store::records(1000 + i as u64, RECORDS);
    let writes: Vec<Value> = generated
        .iter()
        .map(|r| json!({"$type": "com.atproto.repo.applyWrites#create", "collection": r.collection, "rkey": r.rkey, "value": r.value}))
        .collect();
    let v = json_ok(
        addr,
        &Call::post("/xrpc/com.atproto.repo.applyWrites").bearer(&acct.access),
        Some(&json!({"repo": acct.did, "writes": writes})),
    );
    let results = v["results"].as_array().expect("applyWrites: results");
    assert_eq!(results.len(), generated.len());
    let mut records: Vec<(String, String, String)> = generated
        .iter()
        .zip(results)
        .map(|(r, res)| {
            let cid = res["cid"].as_str().expect("applyWrites: cid").to_owned();
            (r.collection.to_owned(), r.rkey.clone(), cid)
        })
        .collect();
    let (status, body) = once_bytes(
        addr,
        &Call::post("/xrpc/app.bsky.actor.putPreferences").bearer(&acct.access),
        Bytes::from(json!({"preferences": preferences()}).to_string()),
    );
    assert_eq!(
        status,
        StatusCode::OK,
        "putPreferences: {}",
        String::from_utf8_lossy(&body)
    );
    let bytes = datagen::random_bytes(0x30_0000 + i as u64, BLOB_BYTES);
    let blob = upload(addr, &acct.access, bytes.clone());
    let blob_cid = blob["ref"]["$link"]
        .as_str()
        .expect("blob.ref.$link")
        .to_owned();
    let v = json_ok(
        addr,
        &Call::post("/xrpc/com.atproto.repo.createRecord").bearer(&acct.access),
        Some(
            &json!({"repo": acct.did, "collection": "app.bsky.feed.post", "record": post_with(&blob, "the seeded blob")}),
        ),
    );
    let rkey = v["uri"]
        .as_str()
        .and_then(|u| u.rsplit('/').next())
        .expect("createRecord: uri")
        .to_owned();
    records.push((
        "app.bsky.feed.post".into(),
        rkey,
        v["cid"].as_str().expect("cid").to_owned(),
    ));
    (
        MixAccount {
            acct,
            records,
            blob_cid,
        },
        bytes,
    )
}

/// The limit of the mix's getTimeline calls.
pub const TIMELINE_LIMIT: usize = 30;

/// Seeds the mix's 100 accounts on the server at `addr` (4 threads), and
/// adds them to the appview stand-in (callers it accepts, profiles it
/// serves).
pub fn build(addr: SocketAddr, standin: &AppviewStandin) -> MixSeed {
    let started = Instant::now();
    let n = account_count();
    let accts = accounts(addr, "mix", n);
    standin.add_actors(accts.iter().map(|a| (a.did.as_str(), a.handle.as_str())));
    let mut seeded: Vec<Option<(MixAccount, Vec<u8>)>> = (0..n).map(|_| None).collect();
    let per = n.div_ceil(4);
    std::thread::scope(|s| {
        for (t, (slots, chunk)) in seeded.chunks_mut(per).zip(accts.chunks(per)).enumerate() {
            s.spawn(move || {
                for (k, (slot, acct)) in slots.iter_mut().zip(chunk).enumerate() {
                    *slot = Some(seed_account(addr, t * per + k, acct.clone()));
                }
            });
        }
    });
    let mut blobs = HashMap::new();
    let mut out = Vec::with_capacity(n);
    for (a, bytes) in seeded.into_iter().flatten() {
        blobs.insert(a.blob_cid.clone(), bytes);
        out.push(a);
    }
    assert_eq!(out.len(), n);
    eprintln!(
        "atbench: xrpc.mix: seeded {addr}: {n} accounts of {} records and a {} KiB blob in {:.1?}",
        RECORDS + 1,
        BLOB_BYTES >> 10,
        started.elapsed()
    );
    MixSeed {
        addr,
        accounts: out,
        blobs,
    }
}

/// Per-route histograms and outcomes of one row.
struct Tally {
    hist: Vec<Mutex<Histogram<u64>>>,
    outcomes: Vec<Outcomes>,
}

impl Tally {
    fn new() -> Tally {
        Tally {
            hist: ROUTES
                .iter()
                .map(|_| {
                    Mutex::new(Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("histogram"))
                })
                .collect(),
            outcomes: ROUTES.iter().map(|_| Outcomes::default()).collect(),
        }
    }

    fn record(&self, route: Route, ns: u64, answer: &Answer, sample: bool) {
        if let Ok(mut h) = self.hist[route.index()].lock() {
            let _ = h.record(ns.min(60_000_000_000));
        }
        self.outcomes[route.index()].record(StatusCode::OK, answer, sample);
    }
}

/// One caller's connection, account and counters.
struct Caller<'a> {
    conn: Conn,
    seed: &'a MixSeed,
    me: &'a MixAccount,
    caller: usize,
    /// Numbers the caller's posts and uploads (kept across batches).
    counter: &'a AtomicU64,
    seen: u32,
    tally: &'a Tally,
}

impl<'a> Caller<'a> {
    fn target(&self, i: u64) -> &'a MixAccount {
        &self.seed.accounts[(self.caller * 7919 + i as usize * 31) % self.seed.accounts.len()]
    }

    fn send(&mut self, route: Route, call: &Call, body: Bytes) -> Answer {
        let bit = 1u32 << route.index();
        let sample = self.seen & bit == 0;
        self.seen |= bit;
        let t = Instant::now();
        let mut answer = self.conn.answer(call, body);
        let ns = u64::try_from(t.elapsed().as_nanos())
            .unwrap_or(u64::MAX)
            .max(1);
        if sample {
            answer.asked = Some((self.me.acct.did.clone(), call.path.clone()));
        }
        self.tally.record(route, ns, &answer, sample);
        answer
    }

    fn post_body(&mut self, record: Value) -> Bytes {
        Bytes::from(
            serde_json::to_vec(&json!({"repo": self.me.acct.did, "collection": "app.bsky.feed.post", "record": record}))
                .expect("JSON"),
        )
    }

    fn text(&mut self) -> String {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        format!("mix post {n} of caller {}", self.caller)
    }

    fn op(&mut self, slot: Slot, i: u64) {
        let access = self.me.acct.access.clone();
        match slot {
            Slot::One(Route::GetSession) => {
                let call = Call::get("/xrpc/com.atproto.server.getSession").bearer(&access);
                self.send(Route::GetSession, &call, Bytes::new());
            }
            Slot::One(Route::GetPreferences) => {
                let call = Call::get("/xrpc/app.bsky.actor.getPreferences").bearer(&access);
                self.send(Route::GetPreferences, &call, Bytes::new());
            }
            Slot::One(Route::CreateRecord) => {
                let text = self.text();
                let body = self.post_body(json!({"$type": "app.bsky.feed.post", "text": text, "createdAt": "2024-06-01T00:00:00.000Z"}));
                let call = Call::post("/xrpc/com.atproto.repo.createRecord").bearer(&access);
                self.send(Route::CreateRecord, &call, body);
            }
            Slot::One(Route::ApplyWrites) => {
                let writes: Vec<Value> = (0..3)
                    .map(|_| {
                        let text = self.text();
                        json!({"$type": "com.atproto.repo.applyWrites#create", "collection": "app.bsky.feed.post",
                               "value": {"$type": "app.bsky.feed.post", "text": text, "createdAt": "2024-06-01T00:00:00.000Z"}})
                    })
                    .collect();
                let body = Bytes::from(
                    serde_json::to_vec(&json!({"repo": self.me.acct.did, "writes": writes}))
                        .expect("JSON"),
                );
                let call = Call::post("/xrpc/com.atproto.repo.applyWrites").bearer(&access);
                self.send(Route::ApplyWrites, &call, body);
            }
            Slot::One(Route::GetRecord) => {
                let t = self.target(i);
                let (c, k, _) = &t.records[(i as usize / 7) % t.records.len()];
                let call = Call::get(format!(
                    "/xrpc/com.atproto.repo.getRecord?repo={}&collection={c}&rkey={k}",
                    t.acct.did
                ));
                self.send(Route::GetRecord, &call, Bytes::new());
            }
            Slot::One(Route::ListRecords) => {
                let did = self.target(i).acct.did.clone();
                let call = Call::get(format!(
                    "/xrpc/com.atproto.repo.listRecords?repo={did}&collection=app.bsky.feed.post&limit=50"
                ));
                self.send(Route::ListRecords, &call, Bytes::new());
            }
            Slot::UploadThenRecord => {
                let mut bytes = datagen::random_bytes(0x40_0000 + self.caller as u64, BLOB_BYTES);
                let n = self.counter.fetch_add(1, Ordering::Relaxed);
                bytes[..8].copy_from_slice(&n.to_le_bytes());
                let call = Call::post("/xrpc/com.atproto.repo.uploadBlob")
                    .bearer(&access)
                    .content_type(BLOB_MIME);
                let answer = self.send(Route::UploadBlob, &call, Bytes::from(bytes));
                let blob = serde_json::from_slice::<Value>(&answer.body)
                    .map(|v| v["blob"].clone())
                    .unwrap_or(Value::Null);
                let text = self.text();
                let body = self.post_body(post_with(&blob, &text));
                let call = Call::post("/xrpc/com.atproto.repo.createRecord").bearer(&access);
                self.send(Route::CreateWithBlob, &call, body);
            }
            Slot::One(Route::GetRepo) => {
                let did = self.target(i).acct.did.clone();
                let call = Call::get(format!("/xrpc/com.atproto.sync.getRepo?did={did}"));
                self.send(Route::GetRepo, &call, Bytes::new());
            }
            Slot::One(Route::GetBlob) => {
                let t = self.target(i);
                let call = Call::get(format!(
                    "/xrpc/com.atproto.sync.getBlob?did={}&cid={}",
                    t.acct.did, t.blob_cid
                ));
                self.send(Route::GetBlob, &call, Bytes::new());
            }
            Slot::One(Route::GetLatestCommit) => {
                let did = self.target(i).acct.did.clone();
                let call = Call::get(format!("/xrpc/com.atproto.sync.getLatestCommit?did={did}"));
                self.send(Route::GetLatestCommit, &call, Bytes::new());
            }
            Slot::One(Route::ListRepos) => {
                let call = Call::get("/xrpc/com.atproto.sync.listRepos?limit=100");
                self.send(Route::ListRepos, &call, Bytes::new());
            }
            Slot::One(Route::GetProfile) => {
                let did = self.target(i).acct.did.clone();
                let call = Call::get(format!("/xrpc/app.bsky.actor.getProfile?actor={did}"))
                    .bearer(&access);
                self.send(Route::GetProfile, &call, Bytes::new());
            }
            Slot::One(Route::GetTimeline) => {
                let call = Call::get(format!(
                    "/xrpc/app.bsky.feed.getTimeline?limit={TIMELINE_LIMIT}"
                ))
                .bearer(&access);
                self.send(Route::GetTimeline, &call, Bytes::new());
            }
            Slot::One(Route::UploadBlob | Route::CreateWithBlob) => {
                unreachable!("the upload routes run in their slot")
            }
        }
    }
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// Registers `xrpc.mix`: each server (`ours`, then the peers) at 10 and
/// 50 connections, their proxied reads answered by `standin`.
pub fn run(target: &mut BenchTarget, servers: &[(&str, &MixSeed)], standin: &AppviewStandin) {
    let slots = Arc::new(schedule());
    let mut g = target.group("xrpc.mix");
    g.criterion()
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10);
    g.throughput(Throughput::Elements(1));
    for (name, seed) in servers {
        let cids: HashMap<String, String> = seed
            .accounts
            .iter()
            .flat_map(|a| {
                a.records
                    .iter()
                    .map(move |(c, k, cid)| (format!("at://{}/{c}/{k}", a.acct.did), cid.clone()))
            })
            .collect();
        probe_proxied(name, seed, &cids, standin);
        for callers in [10usize, 50] {
            let tier = format!("c{callers}");
            let id = g.id(name, &tier);
            let tally = Tally::new();
            let before = standin.counts();
            let schedule_at: Vec<AtomicU64> = (0..callers).map(|_| AtomicU64::new(0)).collect();
            // Numbered apart per row, so no two uploads of the run repeat bytes.
            let counters: Vec<AtomicU64> = (0..callers)
                .map(|_| AtomicU64::new((callers as u64) << 32))
                .collect();
            let summary = bench_callers(&mut g, name, &tier, callers, |caller| {
                let slots = slots.clone();
                let mut me = Caller {
                    conn: Conn::open(seed.addr),
                    seed,
                    me: &seed.accounts[caller % seed.accounts.len()],
                    caller,
                    counter: &counters[caller],
                    seen: 0,
                    tally: &tally,
                };
                let next = &schedule_at[caller];
                move |_: u64| {
                    // The caller's own count, kept across Criterion's
                    // batches (its operation index restarts with each).
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    let slot = slots[(n as usize * 37 + caller * 13) % slots.len()];
                    me.op(slot, n);
                }
            });
            // Every token the stand-in saw passed its check, every answer
            // 200, every sampled answer right.
            let after = standin.counts();
            assert_eq!(
                after.refused,
                before.refused,
                "{id}: the appview stand-in refused {} proxied calls, the first because {}",
                after.refused - before.refused,
                standin.first_refusal().unwrap_or_default()
            );
            let Tally { hist, outcomes } = tally;
            for (route, outcomes) in ROUTES.iter().zip(outcomes) {
                for a in outcomes.check(&format!("{id} {}", route.name())) {
                    if let Err(e) = check(seed, &cids, standin, *route, &a) {
                        panic!("{id}: a sampled {} answer is wrong: {e}", route.name());
                    }
                }
            }
            let standin_line = format!(
                "appview stand-in: {} getProfile and {} getTimeline answered, {} other calls",
                after.profiles - before.profiles,
                after.timelines - before.timelines,
                after.other - before.other,
            );
            let Some(summary) = summary else {
                eprintln!("atbench: {id}: {standin_line}");
                continue;
            };
            let mut per_route = serde_json::Map::new();
            let mut lines = Vec::new();
            for (route, h) in ROUTES.iter().zip(hist) {
                let h = h.into_inner().unwrap_or_else(|p| p.into_inner());
                lines.push(format!(
                    "  {:<22} {:>8} req  p50 {:>7.2} ms  p95 {:>7.2} ms  p99 {:>7.2} ms",
                    route.name(),
                    h.len(),
                    ms(h.value_at_quantile(0.5)),
                    ms(h.value_at_quantile(0.95)),
                    ms(h.value_at_quantile(0.99)),
                ));
                per_route.insert(
                    route.name().to_owned(),
                    json!({"requests": h.len(), "p50_ns": h.value_at_quantile(0.5), "p95_ns": h.value_at_quantile(0.95), "p99_ns": h.value_at_quantile(0.99)}),
                );
            }
            let mix_requests_per_op = requests_per_op();
            lines.push(format!("  {standin_line}"));
            eprintln!(
                "atbench: {id}: {:.0} mix operations/s, {:.0} requests/s ({:.2} requests per operation), p50 {:.2} ms p95 {:.2} ms p99 {:.2} ms per operation; no errors; per route:\n{}",
                summary.ops_per_sec,
                summary.ops_per_sec * mix_requests_per_op,
                mix_requests_per_op,
                ms(summary.p50_ns),
                ms(summary.p95_ns),
                ms(summary.p99_ns),
                lines.join("\n")
            );
            benches::sidecar::write(
                "mix",
                &benches::sidecar::file_stem(&id),
                &json!({
                    "id": id,
                    "callers": callers,
                    "ops_per_sec": summary.ops_per_sec,
                    "requests_per_sec": summary.ops_per_sec * mix_requests_per_op,
                    "requests_per_op": mix_requests_per_op,
                    "per_route": per_route,
                    "proportions": MIX.iter().map(|(s, n)| json!({"slot": format!("{s:?}"), "per_100": n})).collect::<Vec<_>>(),
                }),
            );
        }
    }
    g.finish();
}
