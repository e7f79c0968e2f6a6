//! Shared test helpers.
#![allow(dead_code)]

use std::collections::HashMap;

use repo::crypto::{Algorithm, Keypair, PublicKey};
use repo::firehose::{Frame, verify_commit};
use store::{Config, Store};

pub fn keypair(i: u64) -> Keypair {
    Keypair::from_bytes(Algorithm::K256, &datagen::store::signing_secret(i)).unwrap()
}

pub fn cbor(v: &serde_json::Value) -> Vec<u8> {
    repo::cbor::to_vec(&repo::cbor::json::from_json_value(v).unwrap())
}

pub fn open(dir: &std::path::Path) -> Store {
    Store::open(dir.join("store.sqlite"), Config::default()).unwrap()
}

/// Creates accounts 0..n; returns their DIDs.
pub fn accounts(store: &Store, n: u64) -> Vec<String> {
    (0..n)
        .map(|i| {
            let did = datagen::store::did(i);
            store.create_account(&did, &keypair(i)).unwrap();
            did
        })
        .collect()
}

/// Every event decodes; every `#commit` verifies against the store's keys;
/// sequence numbers run 1..=n without gaps. Returns (events, commits).
pub fn verify_all_events(store: &Store) -> (usize, usize) {
    let mut keys: HashMap<String, PublicKey> = HashMap::new();
    for did in store.accounts().unwrap() {
        if let Some(k) = store.signing_key(&did).unwrap() {
            keys.insert(did, k);
        }
    }
    let (mut cursor, mut events, mut commits) = (0i64, 0usize, 0usize);
    loop {
        let batch = store.events_after(cursor, 500).unwrap();
        if batch.is_empty() {
            break;
        }
        for ev in batch {
            assert_eq!(ev.seq, cursor + 1, "sequence gap after {cursor}");
            cursor = ev.seq;
            events += 1;
            match Frame::decode(&ev.frame).unwrap() {
                Frame::Commit(c) => {
                    assert_eq!(c.seq, ev.seq);
                    verify_commit(&c, &keys)
                        .unwrap_or_else(|e| panic!("commit seq {} does not verify: {e}", c.seq));
                    commits += 1;
                }
                Frame::Sync(s) => assert_eq!(s.seq, ev.seq),
                Frame::Identity(i) => assert_eq!(i.seq, ev.seq),
                Frame::Account(a) => assert_eq!(a.seq, ev.seq),
                other => panic!("unexpected frame {other:?}"),
            }
        }
    }
    (events, commits)
}

/// Opens a store at `path`, creates one account, writes the first `n`
/// datagen records into it and closes the store again; returns the
/// account's DID and the rev of its last commit.
pub fn seeded_store(path: &std::path::Path, n: usize) -> (String, String) {
    let store = Store::open(path, Config::default()).unwrap();
    seeded_account(&store, 0, n)
}

/// Creates account `i` in `store` and writes datagen's first `n` records
/// for it; returns its DID and the rev of its last commit.
pub fn seeded_account(store: &Store, i: u64, n: usize) -> (String, String) {
    let did = datagen::store::did(i);
    store.create_account(&did, &keypair(i)).unwrap();
    let mut rev = String::new();
    for r in datagen::store::records(i, n) {
        rev = store
            .create_record(&did, r.collection, Some(&r.rkey), cbor(&r.value), None)
            .unwrap()
            .rev;
    }
    (did, rev)
}
