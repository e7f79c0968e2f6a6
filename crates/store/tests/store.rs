//! The store's write and read paths against the repo crate's verifier.

mod common;

use std::collections::HashMap;
use std::sync::Arc;

use common::*;
use repo::Cid;
use store::{Config, ListOptions, RecordWrite, Store, StoreError};

#[test]
fn writes_verify_and_mst_matches_index() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let dids = accounts(&store, 2);
    let did = &dids[0];
    let p = datagen::store::profile(0);
    store
        .create_record(did, p.collection, Some(&p.rkey), cbor(&p.value), None)
        .unwrap();
    let recs = datagen::store::records(0, 60);
    for r in &recs[..40] {
        store
            .create_record(did, r.collection, Some(&r.rkey), cbor(&r.value), None)
            .unwrap();
    }
    // applyWrites: creates, an update and a delete in one commit.
    let mut writes: Vec<RecordWrite> = recs[40..]
        .iter()
        .map(|r| RecordWrite::create(r.collection, Some(&r.rkey), cbor(&r.value)))
        .collect();
    writes.push(RecordWrite::update(
        recs[0].collection,
        &recs[0].rkey,
        cbor(&recs[1].value.clone()).into_iter().collect(),
    ));
    writes.push(RecordWrite::delete(recs[2].collection, &recs[2].rkey));
    // The update's $type must match its collection.
    let bad_update = store.apply_writes(did, writes.clone(), None);
    if recs[0].collection != recs[1].collection {
        assert!(matches!(bad_update, Err(StoreError::InvalidRecord(_))));
        writes[20] = RecordWrite::update(recs[0].collection, &recs[0].rkey, cbor(&recs[0].value));
        let mut v = recs[0].value.clone();
        v["createdAt"] = serde_json::json!("2025-01-01T00:00:00.000Z");
        writes[20] = RecordWrite::update(recs[0].collection, &recs[0].rkey, cbor(&v));
        store.apply_writes(did, writes, None).unwrap();
    } else {
        bad_update.unwrap();
    }
    // Deletes and a put on the other account.
    store
        .delete_record(did, recs[3].collection, &recs[3].rkey, None, None)
        .unwrap();
    store
        .put_record(
            &dids[1],
            "app.bsky.actor.profile",
            "self",
            cbor(&datagen::store::profile(1).value),
            Some(None),
            None,
        )
        .unwrap();
    assert_eq!(store.check_repo(did).unwrap(), 1 + 60 - 2);
    assert_eq!(store.check_repo(&dids[1]).unwrap(), 1);
    let (events, commits) = verify_all_events(&store);
    // Two accounts: #identity, #account and #sync each.
    assert_eq!(events, 6 + 1 + 40 + 1 + 1 + 1);
    assert_eq!(commits, events - 6);
}

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
fn bad_input_is_typed_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(
        dir.path().join("s.sqlite"),
        Config {
            max_record_bytes: 2000,
            max_blob_bytes: 1000,
            ..Config::default()
        },
    )
    .unwrap();
    let did = &accounts(&store, 1)[0];
    let before = store.stats().unwrap();
    let ok = cbor(&datagen::store::records(0, 1)[0].value);
    let coll = datagen::store::records(0, 1)[0].collection;
    let e = |r: Result<store::CommitInfo, StoreError>| r.unwrap_err();
    assert!(matches!(
        e(store.create_record("did:nope", coll, None, ok.clone(), None)),
        StoreError::Syntax(_)
    ));
    assert!(matches!(
        e(store.create_record(did, "notansid", None, ok.clone(), None)),
        StoreError::Syntax(_)
    ));
    assert!(matches!(
        e(store.create_record(did, coll, Some("bad key!"), ok.clone(), None)),
        StoreError::Syntax(_)
    ));
    assert!(matches!(
        e(store.create_record(did, coll, None, vec![0x01], None)),
        StoreError::InvalidRecord(_)
    ));
    assert!(matches!(
        e(store.create_record(did, coll, None, vec![0xa1, 0x61], None)),
        StoreError::RecordDecode(_)
    ));
    // Float: not DAG-CBOR for atproto.
    assert!(matches!(
        e(store.create_record(
            did,
            coll,
            None,
            vec![0xa1, 0x61, 0x61, 0xf9, 0x3c, 0x00],
            None
        )),
        StoreError::RecordDecode(_)
    ));
    let big = cbor(&serde_json::json!({"text": "x".repeat(3000)}));
    assert!(matches!(
        e(store.create_record(did, coll, None, big, None)),
        StoreError::RecordTooLarge { .. }
    ));
    let other = datagen::store::did(99);
    assert!(matches!(
        e(store.create_record(&other, coll, None, ok.clone(), None)),
        StoreError::UnknownAccount(_)
    ));
    assert!(matches!(
        e(store.delete_record(did, coll, "3aaaaaaaaaaaa", None, None)),
        StoreError::RecordNotFound(_)
    ));
    assert!(matches!(
        store.put_blob(did, vec![0; 2000], "image/png"),
        Err(StoreError::BlobTooLarge { .. })
    ));
    assert!(matches!(
        store.put_blob(did, vec![0; 10], "png"),
        Err(StoreError::InvalidMime(_))
    ));
    assert!(matches!(
        store.put_blob(&other, vec![0; 10], "image/png"),
        Err(StoreError::UnknownAccount(_))
    ));
    assert!(matches!(
        store.create_account(did, &keypair(0)),
        Err(StoreError::AccountExists(_))
    ));
    assert_eq!(store.stats().unwrap(), before);
    // swapCommit mismatch and a create over an existing record.
    let c = store
        .create_record(did, coll, Some("3aaaaaaaaaaaa"), ok.clone(), None)
        .unwrap();
    let stale = Cid::for_raw(b"stale");
    assert!(matches!(
        e(store.create_record(did, coll, None, ok.clone(), Some(stale))),
        StoreError::InvalidSwap { .. }
    ));
    assert!(matches!(
        e(store.create_record(did, coll, Some("3aaaaaaaaaaaa"), ok.clone(), None)),
        StoreError::RecordExists(_)
    ));
    assert!(matches!(
        e(store.put_record(did, coll, "3aaaaaaaaaaaa", ok.clone(), Some(None), None)),
        StoreError::InvalidSwap { .. }
    ));
    store
        .create_record(did, coll, None, ok, Some(c.commit))
        .unwrap();
    assert_eq!(store.check_repo(did).unwrap(), 2);
    verify_all_events(&store);
}

/// The store with caller-side plans off (the default) and on.
fn both_plan_modes(dir: &std::path::Path) -> [Store; 2] {
    [false, true].map(|caller_plans| {
        let config = Config {
            caller_plans,
            ..Config::default()
        };
        Store::open(dir.join(format!("plans-{caller_plans}.sqlite")), config).unwrap()
    })
}

#[test]
fn concurrent_swap_commit_never_loses_an_update() {
    let dir = tempfile::tempdir().unwrap();
    for store in both_plan_modes(dir.path()) {
        swap_commit_race(Arc::new(store));
    }
}

fn swap_commit_race(store: Arc<Store>) {
    let did = accounts(&store, 1).remove(0);
    let (threads, per) = (4, 8);
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let store = store.clone();
            let did = did.clone();
            std::thread::spawn(move || {
                let mut retries = 0;
                for i in 0..per {
                    let rec = datagen::store::post(t, i);
                    loop {
                        let root = store.repo_root(&did).unwrap().unwrap();
                        match store.create_record(
                            &did,
                            rec.collection,
                            None,
                            cbor(&rec.value),
                            Some(root.commit),
                        ) {
                            Ok(_) => break,
                            Err(StoreError::InvalidSwap { .. }) => retries += 1,
                            Err(e) => panic!("{e}"),
                        }
                    }
                }
                retries
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(store.check_repo(&did).unwrap(), (threads * per) as usize);
    let (events, commits) = verify_all_events(&store);
    assert_eq!(
        (events, commits),
        (3 + (threads * per) as usize, (threads * per) as usize)
    );
}

#[test]
fn group_commit_across_accounts() {
    let dir = tempfile::tempdir().unwrap();
    for store in both_plan_modes(dir.path()) {
        group_commit(&store);
    }
}

fn group_commit(store: &Store) {
    let dids = accounts(store, 8);
    std::thread::scope(|s| {
        for (i, did) in dids.iter().enumerate() {
            s.spawn(move || {
                for r in datagen::store::records(i as u64, 6) {
                    store
                        .create_record(did, r.collection, Some(&r.rkey), cbor(&r.value), None)
                        .unwrap();
                }
            });
        }
    });
    for did in &dids {
        assert_eq!(store.check_repo(did).unwrap(), 6);
    }
    let (events, commits) = verify_all_events(store);
    assert_eq!((events, commits), (3 * 8 + 48, 48));
}

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
fn export_reimport_same_root_and_since() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let did = &accounts(&store, 1)[0];
    let recs = datagen::store::records(0, 30);
    let mut mid = None;
    for (i, r) in recs.iter().enumerate() {
        let c = store
            .create_record(did, r.collection, Some(&r.rkey), cbor(&r.value), None)
            .unwrap();
        if i == 19 {
            mid = Some(c.rev);
        }
    }
    let mut car = Vec::new();
    let info = store.export_repo(did, None, &mut car).unwrap();
    let root = store.repo_root(did).unwrap().unwrap();
    assert_eq!(info.root, root.commit);
    assert_eq!(info.bytes as usize, car.len());
    let mut since = Vec::new();
    let part = store.export_repo(did, mid.as_deref(), &mut since).unwrap();
    assert!(
        part.blocks < info.blocks && part.blocks >= 10,
        "{part:?} vs {info:?}"
    );

    let dir2 = tempfile::tempdir().unwrap();
    let other = open(dir2.path());
    let key = store.signing_key(did).unwrap().unwrap();
    let imp = other.import_car(&car[..], Some(&key)).unwrap();
    assert_eq!((imp.commit, imp.data), (root.commit, root.data));
    assert_eq!(other.check_repo(did).unwrap(), 30);
    let mut again = Vec::new();
    other.export_repo(did, None, &mut again).unwrap();
    let imp2 = store.import_car(&again[..], None).unwrap();
    assert_eq!(imp2.commit, root.commit);
    // A wrong key fails the import, and nothing changes.
    assert!(matches!(
        other.import_car(&car[..], Some(&keypair(5).public_key())),
        Err(StoreError::Commit(_))
    ));
    // Imported accounts are read-only here.
    assert!(matches!(
        other.create_record(did, recs[0].collection, None, cbor(&recs[0].value), None),
        Err(StoreError::ReadOnlyAccount(_))
    ));
    // A corrupted block is rejected.
    let mut bad = car.clone();
    let n = bad.len();
    bad[n - 3] ^= 0xff;
    assert!(other.import_car(&bad[..], None).is_err());
}

#[test]
fn reopen_recovers_sequence_and_backfills() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sqlite");
    let (did, _) = seeded_store(&path, 5);
    // Simulate blocks written before revisions were tracked.
    let nulled = {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute("UPDATE repo_blocks SET repo_rev = NULL", [])
            .unwrap()
    };
    // The MST nodes (the commit block is in `repo_root` since v5).
    assert!(nulled > 0);
    let store = Store::open(&path, Config::default()).unwrap();
    // create_account: #identity, #account, #sync; then 5 commits.
    assert_eq!(store.startup_report().next_seq, 9);
    assert_eq!(store.startup_report().backfilled, nulled);
    let r = datagen::store::post(0, 1);
    let c = store
        .create_record(&did, r.collection, None, cbor(&r.value), None)
        .unwrap();
    assert_eq!(c.seq, 9);
    assert_eq!(store.check_repo(&did).unwrap(), 6);
    verify_all_events(&store);
}

#[test]
fn identity_and_account_events_are_sequenced() {
    use repo::firehose::Frame;
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let did = accounts(&store, 1).remove(0);
    let kinds = |from: i64| -> Vec<String> {
        store
            .events_after(from, 100)
            .unwrap()
            .iter()
            .map(|e| match Frame::decode(&e.frame).unwrap() {
                Frame::Identity(i) => format!("identity {} {:?}", i.did, i.handle),
                Frame::Account(a) => format!("account {} {} {:?}", a.did, a.active, a.status),
                Frame::Sync(s) => format!("sync {}", s.did),
                Frame::Commit(c) => format!("commit {}", c.repo),
                other => format!("{other:?}"),
            })
            .collect()
    };
    assert_eq!(
        kinds(0),
        [
            format!("identity {did} None"),
            format!("account {did} true None"),
            format!("sync {did}"),
        ]
    );
    let s1 = store.update_identity(&did, Some("alice.test")).unwrap();
    let s2 = store
        .set_account_status(&did, false, Some("deactivated"))
        .unwrap();
    assert_eq!((s1, s2), (4, 5));
    assert_eq!(
        kinds(3),
        [
            format!("identity {did} Some(\"alice.test\")"),
            format!("account {did} false Some(\"deactivated\")"),
        ]
    );
    let st = store.account_state(&did).unwrap().unwrap();
    assert_eq!(
        (st.handle.as_deref(), st.active, st.status.as_deref()),
        (Some("alice.test"), false, Some("deactivated"))
    );
    // Bad input is typed and writes nothing.
    assert!(store.update_identity(&did, Some("not a handle")).is_err());
    assert!(
        store
            .set_account_status(&did, true, Some("deleted"))
            .is_err()
    );
    assert!(
        store
            .set_account_status(&did, false, Some("napping"))
            .is_err()
    );
    assert!(matches!(
        store.update_identity("did:plc:unknownaccount", None),
        Err(store::StoreError::UnknownAccount(_))
    ));
    assert_eq!(store.stats().unwrap().last_seq, 5);
    store.set_account_status(&did, true, None).unwrap();
    assert!(store.account_state(&did).unwrap().unwrap().active);
    verify_all_events(&store);
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

/// How many times each block appears in `did`'s exported CAR.
fn exported(store: &Store, did: &str) -> HashMap<Cid, usize> {
    let mut car = Vec::new();
    let info = store.export_repo(did, None, &mut car).unwrap();
    let mut seen = HashMap::new();
    for b in repo::car::CarReader::new(&car[..]).unwrap().verify(true) {
        *seen.entry(b.unwrap().0).or_insert(0) += 1;
    }
    assert_eq!(seen.values().sum::<usize>() as u64, info.blocks);
    seen
}

#[test]
fn records_sharing_a_block_export_it_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let did = accounts(&store, 1).remove(0);
    let coll = "app.bsky.feed.post";
    let body = cbor(&datagen::store::post(0, 7).value);
    let shared = Cid::for_dag_cbor(&body);
    // Written out of key order, so the first row holding the block is not
    // the first one written.
    for rkey in ["b", "c", "a"] {
        store
            .create_record(&did, coll, Some(rkey), body.clone(), None)
            .unwrap();
    }
    let other = cbor(&datagen::store::post(0, 8).value);
    let check = |what: &str, want: usize| {
        let seen = exported(&store, &did);
        assert_eq!(seen.get(&shared).copied().unwrap_or(0), want, "{what}");
        assert!(seen.values().all(|&n| n == 1), "{what}: a block twice");
        let stats = store.stats().unwrap();
        assert_eq!(stats.blocks as usize, seen.len(), "{what}: stats");
        assert!(store.check_repo(&did).is_ok(), "{what}");
    };
    check("three rows", 1);
    {
        // An import of the three rows (MST order) flags them the same way.
        let mut car = Vec::new();
        store.export_repo(&did, None, &mut car).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let copy = open(dir.path());
        copy.import_car(&car[..], None).unwrap();
        let seen = exported(&copy, &did);
        assert_eq!(seen.get(&shared).copied(), Some(1), "imported");
        assert!(seen.values().all(|&n| n == 1), "imported: a block twice");
    }
    store.delete_record(&did, coll, "a", None, None).unwrap();
    check("first row deleted", 1);
    store
        .put_record(&did, coll, "b", other.clone(), None, None)
        .unwrap();
    check("second row rewritten", 1);
    store.delete_record(&did, coll, "c", None, None).unwrap();
    check("last row deleted", 0);
    let got = store.get_record(&did, coll, "b").unwrap().unwrap();
    assert_eq!(got.cid, Cid::for_dag_cbor(&other));
    // The re-imported export has the same root and the same records.
    let mut car = Vec::new();
    store.export_repo(&did, None, &mut car).unwrap();
    let dir2 = tempfile::tempdir().unwrap();
    let copy = open(dir2.path());
    let info = copy.import_car(&car[..], None).unwrap();
    assert_eq!(
        Some(info.commit),
        store.repo_root(&did).unwrap().map(|r| r.commit)
    );
    verify_all_events(&store);
}
