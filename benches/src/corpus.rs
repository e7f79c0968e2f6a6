//! The real inputs: records, frames and keys from the vendored jetstream
//! corpus (`crates/repo/tests/corpus/`), read by `--bench repo` and by the
//! inputs of its peer (`peers::repo_inputs`).

use std::collections::HashMap;

use repo::Cid;
use repo::car::{CarReader, CarSlice};
use repo::commit::CommitRef;
use repo::crypto::PublicKey;
use repo::firehose::Frame;
use repo::mst::{MemoryBlockStore, Mst};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../crates/repo/tests/corpus");

fn read(name: &str) -> Vec<u8> {
    let path = format!("{DIR}/{name}");
    std::fs::read(&path).unwrap_or_else(|e| panic!("bench input missing: {path}: {e}"))
}

fn read_zst(name: &str) -> Vec<u8> {
    zstd::decode_all(&read(name)[..]).unwrap_or_else(|e| panic!("{DIR}/{name}: {e}"))
}

/// Everything the repo benches read from the corpus.
pub struct Corpus {
    /// Raw relay frames, in capture order.
    pub commit_frames: Vec<Vec<u8>>,
    /// Signing keys of the commit authors.
    pub keys: HashMap<String, PublicKey>,
    /// `(tier, DAG-CBOR bytes)`: a like, a post and a profile record.
    pub records: Vec<(&'static str, Vec<u8>)>,
}

impl Corpus {
    /// Loads and checks the corpus.
    pub fn load() -> Corpus {
        let raw = read_zst("frames.bin.zst");
        let mut frames = Vec::new();
        let mut pos = 0;
        while pos + 4 <= raw.len() {
            let len = u32::from_le_bytes([raw[pos], raw[pos + 1], raw[pos + 2], raw[pos + 3]]);
            let end = pos + 4 + len as usize;
            frames.push(raw[pos + 4..end].to_vec());
            pos = end;
        }
        let docs: serde_json::Value = serde_json::from_slice(&read_zst("did_docs.json.zst"))
            .expect("did_docs.json.zst is JSON");
        let keys: HashMap<String, PublicKey> = docs
            .as_object()
            .expect("did docs object")
            .iter()
            .map(|(did, doc)| {
                let key = PublicKey::from_did_document(doc).expect("usable #atproto key");
                (did.clone(), key)
            })
            .collect();

        let mut like = None;
        let mut post = None;
        let mut commit_frames = Vec::new();
        for f in &frames {
            let Ok(Frame::Commit(c)) = Frame::decode(f) else {
                continue;
            };
            commit_frames.push(f.clone());
            let car = CarSlice::parse(c.blocks, true).expect("frame CAR");
            for op in &c.ops {
                let Some(block) = op.cid.and_then(|cid| car.get(&cid)) else {
                    continue;
                };
                if op.path.starts_with("app.bsky.feed.like/") && like.is_none() {
                    like = Some(block.to_vec());
                }
                if op.path.starts_with("app.bsky.feed.post/") && post.is_none() {
                    post = Some(block.to_vec());
                }
            }
        }
        assert_eq!(commit_frames.len(), 148, "corpus commit frame count");
        let records = vec![
            ("like", like.expect("a like in the corpus")),
            ("post", post.expect("a post in the corpus")),
            ("profile", profile_record()),
        ];
        Corpus {
            commit_frames,
            keys,
            records,
        }
    }
}

/// `app.bsky.actor.profile/self` from the corpus's `repo.car`.
fn profile_record() -> Vec<u8> {
    let car = read("repo.car");
    let reader = CarReader::new(&car[..])
        .expect("repo.car header")
        .verify(true);
    let root = reader.roots()[0];
    let mut store = MemoryBlockStore::new();
    for block in reader {
        let (cid, data) = block.expect("repo.car block");
        store.put(cid, data);
    }
    let commit = CommitRef::decode(store.get(&root).expect("commit block")).expect("commit");
    let data: Cid = commit.data;
    let cid = Mst::load(&store, data)
        .get("app.bsky.actor.profile/self")
        .expect("MST walk")
        .expect("profile record");
    store.get(&cid).expect("profile block").to_vec()
}
