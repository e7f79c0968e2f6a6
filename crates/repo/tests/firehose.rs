//! Frame round trips for every message type, and an end-to-end producer ->
//! verifier run: commits built with this crate's MST writes (new blocks plus
//! covering proofs) verify with `verify_commit`.

use std::collections::HashMap;

use repo::Cid;
use repo::car::write_car_vec;
use repo::cbor;
use repo::commit::UnsignedCommit;
use repo::crypto::{Algorithm, Keypair, PublicKey};
use repo::firehose::{
    AccountEvent, Action, CommitEvent, ErrorFrame, Frame, IdentityEvent, InfoEvent, RepoOp,
    SyncEvent, verify_commit,
};
use repo::mst::{MemoryBlockStore, Mst, WriteOp};
use repo::syntax::{Tid, TidGenerator};

#[test]
fn every_frame_type_round_trips() {
    let car = write_car_vec(&[Cid::for_dag_cbor(b"c")], []);
    let frames = [
        Frame::Sync(SyncEvent {
            seq: 7,
            did: "did:plc:abc",
            blocks: &car,
            rev: "3l3qo2vutsw2b",
            time: "2024-01-01T00:00:00.000Z",
        }),
        Frame::Identity(IdentityEvent {
            seq: 8,
            did: "did:plc:abc",
            time: "2024-01-01T00:00:00.000Z",
            handle: Some("alice.test"),
        }),
        Frame::Account(AccountEvent {
            seq: 9,
            did: "did:plc:abc",
            time: "2024-01-01T00:00:00.000Z",
            active: false,
            status: Some("takendown"),
        }),
        Frame::Info(InfoEvent {
            name: "OutdatedCursor",
            message: Some("cursor too old"),
        }),
        Frame::Error(ErrorFrame {
            error: "FutureCursor",
            message: None,
        }),
        Frame::Unknown {
            t: "#future",
            body: &[0xa1, 0x61, b'x', 0x01],
        },
    ];
    for f in &frames {
        let bytes = f.to_vec();
        assert_eq!(&Frame::decode(&bytes).unwrap(), f);
        // Header then body, each strict DAG-CBOR.
        let (_, used) = cbor::decode_prefix(&bytes).unwrap();
        assert!(cbor::decode(&bytes[used..]).is_ok());
    }
    // Unknown op, missing type, trailing bytes.
    assert!(Frame::decode(&[0xa1, 0x62, b'o', b'p', 0x02, 0xa0]).is_err());
    assert!(Frame::decode(&[0xa1, 0x62, b'o', b'p', 0x01, 0xa0]).is_err());
    let mut extra = frames[3].to_vec();
    extra.push(0);
    assert!(Frame::decode(&extra).is_err());
}

/// A PDS-side writer: applies ops, signs, and emits the #commit frame.
struct Producer {
    did: String,
    key: Keypair,
    store: MemoryBlockStore,
    root: Cid,
    rev: Option<Tid>,
    tids: TidGenerator,
    seq: i64,
}

impl Producer {
    fn new(alg: Algorithm) -> Self {
        let mut m = Mst::empty(MemoryBlockStore::new());
        let c = m.commit().unwrap();
        let mut store = MemoryBlockStore::new();
        store.extend(c.new_blocks);
        Producer {
            did: "did:plc:ewvi7nxzyoun6zhxrhs64oiz".into(),
            key: Keypair::from_bytes(alg, &[0x42; 32]).unwrap(),
            store,
            root: c.root,
            rev: None,
            tids: TidGenerator::new(5),
            seq: 0,
        }
    }

    /// Applies `ops` (`None` value = delete) and returns the frame bytes.
    fn write(&mut self, ops: &[(&str, Option<&str>)]) -> Vec<u8> {
        let mut records = Vec::new();
        let write_ops: Vec<WriteOp> = ops
            .iter()
            .map(|(key, text)| match text {
                Some(t) => {
                    let mut rec = cbor::Map::new();
                    rec.insert("$type", cbor::Value::Text("app.bsky.feed.post".into()));
                    rec.insert("text", cbor::Value::Text((*t).into()));
                    let bytes = cbor::to_vec(&cbor::Value::Map(rec));
                    let cid = Cid::for_dag_cbor(&bytes);
                    records.push((cid, bytes));
                    WriteOp::Put {
                        key: (*key).into(),
                        cid,
                    }
                }
                None => WriteOp::Delete { key: (*key).into() },
            })
            .collect();
        let prev_data = self.root;
        let mut tree = Mst::load(&self.store, self.root);
        let res = tree.apply(&write_ops).unwrap();
        let mut proof_blocks = Vec::new();
        for cid in &res.proof {
            proof_blocks.push((*cid, tree.node_bytes(cid).unwrap()));
        }
        drop(tree);
        self.store.extend(res.commit.new_blocks.clone());
        for (cid, bytes) in &records {
            self.store.put(*cid, bytes.clone());
        }
        self.root = res.commit.root;
        let rev = match self.rev {
            Some(prev) => self.tids.next_after(prev),
            None => self.tids.next_tid(),
        };
        let since = self.rev.map(|t| t.to_string());
        self.rev = Some(rev);
        let (commit_cid, commit_bytes) =
            UnsignedCommit::new(self.did.clone(), res.commit.root, rev)
                .sign(&self.key)
                .to_block();
        let mut blocks: Vec<(Cid, Vec<u8>)> = vec![(commit_cid, commit_bytes)];
        blocks.extend(records);
        blocks.extend(proof_blocks);
        let car = write_car_vec(&[commit_cid], blocks.iter().map(|(c, b)| (c, b.as_slice())));
        let rev_s = rev.to_string();
        let repo_ops: Vec<RepoOp<'_>> = ops
            .iter()
            .zip(&write_ops)
            .zip(&res.previous)
            .map(|(((path, _), op), prev)| RepoOp {
                action: match (op, prev) {
                    (WriteOp::Delete { .. }, _) => Action::Delete,
                    (WriteOp::Put { .. }, Some(_)) => Action::Update,
                    (WriteOp::Put { .. }, None) => Action::Create,
                },
                path,
                cid: match op {
                    WriteOp::Put { cid, .. } => Some(*cid),
                    WriteOp::Delete { .. } => None,
                },
                prev: *prev,
            })
            .collect();
        self.seq += 1;
        Frame::Commit(CommitEvent {
            seq: self.seq,
            rebase: false,
            too_big: false,
            repo: &self.did,
            commit: commit_cid,
            rev: &rev_s,
            since: since.as_deref(),
            blocks: &car,
            ops: repo_ops,
            blobs: Vec::new(),
            prev_data: Some(prev_data),
            time: "2024-01-01T00:00:00.000Z",
        })
        .to_vec()
    }
}

#[test]
fn produced_commits_verify_with_their_proofs() {
    for alg in [Algorithm::K256, Algorithm::P256] {
        let mut p = Producer::new(alg);
        let mut keys: HashMap<String, PublicKey> = HashMap::new();
        keys.insert(p.did.clone(), p.key.public_key());
        let mut frames = Vec::new();
        // Grow a repo, then updates, deletes, and mixed multi-op commits.
        for i in 0..300 {
            frames.push(p.write(&[(
                &format!("app.bsky.feed.post/{:013}", i * 37 % 1009),
                Some("hi"),
            )]));
        }
        frames.push(p.write(&[("app.bsky.feed.post/0000000000037", Some("edited"))]));
        frames.push(p.write(&[("app.bsky.feed.post/0000000000074", None)]));
        frames.push(p.write(&[
            ("app.bsky.feed.post/0000000000111", None),
            ("app.bsky.feed.like/3l3qo2vutsw2b", Some("like")),
            ("app.bsky.feed.post/0000000000148", Some("again")),
        ]));
        for (i, f) in frames.iter().enumerate() {
            let Frame::Commit(c) = Frame::decode(f).unwrap() else {
                panic!("frame {i} is not a commit");
            };
            verify_commit(&c, &keys).unwrap_or_else(|e| panic!("{alg:?} frame {i}: {e}"));
        }
        // The final tree is canonical.
        let mut tree = Mst::load(&p.store, p.root);
        // 300 posts, 2 deleted, 1 like added.
        assert_eq!(tree.check_structure().unwrap(), 299);
    }
}
