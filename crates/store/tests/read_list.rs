//! listRecords pages against the reference rendering: every page (cursor,
//! reverse, limits) must be byte-identical to rendering each record's block
//! through `repo::cbor::decode` + `write_json`, in index order.

mod common;

use store::{ListOptions, RecordWrite, Store};

/// `{"uri":..,"cid":..,"value":..}` by the reference path.
fn reference(store: &Store, did: &str, coll: &str, rkey: &str) -> (String, String) {
    let (cid, bytes) = store.record_block(did, coll, rkey).unwrap().unwrap();
    let value = repo::cbor::decode(&bytes).unwrap();
    let mut json = format!("{{\"uri\":\"at://{did}/{coll}/{rkey}\",\"cid\":\"{cid}\",\"value\":");
    repo::cbor::json::write_json(&value, &mut json);
    json.push('}');
    (cid.to_string(), json)
}

#[test]
fn pages_match_reference_rendering() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::open(dir.path());
    let did = common::accounts(&store, 1).remove(0);
    let recs = datagen::store::records(3, 600);
    for chunk in recs.chunks(200) {
        let writes = chunk
            .iter()
            .map(|r| RecordWrite::create(r.collection, Some(&r.rkey), common::cbor(&r.value)))
            .collect();
        store.apply_writes(&did, writes, None).unwrap();
    }
    let mut colls: Vec<&str> = recs.iter().map(|r| r.collection).collect();
    colls.sort_unstable();
    colls.dedup();
    for coll in colls {
        let mut keys: Vec<&str> = recs
            .iter()
            .filter(|r| r.collection == coll)
            .map(|r| r.rkey.as_str())
            .collect();
        keys.sort_unstable();
        let expected: Vec<(String, String)> = keys
            .iter()
            .map(|k| reference(&store, &did, coll, k))
            .collect();
        // Cursors: none, every 13th key, and keys outside the range.
        let mut cursors: Vec<Option<&str>> = vec![None, Some("0"), Some("zzzzzzzzzzzzz")];
        cursors.extend(keys.iter().step_by(13).map(|k| Some(*k)));
        for reverse in [false, true] {
            for limit in [0usize, 1, 50, 100, 1000] {
                for cursor in &cursors {
                    let opts = ListOptions {
                        limit,
                        cursor: *cursor,
                        reverse,
                    };
                    let page = store.list_records(&did, coll, &opts).unwrap();
                    // Bounded in bytes: a prefix of the page, at least one
                    // record, stopping at the first that reaches the bound.
                    let within = store.list_records_within(&did, coll, &opts, 2000).unwrap();
                    let mut sum = 0;
                    let cut = page
                        .iter()
                        .position(|r| {
                            sum += r.json.len();
                            sum >= 2000
                        })
                        .map_or(page.len(), |i| i + 1);
                    assert_eq!(within, page[..cut], "{coll} {opts:?} within 2000 bytes");
                    let n = match limit {
                        0 => 50,
                        n => n.min(100),
                    };
                    let mut want: Vec<usize> = (0..keys.len())
                        .filter(|&i| match cursor {
                            None => true,
                            Some(c) if reverse => keys[i] > *c,
                            Some(c) => keys[i] < *c,
                        })
                        .collect();
                    if !reverse {
                        want.reverse();
                    }
                    want.truncate(n);
                    assert_eq!(page.len(), want.len(), "{coll} {opts:?}");
                    for (v, &i) in page.iter().zip(&want) {
                        assert_eq!(v.rkey, keys[i]);
                        assert_eq!(v.cid.to_string(), expected[i].0);
                        assert_eq!(v.json, expected[i].1);
                    }
                }
            }
        }
    }
}
