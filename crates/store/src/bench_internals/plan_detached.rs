//! One commit's planning with no SQLite and no threads: the CPU half of a
//! `createRecord` ([`crate::plan`]: the lazy MST edit, the covering proof,
//! the signed commit and the `#commit` CAR slice) over an account whose
//! blocks are in memory.
//!
//! Why it exists: this is the part of the write path whose cost is pure
//! computation, so it is what `--bench instructions` counts
//! (`instructions.store/plan_commit/10k`) and what the plan unit tests
//! check end to end (the CAR verifies under the account's key). It runs the
//! same [`crate::plan::plan_commit`] every commit runs, on a lane with a
//! cold node cache, so every node on the written key's path is decoded
//! from the in-memory blocks.
//!
//! Determinism, for counting: the base commit's rev is far in the future
//! (year 2096), so the next rev is that rev plus one microsecond whatever
//! the clock says, and the commit's bytes, hashes and RFC 6979 signature
//! depend only on the inputs. The node-position map hashes with
//! [`repo::cid::CidBuildHasher`], which is not randomly seeded.

use std::sync::Arc;

use repo::Cid;
use repo::commit::UnsignedCommit;
use repo::crypto::Keypair;
use repo::mst::{MemoryBlockStore, Mst};
use repo::syntax::{Tid, TidGenerator, validate_did, validate_nsid, validate_record_key};

use repo::firehose::{Action, CommitEvent, Frame, RepoOp};

use super::SeqlessEvent;
use crate::WriteAction;
use crate::error::Result;
use crate::lane::{Head, Lane};
use crate::plan::plan_commit;
use crate::prepare::Prepared;

/// The base commit's rev timestamp: 2096-10-02, far past any clock this
/// runs under, so the planned rev never reads the clock's value.
const FUTURE_REV_MICROS: u64 = 4_000_000_000_000_000;

/// An account's repository held in memory: its blocks, its root, its key.
pub struct DetachedRepo {
    did: String,
    key: Arc<Keypair>,
    blocks: MemoryBlockStore,
    head: Head,
}

/// What [`DetachedRepo::plan_create`] computed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedCommit {
    /// The new signed commit's CID.
    pub commit: Cid,
    /// The new commit's rev.
    pub rev: String,
    /// The new MST root.
    pub data: Cid,
    /// The `#commit` event's CAR slice (commit, record, new nodes, proof).
    pub car: Vec<u8>,
    /// How many MST nodes the commit wrote.
    pub new_nodes: usize,
    /// The created record's path (`collection/rkey`) and CID.
    pub path: String,
    /// The created record's CID.
    pub record: Cid,
}

impl DetachedRepo {
    /// Builds `did`'s repository from `records` (`(collection, rkey,
    /// DAG-CBOR)`), signs its base commit with `key`.
    pub fn new(did: &str, key: Keypair, records: &[(&str, &str, Vec<u8>)]) -> Result<Self> {
        validate_did(did)?;
        let mut blocks = MemoryBlockStore::new();
        let mut mst = Mst::empty(MemoryBlockStore::new());
        for (collection, rkey, bytes) in records {
            validate_nsid(collection)?;
            validate_record_key(rkey)?;
            let cid = blocks.put_dag_cbor(bytes.clone());
            mst.insert(&format!("{collection}/{rkey}"), cid)?;
        }
        let built = mst.commit()?;
        for (cid, bytes) in built.new_blocks {
            blocks.put(cid, bytes);
        }
        let rev = Tid::from_parts(FUTURE_REV_MICROS, 0);
        let (commit, commit_bytes) = UnsignedCommit::new(did, built.root, rev)
            .sign(&key)
            .to_block();
        blocks.put(commit, commit_bytes);
        Ok(DetachedRepo {
            did: did.to_owned(),
            key: Arc::new(key),
            blocks,
            head: Head {
                commit,
                rev: rev.to_string(),
                data: built.root,
            },
        })
    }

    /// The base MST root.
    pub fn data(&self) -> Cid {
        self.head.data
    }

    /// Plans a commit that creates `collection/rkey` holding `record` (its
    /// CID computed here) on top of the base commit, which is left as it
    /// is: every call plans from the same base with a cold node cache.
    pub fn plan_create(
        &self,
        collection: &str,
        rkey: &str,
        record: Vec<u8>,
    ) -> Result<PlannedCommit> {
        validate_nsid(collection)?;
        validate_record_key(rkey)?;
        let path = format!("{collection}/{rkey}");
        let cid = Cid::for_dag_cbor(&record);
        let write = Prepared {
            action: WriteAction::Create,
            collection: collection.to_owned(),
            rkey: rkey.to_owned(),
            path: path.clone(),
            block: Some((cid, record)),
            blobs: Vec::new(),
            swap_record: None,
        };
        // A lane with no cached nodes: the whole path is decoded.
        let mut lane = Lane::new(&self.did, self.head.clone(), self.key.clone(), 0, 1 << 16);
        let tids = TidGenerator::new(0);
        let plan = plan_commit(
            &mut lane,
            &self.blocks,
            &tids,
            std::slice::from_ref(&write),
            None,
        )?;
        Ok(PlannedCommit {
            commit: plan.commit.0,
            rev: plan.rev,
            data: plan.result.commit.root,
            new_nodes: plan.result.commit.new_blocks.len(),
            car: plan.car,
            path,
            record: cid,
        })
    }

    /// The `#commit` event of `planned` (a create planned on this account
    /// by [`DetachedRepo::plan_create`]: its commit, CAR slice, one create
    /// op, `since` and `prevData` the base commit's), with its seq left to
    /// the writer that appends it. What the index-only write unit appends.
    pub fn commit_event(&self, planned: &PlannedCommit) -> Result<SeqlessEvent> {
        let time = crate::events::now_datetime();
        SeqlessEvent::new("#commit", |seq| {
            Frame::Commit(CommitEvent {
                seq,
                rebase: false,
                too_big: false,
                repo: &self.did,
                commit: planned.commit,
                rev: &planned.rev,
                since: Some(&self.head.rev),
                blocks: &planned.car,
                ops: vec![RepoOp {
                    action: Action::Create,
                    path: &planned.path,
                    cid: Some(planned.record),
                    prev: None,
                }],
                blobs: Vec::new(),
                prev_data: Some(self.head.data),
                time: &time,
            })
            .to_vec()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::StoreError;
    use repo::car::CarSlice;
    use repo::commit::CommitRef;
    use repo::crypto::Algorithm;

    fn record(i: usize) -> Vec<u8> {
        let json = serde_json::json!({
            "$type": "app.bsky.feed.post",
            "text": format!("post {i}"),
            "createdAt": "2024-06-01T00:00:00.000Z",
        });
        let value = repo::cbor::json::from_json_value(&json).expect("valid record");
        repo::cbor::to_vec(&value)
    }

    fn repo_of(n: usize) -> DetachedRepo {
        let key = Keypair::from_bytes(Algorithm::K256, &[7u8; 32]).expect("valid secret");
        let rkeys: Vec<String> = (0..n)
            .map(|i| Tid::from_parts(1_717_200_000_000_000 + i as u64 * 1000, 1).to_string())
            .collect();
        let records: Vec<(&str, &str, Vec<u8>)> = rkeys
            .iter()
            .enumerate()
            .map(|(i, r)| ("app.bsky.feed.post", r.as_str(), record(i)))
            .collect();
        DetachedRepo::new("did:plc:detachedplan0000000000", key, &records).expect("builds")
    }

    #[test]
    fn planned_commit_is_signed_and_its_car_covers_the_new_record() {
        let repo = repo_of(200);
        let rkey = Tid::from_parts(1_800_000_000_000_000, 3).to_string();
        let planned = repo
            .plan_create("app.bsky.feed.post", &rkey, record(999))
            .expect("plans");
        let next = Tid::from_parts(FUTURE_REV_MICROS + 1, 0).to_string();
        assert_eq!(
            planned.rev, next,
            "the rev follows the base rev, not the clock"
        );
        let car = CarSlice::parse(&planned.car, true).expect("CAR verifies");
        let commit = CommitRef::decode(car.get(&planned.commit).expect("commit block"))
            .expect("commit decodes");
        assert_eq!(commit.data, planned.data);
        assert_ne!(planned.data, repo.data(), "the tree changed");
        let key = Keypair::from_bytes(Algorithm::K256, &[7u8; 32]).expect("valid secret");
        commit
            .verify(&key.public_key())
            .expect("signed by the account key");
        let record_cid = Cid::for_dag_cbor(&record(999));
        assert!(
            car.get(&record_cid).is_some(),
            "the new record is in the CAR"
        );
        // The proof lets a consumer walk from the new root to the new key.
        let mut proof = MemoryBlockStore::new();
        for (cid, bytes) in &car.blocks {
            proof.put(*cid, bytes.to_vec());
        }
        let found = Mst::load(&proof, planned.data)
            .get(&format!("app.bsky.feed.post/{rkey}"))
            .expect("path is covered");
        assert_eq!(found, Some(record_cid));
    }

    /// The commit event's body, with any seq put back, is the `#commit`
    /// frame of the planned commit: it decodes, carries that seq, and
    /// verifies under the account's key.
    #[test]
    fn commit_event_takes_the_seq_and_verifies() {
        let repo = repo_of(20);
        let rkey = Tid::from_parts(1_800_000_000_000_000, 3).to_string();
        let planned = repo
            .plan_create("app.bsky.feed.post", &rkey, record(5))
            .expect("plans");
        let event = repo.commit_event(&planned).expect("prepares");
        assert_eq!(event.kind(), "#commit");
        let key = Keypair::from_bytes(Algorithm::K256, &[7u8; 32]).expect("valid secret");
        let keys = std::collections::HashMap::from([(repo.did.clone(), key.public_key())]);
        let mut body = Vec::new();
        for seq in [1i64, 23, 24, 255, 70_000, 1 << 40] {
            event.body_into(seq, &mut body);
            let mut frame = crate::events::frame_header("#commit");
            frame.extend_from_slice(&body);
            let decoded = Frame::decode(&frame).expect("decodes");
            // Canonical: re-encoding the decoded frame gives its bytes.
            assert_eq!(decoded.to_vec(), frame, "seq {seq}");
            let Frame::Commit(c) = decoded else {
                panic!("seq {seq}: not a #commit frame");
            };
            assert_eq!((c.seq, c.rev), (seq, planned.rev.as_str()));
            assert_eq!(c.ops[0].path, planned.path);
            assert_eq!(c.ops[0].cid, Some(planned.record));
            repo::firehose::verify_commit(&c, &keys).expect("verifies");
        }
        // A frame that differs in more than its seq is refused.
        let n = std::cell::Cell::new(0u8);
        let shifting = SeqlessEvent::new("#commit", |seq| {
            n.set(n.get() + 1);
            let mut f = crate::events::frame_header("#commit");
            let mut e = repo::cbor::Encoder::new(&mut f);
            e.map(2);
            e.text("n");
            e.int(i64::from(n.get()));
            e.text("seq");
            e.int(seq);
            f
        });
        assert!(matches!(shifting, Err(StoreError::InvalidEvent(_))));
    }

    #[test]
    fn planning_twice_gives_the_same_bytes() {
        let repo = repo_of(50);
        let rkey = Tid::from_parts(1_800_000_000_000_000, 3).to_string();
        let a = repo
            .plan_create("app.bsky.feed.post", &rkey, record(1))
            .expect("plans");
        let b = repo
            .plan_create("app.bsky.feed.post", &rkey, record(1))
            .expect("plans");
        assert_eq!(a, b);
    }

    #[test]
    fn bad_input_is_a_typed_error() {
        let repo = repo_of(3);
        let first = Tid::from_parts(1_717_200_000_000_000, 1).to_string();
        assert!(matches!(
            repo.plan_create("app.bsky.feed.post", &first, record(0)),
            Err(StoreError::RecordExists(_))
        ));
        assert!(
            repo.plan_create("not an nsid", "abc", record(0)).is_err(),
            "bad collection"
        );
        assert!(
            repo.plan_create("app.bsky.feed.post", "a/b", record(0))
                .is_err(),
            "bad rkey"
        );
    }
}
