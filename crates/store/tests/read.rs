//! The read path: getRecord, listRecords with cursors both ways, and the
//! current-CID cache following every write (also under concurrent readers).

mod common;

use std::sync::Arc;

use common::*;
use repo::Cid;
use store::{ListOptions, RecordWrite, StoreError};

#[test]
fn reads_get_list_and_cursor() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let did = &accounts(&store, 1)[0];
    let recs = datagen::store::records(0, 120);
    let writes: Vec<_> = recs
        .iter()
        .map(|r| RecordWrite::create(r.collection, Some(&r.rkey), cbor(&r.value)))
        .collect();
    store
        .apply_writes(did, writes[..100].to_vec(), None)
        .unwrap();
    store
        .apply_writes(did, writes[100..].to_vec(), None)
        .unwrap();
    assert!(matches!(
        store.apply_writes(did, vec![writes[0].clone(); 201], None),
        Err(StoreError::InvalidBatch(_))
    ));
    let r = &recs[7];
    let cid = store
        .current_cid(did, r.collection, &r.rkey)
        .unwrap()
        .unwrap();
    assert_eq!(cid, Cid::for_dag_cbor(&cbor(&r.value)));
    let view = store
        .get_record(did, r.collection, &r.rkey)
        .unwrap()
        .unwrap();
    let json: serde_json::Value = serde_json::from_str(&view.json).unwrap();
    assert_eq!(json["value"], r.value);
    assert_eq!(json["cid"], cid.to_string());
    assert_eq!(
        json["uri"],
        format!("at://{did}/{}/{}", r.collection, r.rkey)
    );
    assert!(
        store
            .get_record(did, r.collection, "nope")
            .unwrap()
            .is_none()
    );

    // Page through one collection both ways.
    let coll = "app.bsky.feed.like";
    let mut expected: Vec<&str> = recs
        .iter()
        .filter(|r| r.collection == coll)
        .map(|r| r.rkey.as_str())
        .collect();
    expected.sort();
    for reverse in [false, true] {
        let mut got = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let opts = ListOptions {
                limit: 7,
                cursor: cursor.as_deref(),
                reverse,
            };
            let page = store.list_records(did, coll, &opts).unwrap();
            let ids = store.list_record_cids(did, coll, &opts).unwrap();
            assert_eq!(page.len(), ids.len());
            for (v, (k, c)) in page.iter().zip(&ids) {
                assert_eq!((&v.rkey, &v.cid), (k, c));
            }
            got.extend(ids.iter().map(|x| x.0.clone()));
            match ids.last() {
                Some(l) if ids.len() == 7 => cursor = Some(l.0.clone()),
                _ => break,
            }
        }
        let mut want: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
        if !reverse {
            want.reverse();
        }
        assert_eq!(got, want);
    }
    assert_eq!(store.collections(did).unwrap().len(), 4);
}

#[test]
fn current_cid_cache_follows_every_write() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(open(dir.path()));
    let did = accounts(&store, 1).remove(0);
    const COLL: &str = "app.bsky.feed.post";
    // Cached absence, then read-your-writes through create, put, delete.
    assert_eq!(
        store.current_cid(&did, COLL, "3kaaaaaaaaaaa").unwrap(),
        None
    );
    assert_eq!(
        store.current_cid(&did, COLL, "3kaaaaaaaaaaa").unwrap(),
        None
    );
    let body = |n: u64| cbor(&datagen::store::post(0, n).value);
    let c = store
        .create_record(&did, COLL, Some("3kaaaaaaaaaaa"), body(1), None)
        .unwrap();
    let first = c.results[0].cid;
    assert_eq!(
        store.current_cid(&did, COLL, "3kaaaaaaaaaaa").unwrap(),
        first
    );
    let c = store
        .put_record(&did, COLL, "3kaaaaaaaaaaa", body(2), None, None)
        .unwrap();
    assert_ne!(c.results[0].cid, first);
    assert_eq!(
        store.current_cid(&did, COLL, "3kaaaaaaaaaaa").unwrap(),
        c.results[0].cid
    );
    store
        .delete_record(&did, COLL, "3kaaaaaaaaaaa", None, None)
        .unwrap();
    assert_eq!(
        store.current_cid(&did, COLL, "3kaaaaaaaaaaa").unwrap(),
        None
    );

    // Readers hammer the key while a writer rewrites it; after each
    // acknowledged write the value read is that write's.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let (store, did, stop) = (store.clone(), did.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    store.current_cid(&did, COLL, "3kbbbbbbbbbbb").unwrap();
                }
            })
        })
        .collect();
    for n in 0..60 {
        let c = store
            .put_record(&did, COLL, "3kbbbbbbbbbbb", body(100 + n), None, None)
            .unwrap();
        assert_eq!(
            store.current_cid(&did, COLL, "3kbbbbbbbbbbb").unwrap(),
            c.results[0].cid,
            "write {n}"
        );
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for r in readers {
        r.join().unwrap();
    }
    // Import replaces the repository: the cache forgets the account.
    let mut car = Vec::new();
    store.export_repo(&did, None, &mut car).unwrap();
    store
        .delete_record(&did, COLL, "3kbbbbbbbbbbb", None, None)
        .unwrap();
    assert_eq!(
        store.current_cid(&did, COLL, "3kbbbbbbbbbbb").unwrap(),
        None
    );
    store.import_car(&car[..], None).unwrap();
    assert!(
        store
            .current_cid(&did, COLL, "3kbbbbbbbbbbb")
            .unwrap()
            .is_some()
    );
}
