//! The route benches' server and what it holds, seeded over HTTP (the
//! server's own write path) from `datagen::store`: a reader account with
//! the first records of datagen account 0 (posts, likes, follows, reposts,
//! its profile) written by `applyWrites` 200 at a time, one blob referenced
//! by a post, and one write account per caller (50), each logged in.

use std::net::SocketAddr;
use std::path::Path;

use bytes::Bytes;
use hyper::StatusCode;
use serde_json::{Value, json};

use crate::client::{Call, json_ok, once, once_bytes};

/// Records seeded into the reader account (after its profile).
pub const READER_RECORDS: usize = 1000;
/// Write accounts: one per caller at the largest concurrency.
pub const WRITERS: usize = 50;
/// Bytes of the seeded blob (seeded random bytes).
pub const BLOB_BYTES: usize = 64 << 10;
/// Its MIME type.
pub const BLOB_MIME: &str = "image/png";
/// The password of every seeded account.
pub const PASSWORD: &str = "atbench xrpc bench";

/// One account and its session.
#[derive(Debug, Clone)]
pub struct Account {
    pub did: String,
    pub handle: String,
    pub access: String,
}

/// The seeded server and what it holds.
pub struct Seed {
    /// Kept so the server lives as long as the fixture (ours, or the
    /// official PDS's process handle).
    _server: Box<dyn std::any::Any>,
    pub addr: SocketAddr,
    pub reader: Account,
    /// (collection, rkey, cid) of every record of the reader.
    pub records: Vec<(String, String, String)>,
    /// Post rkeys of the reader, newest first.
    pub posts_desc: Vec<String>,
    /// The reader's head commit CID.
    pub head: String,
    pub blob_cid: String,
    pub blob: Vec<u8>,
    pub writers: Vec<Account>,
}

fn create_account(addr: SocketAddr, handle: &str) -> Account {
    let v = json_ok(
        addr,
        &Call::post("/xrpc/com.atproto.server.createAccount"),
        Some(
            &json!({"handle": handle, "password": PASSWORD, "email": format!("{handle}@example.com")}),
        ),
    );
    Account {
        did: v["did"].as_str().expect("createAccount: did").to_owned(),
        handle: handle.to_owned(),
        access: v["accessJwt"]
            .as_str()
            .expect("createAccount: accessJwt")
            .to_owned(),
    }
}

/// Starts a server on a fresh store in `dir` with `config` adjusted by the
/// caller, listening on a free loopback port.
pub fn spawn(
    dir: &Path,
    name: &str,
    adjust: impl FnOnce(&mut xrpc::ServerConfig),
) -> xrpc::RunningServer {
    let mut config = xrpc::ServerConfig::new(dir.join(format!("{name}.sqlite")));
    config.listen = SocketAddr::from(([127, 0, 0, 1], 0));
    adjust(&mut config);
    let server = xrpc::spawn(config).unwrap_or_else(|e| panic!("xrpc::spawn: {e}"));
    eprintln!(
        "atbench: xrpc: {name} server {} ({})",
        server.url(),
        server.startup_report()
    );
    server
}

/// The handle domain the server offers (`.localhost`, say).
pub fn domain(addr: SocketAddr) -> String {
    let v = json_ok(
        addr,
        &Call::get("/xrpc/com.atproto.server.describeServer"),
        None,
    );
    v["availableUserDomains"][0]
        .as_str()
        .expect("describeServer: a user domain")
        .to_owned()
}

/// `n` accounts `<prefix><i><domain>`, created from 4 threads (each
/// creation hashes a password).
pub fn accounts(addr: SocketAddr, prefix: &str, n: usize) -> Vec<Account> {
    let domain = domain(addr);
    let mut out: Vec<Option<Account>> = vec![None; n];
    std::thread::scope(|s| {
        for (t, chunk) in out.chunks_mut(n.div_ceil(4).max(1)).enumerate() {
            let domain = &domain;
            s.spawn(move || {
                for (k, slot) in chunk.iter_mut().enumerate() {
                    let i = t * n.div_ceil(4).max(1) + k;
                    *slot = Some(create_account(addr, &format!("{prefix}{i}{domain}")));
                }
            });
        }
    });
    out.into_iter()
        .map(|a| a.expect("every account created"))
        .collect()
}

/// Builds the route benches' server, its `app.bsky.*` proxied to
/// `appview` (the mix's proxied reads; no route row calls one).
pub fn build(dir: &Path, appview: &xrpc::Appview) -> Seed {
    let server = spawn(dir, "routes", |c| c.appview = Some(appview.clone()));
    let addr = server.addr();
    fill(addr, Box::new(server))
}

/// Seeds the server at `addr` (ours or a peer's, through the XRPC routes
/// alone), keeping `server` alive as long as the fixture.
pub fn fill(addr: SocketAddr, server: Box<dyn std::any::Any>) -> Seed {
    let started = std::time::Instant::now();
    let reader = accounts(addr, "reader", 1).remove(0);
    let writers = accounts(addr, "writer", WRITERS);

    // The reader's records, 200 per applyWrites, with datagen's rkeys.
    let mut generated = vec![datagen::store::profile(0)];
    generated.extend(datagen::store::records(0, READER_RECORDS));
    let mut records = Vec::with_capacity(generated.len());
    for chunk in generated.chunks(200) {
        let writes: Vec<Value> = chunk
            .iter()
            .map(|r| {
                json!({"$type": "com.atproto.repo.applyWrites#create", "collection": r.collection, "rkey": r.rkey, "value": r.value})
            })
            .collect();
        let v = json_ok(
            addr,
            &Call::post("/xrpc/com.atproto.repo.applyWrites").bearer(&reader.access),
            Some(&json!({"repo": reader.did, "writes": writes})),
        );
        let results = v["results"].as_array().expect("applyWrites: results");
        assert_eq!(results.len(), chunk.len());
        for (r, res) in chunk.iter().zip(results) {
            let cid = res["cid"].as_str().expect("applyWrites: cid").to_owned();
            records.push((r.collection.to_owned(), r.rkey.clone(), cid));
        }
    }

    // One blob, referenced by a post so it is not missing.
    let blob = datagen::random_bytes(0xb10b, BLOB_BYTES);
    let (status, body) = once_bytes(
        addr,
        &Call::post("/xrpc/com.atproto.repo.uploadBlob")
            .bearer(&reader.access)
            .content_type(BLOB_MIME),
        Bytes::from(blob.clone()),
    );
    assert_eq!(
        status,
        StatusCode::OK,
        "uploadBlob: {}",
        String::from_utf8_lossy(&body)
    );
    let uploaded: Value = serde_json::from_slice(&body).expect("uploadBlob: JSON");
    let blob_ref = uploaded["blob"].clone();
    let blob_cid = blob_ref["ref"]["$link"]
        .as_str()
        .expect("uploadBlob: blob.ref.$link")
        .to_owned();
    let post = json!({
        "$type": "app.bsky.feed.post",
        "text": "a post with the seeded blob",
        "createdAt": "2024-06-01T00:00:00.000Z",
        "embed": {"$type": "app.bsky.embed.images", "images": [{"alt": "seeded bytes", "image": blob_ref}]},
    });
    let v = json_ok(
        addr,
        &Call::post("/xrpc/com.atproto.repo.createRecord").bearer(&reader.access),
        Some(&json!({"repo": reader.did, "collection": "app.bsky.feed.post", "record": post})),
    );
    let uri = v["uri"].as_str().expect("createRecord: uri");
    let rkey = uri.rsplit('/').next().unwrap_or_default().to_owned();
    records.push((
        "app.bsky.feed.post".into(),
        rkey,
        v["cid"].as_str().expect("cid").to_owned(),
    ));

    let mut posts_desc: Vec<String> = records
        .iter()
        .filter(|(c, _, _)| c == "app.bsky.feed.post")
        .map(|(_, r, _)| r.clone())
        .collect();
    posts_desc.sort_unstable_by(|a, b| b.cmp(a));
    let head = json_ok(
        addr,
        &Call::get(format!(
            "/xrpc/com.atproto.sync.getLatestCommit?did={}",
            reader.did
        )),
        None,
    )["cid"]
        .as_str()
        .expect("getLatestCommit: cid")
        .to_owned();
    let (status, _) = once(addr, &Call::get("/xrpc/_health"), None);
    assert_eq!(status, StatusCode::OK);
    eprintln!(
        "atbench: xrpc: seeded {addr}: {} accounts, {} records, a {} KiB blob in {:.1?}",
        writers.len() + 1,
        records.len(),
        BLOB_BYTES >> 10,
        started.elapsed()
    );
    Seed {
        _server: server,
        addr,
        reader,
        records,
        posts_desc,
        head,
        blob_cid,
        blob,
        writers,
    }
}
