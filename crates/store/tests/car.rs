//! CAR export and import: re-import gives the same root, export since a
//! rev, wrong keys and corrupt blocks rejected, shared blocks exported once.

mod common;

use std::collections::HashMap;

use common::*;
use repo::Cid;
use store::{Store, StoreError};

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
