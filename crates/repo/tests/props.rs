//! Property tests: canonical MST shape under any insertion/deletion order,
//! DAG-CBOR round trips of random values, and decoders that never panic on
//! random bytes.

use proptest::prelude::*;
use repo::Cid;
use repo::cbor::{self, Map, Value, json};
use repo::mst::{MemoryBlockStore, Mst};

fn key_strategy() -> impl Strategy<Value = String> {
    (
        prop::sample::select(vec![
            "app.bsky.feed.post",
            "app.bsky.feed.like",
            "com.example.x",
        ]),
        "[a-z2-7]{1,13}",
    )
        .prop_map(|(c, r)| format!("{c}/{r}"))
}

fn leaf(i: u32) -> Cid {
    Cid::for_raw(&i.to_be_bytes())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// The same key set reached through any order of inserts, with extra keys
    /// inserted and deleted along the way, and with commits and lazy reloads
    /// in between, has one root CID.
    #[test]
    fn mst_shape_is_order_independent(
        keys in prop::collection::btree_set(key_strategy(), 0..120),
        extra in prop::collection::btree_set(key_strategy(), 0..40),
        seed in any::<u64>(),
    ) {
        let keys: Vec<String> = keys.into_iter().collect();
        let extra: Vec<String> = extra.into_iter().filter(|e| !keys.contains(e)).collect();
        let want = {
            let mut sorted = keys.clone();
            sorted.sort();
            let mut m = Mst::empty(MemoryBlockStore::new());
            for k in &sorted {
                let i = keys.iter().position(|x| x == k).unwrap() as u32;
                m.insert(k, leaf(i)).unwrap();
            }
            m.commit().unwrap().root
        };
        // A seeded shuffle of inserts (final values), extra inserts and
        // their deletes (each delete after its insert).
        let mut rng = seed;
        let mut next = || { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; rng };
        let mut ops: Vec<(bool, String, u32)> = Vec::new();
        for (i, k) in keys.iter().enumerate() {
            // Sometimes write a stale value first, then the final one.
            if next() % 4 == 0 {
                ops.push((true, k.clone(), 999_999));
            }
            ops.push((true, k.clone(), i as u32));
        }
        for k in &extra {
            ops.push((true, k.clone(), 7));
            ops.push((false, k.clone(), 0));
        }
        // Fisher-Yates, then repair per-key order (stale before final,
        // insert before delete) by stable-sorting each key's ops in place.
        for i in (1..ops.len()).rev() {
            let j = (next() % (i as u64 + 1)) as usize;
            ops.swap(i, j);
        }
        let mut by_key: std::collections::HashMap<String, Vec<usize>> = Default::default();
        for (i, op) in ops.iter().enumerate() {
            by_key.entry(op.1.clone()).or_default().push(i);
        }
        let orig = ops.clone();
        for (k, slots) in by_key {
            let mut mine: Vec<(bool, String, u32)> =
                orig.iter().filter(|o| o.1 == k).cloned().collect();
            // Inserts with the stale value first, the final one next,
            // deletes last.
            mine.sort_by_key(|o| (!o.0, o.2 != 999_999));
            for (slot, op) in slots.into_iter().zip(mine) {
                ops[slot] = op;
            }
        }
        let mut store = MemoryBlockStore::new();
        let mut m = Mst::empty(MemoryBlockStore::new());
        for (n, (put, k, v)) in ops.iter().enumerate() {
            if *put {
                m.insert(k, leaf(*v)).unwrap();
            } else {
                prop_assert!(m.delete(k).unwrap().is_some());
            }
            if n % 17 == 16 {
                // Commit, persist, and continue from a lazy reload.
                let c = m.commit().unwrap();
                m.source_mut().extend(c.new_blocks.clone());
                store.extend(c.new_blocks);
                let cache = std::mem::replace(&mut m, Mst::empty(MemoryBlockStore::new())).into_cache();
                m = Mst::with_cache(store.clone(), c.root, cache);
            }
        }
        let c = m.commit().unwrap();
        prop_assert_eq!(c.root, want);
        store.extend(c.new_blocks);
        let mut fresh = Mst::load(store, c.root);
        prop_assert_eq!(fresh.check_structure().unwrap(), keys.len());
    }
}

fn value_strategy() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::Int),
        ".{0,20}".prop_map(Value::Text),
        prop::collection::vec(any::<u8>(), 0..40).prop_map(Value::Bytes),
        any::<[u8; 32]>().prop_map(|d| Value::Link(Cid::new(repo::Codec::DagCbor, d))),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::List),
            prop::collection::vec(("[a-zA-Z0-9_]{0,10}", inner), 0..8)
                .prop_map(|kv| Value::Map(kv.into_iter().collect::<Map>())),
        ]
    })
}

/// JSON documents that reach every branch of the atproto JSON parser:
/// plain values, floats, `$bytes` / `$link` / `$type` / blob objects,
/// well formed or not, nesting past `MAX_DEPTH`.
fn json_strategy() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::{Value as J, json};
    let cid = Cid::new(repo::Codec::Raw, [7; 32]).to_string();
    let leaf = prop_oneof![
        Just(J::Null),
        any::<bool>().prop_map(J::Bool),
        any::<i64>().prop_map(|i| json!(i)),
        any::<u64>().prop_map(|u| json!(u)),
        prop_oneof![Just(2.0f64), Just(1.5), Just(1e300), Just(-0.0)].prop_map(|f| json!(f)),
        ".{0,12}".prop_map(J::String),
        prop_oneof![Just("aGVsbG8"), Just("aGVsbG8="), Just("!!"), Just("")]
            .prop_map(|b| json!({"$bytes": b})),
        Just(json!({"$bytes": "aGk", "x": 1})),
        Just(json!({"$bytes": 5})),
        prop_oneof![Just(cid.clone()), Just("bafy-not".to_owned())]
            .prop_map(|l| json!({"$link": l})),
        Just(json!({"$link": cid.clone(), "x": 1})),
        Just(
            json!({"$type": "blob", "ref": {"$link": cid.clone()}, "mimeType": "image/png", "size": 3})
        ),
        Just(json!({"$type": "blob", "ref": {"$link": cid}, "mimeType": "image/png"})),
        prop_oneof![Just(json!("")), Just(json!(3)), Just(json!("app.x"))]
            .prop_map(|t| json!({"$type": t, "k": "v"})),
    ];
    leaf.prop_recursive(40, 256, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(J::Array),
            prop::collection::vec(("[a-z$]{0,4}", inner), 0..6)
                .prop_map(|kv| J::Object(kv.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// The by-value conversion gives what the borrowing one gives: the
    /// same value and DAG-CBOR bytes, or the same error at the same path.
    #[test]
    fn json_owned_conversion_matches_borrowed(inner in json_strategy(), wrap in any::<bool>()) {
        let doc = if wrap { serde_json::json!({"v": inner}) } else { inner };
        let borrowed = json::from_json_value(&doc);
        let owned = json::from_json_value_owned(doc);
        match (&borrowed, &owned) {
            (Ok(b), Ok(o)) => prop_assert_eq!(cbor::to_vec(b), cbor::to_vec(o)),
            _ => prop_assert_eq!(&borrowed, &owned),
        }
    }

    #[test]
    fn cbor_round_trips(v in value_strategy()) {
        let bytes = cbor::to_vec(&v);
        let borrowed = cbor::decode(&bytes).unwrap();
        prop_assert_eq!(&borrowed.to_owned_value(), &v);
        prop_assert_eq!(&cbor::decode_owned(&bytes).unwrap(), &v);
        prop_assert_eq!(cbor::to_vec_ref(&borrowed), bytes);
        // JSON round trip (top level wrapped in a map, as records are).
        let mut top = Map::new();
        top.insert("v", v.clone());
        let top = Value::Map(top);
        let text = json::value_to_json(&top);
        prop_assert_eq!(json::from_json_str(&text).unwrap(), top);
    }

    #[test]
    fn decoders_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = cbor::decode(&bytes);
        let _ = cbor::decode_owned(&bytes);
        let _ = cbor::decode_prefix(&bytes);
        let _ = repo::mst::Node::decode(&bytes);
        let _ = repo::commit::CommitRef::decode(&bytes);
        let _ = repo::firehose::Frame::decode(&bytes);
        let _ = repo::car::CarSlice::parse(&bytes, true);
        if let Ok(r) = repo::car::CarReader::new(&bytes[..]) {
            for b in r.verify(true) { if b.is_err() { break; } }
        }
        let _ = Cid::from_bytes(&bytes);
        let s = String::from_utf8_lossy(&bytes);
        let _ = Cid::parse_str(&s);
        let _ = json::from_json_str(&s);
        for f in [
            repo::syntax::validate_did, repo::syntax::validate_handle,
            repo::syntax::validate_nsid, repo::syntax::validate_at_uri,
            repo::syntax::validate_datetime, repo::syntax::validate_tid,
            repo::syntax::validate_record_key, repo::syntax::validate_language,
            repo::syntax::validate_uri, repo::syntax::validate_cid_syntax,
        ] {
            let _ = f(&s);
        }
        let _ = repo::crypto::PublicKey::from_did_key(&s);
    }

    /// Structured noise: valid CBOR heads in random order reach deeper
    /// decoder paths than uniform bytes.
    #[test]
    fn decoders_never_panic_on_cbor_shaped_noise(
        parts in prop::collection::vec(prop_oneof![
            Just(vec![0xa2u8]), Just(vec![0x82]), Just(vec![0x61, b'e']), Just(vec![0x61, b'l']),
            Just(vec![0x61, b'k']), Just(vec![0x61, b'p']), Just(vec![0x61, b't']), Just(vec![0x61, b'v']),
            Just(vec![0xa4]), Just(vec![0xf6]), Just(vec![0x00]), Just(vec![0x41, b'a']),
            Just(vec![0xd8, 0x2a, 0x58, 0x25, 0x00, 0x01, 0x71, 0x12, 0x20]),
            prop::collection::vec(any::<u8>(), 0..4),
        ], 0..40)
    ) {
        let bytes: Vec<u8> = parts.concat();
        let _ = cbor::decode(&bytes);
        let _ = repo::mst::Node::decode(&bytes);
        let _ = repo::firehose::Frame::decode(&bytes);
        let _ = repo::commit::CommitRef::decode(&bytes);
    }
}
