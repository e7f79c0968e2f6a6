//! The writer: append validation, sticky errors, sealed and active file
//! states, torn-tail and interrupted-seal recovery on reopen, and the
//! backfill writer with and without workers.

mod common;

use common::{event, events, opts, write_sealed};
use segment::{Backfill, Error, Event, EventRef, Segment, Writer};

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
    write_sealed(&path, &events(10), 4, false);
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
fn a_seal_interrupted_before_the_header_write_recovers() {
    // Seal writes the footer, fsyncs, then the header. A crash between the
    // two leaves an active file (checksum 0) with a footer after its blocks:
    // reopening truncates it as a torn tail and the writer can seal again.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jss");
    let evs = events(100);
    let sealed = write_sealed(&path, &evs, 32, false);
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
