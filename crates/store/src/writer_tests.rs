//! Tests of the writer's own state (a child module of `writer`): the
//! bound on the node positions it keeps.

use std::sync::Arc;

use repo::crypto::{Algorithm, Keypair};

use crate::{Config, Store};

/// Caller plans the writer takes add the positions their walks learned;
/// the writer checks its bound before taking one as well as before
/// planning a commit itself, so commits planned only by callers cannot
/// grow the map past it.
#[test]
fn caller_plans_keep_the_writers_positions_bounded() {
    const CAPACITY: usize = 48;
    const ACCOUNTS: u64 = 6;
    const COMMITS: usize = 60;
    let dir = tempfile::tempdir().expect("temp dir");
    let store =
        Arc::new(Store::open(dir.path().join("w.sqlite"), Config::default()).expect("opens"));
    store
        .submit(|w| {
            w.positions.borrow_mut().set_capacity(CAPACITY);
            Ok(())
        })
        .expect("writer job");
    let dids: Vec<String> = (0..ACCOUNTS)
        .map(|i| {
            let did = datagen::store::did(i);
            let key = Keypair::from_bytes(Algorithm::K256, &datagen::store::signing_secret(i))
                .expect("key");
            store.create_account(&did, &key).expect("account");
            did
        })
        .collect();
    std::thread::scope(|s| {
        for did in &dids {
            let store = &store;
            s.spawn(move || {
                for i in 0..COMMITS {
                    let record = datagen::segment::post_record(
                        &format!("post {i}"),
                        "2026-12-01T00:00:00.000Z",
                    );
                    store
                        .create_record(did, "app.bsky.feed.post", None, record, None)
                        .expect("create");
                }
            });
        }
    });
    let stats = store.caller_plan_stats();
    assert!(stats.taken > 0, "no caller plan was taken: {stats:?}");
    let peak = store
        .submit(|w| Ok(w.positions.borrow().peak()))
        .expect("writer job");
    // Below the bound before a plan is taken, plus what one commit of a
    // tree of 60 records learns (its path and the children along it):
    // 50-51 here, and 116-126 with the bound checked only before the
    // writer's own plans.
    assert!(peak < CAPACITY + 32, "positions peaked at {peak}");
    for did in &dids {
        assert_eq!(store.check_repo(did).expect("check"), COMMITS, "{did}");
    }
}
