//! Sealed segments read back: the multi-block round trip through the
//! checked and unchecked readers (DID lookup, collection index, blooms),
//! the empty segment, and short or foreign files rejected.

mod common;

use common::{events, opts, write_sealed};
use segment::{Error, Event, Segment, Writer};

#[test]
fn multi_block_round_trip_with_lookup_and_collections() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jss");
    let evs = events(1000);
    let sealed = write_sealed(&path, &evs, 128, false);
    assert_eq!(sealed.header.block_count, 8);
    assert_eq!(sealed.header.event_count, 1000);
    assert_eq!(sealed.header.unique_did_count, 37);
    for seg in [
        Segment::open(&path).unwrap(),
        Segment::open_unchecked(&path).unwrap(),
    ] {
        assert_eq!(seg.events().unwrap(), evs);
        for i in 0..seg.block_count() {
            let lo = i * 128;
            let hi = (lo + 128).min(evs.len());
            assert_eq!(seg.decode_block(i).unwrap(), evs[lo..hi]);
        }
        assert!(matches!(
            seg.decode_block(8),
            Err(Error::NoSuchBlock { .. })
        ));
        let did = "did:plc:000000000000000000000005";
        let want: Vec<Event> = evs.iter().filter(|e| e.did == did).cloned().collect();
        assert_eq!(seg.find_did(did).unwrap(), want);
        assert!(seg.find_did("did:plc:absent").unwrap().is_empty());
    }
    let seg = Segment::open(&path).unwrap();
    let coll = seg.collections().unwrap();
    assert_eq!(coll.blocks_with("app.bsky.feed.post").len(), 8);
    assert_eq!(coll.blocks_with("$sync").len(), 8);
    assert!(coll.blocks_with("app.nothing").is_empty());
    let likes = evs
        .iter()
        .filter(|e| e.collection == "app.bsky.feed.like")
        .count();
    let entry = coll
        .entries
        .iter()
        .find(|e| e.nsid == "app.bsky.feed.like")
        .unwrap();
    assert_eq!(entry.count as usize, likes);
    // Per-block blooms share one size, sized for the largest block.
    let b0 = seg.block_bloom(0).unwrap();
    let b7 = seg.block_bloom(7).unwrap();
    assert_eq!(b0.num_blocks(), b7.num_blocks());
}

#[test]
fn empty_segment_seals_and_opens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("e.jss");
    let sealed = write_sealed(&path, &[], 16, false);
    assert_eq!(sealed.header.block_count, 0);
    let seg = Segment::open(&path).unwrap();
    assert!(seg.events().unwrap().is_empty());
    assert!(seg.find_did("did:plc:x").unwrap().is_empty());
    assert!(Segment::open_unchecked(&path).is_ok());
}

#[test]
fn open_rejects_short_and_foreign_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.jss");
    for bytes in [
        vec![],
        b"jss0".to_vec(),
        vec![0u8; 300],
        [b"jss1".to_vec(), vec![0; 300]].concat(),
    ] {
        std::fs::write(&path, &bytes).unwrap();
        assert!(Segment::open(&path).is_err());
        assert!(Segment::open_unchecked(&path).is_err());
        assert!(Writer::open(&path, opts(8)).is_err());
    }
    assert!(matches!(
        Segment::open(dir.path().join("missing")),
        Err(Error::Io { .. })
    ));
}
