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

/// A feed that records every event it is handed, and the seq of the
/// log's end it was opened at.
#[derive(Default)]
struct Recorder {
    opened: std::sync::Mutex<Option<i64>>,
    events: std::sync::Mutex<Vec<store::Event>>,
}

impl store::EventFeed for Recorder {
    fn opened(&self, last_seq: i64) {
        *self.opened.lock().unwrap() = Some(last_seq);
    }

    fn committed(&self, events: Vec<store::Event>) {
        self.events.lock().unwrap().extend(events);
    }
}

impl Recorder {
    fn has(&self, seq: i64) -> bool {
        self.events.lock().unwrap().iter().any(|e| e.seq == seq)
    }
}

#[test]
fn the_feed_gets_every_event_the_log_stores_in_order_before_the_call_returns() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("feed.sqlite");
    let feed = std::sync::Arc::new(Recorder::default());
    let config = Config {
        feed: Some(feed.clone()),
        ..Config::default()
    };
    let store = std::sync::Arc::new(Store::open(&path, config.clone()).unwrap());
    assert_eq!(*feed.opened.lock().unwrap(), Some(0));
    let dids = accounts(&store, 4);
    // Concurrent commits on four accounts (group-committed together), an
    // identity and a status change: each call's event is in the feed by
    // the time the call returns.
    std::thread::scope(|s| {
        for (t, did) in dids.iter().enumerate() {
            let (store, feed) = (&store, &feed);
            s.spawn(move || {
                for i in 0..25 {
                    let r = datagen::store::post(t as u64, i);
                    let c = store
                        .create_record(did, r.collection, None, cbor(&r.value), None)
                        .unwrap();
                    assert!(feed.has(c.seq), "commit {} not fed on return", c.seq);
                }
            });
        }
    });
    let seq = store.update_identity(&dids[0], Some("feed.test")).unwrap();
    assert!(feed.has(seq));
    let seq = store
        .set_account_status(&dids[1], false, Some("deactivated"))
        .unwrap();
    assert!(feed.has(seq));
    // Refused writes feed nothing, and take no seq from the next one.
    let bad = store::RecordWrite::delete("app.bsky.feed.post", "3zzzzzzzzzzzz");
    assert!(store.apply_writes(&dids[2], vec![bad], None).is_err());
    assert!(
        store
            .update_identity("did:plc:nobodyhere234567", None)
            .is_err()
    );
    // The feed holds exactly the log: same seqs, same bytes, same order.
    let fed = feed.events.lock().unwrap().clone();
    let log = store.events_after(0, 10_000).unwrap();
    assert_eq!(log.len(), 4 * 3 + 4 * 25 + 2);
    assert_eq!(fed, log);
    // Reopened, the feed learns where the log ends.
    drop(store);
    let reopened = Store::open(&path, config).unwrap();
    assert_eq!(*feed.opened.lock().unwrap(), Some(log.len() as i64));
    drop(reopened);
}
