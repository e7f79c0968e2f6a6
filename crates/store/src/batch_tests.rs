//! Tests of a batch's failure handling (a child module of `batch`): jobs
//! with and without savepoints, failing before and after they wrote.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, sync_channel};

use repo::syntax::TidGenerator;

use super::*;
use crate::cid_cache::CidCache;
use crate::feed::{EventFeed, Pending};

fn writer(dir: &std::path::Path) -> Writer {
    writer_feeding(dir, None)
}

fn writer_feeding(dir: &std::path::Path, feed: Option<Arc<dyn EventFeed>>) -> Writer {
    let (conn, report, ()) =
        crate::schema::startup(&dir.join("b.sqlite"), false, |_| Ok(())).unwrap();
    conn.execute_batch("CREATE TABLE t (x INTEGER)").unwrap();
    Writer::new(
        conn,
        report.next_seq,
        Arc::new(TidGenerator::new(0)),
        Arc::new(CidCache::default()),
        Pending::new(feed),
    )
}

/// A queued job and its caller's end of the reply channel.
type Queued = (Box<dyn Job>, Receiver<Result<i64>>);

/// A job inserting `x`, then failing if `fail` (after its write, saying
/// so when `partial`), with or without its own savepoint.
fn job(x: i64, fail: bool, partial: bool, guarded: bool) -> Queued {
    let (tx, rx) = sync_channel(1);
    let f = move |w: &mut Writer| -> std::result::Result<i64, Failed> {
        if fail && !partial {
            return Err(Failed::clean(StoreError::InvalidBatch(
                "checked before writing",
            )));
        }
        w.conn
            .execute("INSERT INTO t (x) VALUES (?1)", [x])
            .map_err(Failed::wrote)?;
        if fail {
            return Err(Failed::wrote(StoreError::InvalidBatch(
                "failed while writing",
            )));
        }
        Ok(x)
    };
    let job: Box<dyn Job> = Box::new(Task::new(f, tx, guarded));
    (job, rx)
}

fn rows(w: &Writer) -> Vec<i64> {
    let mut st = w.conn.prepare("SELECT x FROM t ORDER BY x").unwrap();
    st.query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

fn run(w: &mut Writer, jobs: Vec<Queued>) -> Vec<Result<i64>> {
    let (mut batch, replies): (Vec<_>, Vec<_>) = jobs.into_iter().unzip();
    process(w, &mut batch);
    replies.into_iter().map(|r| r.recv().unwrap()).collect()
}

#[test]
fn a_clean_failure_leaves_the_rest_of_the_batch() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = writer(dir.path());
    let out = run(
        &mut w,
        vec![
            job(1, false, false, false),
            job(2, true, false, false),
            job(3, false, false, true),
            job(4, true, true, true),
            job(5, false, false, false),
        ],
    );
    assert_eq!(out[0].as_ref().ok(), Some(&1));
    assert!(matches!(out[1], Err(StoreError::InvalidBatch(_))));
    assert_eq!(out[2].as_ref().ok(), Some(&3));
    // A guarded job that wrote and failed is rolled back alone.
    assert!(matches!(out[3], Err(StoreError::InvalidBatch(_))));
    assert_eq!(out[4].as_ref().ok(), Some(&5));
    assert_eq!(rows(&w), [1, 3, 5]);
}

#[test]
fn an_unguarded_failure_after_writing_rolls_the_batch_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = writer(dir.path());
    let out = run(
        &mut w,
        vec![
            job(1, false, false, false),
            job(2, false, false, true),
            job(3, true, true, false),
            job(4, false, false, false),
        ],
    );
    assert!(matches!(out[0], Err(StoreError::BatchFailed(_))));
    assert!(matches!(out[1], Err(StoreError::BatchFailed(_))));
    assert!(matches!(out[2], Err(StoreError::InvalidBatch(_))));
    assert!(matches!(out[3], Err(StoreError::BatchFailed(_))));
    assert_eq!(rows(&w), Vec::<i64>::new());
    // The writer goes on: the next batch commits.
    let out = run(&mut w, vec![job(6, false, false, false)]);
    assert_eq!(out[0].as_ref().ok(), Some(&6));
    assert_eq!(rows(&w), [6]);
}

#[test]
fn a_lone_job_failing_after_writing_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = writer(dir.path());
    for guarded in [false, true] {
        let out = run(&mut w, vec![job(1, true, true, guarded)]);
        assert!(matches!(out[0], Err(StoreError::InvalidBatch(_))));
        assert_eq!(rows(&w), Vec::<i64>::new());
    }
}

/// A feed that records what it is handed, batch by batch.
#[derive(Default)]
struct Recorded(std::sync::Mutex<Vec<Vec<i64>>>);

impl EventFeed for Recorded {
    fn committed(&self, events: Vec<crate::Event>) {
        self.0
            .lock()
            .unwrap()
            .push(events.iter().map(|e| e.seq).collect());
    }
}

/// A job appending two `#identity` events, then failing like [`job`].
fn events_job(fail: bool, partial: bool, guarded: bool) -> Queued {
    let (tx, rx) = sync_channel(1);
    let f = move |w: &mut Writer| -> std::result::Result<i64, Failed> {
        if fail && !partial {
            return Err(Failed::clean(StoreError::InvalidBatch("refused")));
        }
        w.identity_event("did:plc:feedtest", None)
            .map_err(Failed::wrote)?;
        let seq = w
            .identity_event("did:plc:feedtest", None)
            .map_err(Failed::wrote)?;
        if fail {
            return Err(Failed::wrote(StoreError::InvalidBatch("broke")));
        }
        Ok(seq)
    };
    (Box::new(Task::new(f, tx, guarded)), rx)
}

#[test]
fn the_feed_gets_each_committed_batch_in_seq_order_and_nothing_rolled_back() {
    let dir = tempfile::tempdir().unwrap();
    let feed = Arc::new(Recorded::default());
    let mut w = writer_feeding(dir.path(), Some(feed.clone()));
    let first = w.next_seq;
    let out = run(
        &mut w,
        vec![
            events_job(false, false, false),
            events_job(true, false, false),
            events_job(true, true, true),
            events_job(false, false, true),
        ],
    );
    assert_eq!(out[0].as_ref().ok(), Some(&(first + 1)));
    assert!(out[1].is_err() && out[2].is_err());
    // The rolled-back job's seqs went to the next job: no gap, no event
    // of a job that did not land.
    assert_eq!(out[3].as_ref().ok(), Some(&(first + 3)));
    assert_eq!(
        *feed.0.lock().unwrap(),
        [vec![first, first + 1, first + 2, first + 3]]
    );
    // A batch that does not commit feeds nothing, and the next one
    // follows on from the last committed seq.
    run(
        &mut w,
        vec![
            events_job(false, false, true),
            events_job(true, true, false),
        ],
    );
    run(&mut w, vec![events_job(false, false, false)]);
    let fed = feed.0.lock().unwrap();
    assert_eq!(fed.len(), 2);
    assert_eq!(fed[1], [first + 4, first + 5]);
}
