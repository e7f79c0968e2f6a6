//! A WAL that grew while a reader pinned it is truncated back once the
//! reader goes and later writes land (issue 34, reproduction 3: "the file
//! never shrinks back"). No response of the server holds a read
//! transaction across a stall any more (`wal_bound.rs`), so the pinning
//! reader here is another SQLite connection to the store file, as a
//! backup tool or an open `sqlite3` shell would be. The store's writer
//! sets `journal_size_limit` (64 MiB): the rewind after the reader goes
//! cuts the file back to it. Its own test binary: it reads the WAL's size.

mod support;

use std::time::{Duration, Instant};

use support::start;

const LIMIT: u64 = 64 << 20;

#[tokio::test]
async fn a_wal_grown_behind_a_reader_is_truncated_back_after_it_goes() {
    let s = start();
    let (did, tok, _) = s.account("trunc.test").await;
    s.post_record(&did, &tok, "before the reader").await;
    let db = s.dir.path().join("pds.sqlite");
    let wal = s.dir.path().join("pds.sqlite-wal");
    // A reader holding its snapshot: no frame written after it can be
    // copied back or overwritten while it lasts.
    let reader = rusqlite::Connection::open_with_flags(
        &db,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .unwrap();
    reader.execute_batch("BEGIN").unwrap();
    let n: i64 = reader
        .query_row("SELECT count(*) FROM records", [], |r| r.get(0))
        .unwrap();
    assert!(n >= 1);
    // About 120 MiB of blobs, each its own bytes.
    for i in 0..24u32 {
        let blob: Vec<u8> = (0..5_000_000u32)
            .map(|j| (j.wrapping_mul(31) ^ i.wrapping_mul(7919)) as u8)
            .collect();
        s.request(
            hyper::Method::POST,
            "/xrpc/com.atproto.repo.uploadBlob",
            &[
                ("content-type", "application/octet-stream"),
                ("authorization", &format!("Bearer {tok}")),
            ],
            bytes::Bytes::from(blob),
        )
        .await
        .ok_json();
    }
    let grown = std::fs::metadata(&wal).unwrap().len();
    eprintln!("WAL behind the pinning reader: {} MiB", grown >> 20);
    assert!(
        grown > LIMIT + (16 << 20),
        "the WAL did not grow behind the reader ({} MiB): the test shows nothing",
        grown >> 20
    );
    // The reader goes; writes go on.
    reader.execute_batch("COMMIT").unwrap();
    drop(reader);
    let t = Instant::now();
    let mut size = grown;
    let mut writes = 0;
    while t.elapsed() < Duration::from_secs(60) {
        s.post_record(&did, &tok, "after the reader").await;
        writes += 1;
        size = std::fs::metadata(&wal).unwrap().len();
        if size <= LIMIT {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!(
        "after the reader went: WAL {} MiB after {writes} writes ({:?})",
        size >> 20,
        t.elapsed()
    );
    assert!(
        size <= LIMIT,
        "the WAL stayed at {} MiB after the reader went and {writes} writes landed",
        size >> 20
    );
}
