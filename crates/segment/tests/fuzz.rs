//! Fuzz properties of the file format: random and bit-flipped frames,
//! bodies, headers and files never panic a decoder, reader or writer.

mod common;

use std::fs::OpenOptions;

use common::{body_frame, events, opts, write_sealed};
use proptest::prelude::*;
use segment::{Event, EventRef, Segment, Writer};

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
        write_sealed(&path, &events(64), 16, false);
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
