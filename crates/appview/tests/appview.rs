//! The appview end to end: the seeded stream as signed commits, the live
//! index against one rebuilt from the repository (also after a restart),
//! against the bulk path, and every read pattern against the SQLite
//! baseline; refused inputs write nothing.

use std::collections::HashMap;

use appview::{
    APPVIEW_DID, AppView, AppviewError, Index, Input, NewFlow, NewRun, NewState, Pattern, Query,
    ReadBackend, SqliteBaseline, StateType, Uuid, bulk,
};
use datagen::appview::Op;
use repo::firehose::{Frame, verify_commit};
use store::Config;

fn seeded(dir: &std::path::Path, runs: usize) -> (AppView, datagen::appview::Workload) {
    let w = datagen::appview::workload(runs);
    let app = AppView::open(dir, Config::default()).unwrap();
    for op in &w.ops {
        app.apply_op(op).unwrap();
    }
    (app, w)
}

/// Every pattern answers the same page on both backends; returns the
/// rows compared.
fn same_pages(index: &Index, b: &dyn ReadBackend, now: i64) -> usize {
    let a: &dyn ReadBackend = index;
    let (latest, _) = index.defaults();
    let probe = [latest.unwrap(), Uuid(7)];
    let mut rows = 0;
    for pattern in Pattern::ALL {
        for run in probe {
            let q = Query::new(pattern, run, now);
            let (pa, pb) = (a.query(&q).unwrap(), b.query(&q).unwrap());
            assert_eq!(pa, pb, "{q:?}");
            rows += pa.rows();
        }
    }
    rows
}

#[test]
fn seeded_stream_index_rebuild_restart_and_sqlite_agree() {
    let dir = tempfile::tempdir().unwrap();
    let (app, w) = seeded(dir.path(), 300);
    let live = app.index().clone();
    assert_eq!(live.run_count(), 300);
    assert_eq!(live.flow_count(), 5);
    assert_eq!(live.state_count(), w.ops.len() - 5);

    // Every write was one signed commit that verifies.
    let key = app.store().signing_key(APPVIEW_DID).unwrap().unwrap();
    let keys = HashMap::from([(APPVIEW_DID.to_owned(), key)]);
    let events = app.store().events_after(0, 10_000).unwrap();
    let commits = events
        .iter()
        .filter(|e| match Frame::decode(&e.frame).unwrap() {
            Frame::Commit(c) => {
                verify_commit(&c, &keys).unwrap();
                true
            }
            _ => false,
        })
        .count();
    assert_eq!(commits, w.ops.len());

    // The repository alone rebuilds the same index; so does the bulk path.
    assert_eq!(app.rebuild_index().unwrap(), live);
    let (bulk_index, mutations) = bulk::load(&w).unwrap();
    assert_eq!(bulk_index, live);

    // After a restart of the store, too.
    drop(app);
    let app = AppView::open(dir.path(), Config::default()).unwrap();
    assert_eq!(*app.index(), live);

    // Every pattern on the SQLite baseline (fed one transaction per write).
    let mut sql = SqliteBaseline::open(&dir.path().join("baseline.sqlite")).unwrap();
    for m in &mutations {
        sql.apply(m).unwrap();
    }
    let rows = same_pages(&live, &sql, w.now_us);
    assert!(rows > 300, "{rows} rows compared");
    // The set per flow, against the workload's runs of each flow.
    let mut per_flow: HashMap<Uuid, usize> = HashMap::new();
    for op in &w.ops {
        if let Op::Run(r) = op {
            *per_flow
                .entry(Uuid::parse(&r.flow_id).unwrap())
                .or_default() += 1;
        }
    }
    assert_eq!(per_flow.len(), 5);
    for f in live.flows() {
        assert_eq!(live.runs_of_flow(f.id), per_flow[&f.id], "{}", f.name);
    }

    // The count, against the workload's own final states (each run's last
    // state op; a run without one stays PENDING).
    let mut last: HashMap<&str, &str> = HashMap::new();
    for op in &w.ops {
        match op {
            Op::Run(r) => {
                last.insert(&r.id, "PENDING");
            }
            Op::State(s) => {
                last.insert(&s.run_id, s.state_type);
            }
            Op::Flow(_) => {}
        }
    }
    let completed = last.values().filter(|t| **t == "COMPLETED").count() as u64;
    assert!(completed > 100, "{completed} completed runs");
    for backend in [&live as &dyn ReadBackend, &sql] {
        assert_eq!(
            backend.query(&Query::CountCompleted).unwrap(),
            appview::Page::Count(completed)
        );
    }
}

#[test]
fn larger_tier_bulk_index_matches_bulk_sqlite() {
    let w = datagen::appview::workload(12_000);
    let (index, _) = bulk::load(&w).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut sql = SqliteBaseline::open(&dir.path().join("b.sqlite")).unwrap();
    sql.load_index(&index).unwrap();
    sql.analyze().unwrap();
    let rows = same_pages(&index, &sql, w.now_us);
    assert!(rows > 500, "{rows}");
    for q in [
        Query::Completed50,
        Query::Paginated,
        Query::Completed1h { now: w.now_us },
    ] {
        assert_eq!(index.read(&q).rows(), 50, "{q:?}");
    }
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (app, w) = seeded(dir.path(), 20);
    let root = app.store().repo_root(APPVIEW_DID).unwrap();
    let before = app.index().clone();
    let flow = before.flows().next().unwrap().clone();
    let run = before
        .runs()
        .find(|r| r.state_type == StateType::Completed)
        .unwrap()
        .clone();
    let pending = before
        .runs()
        .find(|r| !r.state_type.is_terminal())
        .unwrap()
        .clone();
    let fresh = Uuid(0x1234_5678_9abc_4def_8123_4567_89ab_cdef);
    let new_run = |flow_id| {
        Input::Run(NewRun {
            id: fresh,
            flow_id,
            name: "x".into(),
            state_id: Uuid(fresh.0 + 1),
            expected_start: 1,
            created: 0,
            tags: vec![],
            parameters: vec![],
        })
    };
    let state = |run_id, t, ts| {
        Input::State(NewState {
            id: fresh,
            run_id,
            state_type: t,
            name: "n".into(),
            timestamp: ts,
            message: String::new(),
        })
    };
    type Expect = fn(&AppviewError) -> bool;
    let cases: Vec<(Input, Expect)> = vec![
        (new_run(Uuid(99)), |e| {
            matches!(e, AppviewError::UnknownFlow(_))
        }),
        (state(Uuid(99), StateType::Running, i64::MAX), |e| {
            matches!(e, AppviewError::UnknownRun(_))
        }),
        (state(run.id, StateType::Running, i64::MAX), |e| {
            matches!(e, AppviewError::InvalidTransition { .. })
        }),
        (state(pending.id, StateType::Running, 0), |e| {
            matches!(e, AppviewError::StaleTimestamp { .. })
        }),
        (
            Input::Flow(NewFlow {
                id: fresh,
                name: flow.name.clone(),
                tags: vec![],
                created: 0,
            }),
            |e| matches!(e, AppviewError::DuplicateFlowName(_)),
        ),
        (
            Input::Flow(NewFlow {
                id: run.id,
                name: "other".into(),
                tags: vec![],
                created: 0,
            }),
            |e| matches!(e, AppviewError::DuplicateId(_)),
        ),
    ];
    for (input, expected) in cases {
        let e = app.apply(&input).unwrap_err();
        assert!(expected(&e), "{input:?}: {e}");
    }
    // Bad text from a client: a state type name and a uuid.
    let mut op = w
        .ops
        .iter()
        .find(|o| matches!(o, datagen::appview::Op::State(_)))
        .unwrap()
        .clone();
    if let datagen::appview::Op::State(s) = &mut op {
        s.state_type = "DONE";
    }
    assert!(matches!(
        app.apply_op(&op),
        Err(AppviewError::UnknownStateType(_))
    ));
    if let datagen::appview::Op::State(s) = &mut op {
        s.state_type = "RUNNING";
        s.run_id = "not-a-uuid".into();
    }
    assert!(matches!(app.apply_op(&op), Err(AppviewError::BadUuid(_))));
    assert_eq!(app.store().repo_root(APPVIEW_DID).unwrap(), root);
    assert_eq!(*app.index(), before);
}

#[test]
fn a_corrupt_commit_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (app, _) = seeded(dir.path(), 5);
    let events = app.store().events_after(0, 100).unwrap();
    let mut index = Index::new();
    for e in &events {
        index.apply_commit(&e.frame).unwrap();
    }
    assert_eq!(index, *app.index());
    let last = &events.last().unwrap().frame;
    for cut in [1, last.len() / 2, last.len() - 1] {
        let before = index.clone();
        assert!(index.apply_commit(&last[..cut]).is_err());
        assert_eq!(index, before);
    }
}

/// The frames of a small seeded stream, built once for the property test.
fn frames() -> &'static (Vec<Vec<u8>>, Index) {
    static FRAMES: std::sync::OnceLock<(Vec<Vec<u8>>, Index)> = std::sync::OnceLock::new();
    FRAMES.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let (app, _) = seeded(dir.path(), 8);
        let frames = app
            .store()
            .events_after(0, 1000)
            .unwrap()
            .into_iter()
            .map(|e| e.frame)
            .collect();
        (frames, app.index().clone())
    })
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    /// A damaged `#commit` frame never panics the index, and one that is
    /// refused changes nothing.
    #[test]
    fn damaged_frames_are_refused_whole(
        which in proptest::prelude::any::<proptest::sample::Index>(),
        at in proptest::prelude::any::<proptest::sample::Index>(),
        byte in proptest::prelude::any::<u8>(),
    ) {
        let (frames, live) = frames();
        let mut frame = frames[which.index(frames.len())].clone();
        let i = at.index(frame.len());
        frame[i] = byte;
        let mut index = live.clone();
        if index.apply_commit(&frame).is_err() {
            proptest::prop_assert_eq!(&index, live);
        }
    }
}

#[test]
fn the_signing_key_is_the_fixture_key_it_names() {
    // `signing_key` derives its secret itself (the read path does not
    // depend on the generator); it must stay the fixture key it documents.
    let fixture = repo::crypto::Keypair::from_bytes(
        repo::crypto::Algorithm::K256,
        &datagen::store::signing_secret(0x4150_5056),
    )
    .unwrap();
    assert_eq!(
        appview::signing_key().unwrap().to_bytes(),
        fixture.to_bytes()
    );
}

#[test]
fn every_pattern_name_parses_back_and_is_unique() {
    let names: std::collections::BTreeSet<&str> = Pattern::ALL.iter().map(|p| p.name()).collect();
    assert_eq!(names.len(), Pattern::ALL.len());
    for p in Pattern::ALL {
        assert_eq!(Pattern::parse(p.name()).unwrap(), p);
    }
    assert!(matches!(
        Pattern::parse("completed_51"),
        Err(AppviewError::UnknownPattern(n)) if n == "completed_51"
    ));
}
