//! Writes the seed corpora of every fuzz target into `fuzz/corpus/<target>/`
//! from the project's fixtures and datagen (run by `scripts/fuzz.sh`; the
//! corpora are generated, never committed).
//!
//! - cbor: the records and MST nodes carried by the vendored firehose
//!   frames, and seeded store records converted to DAG-CBOR;
//! - car: the vendored repository CARs and each frame's CAR slice;
//! - frame: the vendored firehose frames;
//! - segment: the upstream golden sealed segment and block, and a sealed
//!   segment written from seeded events;
//! - dispatch, json_text: seeded gateway lines; syntax: seeded identifiers.

use std::path::{Path, PathBuf};

use repo::car::CarSlice;
use repo::firehose::Frame;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &str) -> Vec<u8> {
    let p = root().join(path);
    std::fs::read(&p).unwrap_or_else(|e| panic!("fixture {}: {e}", p.display()))
}

fn write_all(target: &str, seeds: impl IntoIterator<Item = Vec<u8>>) -> std::io::Result<usize> {
    let dir = root().join("fuzz/corpus").join(target);
    std::fs::create_dir_all(&dir)?;
    let mut n = 0;
    for (i, seed) in seeds.into_iter().enumerate() {
        std::fs::write(dir.join(format!("seed-{i:04}")), seed)?;
        n += 1;
    }
    Ok(n)
}

/// The vendored relay frames (`u32` little-endian length, frame).
fn frames() -> Vec<Vec<u8>> {
    let raw = zstd::decode_all(&read("crates/repo/tests/corpus/frames.bin.zst")[..])
        .unwrap_or_else(|e| panic!("frames.bin.zst: {e}"));
    let mut out = Vec::new();
    let mut pos = 0;
    while let Some(len) = raw.get(pos..pos + 4) {
        let len = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
        let Some(frame) = raw.get(pos + 4..pos + 4 + len) else {
            break;
        };
        out.push(frame.to_vec());
        pos += 4 + len;
    }
    out
}

fn dag_cbor(v: &serde_json::Value) -> Option<Vec<u8>> {
    Some(repo::cbor::to_vec(
        &repo::cbor::json::from_json_value(v).ok()?,
    ))
}

fn sealed_segment(dir: &Path) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
    let path = dir.join("seed.jss");
    let events = datagen::segment_mix::realistic_mix(300);
    let mut w = segment::Writer::create(
        &path,
        segment::WriterOptions {
            block_events: 64,
            sync: false,
        },
    )?;
    for e in &events {
        let kind = segment::Kind::from_u8(e.kind).unwrap_or(segment::Kind::Create);
        w.append_live(&segment::EventRef {
            seq: e.seq,
            witnessed_at: e.witnessed_at,
            indexed_at: e.indexed_at,
            kind,
            did: &e.did,
            collection: &e.collection,
            rkey: &e.rkey,
            rev: &e.rev,
            payload: &e.payload,
        })?;
    }
    w.seal()?;
    Ok(std::fs::read(&path)?)
}

fn main() -> std::io::Result<()> {
    let frames = frames();
    let mut blocks = Vec::new();
    let mut slices = Vec::new();
    for f in &frames {
        if let Ok(Frame::Commit(c)) = Frame::decode(f) {
            slices.push(c.blocks.to_vec());
            if let Ok(car) = CarSlice::parse(c.blocks, true) {
                blocks.extend(car.blocks.iter().map(|(_, b)| b.to_vec()));
            }
        }
    }
    let records: Vec<Vec<u8>> = datagen::store::records(0, 64)
        .iter()
        .filter_map(|r| dag_cbor(&r.value))
        .collect();
    let mut report = Vec::new();
    report.push((
        "cbor",
        write_all("cbor", blocks.into_iter().take(256).chain(records))?,
    ));
    let cars = [
        read("crates/repo/tests/corpus/repo.car"),
        read("crates/store/tests/corpus/repo.car"),
    ];
    report.push((
        "car",
        write_all("car", cars.into_iter().chain(slices.into_iter().take(32)))?,
    ));
    report.push(("frame", write_all("frame", frames)?));
    let tmp = std::env::temp_dir().join(format!("atbench-seeds-{}", std::process::id()));
    std::fs::create_dir_all(&tmp)?;
    let written = sealed_segment(&tmp).map_err(|e| std::io::Error::other(e.to_string()))?;
    let _ = std::fs::remove_dir_all(&tmp);
    report.push((
        "segment",
        write_all(
            "segment",
            [
                read("crates/segment/tests/corpus/golden_seal.bin"),
                read("crates/segment/tests/corpus/golden_block.bin"),
                written,
            ],
        )?,
    ));
    use datagen::hotpath::{Kind, lines};
    let dispatch = [Kind::SqlDispatch, Kind::ObjectDispatch, Kind::RestDispatch]
        .into_iter()
        .flat_map(|k| lines(k, 48))
        .map(String::into_bytes);
    report.push(("dispatch", write_all("dispatch", dispatch)?));
    let json = lines(Kind::Records, 64).into_iter().map(String::into_bytes);
    report.push(("json_text", write_all("json_text", json)?));
    let syntax = (0..16u64).flat_map(|i| {
        let did = datagen::store::did(i);
        let post = datagen::store::post(i, i);
        [
            format!("at://{did}/{}/{}", post.collection, post.rkey),
            did,
            post.collection.to_owned(),
            post.rkey,
        ]
    });
    report.push((
        "syntax",
        write_all("syntax", syntax.map(String::into_bytes))?,
    ));
    for (target, n) in report {
        println!("seeds: {n} for {target}");
    }
    Ok(())
}
