//! `atstore` against a real repository CAR vendored into this crate
//! (`tests/corpus/`, MIT / Apache-2.0, see its README).

use std::path::PathBuf;
use std::process::Command;

fn corpus(name: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(name);
    assert!(p.exists(), "corpus file missing: {}", p.display());
    p
}

fn atstore(db: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_atstore"))
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "atstore {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn import_list_get_export_reimport() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("cli.sqlite");
    let car = corpus("repo.car");
    let expected = std::fs::read_to_string(corpus("car_expected_records.tsv")).unwrap();
    let commit = std::fs::read_to_string(corpus("car_expected_commit.txt")).unwrap();
    let did = commit
        .lines()
        .find_map(|l| l.strip_prefix("DID: "))
        .unwrap()
        .trim()
        .to_owned();

    let out = atstore(&db, &["import", car.to_str().unwrap()]);
    assert!(out.contains(&did) && out.contains("23 records"), "{out}");
    let listed = atstore(&db, &["ls", &did]);
    let mut want: Vec<&str> = expected.lines().filter(|l| !l.is_empty()).collect();
    want.sort();
    let got: Vec<&str> = listed.lines().collect();
    assert_eq!(got, want);

    let (path, _) = want[0].split_once('\t').unwrap();
    let json = atstore(&db, &["get", &format!("at://{did}/{path}")]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["uri"], format!("at://{did}/{path}"));

    let coll = path.split('/').next().unwrap();
    let only = atstore(&db, &["ls", &did, coll]);
    assert_eq!(
        only.lines().count(),
        want.iter()
            .filter(|l| l.starts_with(&format!("{coll}/")))
            .count()
    );

    let exported = dir.path().join("out.car");
    atstore(&db, &["export", &did, exported.to_str().unwrap()]);
    let db2 = dir.path().join("cli2.sqlite");
    let out2 = atstore(&db2, &["import", exported.to_str().unwrap()]);
    let commit_of = |s: &str| {
        s.split_whitespace()
            .skip_while(|w| *w != "commit")
            .nth(1)
            .map(str::to_owned)
    };
    assert_eq!(commit_of(&out), commit_of(&out2));
    assert_eq!(atstore(&db2, &["ls", &did]), listed);
    // Blob references of the imported records are indexed.
    let store = store::Store::open(&db2, store::Config::default()).unwrap();
    assert!(!store.referenced_blobs(&did).unwrap().is_empty());
    drop(store);
    let stats = atstore(&db2, &["stats"]);
    assert!(stats.contains("records\t23"), "{stats}");

    // Bad input is reported, not a panic.
    let bad = Command::new(env!("CARGO_BIN_EXE_atstore"))
        .arg("--db")
        .arg(&db)
        .args(["get", "at://not a uri"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
}
