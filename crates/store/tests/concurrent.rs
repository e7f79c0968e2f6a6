//! Concurrent writers: swapCommit races never lose an update, commits
//! group across accounts, and many callers, on their own accounts or
//! racing on one, leave every repository sound.

mod common;

use std::sync::Arc;

use common::*;
use store::{Store, StoreError};

#[test]
fn concurrent_swap_commit_never_loses_an_update() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(open(dir.path()));
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
    let store = open(dir.path());
    group_commit(&store);
}

#[test]
fn concurrent_commits_stay_sound() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let dids = accounts(&store, 10);
    std::thread::scope(|s| {
        for (i, did) in dids.iter().enumerate() {
            let store = &store;
            s.spawn(move || {
                for r in datagen::store::records(100 + i as u64, 40) {
                    store
                        .create_record(did, r.collection, Some(&r.rkey), cbor(&r.value), None)
                        .unwrap();
                }
            });
        }
    });
    for did in &dids {
        assert_eq!(store.check_repo(did).unwrap(), 40);
    }
    let (events, commits) = verify_all_events(&store);
    assert_eq!((events, commits), (3 * 10 + 400, 400));

    // Callers racing on one account (no swapCommit): they take turns on
    // the account's lane, each planning on the last one's commit, and
    // every write lands.
    let did = datagen::store::did(50);
    store.create_account(&did, &keypair(50)).unwrap();
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let (store, did) = (&store, &did);
            s.spawn(move || {
                for i in 0..20 {
                    let rec = datagen::store::post(200 + t, i);
                    store
                        .create_record(did, rec.collection, None, cbor(&rec.value), None)
                        .unwrap();
                }
            });
        }
    });
    assert_eq!(store.check_repo(&did).unwrap(), 80);
    let (events, commits) = verify_all_events(&store);
    assert_eq!((events, commits), (3 * 11 + 480, 480));
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
