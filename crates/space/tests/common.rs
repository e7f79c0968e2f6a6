//! Shared helpers of the space tests.
#![allow(dead_code)]

use repo::cbor::{Map, Value};
use space::lthash::LtHash;
use space::{Config, OpsParams, Policy, SpaceRef, SpaceStore, Write};

pub const OWNER: &str = "did:plc:owner";
pub const WRITER: &str = "did:plc:writer";
pub const COLL: &str = "app.example.post";

pub fn open(dir: &tempfile::TempDir) -> SpaceStore {
    SpaceStore::open(dir.path().join("store.sqlite"), Config::default()).unwrap()
}

pub fn record(text: &str) -> Vec<u8> {
    let mut m = Map::new();
    m.insert("$type", Value::Text(COLL.into()));
    m.insert("text", Value::Text(text.into()));
    repo::cbor::to_vec(&Value::Map(m))
}

pub fn space(s: &SpaceStore) -> SpaceRef {
    let sp = s
        .create_space(
            OWNER,
            "app.example.group",
            Some("self"),
            Policy::MemberList,
            "open",
        )
        .unwrap();
    s.put_member(&sp, WRITER, true, true).unwrap();
    sp
}

pub fn put(s: &SpaceStore, sp: &SpaceRef, repo: &str, coll: &str, rkey: &str, text: &str) {
    s.apply_writes(
        sp,
        repo,
        vec![Write::Update {
            collection: coll.into(),
            rkey: rkey.into(),
            value: record(text),
        }],
    )
    .unwrap();
}

/// The LtHash folded from every op of the log, paging with `limit`, and the
/// state the last page reported.
pub fn replay(s: &SpaceStore, sp: &SpaceRef, repo: &str, limit: u32) -> (LtHash, space::RepoState) {
    let mut h = LtHash::new();
    let mut cursor = None;
    loop {
        let page = s
            .list_repo_ops(
                sp,
                repo,
                &OpsParams {
                    limit: Some(limit),
                    cursor: cursor.clone(),
                    ..Default::default()
                },
            )
            .unwrap();
        for op in &page.ops {
            h.apply_op(&op.collection, &op.rkey, op.cid.as_ref(), op.prev.as_ref());
        }
        match (page.cursor, page.state) {
            (Some(c), None) => cursor = Some(c),
            (None, Some(st)) => return (h, st),
            other => panic!("a page with cursor and state {other:?}"),
        }
    }
}

/// The LtHash recomputed from the records themselves.
pub fn from_records(s: &SpaceStore, sp: &SpaceRef, repo: &str) -> LtHash {
    let mut h = LtHash::new();
    s.export(sp, repo, false, &mut |_| Ok(()), &mut |path, cid, _| {
        let (c, r) = path.split_once('/').unwrap();
        h.apply_op(c, r, Some(&cid), None);
        Ok(())
    })
    .unwrap();
    h
}
