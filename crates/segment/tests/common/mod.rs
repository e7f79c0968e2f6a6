//! Shared by the segment test targets: reading the vendored corpus,
//! synthetic events, and writing a sealed segment of given events.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use segment::{Event, Kind, Sealed, Writer, WriterOptions};

/// The bytes of `tests/corpus/<name>`; a missing file fails the test,
/// naming the path (conformance vectors never skip).
pub fn corpus(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "conformance file {} is missing ({e}); it is vendored from the jetstream-corpus fixtures",
            path.display()
        )
    })
}

/// Writes `events` as one sealed segment at `path`, `block_events` to a
/// block, appended live (`sync`: fsync each block as it is flushed);
/// returns what the seal produced.
pub fn write_sealed(path: &Path, events: &[Event], block_events: usize, sync: bool) -> Sealed {
    let mut w = Writer::create(path, WriterOptions { block_events, sync }).unwrap();
    for e in events {
        w.append_live(&e.as_ref()).unwrap();
    }
    w.seal().unwrap()
}

/// A synthetic event for `seq`: the seven kinds in turn, 37 DIDs, three
/// collections, `indexed_at` unset on every third, payloads of varying
/// length (none for deletes).
pub fn event(seq: u64) -> Event {
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

/// Synthetic events 1..=n.
pub fn events(n: u64) -> Vec<Event> {
    (1..=n).map(event).collect()
}

/// Writer options: `block_events` to a block, no fsync.
pub fn opts(block_events: usize) -> WriterOptions {
    WriterOptions {
        block_events,
        sync: false,
    }
}

/// `body` as one checksummed zstd frame: a block frame around any body.
pub fn body_frame(body: &[u8]) -> Vec<u8> {
    zstd::bulk::Compressor::new(3)
        .and_then(|mut c| {
            c.include_checksum(true)?;
            c.compress(body)
        })
        .unwrap()
}
