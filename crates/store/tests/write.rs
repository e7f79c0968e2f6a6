//! The write path: creates, applyWrites, puts and deletes verify against the
//! repo crate and keep MST == index; bad input is typed and writes nothing.

mod common;

use common::*;
use repo::Cid;
use store::{Config, RecordWrite, Store, StoreError};

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

#[test]
fn node_rows_stay_where_their_parents_place_them() {
    // Schema v6 keys MST node rows by position (`node_pos.rs`). Commits
    // that grow, shrink and reshape the tree, across a reopen (positions
    // then known only from what is read), leave every node where a fresh
    // walk looks for it (check_repo fails on a misplaced row), and every
    // commit found its rows where its lane said (a commit fails on a row
    // that is not: there is no scan to fall back on).
    let dir = tempfile::tempdir().unwrap();
    let recs = datagen::store::records(7, 900);
    let did = {
        let store = open(dir.path());
        let did = accounts(&store, 1).remove(0);
        for chunk in recs[..600].chunks(150) {
            let writes = chunk
                .iter()
                .map(|r| RecordWrite::create(r.collection, Some(&r.rkey), cbor(&r.value)))
                .collect();
            store.apply_writes(&did, writes, None).unwrap();
        }
        for r in recs[..600].iter().step_by(3) {
            store
                .delete_record(&did, r.collection, &r.rkey, None, None)
                .unwrap();
        }
        assert_eq!(store.check_repo(&did).unwrap(), 400);
        did
    };
    let store = open(dir.path());
    for (i, r) in recs[600..].iter().enumerate() {
        store
            .create_record(&did, r.collection, Some(&r.rkey), cbor(&r.value), None)
            .unwrap();
        if i % 2 == 0 {
            let old = &recs[1 + 3 * i];
            store
                .delete_record(&did, old.collection, &old.rkey, None, None)
                .unwrap();
        }
    }
    assert_eq!(store.check_repo(&did).unwrap(), 400 + 300 - 150);
    verify_all_events(&store);
}
