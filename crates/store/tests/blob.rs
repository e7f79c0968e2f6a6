//! Blobs: put, get, ranged get, and the references records hold to them.

mod common;

use common::*;
use repo::Cid;

#[test]
fn blobs_put_get_range_and_references() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let did = &accounts(&store, 1)[0];
    let bytes = datagen::random_bytes(42, 5000);
    let cid = store.put_blob(did, bytes.clone(), "image/jpeg").unwrap();
    assert_eq!(cid, Cid::for_raw(&bytes));
    let b = store.get_blob(did, &cid).unwrap().unwrap();
    assert_eq!((b.mime.as_str(), &b.bytes), ("image/jpeg", &bytes));
    assert_eq!(
        store.get_blob_range(did, &cid, 100, 50).unwrap().unwrap(),
        bytes[100..150]
    );
    assert_eq!(
        store.get_blob_range(did, &cid, 4990, 50).unwrap().unwrap(),
        bytes[4990..]
    );
    assert!(store.get_blob(did, &Cid::for_raw(b"x")).unwrap().is_none());
    // The head: bytes inline only within the bound.
    let h = store.blob_head(did, &cid, 5000).unwrap().unwrap();
    assert_eq!((h.mime.as_str(), h.size), ("image/jpeg", 5000));
    assert_eq!(h.bytes.as_deref(), Some(&bytes[..]));
    assert_eq!(
        store.blob_head(did, &cid, 4999).unwrap().unwrap().bytes,
        None
    );
    assert!(
        store
            .blob_head(did, &Cid::for_raw(b"x"), 9)
            .unwrap()
            .is_none()
    );
    // Incremental reads: a slice, the clamped tail, past the end, missing.
    let mut buf = [0u8; 64];
    assert_eq!(
        store.read_blob_at(did, &cid, 100, &mut buf).unwrap(),
        Some(64)
    );
    assert_eq!(buf[..], bytes[100..164]);
    assert_eq!(
        store.read_blob_at(did, &cid, 4990, &mut buf).unwrap(),
        Some(10)
    );
    assert_eq!(buf[..10], bytes[4990..]);
    assert_eq!(
        store.read_blob_at(did, &cid, 5000, &mut buf).unwrap(),
        Some(0)
    );
    assert_eq!(
        store.read_blob_at(did, &cid, u64::MAX, &mut buf).unwrap(),
        Some(0)
    );
    assert_eq!(
        store
            .read_blob_at(did, &Cid::for_raw(b"x"), 0, &mut buf)
            .unwrap(),
        None
    );
    let post = serde_json::json!({
        "$type": "app.bsky.feed.post", "text": "pic", "createdAt": "2024-06-01T00:00:00.000Z",
        "embed": {"$type": "app.bsky.embed.images", "images": [{"alt": "", "image": {
            "$type": "blob", "ref": {"$link": cid.to_string()}, "mimeType": "image/jpeg", "size": 5000}}]}
    });
    let c = store
        .create_record(
            did,
            "app.bsky.feed.post",
            Some("3kaaaaaaaaaaa"),
            cbor(&post),
            None,
        )
        .unwrap();
    assert_eq!(store.referenced_blobs(did).unwrap(), vec![cid]);
    store
        .delete_record(
            did,
            "app.bsky.feed.post",
            "3kaaaaaaaaaaa",
            c.results[0].cid,
            None,
        )
        .unwrap();
    assert!(store.referenced_blobs(did).unwrap().is_empty());
}

#[test]
fn v7_migration_keeps_blobs_and_their_replacement() {
    // A v6 store (`blobs` a WITHOUT ROWID table keyed by the whole row)
    // holding a large and a small blob: after the v7 migration both read
    // back, the table is a rowid table, and a put of an existing blob
    // replaces its row instead of adding one.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.sqlite");
    let big = datagen::random_bytes(7, 300_000);
    let small = datagen::random_bytes(8, 4096);
    let did = {
        let store = store::Store::open(&path, store::Config::default()).unwrap();
        let did = accounts(&store, 1).remove(0);
        store.put_blob(&did, big.clone(), "image/png").unwrap();
        store.put_blob(&did, small.clone(), "image/jpeg").unwrap();
        did
    };
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE blobs_v6 (did TEXT NOT NULL, cid BLOB NOT NULL, mime TEXT NOT NULL, \
             size INTEGER NOT NULL, bytes BLOB NOT NULL, PRIMARY KEY (did, cid)) WITHOUT ROWID; \
             INSERT INTO blobs_v6 SELECT did, cid, mime, size, bytes FROM blobs; \
             DROP TABLE blobs; ALTER TABLE blobs_v6 RENAME TO blobs; \
             PRAGMA user_version = 6;",
        )
        .unwrap();
    }
    let store = store::Store::open(&path, store::Config::default()).unwrap();
    assert_eq!(store.startup_report().migrated_from, 6);
    for (bytes, mime) in [(&big, "image/png"), (&small, "image/jpeg")] {
        let b = store.get_blob(&did, &Cid::for_raw(bytes)).unwrap().unwrap();
        assert_eq!((b.mime.as_str(), &b.bytes), (mime, bytes));
    }
    store.put_blob(&did, small.clone(), "image/gif").unwrap();
    let b = store
        .get_blob(&did, &Cid::for_raw(&small))
        .unwrap()
        .unwrap();
    assert_eq!(b.mime, "image/gif");
    assert_eq!(store.stats().unwrap().blobs, 2);
    drop(store);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let sql: String = conn
        .query_row(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'blobs'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(!sql.contains("WITHOUT ROWID"), "{sql}");
}

/// The reads the XRPC server needs: a blob's metadata, the blobs records
/// reference but the store lacks (listMissingBlobs), the referenced blobs
/// with `since` and paging (listBlobs), and a page of accounts with their
/// roots (listRepos).
#[test]
fn blob_meta_missing_list_and_repo_pages() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let dids = accounts(&store, 3);
    let did = &dids[0];
    let bytes = datagen::random_bytes(7, 300);
    let have = store.put_blob(did, bytes, "image/png").unwrap();
    assert_eq!(
        store.blob_meta(did, &have).unwrap(),
        Some(("image/png".to_owned(), 300))
    );
    assert_eq!(store.blob_meta(did, &Cid::for_raw(b"none")).unwrap(), None);
    let lacking = Cid::for_raw(b"never stored");
    let blob = |c: &Cid| serde_json::json!({"$type": "blob", "ref": {"$link": c.to_string()}, "mimeType": "image/png", "size": 1});
    let first = store
        .create_record(
            did,
            "app.bsky.feed.post",
            Some("a"),
            cbor(&serde_json::json!({"text": "x", "i": blob(&have)})),
            None,
        )
        .unwrap();
    // A record naming a blob never uploaded is refused, as the reference
    // refuses it, and writes nothing.
    let b = cbor(&serde_json::json!({"text": "y", "i": blob(&lacking)}));
    let before = store.stats().unwrap();
    assert!(matches!(
        store.create_record(did, "app.bsky.feed.post", Some("b"), b.clone(), None),
        Err(store::StoreError::BlobNotFound(c)) if c == lacking
    ));
    assert_eq!(store.stats().unwrap(), before);
    store
        .put_blob(did, b"never stored".to_vec(), "image/png")
        .unwrap();
    store
        .create_record(did, "app.bsky.feed.post", Some("b"), b, None)
        .unwrap();
    assert!(store.missing_blobs(did, None, 10).unwrap().is_empty());
    // Missing blobs come with an imported repository (listMissingBlobs is
    // a migration's question): the account moved to a second store that
    // so far holds one of its two blobs.
    let dir2 = tempfile::tempdir().unwrap();
    let moved = open(dir2.path());
    let mut car = Vec::new();
    store.export_repo(did, None, &mut car).unwrap();
    moved.import_car(&car[..], None).unwrap();
    moved
        .put_blob(did, datagen::random_bytes(7, 300), "image/png")
        .unwrap();
    assert_eq!(
        moved.missing_blobs(did, None, 10).unwrap(),
        vec![(lacking, "app.bsky.feed.post/b".to_owned())]
    );
    assert!(
        moved
            .missing_blobs(did, Some(&lacking), 10)
            .unwrap()
            .is_empty()
    );
    let mut all = store.list_blobs(did, None, None, 10).unwrap();
    let mut want = vec![have, lacking];
    want.sort_by_key(|c| c.to_bytes());
    assert_eq!(all, want);
    // Paging by cursor, and `since` the first commit keeps only the second.
    let page = store.list_blobs(did, None, None, 1).unwrap();
    let rest = store.list_blobs(did, None, Some(&page[0]), 10).unwrap();
    all.retain(|c| *c != page[0]);
    assert_eq!(rest, all);
    assert_eq!(
        store.list_blobs(did, Some(&first.rev), None, 10).unwrap(),
        vec![lacking]
    );
    // listRepos pages in DID order.
    let mut sorted = dids.clone();
    sorted.sort();
    let p1 = store.list_repos(None, 2).unwrap();
    let p2 = store.list_repos(Some(&p1[1].0), 2).unwrap();
    let seen: Vec<&String> = p1.iter().chain(&p2).map(|r| &r.0).collect();
    assert_eq!(seen, sorted.iter().collect::<Vec<_>>());
    let root = store.repo_root(did).unwrap().unwrap();
    let mine = p1.iter().chain(&p2).find(|r| &r.0 == did).unwrap();
    assert_eq!((&mine.1, mine.2.active), (&root, true));
    assert!(store.list_repos(Some("not a did"), 2).is_err());
}
