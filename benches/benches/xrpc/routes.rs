//! `xrpc.route/<route>/c50` (13 routes here, 9 more in `routes/more.rs`),
//! `xrpc.route/<route>/c10` (the 4 large ones) and
//! `xrpc.write/create_record/c{1,10,50}`: one request per operation
//! through the concurrent-callers runner, one keep-alive connection per
//! caller; statuses counted and a sample of bodies checked after each
//! benchmark, outside the timing.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use benches::callers::bench_callers;
use benches::target::BenchTarget;
use bytes::Bytes;
use criterion::{SamplingMode, Throughput};
use hyper::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderMap};
use hyper::{Method, StatusCode};
use serde_json::{Value, json};

use crate::client::{Call, Conn, Outcomes, json_ok};
use crate::seed::{BLOB_BYTES, BLOB_MIME, PASSWORD, Seed};

// The routes beyond the first 17, a child: it builds on this module's `Route` and checks.
mod more;

/// One route: its requests (by caller and operation index) and the check
/// of a sampled answer.
pub struct Route {
    pub name: &'static str,
    pub calls: Vec<(Call, Bytes)>,
    /// Whether the caller picks its own call (`calls[caller]`, an account
    /// per caller) or rotates through them.
    pub per_caller: bool,
    pub check: Check,
}

/// The check of one sampled answer (its headers, its body).
pub type Check = Box<dyn Fn(&HeaderMap, &Bytes) -> Result<(), String> + Sync>;

pub fn json(body: &Bytes) -> Result<Value, String> {
    serde_json::from_slice(body)
        .map_err(|e| format!("not JSON ({e}): {}", String::from_utf8_lossy(body)))
}

pub fn expect(ok: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if ok { Ok(()) } else { Err(what()) }
}

/// A header's value as text ("" when absent or not text).
fn header(h: &HeaderMap, name: hyper::header::HeaderName) -> &str {
    h.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
}

pub fn get(path: String) -> (Call, Bytes) {
    (Call::get(path), Bytes::new())
}

/// The 13 small routes (c50).
fn small_routes(seed: &Seed) -> Vec<Route> {
    let r = &seed.reader;
    let did = r.did.clone();
    let cids: Arc<HashMap<String, String>> = Arc::new(
        seed.records
            .iter()
            .map(|(c, k, cid)| (format!("at://{}/{c}/{k}", r.did), cid.clone()))
            .collect(),
    );
    let writer_dids: Vec<String> = seed.writers.iter().map(|w| w.did.clone()).collect();
    let domains = {
        let d = did.clone();
        move |_: &HeaderMap, b: &Bytes| -> Result<(), String> {
            let v = json(b)?;
            expect(
                v["availableUserDomains"].is_array() && v["did"].is_string(),
                || format!("describeServer {v} ({d})"),
            )
        }
    };
    let mut routes = vec![
        Route {
            name: "health",
            calls: vec![get("/xrpc/_health".into())],
            per_caller: false,
            check: Box::new(|_, b| json(b).map(|_| ())),
        },
        Route {
            name: "describe_server",
            calls: vec![get("/xrpc/com.atproto.server.describeServer".into())],
            per_caller: false,
            check: Box::new(domains),
        },
        Route {
            name: "create_session",
            calls: seed
                .writers
                .iter()
                .map(|w| {
                    let body = json!({"identifier": w.handle, "password": PASSWORD});
                    (Call::post("/xrpc/com.atproto.server.createSession"), Bytes::from(body.to_string()))
                })
                .collect(),
            per_caller: true,
            check: {
                let dids = writer_dids.clone();
                Box::new(move |_, b| {
                    let v = json(b)?;
                    expect(v["accessJwt"].is_string() && dids.iter().any(|d| v["did"] == d.as_str()), || v.to_string())
                })
            },
        },
        Route {
            name: "get_session",
            calls: seed
                .writers
                .iter()
                .map(|w| (Call::get("/xrpc/com.atproto.server.getSession").bearer(&w.access), Bytes::new()))
                .collect(),
            per_caller: true,
            check: {
                let dids = writer_dids.clone();
                Box::new(move |_, b| {
                    let v = json(b)?;
                    expect(dids.iter().any(|d| v["did"] == d.as_str()), || v.to_string())
                })
            },
        },
        Route {
            name: "resolve_handle",
            calls: vec![get(format!("/xrpc/com.atproto.identity.resolveHandle?handle={}", r.handle))],
            per_caller: false,
            check: {
                let did = did.clone();
                Box::new(move |_, b| {
                    let v = json(b)?;
                    expect(v["did"] == did.as_str(), || v.to_string())
                })
            },
        },
        Route {
            name: "describe_repo",
            calls: vec![get(format!("/xrpc/com.atproto.repo.describeRepo?repo={did}"))],
            per_caller: false,
            check: {
                let did = did.clone();
                let handle = r.handle.clone();
                Box::new(move |_, b| {
                    let v = json(b)?;
                    expect(v["did"] == did.as_str() && v["handle"] == handle.as_str() && v["collections"].as_array().is_some_and(|c| c.len() >= 4), || v.to_string())
                })
            },
        },
        Route {
            name: "get_record",
            calls: seed
                .records
                .iter()
                .map(|(c, k, _)| get(format!("/xrpc/com.atproto.repo.getRecord?repo={did}&collection={c}&rkey={k}")))
                .collect(),
            per_caller: false,
            check: {
                let cids = cids.clone();
                Box::new(move |_, b| {
                    let v = json(b)?;
                    let uri = v["uri"].as_str().unwrap_or_default();
                    expect(cids.get(uri).is_some_and(|c| v["cid"] == c.as_str()) && v["value"].is_object(), || v.to_string())
                })
            },
        },
        Route {
            name: "list_records_50",
            // Cursors with at least 50 posts on either side of them.
            calls: seed.posts_desc[50..seed.posts_desc.len() - 51]
                .iter()
                .map(|k| get(format!("/xrpc/com.atproto.repo.listRecords?repo={did}&collection=app.bsky.feed.post&limit=50&cursor={k}")))
                .collect(),
            per_caller: false,
            check: {
                let cids = cids.clone();
                Box::new(move |_, b| {
                    let v = json(b)?;
                    let recs = v["records"].as_array().map(Vec::as_slice).unwrap_or_default();
                    let all_known = recs.iter().all(|rec| {
                        rec["uri"].as_str().and_then(|u| cids.get(u)).is_some_and(|c| rec["cid"] == c.as_str())
                    });
                    expect(recs.len() == 50 && all_known, || format!("{} records: {v}", recs.len()))
                })
            },
        },
        Route {
            name: "list_missing_blobs",
            calls: vec![(Call::get("/xrpc/com.atproto.repo.listMissingBlobs").bearer(&r.access), Bytes::new())],
            per_caller: false,
            check: Box::new(|_, b| {
                let v = json(b)?;
                expect(v["blobs"].as_array().is_some_and(Vec::is_empty), || v.to_string())
            }),
        },
        Route {
            name: "sync_get_latest_commit",
            calls: vec![get(format!("/xrpc/com.atproto.sync.getLatestCommit?did={did}"))],
            per_caller: false,
            check: {
                let head = seed.head.clone();
                Box::new(move |_, b| {
                    let v = json(b)?;
                    expect(v["cid"] == head.as_str() && v["rev"].is_string(), || v.to_string())
                })
            },
        },
        Route {
            name: "sync_get_repo_status",
            calls: vec![get(format!("/xrpc/com.atproto.sync.getRepoStatus?did={did}"))],
            per_caller: false,
            check: {
                let did = did.clone();
                Box::new(move |_, b| {
                    let v = json(b)?;
                    expect(v["did"] == did.as_str() && v["active"] == true, || v.to_string())
                })
            },
        },
        Route {
            name: "sync_list_repos",
            calls: vec![get("/xrpc/com.atproto.sync.listRepos?limit=100".into())],
            per_caller: false,
            check: {
                let did = did.clone();
                let n = seed.writers.len() + 1;
                Box::new(move |_, b| {
                    let v = json(b)?;
                    let repos = v["repos"].as_array().map(Vec::as_slice).unwrap_or_default();
                    expect(repos.len() == n && repos.iter().any(|r| r["did"] == did.as_str()), || format!("{} repos", repos.len()))
                })
            },
        },
        Route {
            name: "well_known_did",
            calls: vec![(Call::get("/.well-known/atproto-did").host(&r.handle), Bytes::new())],
            per_caller: false,
            check: {
                let did = did.clone();
                Box::new(move |_, b| expect(String::from_utf8_lossy(b).trim() == did, || String::from_utf8_lossy(b).into_owned()))
            },
        },
    ];
    for route in &mut routes {
        assert!(!route.calls.is_empty(), "{}: no calls", route.name);
    }
    routes
}

/// The 4 large routes (c10).
fn large_routes(seed: &Seed) -> Vec<Route> {
    let did = &seed.reader.did;
    let blob = Arc::new(seed.blob.clone());
    let blob_path = format!(
        "/xrpc/com.atproto.sync.getBlob?did={did}&cid={}",
        seed.blob_cid
    );
    let repo_path = format!("/xrpc/com.atproto.sync.getRepo?did={did}");
    let head = seed.head.clone();
    let blocks = seed.records.len();
    vec![
        Route {
            name: "sync_get_blob",
            calls: vec![get(blob_path.clone())],
            per_caller: false,
            check: Box::new(move |_, b| {
                expect(b[..] == blob[..], || {
                    format!("{} bytes, not the blob", b.len())
                })
            }),
        },
        Route {
            name: "sync_get_blob_head",
            calls: vec![(Call::get(blob_path).method(Method::HEAD), Bytes::new())],
            per_caller: false,
            // hyper reads no body for HEAD: the headers are the answer.
            check: Box::new(|h, _| {
                let length = BLOB_BYTES.to_string();
                expect(
                    header(h, CONTENT_LENGTH) == length && header(h, CONTENT_TYPE) == BLOB_MIME,
                    || format!("HEAD of the blob answered {h:?}"),
                )
            }),
        },
        Route {
            name: "sync_get_repo",
            calls: vec![get(repo_path.clone())],
            per_caller: false,
            check: Box::new(move |_, b| {
                let car = repo::car::CarSlice::parse(b, true).map_err(|e| format!("CAR: {e}"))?;
                let root = car.roots.first().map(|c| c.to_string()).unwrap_or_default();
                // Every record and the commit, besides the MST nodes.
                expect(root == head && car.blocks.len() > blocks, || {
                    format!("root {root}, {} blocks", car.blocks.len())
                })
            }),
        },
        Route {
            name: "sync_get_repo_head",
            calls: vec![(Call::get(repo_path).method(Method::HEAD), Bytes::new())],
            per_caller: false,
            check: Box::new(|h, _| {
                expect(
                    header(h, CONTENT_TYPE) == "application/vnd.ipld.car",
                    || format!("HEAD of the repo answered {h:?}"),
                )
            }),
        },
    ]
}

/// The implementation part of a row: the route's name, with the peer's
/// name after a dot for the official PDS's rows.
fn row_name(route: &str, peer: Option<&str>) -> String {
    match peer {
        Some(p) => format!("{route}.{p}"),
        None => route.to_owned(),
    }
}

fn bench_route(
    g: &mut benches::Group<'_>,
    seed: &Seed,
    peer: Option<&str>,
    route: &Route,
    callers: usize,
) {
    let name = row_name(route.name, peer);
    let id = g.id(&name, &format!("c{callers}"));
    let outcomes = Outcomes::default();
    let addr = seed.addr;
    bench_callers(g, &name, &format!("c{callers}"), callers, |caller| {
        let mut conn = Conn::open(addr);
        let calls = &route.calls;
        let outcomes = &outcomes;
        let per_caller = route.per_caller;
        move |i: u64| {
            let (call, body) = if per_caller {
                &calls[caller % calls.len()]
            } else {
                &calls[(caller * 7919 + i as usize) % calls.len()]
            };
            let answer = conn.answer(call, body.clone());
            outcomes.record(StatusCode::OK, &answer, i == 0);
            std::hint::black_box(answer);
        }
    });
    let samples = outcomes.check(&id);
    for s in &samples {
        if let Err(e) = (route.check)(&s.headers, &s.body) {
            panic!("{id}: a sampled answer is wrong: {e}");
        }
    }
}

/// Registers `xrpc.route`: ours, then the peers' rows (`<route>.<peer>`)
/// on the servers in `peers`, seeded alike, through the same requests and
/// checks.
pub fn run_routes(target: &mut BenchTarget, seed: &Seed, peers: &[(&str, &Seed)]) {
    let mut g = target.group("xrpc.route");
    g.criterion()
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10);
    g.throughput(Throughput::Elements(1));
    let all = std::iter::once((None, seed)).chain(peers.iter().map(|(p, s)| (Some(*p), *s)));
    for (peer, seed) in all {
        for route in small_routes(seed) {
            bench_route(&mut g, seed, peer, &route, 50);
        }
        for route in large_routes(seed) {
            bench_route(&mut g, seed, peer, &route, 10);
        }
        for route in more::routes(seed) {
            if let Some(p) = peer
                && let Err(why) = more::peer_serves(seed, &route)
            {
                eprintln!("atbench: xrpc.route/{}.{p}: skipped: {why}", route.name);
                continue;
            }
            bench_route(&mut g, seed, peer, &route, 50);
        }
    }
    g.finish();
}

/// Registers `xrpc.write`: createRecord on one account per caller, a body
/// of its own per request (datagen's post for the caller, with the
/// request's number in its text, written by serde_json so that whatever
/// datagen's text holds is escaped; a few microseconds at most against a
/// commit).
pub fn run_writes(target: &mut BenchTarget, seed: &Seed, peers: &[(&str, &Seed)]) {
    let mut g = target.group("xrpc.write");
    g.criterion()
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10);
    g.throughput(Throughput::Elements(1));
    write_rows(&mut g, seed, None);
    for (peer, seed) in peers {
        write_rows(&mut g, seed, Some(peer));
    }
    g.finish();
}

fn write_rows(g: &mut benches::Group<'_>, seed: &Seed, peer: Option<&str>) {
    let name = row_name("create_record", peer);
    let counters: Vec<AtomicU64> = (0..seed.writers.len()).map(|_| AtomicU64::new(0)).collect();
    // The caller closures borrow these, not the Seed (its server handle is not Sync).
    let (addr, writers) = (seed.addr, &seed.writers);
    for callers in [1usize, 10, 50] {
        let id = g.id(&name, &format!("c{callers}"));
        let outcomes = Outcomes::default();
        bench_callers(g, &name, &format!("c{callers}"), callers, |caller| {
            let mut conn = Conn::open(addr);
            let w = &writers[caller];
            let call = Call::post("/xrpc/com.atproto.repo.createRecord").bearer(&w.access);
            let post = datagen::store::post(caller as u64, 0).value;
            let text = post["text"].as_str().unwrap_or_default().to_owned();
            let created = post["createdAt"].as_str().unwrap_or_default().to_owned();
            let did = w.did.clone();
            let counter = &counters[caller];
            let outcomes = &outcomes;
            move |i: u64| {
                let n = counter.fetch_add(1, Ordering::Relaxed);
                let body = serde_json::to_vec(&json!({
                    "repo": did,
                    "collection": "app.bsky.feed.post",
                    "record": {
                        "$type": "app.bsky.feed.post",
                        "text": format!("{text} #{n}"),
                        "langs": ["en"],
                        "createdAt": created,
                    },
                }))
                .expect("a JSON body");
                let answer = conn.answer(&call, Bytes::from(body));
                outcomes.record(StatusCode::OK, &answer, i == 0);
            }
        });
        // Each sampled answer names a record that reads back with its CID.
        for s in outcomes.check(&id) {
            let v: Value = serde_json::from_slice(&s.body).expect("createRecord answered JSON");
            let uri = v["uri"].as_str().expect("uri");
            let mut parts = uri.trim_start_matches("at://").split('/');
            let (repo, collection, rkey) = (
                parts.next().unwrap_or_default(),
                parts.next().unwrap_or_default(),
                parts.next().unwrap_or_default(),
            );
            let got = json_ok(
                seed.addr,
                &Call::get(format!(
                    "/xrpc/com.atproto.repo.getRecord?repo={repo}&collection={collection}&rkey={rkey}"
                )),
                None,
            );
            assert_eq!(
                got["cid"], v["cid"],
                "{id}: {uri} reads back with another CID"
            );
        }
    }
}
