//! Conformance: the upstream golden block and sealed segment decode to
//! exactly the events the fixture README lists, and a segment we write from
//! those events reopens (checked) to the same events.

mod common;

use common::corpus;

use segment::{Event, EventRef, Kind, Segment};

#[allow(clippy::too_many_arguments)]
fn ev(
    seq: u64,
    witnessed_at: i64,
    indexed_at: i64,
    kind: Kind,
    did: &str,
    collection: &str,
    rkey: &str,
    rev: &str,
    payload: &[u8],
) -> Event {
    Event {
        seq,
        witnessed_at,
        indexed_at,
        kind,
        did: did.into(),
        collection: collection.into(),
        rkey: rkey.into(),
        rev: rev.into(),
        payload: payload.to_vec(),
    }
}

fn golden_block_events() -> Vec<Event> {
    vec![
        ev(
            1,
            1_700_000_000_000_000,
            0,
            Kind::Create,
            "did:plc:abcdefghijklmnopqrstuvwx",
            "app.bsky.feed.post",
            "3l3qo2vuowo2b",
            "3l3qo2vutsw2b",
            &[0xA1, 0x65, 0x68, 0x65, 0x6C, 0x6C, 0x6F, 0x05],
        ),
        ev(
            2,
            1_700_000_001_000_000,
            1_700_000_000_500_000,
            Kind::Identity,
            "did:web:example.com",
            "",
            "",
            "",
            &[],
        ),
        ev(
            3,
            1_700_000_002_000_000,
            0,
            Kind::Delete,
            "did:plc:zzzzzzzzzzzzzzzzzzzzzzzz",
            "app.bsky.feed.like",
            "3l3qo2vuowo2c",
            "3l3qo2vutsw2c",
            &[],
        ),
    ]
}

fn golden_seal_events() -> Vec<Event> {
    vec![
        ev(
            1,
            100,
            0,
            Kind::Create,
            "did:plc:a",
            "app.bsky.feed.post",
            "k1",
            "v1",
            b"p1",
        ),
        ev(
            2,
            200,
            250,
            Kind::Create,
            "did:plc:b",
            "app.bsky.feed.like",
            "k2",
            "v2",
            b"p2",
        ),
    ]
}

#[test]
fn golden_block_decodes_to_the_listed_events() {
    let frame = corpus("golden_block.bin");
    let events = segment::decode_block(&frame).expect("golden block decodes");
    assert_eq!(events, golden_block_events());
}

#[test]
fn golden_block_rejects_every_bit_flip() {
    let frame = corpus("golden_block.bin");
    for i in 0..frame.len() {
        for bit in 0..8 {
            let mut bad = frame.clone();
            bad[i] ^= 1 << bit;
            // Never panics; a flip either fails or (in a don't-care header
            // bit) still yields the same events.
            if let Ok(events) = segment::decode_block(&bad) {
                assert_eq!(
                    events,
                    golden_block_events(),
                    "flip {i}:{bit} changed the events"
                );
            }
        }
    }
}

#[test]
fn golden_seal_opens_checked_and_unchecked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("golden.jss");
    std::fs::write(&path, corpus("golden_seal.bin")).unwrap();
    let seg = Segment::open(&path).expect("golden seal opens checked");
    let h = seg.header();
    assert_eq!(
        (h.block_count, h.event_count, h.unique_did_count),
        (1, 2, 2)
    );
    assert_eq!((h.min_seq, h.max_seq), (1, 2));
    assert_eq!((h.min_witnessed_at, h.max_witnessed_at), (100, 200));
    assert_eq!(seg.events().unwrap(), golden_seal_events());
    assert_eq!(
        seg.find_did("did:plc:a").unwrap(),
        golden_seal_events()[..1]
    );
    assert_eq!(
        seg.find_did("did:plc:b").unwrap(),
        golden_seal_events()[1..]
    );
    assert_eq!(seg.blocks_for_did("did:plc:a").unwrap(), vec![0]);
    assert!(seg.find_did("did:plc:nobody").unwrap().is_empty());
    let coll = seg.collections().unwrap();
    assert_eq!(coll.blocks_with("app.bsky.feed.like"), vec![0]);
    assert_eq!(coll.entries.len(), 2);

    let unchecked = Segment::open_unchecked(&path).unwrap();
    assert_eq!(unchecked.decode_block(0).unwrap(), golden_seal_events());
    assert_eq!(
        unchecked.block_bloom(0).unwrap(),
        seg.block_bloom(0).unwrap()
    );
}

#[test]
fn our_blooms_match_the_golden_seal_byte_for_byte() {
    let bytes = corpus("golden_seal.bin");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("golden.jss");
    std::fs::write(&path, &bytes).unwrap();
    let seg = Segment::open(&path).unwrap();
    let mut ours = segment::Bloom::with_capacity(2);
    ours.insert(b"did:plc:a");
    ours.insert(b"did:plc:b");
    assert_eq!(seg.did_bloom().unwrap(), ours);
    let off = seg.header().did_bloom_offset as usize;
    assert_eq!(&bytes[off..off + 89], &ours.to_bytes()[..]);
}

#[test]
fn golden_seal_catches_every_header_and_footer_corruption() {
    let bytes = corpus("golden_seal.bin");
    let dir = tempfile::tempdir().unwrap();
    let footer = Segment::open({
        let p = dir.path().join("ok.jss");
        std::fs::write(&p, &bytes).unwrap();
        p
    })
    .unwrap()
    .header()
    .footer_offset as usize;
    let path = dir.path().join("bad.jss");
    let regions = (0..256).chain(footer..bytes.len());
    for i in regions {
        let mut bad = bytes.clone();
        bad[i] ^= 0x01;
        std::fs::write(&path, &bad).unwrap();
        assert!(Segment::open(&path).is_err(), "flip at byte {i} not caught");
    }
    for cut in [0, 10, 255, 256, footer, bytes.len() - 1] {
        std::fs::write(&path, &bytes[..cut]).unwrap();
        assert!(
            Segment::open(&path).is_err(),
            "truncation at {cut} not caught"
        );
    }
}

fn write_segment(path: &std::path::Path, events: &[Event], block_events: usize) {
    common::write_sealed(path, events, block_events, true);
}

#[test]
fn our_segment_of_the_golden_events_reopens_to_them() {
    let dir = tempfile::tempdir().unwrap();
    for (name, events, per_block) in [
        ("block.jss", golden_block_events(), 4096),
        ("seal.jss", golden_seal_events(), 2),
        ("block1.jss", golden_block_events(), 1),
    ] {
        let path = dir.path().join(name);
        write_segment(&path, &events, per_block);
        let seg = Segment::open(&path).unwrap();
        assert_eq!(seg.events().unwrap(), events, "{name}");
        for e in &events {
            let found = seg.find_did(&e.did).unwrap();
            assert!(found.contains(e), "{name}: {} not found", e.did);
        }
        // The sentinel of the identity event is indexed.
        if events.iter().any(|e| e.kind == Kind::Identity) {
            assert!(
                !seg.collections()
                    .unwrap()
                    .blocks_with("$identity")
                    .is_empty()
            );
        }
    }
}

#[test]
fn block_encode_round_trips_the_golden_events() {
    let events = golden_block_events();
    let refs: Vec<EventRef<'_>> = events.iter().map(Event::as_ref).collect();
    let frame = segment::encode_block(&refs).unwrap();
    assert_eq!(segment::decode_block(&frame).unwrap(), events);
}
