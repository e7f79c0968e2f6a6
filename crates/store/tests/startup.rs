//! Startup: the revision backfill (schema v3), the move of record blocks
//! into their index rows (v4), and what they serve.

mod common;

use common::*;
use store::{Config, Store};

#[test]
fn backfill_is_recorded_once_and_serves_export_since() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sqlite");
    let (did, rev_before) = seeded_store(&path, 3);
    let nulled = {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute("UPDATE repo_blocks SET repo_rev = NULL", [])
            .unwrap()
    };
    let all_blocks = {
        let store = Store::open(&path, Config::default()).unwrap();
        assert_eq!(store.startup_report().backfilled, nulled);
        // The backfill is one narrow row per account, not a rewrite of the
        // block rows.
        let conn = rusqlite::Connection::open(&path).unwrap();
        let (n, rev): (i64, String) = conn
            .query_row(
                "SELECT (SELECT COUNT(*) FROM rev_backfill), \
                 (SELECT rev FROM rev_backfill WHERE did = ?1)",
                [&did],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!((n, rev.as_str()), (1, rev_before.as_str()));
        // Backfilled blocks carry the account's rev for `since` exports:
        // all of them are newer than an older rev, none than the current.
        let mut out = Vec::new();
        let full = store.export_repo(&did, None, &mut out).unwrap().blocks;
        // The 3 record blocks live in their index rows and keep their revs;
        // the commit block is in `repo_root` (schema v5).
        assert_eq!(full as usize, nulled + 3 + 1);
        let mut out = Vec::new();
        let older = "2222222222222";
        assert_eq!(
            store
                .export_repo(&did, Some(older), &mut out)
                .unwrap()
                .blocks,
            full
        );
        let mut out = Vec::new();
        assert_eq!(
            store
                .export_repo(&did, Some(&rev_before), &mut out)
                .unwrap()
                .blocks,
            0
        );
        full
    };
    // A second open finds the account already covered.
    let store = Store::open(&path, Config::default()).unwrap();
    assert_eq!(store.startup_report().backfilled, 0);
    assert!(all_blocks > 0);
    assert_eq!(store.check_repo(&did).unwrap(), 3);
    verify_all_events(&store);
}

#[test]
fn v2_store_migrates_and_backfills() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sqlite");
    // Enough records for a tree of several layers, so v6 has nodes to
    // place.
    let (did, _) = seeded_store(&path, 400);
    let mut before = Vec::new();
    {
        let store = Store::open(&path, Config::default()).unwrap();
        store.export_repo(&did, None, &mut before).unwrap();
    }
    let commit_log = |conn: &rusqlite::Connection| -> Vec<(i64, String, String, Vec<u8>)> {
        let mut st = conn
            .prepare("SELECT seq, did, rev, cid FROM commits ORDER BY seq")
            .unwrap();
        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    // Back to the v2 layout (record and commit blocks in repo_blocks, keyed
    // (did, cid); commits keyed by (did, rev) with two indexes), with
    // unversioned blocks.
    let (nulled, commits_before) = {
        let conn = rusqlite::Connection::open(&path).unwrap();
        let commits_before = commit_log(&conn);
        conn.execute_batch(
            "CREATE TABLE repo_blocks_v2 (did TEXT NOT NULL, cid BLOB NOT NULL, repo_rev TEXT, \
             bytes BLOB NOT NULL, PRIMARY KEY (did, cid)) WITHOUT ROWID; \
             INSERT INTO repo_blocks_v2 SELECT did, cid, repo_rev, bytes FROM repo_blocks; \
             DROP TABLE repo_blocks; ALTER TABLE repo_blocks_v2 RENAME TO repo_blocks; \
             ALTER TABLE commits RENAME TO commits_v5; \
             CREATE TABLE commits (did TEXT NOT NULL, rev TEXT NOT NULL, cid BLOB NOT NULL, \
             seq INTEGER, PRIMARY KEY (did, rev)) WITHOUT ROWID; \
             CREATE INDEX commits_cid ON commits (did, cid); \
             CREATE INDEX commits_seq ON commits (seq); \
             INSERT INTO commits SELECT did, rev, cid, seq FROM commits_v5; DROP TABLE commits_v5; \
             INSERT INTO repo_blocks (did, cid, repo_rev, bytes) \
             SELECT did, cid, repo_rev, bytes FROM records WHERE cid_dup = 0; \
             INSERT INTO repo_blocks (did, cid, repo_rev, bytes) \
             SELECT did, commit_cid, rev, commit_bytes FROM repo_root; \
             ALTER TABLE repo_root DROP COLUMN commit_bytes; \
             ALTER TABLE records DROP COLUMN bytes; ALTER TABLE records DROP COLUMN cid_dup; \
             DROP TABLE rev_backfill; \
             CREATE INDEX repo_blocks_norev ON repo_blocks (did, cid) WHERE repo_rev IS NULL; \
             PRAGMA user_version = 2;",
        )
        .unwrap();
        let nulled = conn
            .execute("UPDATE repo_blocks SET repo_rev = NULL", [])
            .unwrap();
        (nulled, commits_before)
    };
    let store = Store::open(&path, Config::default()).unwrap();
    let r = store.startup_report();
    // v4 moved the 400 record blocks and v5 the commit block out of
    // repo_blocks before the backfill.
    assert_eq!((r.migrated_from, r.backfilled), (2, nulled - 400 - 1));
    let mut after = Vec::new();
    store.export_repo(&did, None, &mut after).unwrap();
    assert_eq!(car_blocks(&after), car_blocks(&before));
    let conn = rusqlite::Connection::open(&path).unwrap();
    let (version, index): (i64, String) = conn
        .query_row(
            "SELECT (SELECT user_version FROM pragma_user_version), \
             (SELECT sql FROM sqlite_master WHERE name = 'repo_blocks_norev')",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(version, store::SCHEMA_VERSION);
    assert!(index.contains("(did, repo_rev)"), "{index}");
    // v5: the commit log is carried over row for row, without its indexes.
    assert!(commits_before.len() > 4, "the seeded store has commits");
    assert_eq!(commit_log(&conn), commits_before);
    let old_indexes: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE name IN ('commits_cid', 'commits_seq')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(old_indexes, 0);
    let p = datagen::store::post(0, 1);
    store
        .create_record(&did, p.collection, None, cbor(&p.value), None)
        .unwrap();
    // check_repo also finds every MST node where v6 placed it.
    assert_eq!(store.check_repo(&did).unwrap(), 401);
    verify_all_events(&store);
}

/// A CAR's blocks, sorted (export order is not part of the contract).
fn car_blocks(car: &[u8]) -> Vec<(repo::Cid, Vec<u8>)> {
    let mut r = repo::car::CarReader::new(car).unwrap().verify(true);
    let mut out = Vec::new();
    while let Some(b) = r.next_block().unwrap() {
        out.push(b);
    }
    out.sort();
    out
}

#[test]
fn v6_migration_keeps_a_store_with_a_bad_node_open() {
    // A v5 store (node rows keyed (did, cid)) with one MST node that no
    // longer decodes and a second account whose tree is intact: the v6
    // migration places what it can, the store opens, the damaged account
    // is reported by check_repo and the other one reads and writes.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sqlite");
    let (did, _) = seeded_store(&path, 300);
    let other = {
        let store = Store::open(&path, Config::default()).unwrap();
        seeded_account(&store, 9, 200).0
    };
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        let damaged = conn
            .execute(
                "CREATE TABLE repo_blocks_v5 (did TEXT NOT NULL, cid BLOB NOT NULL, repo_rev TEXT, \
                 bytes BLOB NOT NULL, PRIMARY KEY (did, cid)) WITHOUT ROWID",
                [],
            )
            .and_then(|_| {
                conn.execute_batch(
                    "INSERT INTO repo_blocks_v5 SELECT did, cid, repo_rev, bytes FROM repo_blocks; \
                     DROP TABLE repo_blocks; ALTER TABLE repo_blocks_v5 RENAME TO repo_blocks; \
                     CREATE INDEX repo_blocks_norev ON repo_blocks (did, repo_rev) WHERE repo_rev IS NULL; \
                     PRAGMA user_version = 5;",
                )
            })
            .and_then(|_| {
                // Any node but the root of the first account.
                conn.execute(
                    "UPDATE repo_blocks SET bytes = x'a0' WHERE did = ?1 AND cid = \
                     (SELECT b.cid FROM repo_blocks b, repo_root r WHERE b.did = ?1 \
                      AND r.did = ?1 AND b.cid <> r.data_cid ORDER BY b.cid LIMIT 1)",
                    [&did],
                )
            })
            .unwrap();
        assert_eq!(damaged, 1);
    }
    let store = Store::open(&path, Config::default()).unwrap();
    assert_eq!(store.startup_report().migrated_from, 5);
    assert!(store.check_repo(&did).is_err());
    assert_eq!(store.check_repo(&other).unwrap(), 200);
    let p = datagen::store::post(9, 1);
    store
        .create_record(&other, p.collection, None, cbor(&p.value), None)
        .unwrap();
    assert_eq!(store.check_repo(&other).unwrap(), 201);
}
