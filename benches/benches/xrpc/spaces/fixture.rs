//! The space groups' fixture: one SQLite file for the library rows and one
//! atpds server for the HTTP rows, each holding a space of 1,000 and one of
//! 10,000 records in one writer repo (the authority's), a 1 MiB blob a
//! record of each space references, and, for the public-repo rows, store
//! accounts holding the same records.
//!
//! - `space-lib.sqlite`: a `store::Store` (the public-repo accounts, the
//!   owner's signing key, the blob) and a `space::SpaceStore` on the same
//!   file, as atpds has them;
//! - `space-http.sqlite`: the server's file; the owner account is created
//!   over HTTP (so the server holds its signing key), and its spaces are
//!   seeded through a `SpaceStore` this process opens on the same file
//!   (there is no applyWrites route for spaces; seeding 11,000 records one
//!   putRecord at a time would take longer than the rows).
//!
//! Every space record is datagen's record of the matching public account
//! (same collection, rkey and DRISL bytes), so a space row and its
//! public-repo row read the same bytes. Seeding takes about a second.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use repo::Cid;
use repo::crypto::{Algorithm, Keypair};
use space::envelope::kem::{KemKey, encapsulate};
use space::envelope::{E2, E4};
use space::{OpsParams, Policy, SpaceRef, SpaceStore, Write};
use store::{RecordWrite, Store};

use crate::client::{Call, json_ok, once_bytes};
use crate::seed::Account;

/// The seeded sizes.
pub const TIERS: [usize; 2] = [1_000, 10_000];
/// Signs E2 commits with the key the store holds, read per signature as
/// atpds's signer does (`crates/xrpc/src/spaces.rs`).
struct StoreSigner(Arc<Store>);

impl space::commit::Signer for StoreSigner {
    fn sign_as(&self, did: &str, msg: &[u8]) -> space::Result<[u8; 64]> {
        match self.0.sign_as(did, msg) {
            Ok(Some(sig)) => Ok(sig),
            Ok(None) => Err(space::SpaceError::NoSigningKey(did.to_owned())),
            Err(e) => Err(space::SpaceError::Corrupt(e.to_string())),
        }
    }
}

/// The space type of every seeded and created space.
pub const SPACE_TYPE: &str = "app.atbench.group";
/// The collection listRecords pages through.
pub const LIKE: &str = "app.bsky.feed.like";
/// The collection the write rows replace records of.
pub const POST: &str = "app.bsky.feed.post";
/// Bytes of the seeded blob, and the range the getBlob rows read.
pub const BLOB_BYTES: usize = 1 << 20;
pub const RANGE: (u64, u64) = (256 << 10, (320 << 10) - 1);
pub const BLOB_MIME: &str = "image/png";
/// listRepoOps' page size in the catch-up rows (the lexicon's largest).
pub const OPS_PAGE: u32 = 1000;

/// One seeded size: the same records in the library's space, the server's
/// space and the public-repo account.
pub struct Tier {
    pub n: usize,
    pub lib_space: SpaceRef,
    pub http_space: SpaceRef,
    /// The public-repo account (in the library's store).
    pub public_did: String,
    /// (collection, rkey, cid) of every seeded record (the blob record
    /// excluded).
    pub records: Vec<(&'static str, String, Cid)>,
    /// Like rkeys with at least 50 older likes below them.
    pub like_cursors: Vec<String>,
    /// Post rkeys (the write rows replace these).
    pub posts: Vec<String>,
    /// Ops in each space's log after seeding, and the listRepoOps cursor
    /// after the first half of them (the same in both files: same batches).
    pub ops: usize,
    pub lib_middle: String,
    pub http_middle: String,
}

pub struct Fixture {
    pub lib_store: Arc<Store>,
    pub lib_spaces: Arc<SpaceStore>,
    /// The library's owner (authority and writer repo of its spaces).
    pub lib_owner: String,
    pub e2: E2,
    pub e4: E4,
    /// A syncer's key share for `e4`'s KEM key (one per run; the envelope
    /// decapsulates it per response, as the server does).
    pub lib_key_share: String,
    pub lib_blob: Cid,
    /// The server's address and this process's handle on its file (the
    /// server itself is `build`'s other half: its handle is not `Sync`).
    pub addr: SocketAddr,
    pub http_spaces: Arc<SpaceStore>,
    pub owner: Account,
    pub http_key_share: String,
    pub http_blob: Cid,
    pub blob: Vec<u8>,
    pub tiers: Vec<Tier>,
}

/// `at://` URIs and CIDs in a query string.
pub fn q(s: &str) -> String {
    s.replace(':', "%3A").replace('/', "%2F")
}

/// DRISL bytes of an atproto JSON value.
pub fn drisl(v: &serde_json::Value) -> Vec<u8> {
    let value = repo::cbor::json::from_json_value(v).expect("valid atproto JSON");
    repo::cbor::to_vec(&value)
}

fn blob_record(cid: &Cid) -> serde_json::Value {
    serde_json::json!({
        "$type": "app.atbench.photo",
        "image": {"$type": "blob", "ref": {"$link": cid.to_string()}, "mimeType": BLOB_MIME, "size": BLOB_BYTES},
    })
}

/// Seeds `n` records (datagen account `index`) into `space` 200 per batch,
/// then one record referencing `blob`; returns the records and the cursor
/// after half the ops.
fn seed_space(
    spaces: &SpaceStore,
    space: &SpaceRef,
    owner: &str,
    index: u64,
    n: usize,
    blob: &Cid,
) -> (Vec<(&'static str, String, Cid)>, String) {
    let mut records = Vec::with_capacity(n);
    for chunk in datagen::store::records(index, n).chunks(200) {
        let writes = chunk
            .iter()
            .map(|r| {
                let value = drisl(&r.value);
                records.push((r.collection, r.rkey.clone(), Cid::for_dag_cbor(&value)));
                Write::Create {
                    collection: r.collection.to_owned(),
                    rkey: Some(r.rkey.clone()),
                    value,
                }
            })
            .collect();
        spaces
            .apply_writes(space, owner, writes)
            .expect("seed a space");
    }
    let photo = Write::Create {
        collection: "app.atbench.photo".into(),
        rkey: Some("blob".into()),
        value: drisl(&blob_record(blob)),
    };
    spaces
        .apply_writes(space, owner, vec![photo])
        .expect("seed the blob record");
    // The cursor after the first n/2 ops, paged as a syncer would.
    let (mut cursor, mut left) = (None, n / 2);
    while left > 0 {
        let limit = left.min(OPS_PAGE as usize);
        let p = OpsParams {
            limit: Some(limit as u32),
            cursor: cursor.take(),
            exclude_values: true,
            ..Default::default()
        };
        let page = spaces.list_repo_ops(space, owner, &p).expect("ops");
        assert_eq!(page.ops.len(), limit);
        cursor = page.cursor;
        left -= limit;
    }
    (records, cursor.expect("a full first half"))
}

fn seed_public(store: &Store, index: u64, n: usize) -> String {
    let did = datagen::store::did(index);
    let key = Keypair::from_bytes(Algorithm::K256, &datagen::store::signing_secret(index))
        .expect("a datagen key");
    store.create_account(&did, &key).expect("create account");
    for chunk in datagen::store::records(index, n).chunks(200) {
        let writes = chunk
            .iter()
            .map(|r| RecordWrite::create(r.collection, Some(&r.rkey), drisl(&r.value)))
            .collect();
        store.apply_writes(&did, writes, None).expect("seed writes");
    }
    assert_eq!(store.check_repo(&did).expect("check"), n);
    did
}

/// The server's KEM public key, read from its DID document as a syncer does.
fn host_kem(addr: SocketAddr) -> String {
    let doc = json_ok(addr, &Call::get("/.well-known/did.json"), None);
    let kem = doc["verificationMethod"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["id"] == "#atproto_kem"))
        .expect("#atproto_kem in /.well-known/did.json");
    let multikey = kem["publicKeyMultibase"].as_str().expect("multikey");
    match repo::crypto::PublicKey::from_multikey(multikey).expect("a KEM key") {
        repo::crypto::PublicKey::P256(vk) => encapsulate(&vk.into()).expect("encapsulate").0,
        _ => panic!("the KEM key is not P-256"),
    }
}

/// Builds both files and the server under `dir`.
pub fn build(dir: &Path) -> (xrpc::RunningServer, Fixture) {
    let started = Instant::now();
    let lib_path = dir.join("space-lib.sqlite");
    let lib_store = Arc::new(Store::open(&lib_path, store::Config::default()).expect("open"));
    let lib_spaces =
        Arc::new(SpaceStore::open(&lib_path, space::Config::default()).expect("space tables"));
    let owner_index = 3_000;
    let lib_owner = datagen::store::did(owner_index);
    let owner_key = Keypair::from_bytes(
        Algorithm::K256,
        &datagen::store::signing_secret(owner_index),
    )
    .expect("a datagen key");
    lib_store
        .create_account(&lib_owner, &owner_key)
        .expect("create the owner");
    let blob = datagen::random_bytes(0x5bace, BLOB_BYTES);
    let lib_blob = lib_store
        .put_blob(&lib_owner, blob.clone(), BLOB_MIME)
        .expect("put the blob");
    let kem = Arc::new(KemKey::generate().expect("a KEM key"));
    let lib_key_share = encapsulate(&kem.public()).expect("encapsulate").0;

    let server = crate::seed::spawn(dir, "space-http", |_| {});
    let addr = server.addr();
    let owner = crate::seed::accounts(addr, "spaceowner", 1).remove(0);
    let http_spaces = Arc::new(
        SpaceStore::open(
            dir.join("space-http.sqlite"),
            space::Config {
                autocheckpoint: false,
                ..space::Config::default()
            },
        )
        .expect("space tables of the server's file"),
    );
    let (status, body) = once_bytes(
        addr,
        &Call::post("/xrpc/com.atproto.repo.uploadBlob")
            .bearer(&owner.access)
            .content_type(BLOB_MIME),
        bytes::Bytes::from(blob.clone()),
    );
    assert!(status.is_success(), "uploadBlob: {status}");
    let uploaded: serde_json::Value = serde_json::from_slice(&body).expect("uploadBlob JSON");
    let http_blob: Cid = uploaded["blob"]["ref"]["$link"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .expect("uploadBlob: a CID");
    assert_eq!(http_blob, lib_blob, "the same bytes, the same CID");
    let http_key_share = host_kem(addr);

    let tiers = TIERS
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let index = 3_001 + i as u64;
            let skey = format!("seeded-{}", benches::registry::count_tier(n));
            let create = |spaces: &SpaceStore, owner: &str| {
                spaces
                    .create_space(owner, SPACE_TYPE, Some(&skey), Policy::MemberList, "open")
                    .expect("create a space")
            };
            let lib_space = create(&lib_spaces, &lib_owner);
            let http_space = create(&http_spaces, &owner.did);
            let (records, lib_middle) =
                seed_space(&lib_spaces, &lib_space, &lib_owner, index, n, &lib_blob);
            let (_, http_middle) =
                seed_space(&http_spaces, &http_space, &owner.did, index, n, &http_blob);
            let public_did = seed_public(&lib_store, index, n);
            let mut likes: Vec<&str> = records
                .iter()
                .filter(|r| r.0 == LIKE)
                .map(|r| r.1.as_str())
                .collect();
            likes.sort_unstable();
            let like_cursors = benches::inputs::store_list_cursors(&likes);
            let posts = records
                .iter()
                .filter(|r| r.0 == POST)
                .map(|r| r.1.clone())
                .collect();
            Tier {
                n,
                lib_space,
                http_space,
                public_did,
                records,
                like_cursors,
                posts,
                ops: n + 1,
                lib_middle,
                http_middle,
            }
        })
        .collect();
    eprintln!(
        "atbench: space: seeded spaces of {TIERS:?} records (library file and server {addr}) in {:.1?}",
        started.elapsed()
    );
    let fx = Fixture {
        e2: E2::new(Arc::new(StoreSigner(lib_store.clone()))),
        e4: E4::new(kem),
        lib_store,
        lib_spaces,
        lib_owner,
        lib_key_share,
        lib_blob,
        addr,
        http_spaces,
        owner,
        http_key_share,
        http_blob,
        blob,
        tiers,
    };
    (server, fx)
}
