//! The inspector (`examples/inspect.rs` over `segment::inspect`): header
//! summary, block lines, one v1 JSON line per event with `cursor`; checked
//! opens report corruption with a non-zero exit code.

mod common;

use common::corpus;

use segment::inspect::{Summary, event_line, inspect, run};
use segment::{Event, Kind};
use serde_json::Value;

fn run_to_strings(args: &[&str]) -> (i32, String, String) {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = run(&args, &mut out, &mut err);
    (
        code,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

fn json_lines(out: &str) -> Vec<Value> {
    out.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

fn fanout_segment(dir: &std::path::Path, n: usize) -> (std::path::PathBuf, Vec<Event>) {
    let events: Vec<Event> = datagen::segment::fanout_events(n)
        .into_iter()
        .map(|e| Event {
            seq: e.seq,
            witnessed_at: e.witnessed_at,
            indexed_at: e.indexed_at,
            kind: Kind::from_u8(e.kind).unwrap(),
            did: e.did,
            collection: e.collection,
            rkey: e.rkey,
            rev: e.rev,
            payload: e.payload,
        })
        .collect();
    let path = dir.join("fanout.jss");
    common::write_sealed(&path, &events, 16, false);
    (path, events)
}

#[test]
fn a_written_segment_dumps_every_event_checked_and_unchecked() {
    let dir = tempfile::tempdir().unwrap();
    let (path, events) = fanout_segment(dir.path(), 40);
    let p = path.to_str().unwrap();
    for args in [vec!["--verify", p], vec![p]] {
        let (code, out, err) = run_to_strings(&args);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("# version 1"), "{out}");
        assert!(out.contains("blocks 3, events 40, unique DIDs 40"), "{out}");
        assert!(out.contains("# seq 1..=40"), "{out}");
        assert_eq!(out.lines().filter(|l| l.starts_with("# block ")).count(), 3);
        assert_eq!(
            out.contains("# collections: app.bsky.feed.post x40"),
            args.len() == 2
        );
        let lines = json_lines(&out);
        assert_eq!(lines.len(), events.len());
        for (line, e) in lines.iter().zip(&events) {
            assert_eq!(line["cursor"].as_u64(), Some(e.seq));
            assert_eq!(line["did"].as_str(), Some(e.did.as_str()));
            assert_eq!(line["commit"]["rkey"].as_str(), Some(e.rkey.as_str()));
            let mut v1 = String::new();
            assert!(segment::wire::encode_v1(&e.as_ref(), &mut v1).unwrap());
            let mut v1: Value = serde_json::from_str(&v1).unwrap();
            v1.as_object_mut()
                .unwrap()
                .insert("cursor".into(), e.seq.into());
            assert_eq!(line, &v1);
        }
        // `cursor` is the first key of every event line.
        assert!(
            out.lines()
                .filter(|l| !l.starts_with('#'))
                .all(|l| l.starts_with("{\"cursor\":"))
        );
    }
}

#[test]
fn the_vendored_golden_seal_dumps_its_two_events() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("golden_seal.bin");
    std::fs::write(&path, corpus("golden_seal.bin")).unwrap();
    let mut out = Vec::new();
    let summary = inspect(&path, true, &mut out).unwrap();
    // The payloads `p1`/`p2` are not DAG-CBOR: fallback lines, still one per event.
    assert_eq!(
        summary,
        Summary {
            blocks: 1,
            events: 2,
            unrenderable: 2
        }
    );
    let out = String::from_utf8(out).unwrap();
    assert!(out.contains("blocks 1, events 2, unique DIDs 2"), "{out}");
    assert!(out.contains("# seq 1..=2, witnessed_at 100..=200"), "{out}");
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["cursor"], 1);
    assert_eq!(lines[0]["did"], "did:plc:a");
    assert_eq!(lines[0]["time_us"], 100);
    assert_eq!(lines[0]["payload_len"], 2);
    assert_eq!(lines[0]["payload_base64"], "cDE="); // "p1"
    assert_eq!(lines[1]["cursor"], 2);
    assert_eq!(lines[1]["did"], "did:plc:b");
    assert!(lines[1]["error"].as_str().unwrap().starts_with("wire:"));
}

#[test]
fn corruption_is_reported_with_a_nonzero_exit() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = fanout_segment(dir.path(), 40);
    let mut bytes = std::fs::read(&path).unwrap();
    let n = bytes.len();
    bytes[n - 3] ^= 0x40; // inside the footer: the checksum catches it
    std::fs::write(&path, &bytes).unwrap();
    let p = path.to_str().unwrap();
    let (code, _, err) = run_to_strings(&["--verify", p]);
    assert_eq!(code, 1);
    assert!(err.contains("checksum"), "{err}");

    let dir2 = tempfile::tempdir().unwrap();
    let (path, _) = fanout_segment(dir2.path(), 40);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[256 + 8 + 20] ^= 0x01; // inside block 0's zstd frame
    std::fs::write(&path, &bytes).unwrap();
    let (code, _, err) = run_to_strings(&[path.to_str().unwrap()]);
    assert_eq!(
        code, 1,
        "unchecked open still decodes (and checks) every block"
    );
    assert!(err.contains("zstd") || err.contains("block"), "{err}");

    let (code, _, err) = run_to_strings(&["--verify", "/nonexistent/x.jss"]);
    assert_eq!(code, 1);
    assert!(err.contains("open segment"), "{err}");
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(run_to_strings(&[]).0, 2);
    assert_eq!(run_to_strings(&["--bogus", "x"]).0, 2);
    assert_eq!(run_to_strings(&["a", "b"]).0, 2);
    assert_eq!(run_to_strings(&["--help"]).0, 0);
}

#[test]
fn sync_events_use_the_v2_form() {
    let e = Event {
        seq: 9,
        witnessed_at: 5,
        indexed_at: 0,
        kind: Kind::Sync,
        did: "did:plc:a".into(),
        collection: String::new(),
        rkey: String::new(),
        rev: String::new(),
        payload: vec![0xa0],
    };
    let mut s = String::new();
    assert!(event_line(&e.as_ref(), &mut s));
    let v: Value = serde_json::from_str(&s).unwrap();
    assert_eq!(v["cursor"], 9);
    assert_eq!(v["kind"], "sync");
}
