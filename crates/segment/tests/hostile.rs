//! The worst headers and footers the format can express: every count,
//! length and offset a reader takes from the file is checked against its
//! bound before it sizes an allocation (the limits table in `format`'s
//! docs), so each of these is a typed error, never an abort or a read of
//! the whole file.

mod common;

use std::fs::OpenOptions;
use std::path::Path;

use common::corpus;
use segment::{Error, Segment};

const EVENT_COUNT: usize = 0x12;
const FOOTER_OFFSET: usize = 58;

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(b)
}

fn golden_with(path: &Path, edit: impl FnOnce(&mut Vec<u8>)) {
    let mut bytes = corpus("golden_seal.bin");
    edit(&mut bytes);
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn a_header_claiming_four_billion_events_is_an_error_not_an_abort() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jss");
    golden_with(&path, |b| {
        b[EVENT_COUNT..EVENT_COUNT + 4].copy_from_slice(&[0xff; 4])
    });
    // Unchecked: nothing reads the footer, and `events` sizes its output
    // from what the blocks decode, not from the claim.
    let seg = Segment::open_unchecked(&path).expect("the layout is intact");
    assert_eq!(seg.events().expect("the blocks decode").len(), 2);
    // Checked: the claim disagrees with the block index.
    assert!(matches!(Segment::open(&path), Err(Error::Footer(_))));
}

#[test]
fn junk_after_a_sealed_segment_is_refused_without_reading_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tail.jss");
    std::fs::write(&path, corpus("golden_seal.bin")).unwrap();
    // A 40 GiB tail, sparse: reading it would take 40 GiB of memory.
    let file = OpenOptions::new().write(true).open(&path).unwrap();
    let len = file.metadata().unwrap().len();
    file.set_len(len + (40u64 << 30)).unwrap();
    match Segment::open(&path) {
        Err(Error::Footer(what)) => assert_eq!(what, "bytes after the collection index"),
        other => panic!("expected a footer error, got {other:?}"),
    }
    // Unchecked opens never read the footer; the blocks are still there.
    let seg = Segment::open_unchecked(&path).expect("the header's offsets are in the file");
    assert_eq!(seg.events().expect("blocks decode").len(), 2);
}

#[test]
fn a_collection_index_claiming_a_huge_body_is_refused_before_decoding() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("collections.jss");
    golden_with(&path, |b| {
        let at = u64_at(b, FOOTER_OFFSET + 24) as usize; // collection_index_offset
        b[at + 12..at + 16].copy_from_slice(&[0xff; 4]);
    });
    match Segment::open(&path) {
        Err(Error::Footer(what)) => {
            assert_eq!(what, "collection index larger than its counts allow")
        }
        other => panic!("expected a footer error, got {other:?}"),
    }
}

#[test]
fn a_bloom_region_claiming_huge_blooms_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("region.jss");
    golden_with(&path, |b| {
        let at = u64_at(b, FOOTER_OFFSET + 16) as usize; // block_did_bloom_offset
        b[at + 4..at + 8].copy_from_slice(&[0xff; 4]);
    });
    assert!(matches!(Segment::open(&path), Err(Error::Footer(_))));
    let seg = Segment::open_unchecked(&path).unwrap();
    assert!(matches!(seg.block_bloom(0), Err(Error::Footer(_))));
}

#[test]
fn a_block_index_entry_claiming_a_huge_frame_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("block.jss");
    golden_with(&path, |b| {
        let at = u64_at(b, FOOTER_OFFSET) as usize; // footer_offset: the block index
        b[at + 8..at + 12].copy_from_slice(&[0xff; 4]); // compressed_size
    });
    assert!(Segment::open(&path).is_err());
    let seg = Segment::open_unchecked(&path).unwrap();
    assert!(matches!(seg.decode_block(0), Err(Error::Footer(_))));
    assert!(seg.events().is_err());
}
