//! Concurrent writers, with caller-side plans off and on: swapCommit races
//! never lose an update, and commits group across accounts.

mod common;

use std::sync::Arc;

use common::*;
use store::{Config, Store, StoreError};

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
