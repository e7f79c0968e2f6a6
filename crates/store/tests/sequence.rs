//! The event sequence: reopening recovers the next seq (and backfills
//! revisions); #identity and #account events are sequenced and typed.

mod common;

use common::*;
use store::{Config, Store};

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
fn framed_commit_hands_back_the_stored_event() {
    use repo::firehose::Frame;
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let did = accounts(&store, 1).remove(0);
    for i in 0..3 {
        let r = datagen::store::post(0, i);
        let w = store::RecordWrite::create(r.collection, None, cbor(&r.value));
        let c = store.apply_writes_framed(&did, vec![w], None).unwrap();
        // The same bytes a catch-up reader gets for that seq.
        let stored = store.events_after(c.info.seq - 1, 1).unwrap();
        assert_eq!(stored.len(), 1);
        assert_eq!(stored[0].seq, c.info.seq);
        assert_eq!(stored[0].frame, c.frame);
        let Frame::Commit(commit) = Frame::decode(&c.frame).unwrap() else {
            panic!("not a #commit frame");
        };
        assert_eq!(commit.seq, c.info.seq);
        assert_eq!(commit.commit, c.info.commit);
        assert_eq!(commit.rev, c.info.rev);
    }
    // A refused commit hands back nothing and stores no event.
    let next = store.events_after(0, 1000).unwrap().len();
    let bad = store::RecordWrite::delete("app.bsky.feed.post", "3zzzzzzzzzzzz");
    assert!(store.apply_writes_framed(&did, vec![bad], None).is_err());
    assert_eq!(store.events_after(0, 1000).unwrap().len(), next);
}
