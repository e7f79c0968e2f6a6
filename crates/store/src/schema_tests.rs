//! Tests of the startup (a child module of `schema`): the revision
//! backfill (`migrations.rs`) against `forget_revisions`.

use super::forget_revisions;
use crate::{Config, Store, StoreError};
use repo::crypto::{Algorithm, Keypair};
use rusqlite::Connection;

/// Forgotten revisions are what an old build left: the next open
/// backfills exactly the account's node rows (one `rev_backfill` row,
/// its current rev), the open after it none, and forgetting again
/// brings the backfill back. Other accounts keep their revisions, the
/// repository still checks, and a store holding the file refuses it.
#[test]
fn forgotten_revisions_are_backfilled_by_the_next_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sqlite");
    let (old, other) = ("did:plc:forgotten0000000000", "did:plc:versioned0000000000");
    let rev = {
        let store = Store::open(&path, Config::default()).unwrap();
        for (i, did) in [old, other].into_iter().enumerate() {
            let key = Keypair::from_bytes(Algorithm::K256, &[i as u8 + 7; 32]).unwrap();
            store.create_account(did, &key).unwrap();
            for n in 0..60 {
                let record = repo::cbor::to_vec(&repo::cbor::Value::Map(
                    [(
                        "text".to_owned(),
                        repo::cbor::Value::Text(format!("{i}/{n}")),
                    )]
                    .into_iter()
                    .collect(),
                ));
                store
                    .create_record(did, "app.bsky.feed.post", None, record, None)
                    .unwrap();
            }
        }
        assert!(matches!(
            forget_revisions(&path, old),
            Err(StoreError::Locked { .. })
        ));
        store.repo_root(old).unwrap().unwrap().rev
    };
    let count = |sql: &str, did: &str| -> i64 {
        let conn = Connection::open(&path).unwrap();
        conn.query_row(sql, [did], |r| r.get(0)).unwrap()
    };
    let nodes = count("SELECT COUNT(*) FROM repo_blocks WHERE did = ?1", old);
    assert!(nodes > 10, "{nodes} nodes");
    for _ in 0..2 {
        assert_eq!(forget_revisions(&path, old).unwrap() as i64, nodes);
        let unversioned = "SELECT COUNT(*) FROM repo_blocks WHERE did = ?1 AND repo_rev IS NULL";
        assert_eq!(count(unversioned, other), 0);
        let store = Store::open(&path, Config::default()).unwrap();
        assert_eq!(store.startup_report().backfilled as i64, nodes);
        let backfilled: String = Connection::open(&path)
            .unwrap()
            .query_row("SELECT rev FROM rev_backfill WHERE did = ?1", [old], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(backfilled, rev);
        assert_eq!(store.check_repo(old).unwrap(), 60);
        drop(store);
        let store = Store::open(&path, Config::default()).unwrap();
        assert_eq!(store.startup_report().backfilled, 0);
    }
}
