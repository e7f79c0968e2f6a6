//! Delete compaction across segments: superseded creates are dropped, the
//! block topology is kept, untouched segments are not rewritten.

mod common;

use common::write_sealed;
use segment::{Event, Kind, Segment};

fn rec(seq: u64, kind: Kind, rkey: &str) -> Event {
    Event {
        seq,
        witnessed_at: seq as i64,
        indexed_at: 0,
        kind,
        did: "did:plc:c".into(),
        collection: "app.bsky.feed.like".into(),
        rkey: rkey.into(),
        rev: "r".into(),
        payload: if kind == Kind::Delete {
            vec![]
        } else {
            vec![1, 2, 3]
        },
    }
}

#[test]
fn delete_compaction_drops_superseded_creates_and_keeps_topology() {
    let dir = tempfile::tempdir().unwrap();
    // Segment 0: creates a..h (blocks of 4). Segment 1: untouched.
    // Segment 2: deletes of a, b, c, d (all of block 0 of segment 0) and of
    // z (never created), then a create of a again (after its delete: kept).
    let s0: Vec<Event> = ["a", "b", "c", "d", "e", "f", "g", "h"]
        .iter()
        .enumerate()
        .map(|(i, k)| rec(i as u64 + 1, Kind::Create, k))
        .collect();
    let s1: Vec<Event> = (9..13)
        .map(|q| rec(q, Kind::Create, &format!("x{q}")))
        .collect();
    let s2: Vec<Event> = vec![
        rec(13, Kind::Delete, "a"),
        rec(14, Kind::Delete, "b"),
        rec(15, Kind::Delete, "c"),
        rec(16, Kind::Delete, "d"),
        rec(17, Kind::Delete, "z"),
        rec(18, Kind::Create, "a"),
    ];
    let paths: Vec<_> = [&s0, &s1, &s2]
        .iter()
        .enumerate()
        .map(|(i, evs)| {
            let p = dir.path().join(format!("c{i}.jss"));
            write_sealed(&p, evs, 4, false);
            p
        })
        .collect();
    let untouched = std::fs::read(&paths[1]).unwrap();
    let stats = segment::compact::compact_deletes(&paths).unwrap();
    assert_eq!(stats.rewritten, 1);
    assert_eq!(stats.dropped, 4);
    assert_eq!(stats.kept, 8 + 4 + 6 - 4);
    assert_eq!(std::fs::read(&paths[1]).unwrap(), untouched);
    let seg0 = Segment::open(&paths[0]).unwrap();
    assert_eq!(seg0.block_count(), 2, "topology kept");
    assert!(seg0.decode_block(0).unwrap().is_empty());
    assert_eq!(seg0.decode_block(1).unwrap(), s0[4..]);
    assert_eq!(seg0.events().unwrap(), s0[4..]);
    assert_eq!(seg0.header().min_seq, 5);
    assert_eq!(seg0.find_did("did:plc:c").unwrap(), s0[4..]);
    assert_eq!(Segment::open(&paths[2]).unwrap().events().unwrap(), s2);
    assert!(!dir.path().join("c0.jss.compact.tmp").exists());
    // Idempotent.
    let again = segment::compact::compact_deletes(&paths).unwrap();
    assert_eq!(again.rewritten, 0);
}
