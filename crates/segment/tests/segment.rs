//! Writer, recovery, seal and reader behaviour, plus corruption and fuzz
//! properties of the file format.

use std::fs::OpenOptions;
use std::path::Path;

use proptest::prelude::*;
use segment::{Backfill, Error, Event, EventRef, Kind, Segment, Writer, WriterOptions};

fn event(seq: u64) -> Event {
    let kinds = [
        Kind::Create,
        Kind::Update,
        Kind::Delete,
        Kind::Identity,
        Kind::Account,
        Kind::Sync,
        Kind::CreateResync,
    ];
    let kind = kinds[(seq % 7) as usize];
    let record = matches!(
        kind,
        Kind::Create | Kind::Update | Kind::Delete | Kind::CreateResync
    );
    Event {
        seq,
        witnessed_at: 1_700_000_000_000_000 + seq as i64 * 10,
        indexed_at: if seq.is_multiple_of(3) {
            0
        } else {
            1_700_000_000_000_000 + seq as i64 * 9
        },
        kind,
        did: format!("did:plc:{:024}", seq % 37),
        collection: if record {
            [
                "app.bsky.feed.like",
                "app.bsky.feed.post",
                "app.bsky.graph.follow",
            ][(seq % 3) as usize]
                .into()
        } else {
            String::new()
        },
        rkey: if record {
            format!("3l{seq:011}")
        } else {
            String::new()
        },
        rev: if record {
            format!("3r{seq:011}")
        } else {
            String::new()
        },
        payload: if kind == Kind::Delete {
            Vec::new()
        } else {
            vec![(seq % 251) as u8; (seq % 97) as usize]
        },
    }
}

fn events(n: u64) -> Vec<Event> {
    (1..=n).map(event).collect()
}

fn opts(block_events: usize) -> WriterOptions {
    WriterOptions {
        block_events,
        sync: false,
    }
}

fn write(path: &Path, evs: &[Event], block_events: usize) -> segment::Sealed {
    let mut w = Writer::create(path, opts(block_events)).unwrap();
    for e in evs {
        w.append_live(&e.as_ref()).unwrap();
    }
    w.seal().unwrap()
}

#[test]
fn multi_block_round_trip_with_lookup_and_collections() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jss");
    let evs = events(1000);
    let sealed = write(&path, &evs, 128);
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
    let sealed = write(&path, &[], 16);
    assert_eq!(sealed.header.block_count, 0);
    let seg = Segment::open(&path).unwrap();
    assert!(seg.events().unwrap().is_empty());
    assert!(seg.find_did("did:plc:x").unwrap().is_empty());
    assert!(Segment::open_unchecked(&path).is_ok());
}

#[test]
fn append_validates() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = Writer::create(dir.path().join("v.jss"), opts(4)).unwrap();
    w.append(&event(5).as_ref()).unwrap();
    assert!(matches!(
        w.append(&event(5).as_ref()),
        Err(Error::SeqOrder { .. })
    ));
    let mut back = event(6);
    back.witnessed_at = 0;
    assert!(matches!(
        w.append(&back.as_ref()),
        Err(Error::WitnessedOrder { .. })
    ));
    let mut long = event(7);
    long.rkey = "x".repeat(256);
    assert!(matches!(
        w.append(&long.as_ref()),
        Err(Error::FieldTooLong { field: "rkey", .. })
    ));
    long.rkey.clear();
    long.did = "d".repeat(65_536);
    assert!(matches!(
        w.append(&long.as_ref()),
        Err(Error::FieldTooLong { field: "did", .. })
    ));
    // Rejected events left no trace: 7 is still accepted.
    w.append(&event(7).as_ref()).unwrap();
    assert!(
        Writer::create(dir.path().join("v.jss"), opts(4)).is_err(),
        "create over an existing file"
    );
}

#[test]
fn errors_are_sticky() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = Writer::create(dir.path().join("s.jss"), opts(2)).unwrap();
    w.append(&event(1).as_ref()).unwrap();
    let first = w.prepare().unwrap().unwrap();
    w.append(&event(2).as_ref()).unwrap();
    let second = w.prepare().unwrap().unwrap();
    let mut zc = segment::Compressor::new().unwrap();
    let c2 = second.compress(&mut zc).unwrap();
    assert!(matches!(
        w.commit(c2),
        Err(Error::CommitOrder {
            expected: 0,
            got: 1
        })
    ));
    let c1 = first.compress(&mut zc).unwrap();
    assert!(matches!(w.commit(c1), Err(Error::Sticky(_))));
    assert!(matches!(
        w.append(&event(3).as_ref()),
        Err(Error::Sticky(_))
    ));
    assert!(w.seal().is_err());
}

#[test]
fn sealed_file_cannot_be_reopened_for_writing_and_active_cannot_be_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jss");
    write(&path, &events(10), 4);
    assert!(matches!(Writer::open(&path, opts(4)), Err(Error::Sealed)));
    let active = dir.path().join("a.jss");
    let mut w = Writer::create(&active, opts(4)).unwrap();
    w.append_live(&event(1).as_ref()).unwrap();
    w.flush().unwrap();
    assert!(matches!(Segment::open(&active), Err(Error::NotSealed)));
    assert!(matches!(
        Segment::open_unchecked(&active),
        Err(Error::NotSealed)
    ));
}

#[test]
fn torn_tails_are_truncated_on_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let evs = events(40);
    let base = dir.path().join("base.jss");
    let mut w = Writer::create(&base, opts(10)).unwrap();
    for e in &evs[..30] {
        w.append_live(&e.as_ref()).unwrap();
    }
    drop(w);
    let good = std::fs::read(&base).unwrap();
    let mut w = Writer::open(&base, opts(10)).unwrap();
    assert_eq!(w.block_count(), 3);
    assert_eq!(w.last_seq(), 30);
    w.append_live(&evs[30].as_ref()).unwrap();
    w.flush().unwrap();
    drop(w);
    let longer = std::fs::read(&base).unwrap();
    let tails: Vec<Vec<u8>> = (good.len() + 1..longer.len())
        .map(|cut| longer[..cut].to_vec())
        .chain([
            [good.clone(), vec![0u8; 100]].concat(),
            [good.clone(), vec![0xff; 5]].concat(),
            {
                // A complete-looking frame full of garbage.
                let mut t = longer.clone();
                let n = t.len();
                t[n - 6] ^= 0x55;
                t
            },
        ])
        .collect();
    for (i, torn) in tails.iter().enumerate() {
        let path = dir.path().join(format!("torn{i}.jss"));
        std::fs::write(&path, torn).unwrap();
        let mut w = Writer::open(&path, opts(10)).unwrap();
        assert_eq!(w.block_count(), 3, "tail {i}");
        assert_eq!(w.last_seq(), 30, "tail {i}");
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            good.len() as u64,
            "tail {i}"
        );
        for e in &evs[30..] {
            w.append_live(&e.as_ref()).unwrap();
        }
        w.seal().unwrap();
        assert_eq!(
            Segment::open(&path).unwrap().events().unwrap(),
            evs,
            "tail {i}"
        );
    }
}

#[test]
fn backfill_sync_and_async_write_the_same_events() {
    let dir = tempfile::tempdir().unwrap();
    let evs = events(5000);
    let refs: Vec<EventRef<'_>> = evs.iter().map(Event::as_ref).collect();
    for workers in [0, 1, 4] {
        let path = dir.path().join(format!("b{workers}.jss"));
        let mut b = Backfill::new(Writer::create(&path, opts(256)).unwrap(), workers).unwrap();
        for batch in refs.chunks(1024) {
            b.append_batch(batch).unwrap();
        }
        let w = b.finish().unwrap();
        assert_eq!(w.block_count(), 20);
        w.seal().unwrap();
        let seg = Segment::open(&path).unwrap();
        assert_eq!(seg.header().block_count, 20, "workers {workers}");
        assert_eq!(seg.events().unwrap(), evs, "workers {workers}");
    }
}

#[test]
fn every_header_index_and_footer_corruption_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jss");
    let sealed = write(&path, &events(300), 64);
    let bytes = std::fs::read(&path).unwrap();
    let footer = sealed.header.footer_offset as usize;
    let bad = dir.path().join("bad.jss");
    for i in (0..256).chain(footer..bytes.len()) {
        for bit in [0, 3, 7] {
            let mut b = bytes.clone();
            b[i] ^= 1 << bit;
            std::fs::write(&bad, &b).unwrap();
            assert!(Segment::open(&bad).is_err(), "flip {i}:{bit} not caught");
        }
    }
    // Appended garbage moves EOF away from the footer's end.
    std::fs::write(&bad, [bytes.clone(), vec![0]].concat()).unwrap();
    assert!(Segment::open(&bad).is_err());
}

#[test]
fn block_corruption_fails_that_block_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jss");
    let evs = events(300);
    let sealed = write(&path, &evs, 64);
    let bytes = std::fs::read(&path).unwrap();
    let footer = sealed.header.footer_offset as usize;
    let bad = dir.path().join("bad.jss");
    for i in (256..footer).step_by(7) {
        let mut b = bytes.clone();
        b[i] ^= 0x20;
        std::fs::write(&bad, &b).unwrap();
        // Blocks are covered by zstd's checksum, not the header's: the
        // checked open succeeds, reading the damaged block fails.
        let seg = Segment::open(&bad).unwrap();
        // A flip fails exactly the block it hits, unless it lands in a
        // frame-header bit that does not change the decoded data (e.g. the
        // window size): then every block still decodes to its events.
        let mut failed = 0;
        for k in 0..seg.block_count() {
            match seg.decode_block(k) {
                Ok(got) => assert_eq!(
                    got,
                    evs[k * 64..(k * 64 + 64).min(evs.len())],
                    "flip at {i}"
                ),
                Err(_) => failed += 1,
            }
        }
        assert!(failed <= 1, "flip at {i} failed {failed} blocks");
    }
}

#[test]
fn hostile_frames_are_rejected_without_allocating() {
    // Frame header claiming 2^40 bytes of content, then one raw block.
    let mut frame = vec![0x28, 0xb5, 0x2f, 0xfd, 0b1110_0100];
    frame.extend_from_slice(&(1u64 << 40).to_le_bytes());
    frame.extend_from_slice(&[0x01, 0x00, 0x00]);
    assert!(segment::decode_block(&frame).is_err());
    // Content size 1 GiB with a few bytes of input.
    let mut frame = vec![0x28, 0xb5, 0x2f, 0xfd, 0b1110_0100];
    frame.extend_from_slice(&(1u64 << 30).to_le_bytes());
    frame.extend_from_slice(&[0x03, 0x00, 0x00, 0x00]);
    assert!(segment::decode_block(&frame).is_err());
}

fn body_frame(body: &[u8]) -> Vec<u8> {
    zstd::bulk::Compressor::new(3)
        .and_then(|mut c| {
            c.include_checksum(true)?;
            c.compress(body)
        })
        .unwrap()
}

#[test]
fn hostile_bodies_are_rejected() {
    // 262,145 events claimed.
    assert!(segment::decode_block(&body_frame(&262_145u32.to_le_bytes())).is_err());
    // Events claimed but no columns.
    assert!(segment::decode_block(&body_frame(&3u32.to_le_bytes())).is_err());
    // Zero events is legal; a trailing byte is not.
    assert!(
        segment::decode_block(&body_frame(&0u32.to_le_bytes()))
            .unwrap()
            .is_empty()
    );
    assert!(segment::decode_block(&body_frame(&[0, 0, 0, 0, 1])).is_err());
    // A bad kind.
    let e = event(1);
    let frame = segment::encode_block(&[e.as_ref()]).unwrap();
    let mut body = zstd::decode_all(&frame[..]).unwrap();
    body[4 + 24] = 9;
    assert!(matches!(
        segment::decode_block(&body_frame(&body)),
        Err(Error::InvalidKind(9))
    ));
    body[4 + 24] = 0;
    assert!(matches!(
        segment::decode_block(&body_frame(&body)),
        Err(Error::InvalidKind(0))
    ));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn random_frames_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = segment::decode_block(&bytes);
        let _ = segment::Bloom::decode(&bytes);
        let _ = segment::Header::decode(&bytes);
    }

    #[test]
    fn random_bodies_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let _ = segment::decode_block(&body_frame(&bytes));
    }

    #[test]
    fn flipped_blocks_never_panic(seed in 0u64..1000, flips in proptest::collection::vec((any::<usize>(), 0u8..8), 1..4)) {
        let evs = events(1 + seed % 50);
        let refs: Vec<EventRef<'_>> = evs.iter().map(Event::as_ref).collect();
        let frame = segment::encode_block(&refs).unwrap();
        let mut body = zstd::decode_all(&frame[..]).unwrap();
        let mut bad = frame.clone();
        for (i, bit) in &flips {
            let n = bad.len();
            bad[i % n] ^= 1 << bit;
            let m = body.len();
            body[i % m] ^= 1 << bit;
        }
        let _ = segment::decode_block(&bad);
        let _ = segment::decode_block(&body_frame(&body));
    }

    #[test]
    fn random_files_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..1024), magic in any::<bool>()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jss");
        let mut bytes = bytes;
        if magic && bytes.len() >= 4 {
            bytes[..4].copy_from_slice(b"jss0");
        }
        std::fs::write(&path, &bytes).unwrap();
        let _ = Segment::open(&path);
        if let Ok(seg) = Segment::open_unchecked(&path) {
            for i in 0..seg.block_count().min(4) {
                let _ = seg.decode_block(i);
                let _ = seg.block_bloom(i);
            }
            let _ = seg.find_did("did:plc:a");
        }
        let _ = Writer::open(&path, opts(8));
    }

    #[test]
    fn random_headers_never_panic(
        fields in proptest::collection::vec(any::<u64>(), 13),
        small in proptest::collection::vec(0u64..2048, 13),
        pick in proptest::collection::vec(any::<bool>(), 13),
        tail in proptest::collection::vec(any::<u8>(), 0..1024),
    ) {
        // Header fields either arbitrary or small (so offsets often land in
        // the file and the deeper checks run).
        let f: Vec<u64> = (0..13).map(|i| if pick[i] { fields[i] } else { small[i] }).collect();
        let h = segment::Header {
            checksum: f[0] | 1,
            block_count: f[1] as u32,
            event_count: f[2] as u32,
            unique_did_count: f[3] as u32,
            min_seq: f[4],
            max_seq: f[5],
            min_witnessed_at: f[6] as i64,
            max_witnessed_at: f[7] as i64,
            footer_offset: f[8],
            did_bloom_offset: f[9],
            block_did_bloom_offset: f[10],
            collection_index_offset: f[11],
            block_index_offset: if pick[12] { f[8] } else { f[12] },
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.jss");
        std::fs::write(&path, [h.encode().to_vec(), tail].concat()).unwrap();
        let _ = Segment::open(&path);
        if let Ok(seg) = Segment::open_unchecked(&path) {
            for i in 0..seg.block_count().min(3) {
                let _ = seg.decode_block(i);
                let _ = seg.block_bloom(i);
            }
            let _ = seg.did_bloom();
            let _ = seg.find_did("did:plc:a");
        }
    }

    #[test]
    fn flipped_sealed_files_never_panic(flips in proptest::collection::vec((any::<usize>(), 0u8..8), 1..6)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jss");
        write(&path, &events(64), 16);
        let mut bytes = std::fs::read(&path).unwrap();
        for (i, bit) in &flips {
            let n = bytes.len();
            bytes[i % n] ^= 1 << bit;
        }
        let bad = dir.path().join("bad.jss");
        std::fs::write(&bad, &bytes).unwrap();
        let _ = Segment::open(&bad).and_then(|s| s.events());
        if let Ok(seg) = Segment::open_unchecked(&bad) {
            for i in 0..seg.block_count() {
                let _ = seg.decode_block(i);
                let _ = seg.block_bloom(i);
            }
            let _ = seg.find_did("did:plc:000000000000000000000001");
        }
        let _ = OpenOptions::new().read(true).open(&bad);
    }
}

#[test]
fn a_seal_interrupted_before_the_header_write_recovers() {
    // Seal writes the footer, fsyncs, then the header. A crash between the
    // two leaves an active file (checksum 0) with a footer after its blocks:
    // reopening truncates it as a torn tail and the writer can seal again.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jss");
    let evs = events(100);
    let sealed = write(&path, &evs, 32);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[..256].copy_from_slice(&segment::Header::active_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let mut w = Writer::open(&path, opts(32)).unwrap();
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        sealed.header.footer_offset
    );
    assert_eq!(w.block_count(), 4);
    assert_eq!(w.last_seq(), 100);
    w.append_live(&event(101).as_ref()).unwrap();
    w.seal().unwrap();
    let all = events(101);
    assert_eq!(Segment::open(&path).unwrap().events().unwrap(), all);
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
            write(&p, evs, 4);
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
