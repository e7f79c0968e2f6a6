//! sync.getRecord's proof: the commit, the covering-proof nodes and the
//! record, enough to walk from the signed commit to the record alone.

mod common;

use common::*;
use repo::mst::{MemoryBlockStore, Mst};

#[test]
fn record_proof_walks_from_the_commit_to_the_record() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let did = &accounts(&store, 1)[0];
    for i in 0..200 {
        store
            .create_record(
                did,
                "app.bsky.feed.post",
                Some(&format!("r{i:04}")),
                cbor(&serde_json::json!({"text": format!("t{i}")})),
                None,
            )
            .unwrap();
    }
    let root = store.repo_root(did).unwrap().unwrap();
    let proof = store
        .record_proof(did, "app.bsky.feed.post", "r0123")
        .unwrap()
        .unwrap();
    assert_eq!(proof.root, root.commit);
    assert_eq!(proof.blocks[0].0, root.commit);
    // Far fewer blocks than the repository's 200 records and their nodes.
    assert!(proof.blocks.len() < 20, "{}", proof.blocks.len());
    let mut mem = MemoryBlockStore::new();
    for (cid, bytes) in &proof.blocks {
        assert!(
            mem.put_checked(*cid, bytes.clone()),
            "block {cid} does not hash to its CID"
        );
    }
    let commit = repo::commit::CommitRef::decode(&proof.blocks[0].1).unwrap();
    commit
        .verify(&store.signing_key(did).unwrap().unwrap())
        .unwrap();
    let want = store
        .current_cid(did, "app.bsky.feed.post", "r0123")
        .unwrap()
        .unwrap();
    let mut mst = Mst::load(&mem, commit.data);
    assert_eq!(mst.get("app.bsky.feed.post/r0123").unwrap(), Some(want));
    assert!(mem.contains(&want));
    assert!(
        store
            .record_proof(did, "app.bsky.feed.post", "absent")
            .unwrap()
            .is_none()
    );
    assert!(matches!(
        store.record_proof(
            "did:plc:aaaaaaaaaaaaaaaaaaaaaaaa",
            "app.bsky.feed.post",
            "r1"
        ),
        Err(store::StoreError::UnknownAccount(_))
    ));
    assert!(store.record_proof(did, "not an nsid", "r1").is_err());
}
