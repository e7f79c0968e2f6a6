//! The core against the E2 model: records, listRecords, listRepoOps, the
//! access check, replay from zero, and a property test over write
//! sequences.

mod common;

use std::collections::BTreeMap;

use common::*;
use proptest::prelude::*;
use space::{ListParams, Need, OpsParams, Policy, SpaceError, Write};

#[test]
fn create_space_and_refusals() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(&dir);
    let sp = space(&s);
    assert_eq!(
        sp.to_uri(),
        "at://did:plc:owner/space/app.example.group/self"
    );
    let again = s.create_space(
        OWNER,
        "app.example.group",
        Some("self"),
        Policy::MemberList,
        "open",
    );
    assert!(matches!(again, Err(SpaceError::SpaceAlreadyExists(_))));
    // The authority's empty repo exists from the start.
    let st = s.repo_state(&sp, OWNER).unwrap();
    assert_eq!(st.rev, "");
    assert_eq!(st.hash, space::lthash::LtHash::new());
    // A TID skey by default.
    let other = s
        .create_space(OWNER, "app.example.group", None, Policy::Personal, "open")
        .unwrap();
    assert_eq!(other.skey.len(), 13);
    assert!(matches!(
        s.repo_state(&sp, "did:plc:nobody"),
        Err(SpaceError::RepoNotFound { .. })
    ));
    // The reads that resolve the repo in one join tell the misses apart.
    assert!(matches!(
        s.get_record(&sp, "did:plc:nobody", COLL, "x"),
        Err(SpaceError::RepoNotFound { .. })
    ));
    assert!(matches!(
        s.list_records(&sp, "did:plc:nobody", &Default::default()),
        Err(SpaceError::RepoNotFound { .. })
    ));
    s.delete_space(&other).unwrap();
    assert!(matches!(
        s.get_record(&other, OWNER, COLL, "x"),
        Err(SpaceError::SpaceNotFound(_))
    ));
    assert!(matches!(
        s.list_records(&other, OWNER, &Default::default()),
        Err(SpaceError::SpaceNotFound(_))
    ));
}

#[test]
fn records_and_list_order() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(&dir);
    let sp = space(&s);
    // "a.b.c.d/x" sorts before "a.b.c/x" by URI (the '.' < '/'), unlike
    // (collection, rkey) order.
    for (c, r) in [
        ("a.b.c.d", "x"),
        ("a.b.c", "x"),
        ("a.b.c", "y"),
        ("a.b.cd", "a"),
    ] {
        put(&s, &sp, WRITER, c, r, &format!("{c}/{r}"));
    }
    let (cid, value) = s.get_record(&sp, WRITER, "a.b.c", "y").unwrap();
    assert_eq!(value, record("a.b.c/y"));
    assert_eq!(cid, repo::Cid::for_dag_cbor(&value));
    assert!(matches!(
        s.get_record(&sp, WRITER, "a.b.c", "z"),
        Err(SpaceError::RecordNotFound(_))
    ));
    let paths = |p: &ListParams| -> (Vec<String>, Option<String>) {
        let page = s.list_records(&sp, WRITER, p).unwrap();
        (
            page.records
                .iter()
                .map(|r| format!("{}/{}", r.collection, r.rkey))
                .collect(),
            page.cursor,
        )
    };
    let (all, cursor) = paths(&ListParams::default());
    assert_eq!(all, ["a.b.cd/a", "a.b.c/y", "a.b.c/x", "a.b.c.d/x"]);
    assert_eq!(cursor, None);
    let (asc, _) = paths(&ListParams {
        reverse: true,
        ..Default::default()
    });
    assert_eq!(asc, ["a.b.c.d/x", "a.b.c/x", "a.b.c/y", "a.b.cd/a"]);
    let (coll, _) = paths(&ListParams {
        collection: Some("a.b.c".into()),
        ..Default::default()
    });
    assert_eq!(coll, ["a.b.c/y", "a.b.c/x"]);
    // Paging by two, both directions.
    for reverse in [false, true] {
        let mut got = Vec::new();
        let mut cursor = None;
        loop {
            let (p, c) = paths(&ListParams {
                limit: Some(2),
                cursor,
                reverse,
                ..Default::default()
            });
            got.extend(p);
            match c {
                Some(c) => {
                    assert!(c.starts_with(
                        "at://did:plc:owner/space/app.example.group/self/did:plc:writer/"
                    ));
                    cursor = Some(c)
                }
                None => break,
            }
        }
        let want = if reverse { asc.clone() } else { all.clone() };
        assert_eq!(got, want);
    }
    let page = s
        .list_records(
            &sp,
            WRITER,
            &ListParams {
                exclude_values: true,
                ..Default::default()
            },
        )
        .unwrap();
    assert!(page.records.iter().all(|r| r.value.is_none()));
    for bad in [
        ListParams {
            limit: Some(0),
            ..Default::default()
        },
        ListParams {
            limit: Some(1001),
            ..Default::default()
        },
        ListParams {
            cursor: Some("at://elsewhere/x/y".into()),
            ..Default::default()
        },
        ListParams {
            collection: Some("not an nsid".into()),
            ..Default::default()
        },
    ] {
        assert!(matches!(
            s.list_records(&sp, WRITER, &bad),
            Err(SpaceError::InvalidRequest { .. })
        ));
    }
}

#[test]
fn writes_refuse_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(&dir);
    let sp = space(&s);
    let w = |c: &str, r: &str, v: Vec<u8>| Write::Update {
        collection: c.into(),
        rkey: r.into(),
        value: v,
    };
    for (batch, what) in [
        (vec![w("bad coll", "x", record("a"))], "collection"),
        (vec![w(COLL, "bad/key", record("a"))], "rkey"),
        (vec![w(COLL, "x", vec![0xff])], "record"),
        (vec![w(COLL, "x", vec![0x01])], "record"),
        (vec![], "writes"),
    ] {
        match s.apply_writes(&sp, WRITER, batch) {
            Err(SpaceError::InvalidRequest { what: got, .. }) => assert_eq!(got, what),
            other => panic!("{what}: {other:?}"),
        }
    }
    let big = vec![w(COLL, "x", {
        let mut m = repo::cbor::Map::new();
        m.insert(
            "b",
            repo::cbor::Value::Bytes(vec![0; space::MAX_RECORD_BYTES]),
        );
        repo::cbor::to_vec(&repo::cbor::Value::Map(m))
    })];
    assert!(matches!(
        s.apply_writes(&sp, WRITER, big),
        Err(SpaceError::TooLarge(_))
    ));
    put(&s, &sp, WRITER, COLL, "x", "a");
    let dup = s.apply_writes(
        &sp,
        WRITER,
        vec![Write::Create {
            collection: COLL.into(),
            rkey: Some("x".into()),
            value: record("b"),
        }],
    );
    assert!(matches!(dup, Err(SpaceError::RecordAlreadyExists(_))));
    // The failed batch left nothing behind.
    assert_eq!(s.get_record(&sp, WRITER, COLL, "x").unwrap().1, record("a"));
    let missing = repo_space_ref("did:plc:owner", "nope");
    assert!(matches!(
        s.apply_writes(&missing, WRITER, vec![w(COLL, "x", record("a"))]),
        Err(SpaceError::SpaceNotFound(_))
    ));
}

fn repo_space_ref(did: &str, skey: &str) -> space::SpaceRef {
    space::SpaceRef::new(did, "app.example.group", skey).unwrap()
}

#[test]
fn oplog_pages_cursor_and_last_page_state() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(&dir);
    let sp = space(&s);
    // Batch 1: two creates; batch 2: an update and a delete.
    let b1 = s
        .apply_writes(
            &sp,
            WRITER,
            vec![
                Write::Create {
                    collection: COLL.into(),
                    rkey: Some("a".into()),
                    value: record("1"),
                },
                Write::Create {
                    collection: COLL.into(),
                    rkey: Some("b".into()),
                    value: record("2"),
                },
            ],
        )
        .unwrap();
    let b2 = s
        .apply_writes(
            &sp,
            WRITER,
            vec![
                Write::Update {
                    collection: COLL.into(),
                    rkey: "a".into(),
                    value: record("3"),
                },
                Write::Delete {
                    collection: COLL.into(),
                    rkey: "b".into(),
                },
                Write::Delete {
                    collection: COLL.into(),
                    rkey: "never".into(),
                },
            ],
        )
        .unwrap();
    assert!(b2.rev > b1.rev);
    assert_eq!(b2.results[2].cid, None);
    let all = s.list_repo_ops(&sp, WRITER, &OpsParams::default()).unwrap();
    assert_eq!(all.cursor, None);
    let st = all.state.clone().expect("last page carries the state");
    assert_eq!(st.rev, b2.rev);
    assert_eq!(
        all.ops.len(),
        4,
        "the delete of a missing record logs nothing"
    );
    let keys: Vec<_> = all.ops.iter().map(|o| (o.rev.clone(), o.idx)).collect();
    assert_eq!(
        keys,
        [
            (b1.rev.clone(), 0),
            (b1.rev.clone(), 1),
            (b2.rev.clone(), 0),
            (b2.rev.clone(), 1)
        ]
    );
    // Creates have no prev, deletes no cid; a value only while current.
    assert!(
        all.ops[0].prev.is_none() && all.ops[0].value.is_none(),
        "a's first value was replaced"
    );
    assert!(all.ops[1].value.is_none(), "b was deleted");
    assert_eq!(all.ops[2].prev, all.ops[0].cid);
    assert_eq!(all.ops[2].value.as_deref(), Some(&record("3")[..]));
    assert!(all.ops[3].cid.is_none() && all.ops[3].prev == all.ops[1].cid);
    // A full page: a cursor `rev/idx`, no state.
    let p1 = s
        .list_repo_ops(
            &sp,
            WRITER,
            &OpsParams {
                limit: Some(2),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(p1.cursor.as_deref(), Some(format!("{}/1", b1.rev).as_str()));
    assert!(p1.state.is_none());
    // Exactly `limit` ops left: that page is full too, the next one empty
    // and last.
    let p2 = s
        .list_repo_ops(
            &sp,
            WRITER,
            &OpsParams {
                limit: Some(2),
                cursor: p1.cursor,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(p2.ops, all.ops[2..]);
    let p3 = s
        .list_repo_ops(
            &sp,
            WRITER,
            &OpsParams {
                limit: Some(2),
                cursor: p2.cursor,
                ..Default::default()
            },
        )
        .unwrap();
    assert!(p3.ops.is_empty() && p3.state.is_some());
    // since: the batches after it.
    let since = s
        .list_repo_ops(
            &sp,
            WRITER,
            &OpsParams {
                since: Some(b1.rev.clone()),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(since.ops, all.ops[2..]);
    let nov = s
        .list_repo_ops(
            &sp,
            WRITER,
            &OpsParams {
                exclude_values: true,
                ..Default::default()
            },
        )
        .unwrap();
    assert!(nov.ops.iter().all(|o| o.value.is_none()));
    for bad in ["x", "3m5uyqfxyw22c", "3m5uyqfxyw22c/x", "nope/1"] {
        let r = s.list_repo_ops(
            &sp,
            WRITER,
            &OpsParams {
                cursor: Some(bad.into()),
                ..Default::default()
            },
        );
        assert!(matches!(r, Err(SpaceError::InvalidRequest { .. })), "{bad}");
    }
    let (h, st2) = replay(&s, &sp, WRITER, 1);
    assert_eq!(h, st2.hash);
    assert_eq!(h, from_records(&s, &sp, WRITER));
}

#[test]
fn access_checks() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(&dir);
    let sp = space(&s);
    s.put_member(&sp, "did:plc:reader", true, false).unwrap();
    s.put_member(&sp, "did:plc:blind", false, true).unwrap();
    let other = s
        .create_space(
            "did:plc:else",
            "app.example.group",
            Some("self"),
            Policy::MemberList,
            "open",
        )
        .unwrap();
    let ok = |did: &str, need| s.authorize(&sp, did, need).is_ok();
    assert!(
        ok(OWNER, Need::Admin) && ok(OWNER, Need::Read) && ok(OWNER, Need::Write { repo: OWNER })
    );
    assert!(
        !ok(OWNER, Need::Write { repo: WRITER }),
        "nobody writes another's repo"
    );
    assert!(ok(WRITER, Need::Read) && ok(WRITER, Need::Write { repo: WRITER }));
    assert!(!ok(WRITER, Need::Admin));
    assert!(
        ok("did:plc:reader", Need::Read)
            && !ok(
                "did:plc:reader",
                Need::Write {
                    repo: "did:plc:reader"
                }
            )
    );
    assert!(
        !ok("did:plc:blind", Need::Read),
        "a member without read access is refused"
    );
    assert!(ok(
        "did:plc:blind",
        Need::Write {
            repo: "did:plc:blind"
        }
    ));
    assert!(!ok("did:plc:stranger", Need::Read));
    // Membership of one space gives nothing in another.
    assert!(matches!(
        s.authorize(&other, WRITER, Need::Read),
        Err(SpaceError::Forbidden(_))
    ));
    s.remove_member(&sp, "did:plc:reader").unwrap();
    assert!(!ok("did:plc:reader", Need::Read));
    assert!(s.remove_member(&sp, OWNER).is_err());
    let personal = s
        .create_space(
            OWNER,
            "app.example.group",
            Some("p"),
            Policy::Personal,
            "open",
        )
        .unwrap();
    s.put_member(&personal, WRITER, true, true).unwrap();
    assert!(
        s.authorize(&personal, WRITER, Need::Read).is_err(),
        "personal: the authority alone"
    );
    s.delete_space(&personal).unwrap();
    assert!(matches!(
        s.authorize(&personal, OWNER, Need::Read),
        Err(SpaceError::SpaceNotFound(_))
    ));
}

#[derive(Clone, Debug)]
enum Op {
    Put(u8, u8),
    Create(u8, u8),
    Delete(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u8..6, any::<u8>()).prop_map(|(k, v)| Op::Put(k, v)),
        (0u8..6, any::<u8>()).prop_map(|(k, v)| Op::Create(k, v)),
        (0u8..6).prop_map(Op::Delete),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// After any sequence of batches: the records equal a model map, the
    /// oplog replayed from zero (in pages of 3) equals the stored state,
    /// and so does the LtHash recomputed from the records.
    #[test]
    fn write_sequences(batches in proptest::collection::vec(proptest::collection::vec(op(), 1..5), 1..8)) {
        let dir = tempfile::tempdir().unwrap();
        let s = open(&dir);
        let sp = space(&s);
        let mut model: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        for batch in batches {
            let mut next = model.clone();
            let mut fails = false;
            let writes: Vec<Write> = batch.iter().map(|o| match *o {
                Op::Put(k, v) => {
                    next.insert(format!("k{k}"), record(&v.to_string()));
                    Write::Update { collection: COLL.into(), rkey: format!("k{k}"), value: record(&v.to_string()) }
                }
                Op::Create(k, v) => {
                    if next.insert(format!("k{k}"), record(&v.to_string())).is_some() { fails = true; }
                    Write::Create { collection: COLL.into(), rkey: Some(format!("k{k}")), value: record(&v.to_string()) }
                }
                Op::Delete(k) => {
                    next.remove(&format!("k{k}"));
                    Write::Delete { collection: COLL.into(), rkey: format!("k{k}") }
                }
            }).collect();
            let r = s.apply_writes(&sp, WRITER, writes);
            prop_assert_eq!(r.is_err(), fails);
            if !fails { model = next; }
        }
        let page = s.list_records(&sp, WRITER, &space::ListParams { limit: Some(100), reverse: true, ..Default::default() });
        match page {
            Ok(page) => {
                let got: BTreeMap<String, Vec<u8>> = page.records.into_iter().map(|r| (r.rkey, r.value.unwrap())).collect();
                prop_assert_eq!(&got, &model);
                let (h, st) = replay(&s, &sp, WRITER, 3);
                prop_assert_eq!(&h, &st.hash);
                prop_assert_eq!(h, from_records(&s, &sp, WRITER));
            }
            // Every batch failed before the repo had a row.
            Err(SpaceError::RepoNotFound { .. }) => prop_assert!(model.is_empty()),
            Err(e) => prop_assert!(false, "{e}"),
        }
    }
}

#[test]
fn blob_refs_follow_records() {
    use repo::cbor::{Map, Value};
    let dir = tempfile::tempdir().unwrap();
    let s = open(&dir);
    let sp = space(&s);
    let other = s
        .create_space(
            OWNER,
            "app.example.group",
            Some("other"),
            Policy::MemberList,
            "open",
        )
        .unwrap();
    let blob = repo::Cid::for_raw(b"image bytes");
    let mut b = Map::new();
    b.insert("$type", Value::Text("blob".into()));
    b.insert("ref", Value::Link(blob));
    b.insert("mimeType", Value::Text("image/png".into()));
    b.insert("size", Value::Int(11));
    let mut rec = Map::new();
    rec.insert("images", Value::List(vec![Value::Map(b)]));
    let value = repo::cbor::to_vec(&Value::Map(rec));
    s.apply_writes(
        &sp,
        WRITER,
        vec![Write::Update {
            collection: COLL.into(),
            rkey: "r".into(),
            value,
        }],
    )
    .unwrap();
    assert!(s.blob_in_space(&sp, &blob).unwrap());
    assert!(
        !s.blob_in_space(&other, &blob).unwrap(),
        "another space's record does not count"
    );
    assert!(!s.blob_in_space(&sp, &repo::Cid::for_raw(b"other")).unwrap());
    put(&s, &sp, WRITER, COLL, "r", "no blob now");
    assert!(!s.blob_in_space(&sp, &blob).unwrap());
}
