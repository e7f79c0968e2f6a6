//! A blob's lifetime, as the reference PDS keeps it: freed by the commit
//! that drops its last reference, swept after the grace when never named;
//! the event log pruned past its retention; and the V8 migration adopting
//! an older store's blobs.

mod common;

use std::time::{Duration, SystemTime};

use common::*;
use repo::Cid;
use store::{Store, Sweep, WriteAction};

const POST: &str = "app.bsky.feed.post";

fn naming(blobs: &[Cid]) -> Vec<u8> {
    let images: Vec<_> = blobs
        .iter()
        .map(|c| serde_json::json!({"image": {"$type": "blob", "ref": {"$link": c.to_string()}, "mimeType": "image/png", "size": 1}}))
        .collect();
    cbor(&serde_json::json!({"$type": POST, "text": "x", "images": images}))
}

fn held(store: &Store, did: &str, cid: &Cid) -> bool {
    store.get_blob(did, cid).unwrap().is_some()
}

fn rules(grace_secs: u64) -> Sweep {
    Sweep {
        orphan_grace: Duration::from_secs(grace_secs),
        event_retention: None,
    }
}

#[test]
fn an_update_dropping_a_reference_frees_the_blob() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let did = &accounts(&store, 1)[0];
    let a = store.put_blob(did, b"a".to_vec(), "image/png").unwrap();
    let b = store.put_blob(did, b"b".to_vec(), "image/png").unwrap();
    store
        .create_record(did, POST, Some("r"), naming(&[a, b]), None)
        .unwrap();
    // The update keeps b and drops a.
    store
        .put_record(did, POST, "r", naming(&[b]), None, None)
        .unwrap();
    assert!(!held(&store, did, &a));
    assert!(held(&store, did, &b));
    assert_eq!(store.referenced_blobs(did).unwrap(), vec![b]);
    // A record naming the freed blob is refused.
    assert!(matches!(
        store.create_record(did, POST, Some("s"), naming(&[a]), None),
        Err(store::StoreError::BlobNotFound(c)) if c == a
    ));
}

#[test]
fn a_blob_two_records_name_survives_one_delete() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let did = &accounts(&store, 1)[0];
    let a = store
        .put_blob(did, b"shared".to_vec(), "image/png")
        .unwrap();
    for rkey in ["one", "two"] {
        store
            .create_record(did, POST, Some(rkey), naming(&[a]), None)
            .unwrap();
    }
    store.delete_record(did, POST, "one", None, None).unwrap();
    assert!(held(&store, did, &a));
    // One commit deleting the last record naming it and creating another
    // that names it keeps it too (the reference's `cidsToKeep`).
    let writes = vec![
        store::RecordWrite::delete(POST, "two"),
        store::RecordWrite::create(POST, Some("three"), naming(&[a])),
    ];
    assert_eq!(writes[0].action, WriteAction::Delete);
    store.apply_writes(did, writes, None).unwrap();
    assert!(held(&store, did, &a));
    store.delete_record(did, POST, "three", None, None).unwrap();
    assert!(!held(&store, did, &a));
    // Other accounts' blobs of the same bytes are their own.
    assert_eq!(store.stats().unwrap().blobs, 0);
}

#[test]
fn an_upload_never_named_is_swept_after_the_grace() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let did = &accounts(&store, 1)[0];
    let orphan = store
        .put_blob(did, b"orphan".to_vec(), "image/png")
        .unwrap();
    let named = store.put_blob(did, b"named".to_vec(), "image/png").unwrap();
    store
        .create_record(did, POST, Some("r"), naming(&[named]), None)
        .unwrap();
    let now = SystemTime::now();
    let grace = 3600;
    assert_eq!(store.sweep(now, &rules(grace)).unwrap().blobs, 0);
    assert!(held(&store, did, &orphan));
    let later = now + Duration::from_secs(grace + 2);
    let swept = store.sweep(later, &rules(grace)).unwrap();
    assert_eq!((swept.blobs, swept.blob_bytes), (1, 6));
    assert!(!held(&store, did, &orphan));
    assert!(store.blob_meta(did, &orphan).unwrap().is_none());
    assert!(held(&store, did, &named));
    // A zero grace sweeps an upload at once.
    let again = store.put_blob(did, b"again".to_vec(), "image/png").unwrap();
    assert_eq!(
        store.sweep(SystemTime::now(), &rules(grace)).unwrap().blobs,
        0
    );
    assert!(held(&store, did, &again));
    assert_eq!(store.sweep(SystemTime::now(), &rules(0)).unwrap().blobs, 1);
    assert!(!held(&store, did, &again));
}

#[test]
fn a_delete_everything_workload_leaves_no_blob_and_frees_the_pages() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let did = &accounts(&store, 1)[0];
    let n = 16;
    let size = 64 << 10;
    let mut cids = Vec::new();
    for i in 0..n {
        cids.push(
            store
                .put_blob(
                    did,
                    datagen::random_bytes(i, size),
                    "application/octet-stream",
                )
                .unwrap(),
        );
    }
    // Half named by records (two records each), half never named.
    for (i, c) in cids.iter().take(n as usize / 2).enumerate() {
        for side in ["a", "b"] {
            store
                .create_record(did, POST, Some(&format!("{side}{i}")), naming(&[*c]), None)
                .unwrap();
        }
    }
    let full = store.stats().unwrap();
    assert_eq!((full.blobs, full.blob_bytes), (n, n * size as u64));
    for i in 0..n / 2 {
        for side in ["a", "b"] {
            store
                .delete_record(did, POST, &format!("{side}{i}"), None, None)
                .unwrap();
        }
    }
    let after_deletes = store.stats().unwrap();
    assert_eq!(after_deletes.records, 0);
    assert_eq!(
        after_deletes.blobs,
        n / 2,
        "the named half went with its records"
    );
    let swept = store.sweep(SystemTime::now(), &rules(0)).unwrap();
    assert_eq!(
        (swept.blobs, swept.blob_bytes),
        (n / 2, n / 2 * size as u64)
    );
    let empty = store.stats().unwrap();
    assert_eq!((empty.blobs, empty.blob_bytes), (0, 0));
    // The blobs' pages are free for reuse ...
    let path = store.path().to_path_buf();
    let page_bytes = |conn: &rusqlite::Connection, pragma: &str| -> u64 {
        let pages: i64 = conn
            .query_row(&format!("PRAGMA {pragma}"), [], |r| r.get(0))
            .unwrap();
        let size: i64 = conn
            .query_row("PRAGMA page_size", [], |r| r.get(0))
            .unwrap();
        (pages * size) as u64
    };
    {
        let reader = rusqlite::Connection::open_with_flags(
            &path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .unwrap();
        let free = page_bytes(&reader, "freelist_count");
        assert!(free >= n * size as u64 * 9 / 10, "free {free}");
    }
    drop(store);
    // ... and an offline VACUUM gives them back to the disk.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("VACUUM; PRAGMA wal_checkpoint(TRUNCATE);")
        .unwrap();
    let file = std::fs::metadata(&path).unwrap().len();
    assert!(file < 256 << 10, "file {file} after VACUUM");
    assert_eq!(page_bytes(&conn, "freelist_count"), 0);
}

#[test]
fn events_past_the_retention_are_pruned_and_the_horizon_moves() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let did = &accounts(&store, 1)[0];
    for i in 0..20 {
        store
            .create_record(did, POST, Some(&format!("r{i}")), naming(&[]), None)
            .unwrap();
    }
    let before = store.stats().unwrap();
    assert_eq!(store.first_seq().unwrap(), Some(1));
    let keep = |secs| Sweep {
        orphan_grace: Duration::from_secs(3600),
        event_retention: Some(Duration::from_secs(secs)),
    };
    let now = SystemTime::now();
    assert_eq!(store.sweep(now, &keep(3600)).unwrap().events, 0);
    let swept = store
        .sweep(now + Duration::from_secs(10), &keep(5))
        .unwrap();
    // Everything older than the retention went, but the newest event stays
    // so the sequence goes on.
    assert_eq!(swept.events, before.events - 1);
    assert!(!swept.more);
    assert_eq!(store.first_seq().unwrap(), Some(before.last_seq));
    let next = store
        .create_record(did, POST, Some("after"), naming(&[]), None)
        .unwrap();
    assert_eq!(next.seq, before.last_seq + 1);
    assert_eq!(store.events_after(0, 100).unwrap().len(), 2);
    drop(store);
    let store = open(dir.path());
    assert_eq!(store.first_seq().unwrap(), Some(before.last_seq));
    assert_eq!(store.startup_report().next_seq, before.last_seq + 2);
}

/// A store written at V7 (no upload times; here with a reference row lost,
/// which the migration re-derives from the record) opens at V8: the named
/// blob is kept, and the one no record names gets its grace from the
/// migration before it is swept.
#[test]
fn the_v8_migration_adopts_an_older_stores_blobs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.sqlite");
    let (did, named, orphan) = {
        let store = open(dir.path());
        let did = accounts(&store, 1).remove(0);
        let named = store
            .put_blob(&did, b"named".to_vec(), "image/png")
            .unwrap();
        let orphan = store
            .put_blob(&did, b"orphan".to_vec(), "image/png")
            .unwrap();
        store
            .create_record(&did, POST, Some("r"), naming(&[named]), None)
            .unwrap();
        (did, named, orphan)
    };
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "DROP INDEX blobs_age; ALTER TABLE blobs DROP COLUMN created_at; \
             DELETE FROM record_blobs; PRAGMA user_version = 7;",
        )
        .unwrap();
    }
    let opened = SystemTime::now();
    let store = open(dir.path());
    assert_eq!(store.startup_report().migrated_from, 7);
    assert_eq!(store.referenced_blobs(&did).unwrap(), vec![named]);
    let grace = 600;
    let early = opened + Duration::from_secs(grace - 5);
    assert_eq!(store.sweep(early, &rules(grace)).unwrap().blobs, 0);
    assert!(held(&store, &did, &orphan));
    let late = opened + Duration::from_secs(grace + 5);
    assert_eq!(store.sweep(late, &rules(grace)).unwrap().blobs, 1);
    assert!(!held(&store, &did, &orphan));
    assert!(held(&store, &did, &named));
    // The adopted reference frees the blob like any other.
    store.delete_record(&did, POST, "r", None, None).unwrap();
    assert!(!held(&store, &did, &named));
}

/// A blob a permissioned-data record names (`crates/space`'s
/// `space_blob_ref`, in the same file) is neither freed with the last
/// repository record naming it nor swept.
#[test]
fn a_blob_a_space_record_names_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let did = &accounts(&store, 1)[0];
    let both = store.put_blob(did, b"both".to_vec(), "image/png").unwrap();
    let space_only = store.put_blob(did, b"space".to_vec(), "image/png").unwrap();
    store
        .create_record(did, POST, Some("r"), naming(&[both]), None)
        .unwrap();
    {
        // The space crate's table, as its schema creates it.
        let conn = rusqlite::Connection::open(store.path()).unwrap();
        conn.execute_batch(
            "CREATE TABLE space_blob_ref (space_id INTEGER NOT NULL, blob BLOB NOT NULL, \
             repo INTEGER NOT NULL, path TEXT NOT NULL, \
             PRIMARY KEY (space_id, blob, repo, path)) WITHOUT ROWID;",
        )
        .unwrap();
        for c in [both, space_only] {
            conn.execute(
                "INSERT INTO space_blob_ref VALUES (1, ?1, 1, 'app.example.thing/x')",
                [&c.to_bytes()[..]],
            )
            .unwrap();
        }
    }
    store.delete_record(did, POST, "r", None, None).unwrap();
    assert_eq!(store.sweep(SystemTime::now(), &rules(0)).unwrap().blobs, 0);
    assert!(held(&store, did, &both));
    assert!(held(&store, did, &space_only));
}
