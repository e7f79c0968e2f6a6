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
