//! The real CLI binary: what it writes equals the in-memory generator, the
//! sample loader reads it (or refuses it when stale), and bad arguments fail.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use datagen::hotpath::{
    Kind, Sample, SampleSizes, SampleSource, lines, load_sample_with, read_sample,
};
use datagen::manifest::Manifest;
use sha2::{Digest, Sha256};

fn datagen(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_datagen"))
        .args(args)
        .output()
        .expect("run the datagen binary")
}

fn write_2mb(dir: &Path) {
    let out = datagen(&["--target-mb", "2", "--out", dir.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "datagen failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Fits in a 2 MiB dataset (~2250 records, ~850 SQL, ~128 object, ~470
/// REST lines; blobs: 4 lines hold 16 B..64 KiB once each).
const SMALL: SampleSizes = SampleSizes {
    records: 2000,
    sql: 800,
    object: 120,
    rest: 450,
    blobs: 8,
};

fn without_source(mut s: Sample) -> Sample {
    s.source = SampleSource::Generated;
    s
}

#[test]
fn cli_files_equal_the_in_memory_lines_and_the_manifest() {
    let tmp = tempfile::tempdir().unwrap();
    write_2mb(tmp.path());

    let text = fs::read_to_string(tmp.path().join("MANIFEST.json")).unwrap();
    assert!(
        text.starts_with(
            "{\n  \"generator\": \"datagen\",\n  \"generator_version\": 1,\n  \"seed\": 20260602,\n  \"target_mb\": 2,\n  \"files\": {\n    \"blobs.ndjson\": {\n      \"lines\": "
        ),
        "manifest layout changed:\n{text}"
    );
    let manifest = Manifest::read(tmp.path()).unwrap();
    assert_eq!(manifest.files.len(), 5);
    let mut total = 0;
    for kind in Kind::ALL {
        let entry = &manifest.files[kind.file_name()];
        let bytes = fs::read(tmp.path().join(kind.file_name())).unwrap();
        assert_eq!(entry.bytes, bytes.len() as u64);
        let hash: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(entry.sha256, hash);
        let target = kind.target_bytes(2);
        assert!(entry.bytes >= target, "{kind:?} short of its share");
        let body = String::from_utf8(bytes).unwrap();
        let file_lines: Vec<&str> = body.lines().collect();
        assert_eq!(entry.lines, file_lines.len() as u64);
        assert!(entry.bytes - (file_lines.last().unwrap().len() as u64 + 1) < target);
        let memory = lines(kind, file_lines.len());
        assert!(file_lines == memory, "{kind:?} file differs from lines()");
        total += entry.bytes;
    }
    assert!((2 << 20..(2 << 20) + 200_000).contains(&total), "{total}");
    assert!(!tmp.path().join("records.ndjson.tmp").exists());
}

#[test]
fn sample_read_from_a_cli_dir_equals_the_generated_sample() {
    let tmp = tempfile::tempdir().unwrap();
    write_2mb(tmp.path());
    let strict = read_sample(tmp.path(), SMALL).expect("a fresh 2 MiB dir is usable");
    let read = load_sample_with(tmp.path(), SMALL);
    assert_eq!(read, strict);
    assert_eq!(read.source, SampleSource::DataDir);
    assert_eq!(read.records.len(), SMALL.records);
    assert_eq!(read.blobs.len(), SMALL.blobs);
    assert_eq!(without_source(read), Sample::generate(SMALL));
}

#[test]
fn stale_or_short_data_falls_back_to_the_same_sample() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write_2mb(dir);
    let want = Sample::generate(SMALL);
    let check = |label: &str, reason: &str| {
        let why = read_sample(dir, SMALL).expect_err(label);
        assert!(
            why.contains(reason),
            "{label}: reason {why:?} lacks {reason:?}"
        );
        let got = load_sample_with(dir, SMALL);
        assert_eq!(
            got.source,
            SampleSource::Generated,
            "{label}: should not read data/"
        );
        assert_eq!(got, want, "{label}");
    };

    // Too few lines for the bench sample (2 MiB holds ~2300 records).
    let big_sizes = SampleSizes {
        records: 9000,
        ..SMALL
    };
    let why = read_sample(dir, big_sizes).unwrap_err();
    assert!(
        why.starts_with("records.ndjson has ") && why.ends_with("need 9000"),
        "{why}"
    );
    let big = load_sample_with(dir, big_sizes);
    assert_eq!(big.source, SampleSource::Generated);
    assert_eq!(big.records, lines(Kind::Records, 9000));

    // A head line changed in place (same size).
    let path = dir.join("sql_dispatch.ndjson");
    let original = fs::read(&path).unwrap();
    let mut edited = original.clone();
    let at = edited.iter().position(|&b| b == b'S').unwrap();
    edited[at] = b's';
    fs::write(&path, &edited).unwrap();
    check(
        "edited head",
        "differs from the generator in its first 100 lines",
    );
    fs::write(&path, &original).unwrap();
    assert_eq!(load_sample_with(dir, SMALL).source, SampleSource::DataDir);

    // Truncated file.
    fs::write(&path, &original[..original.len() - 1]).unwrap();
    check("truncated", "bytes, manifest says");
    fs::write(&path, &original).unwrap();

    // Another seed or generator version in the manifest.
    let manifest_path = dir.join("MANIFEST.json");
    let text = fs::read_to_string(&manifest_path).unwrap();
    fs::write(&manifest_path, text.replace("20260602", "7")).unwrap();
    check("other seed", "seed 7, want datagen v1 seed 20260602");
    fs::write(
        &manifest_path,
        text.replace("\"generator_version\": 1", "\"generator_version\": 99"),
    )
    .unwrap();
    check("other version", "datagen v99 seed");
    fs::remove_file(&manifest_path).unwrap();
    check("no manifest", "MANIFEST.json");
}

#[test]
fn bad_arguments_fail_with_a_clear_message() {
    for (args, needle) in [
        (vec!["--target-mb", "0"], "empty dataset"),
        (vec!["--target-mb", "-5"], "must be positive"),
        (vec!["--target-mb", "abc"], "not a number"),
        (vec!["--target-mb", "65537"], "too large"),
        (vec![], "--target-mb"),
        (vec!["--target-mb", "1", "--seed", "x"], "--seed"),
    ] {
        let out = datagen(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} should fail");
        assert!(
            stderr.contains(needle),
            "{args:?}: stderr lacks {needle:?}: {stderr}"
        );
    }
}

#[test]
fn unwritable_output_dir_fails_without_panicking() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("a-file");
    fs::write(&file, b"x").unwrap();
    let out_dir = file.join("data");
    let out = datagen(&["--target-mb", "1", "--out", out_dir.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("datagen: error: create directory"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}
