//! Corruption and hostile input: every header, index and footer flip is
//! caught, a block flip fails that block only, and hostile zstd frames and
//! block bodies are rejected without allocating.

mod common;

use common::{body_frame, event, events, write_sealed};
use segment::{Error, Segment};

#[test]
fn every_header_index_and_footer_corruption_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jss");
    let sealed = write_sealed(&path, &events(300), 64, false);
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
    let sealed = write_sealed(&path, &evs, 64, false);
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
