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
    let (ok, stdout, stderr) = atstore_status(db, args);
    assert!(ok, "atstore {args:?} failed: {stderr}");
    stdout
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

/// `atstore` run to completion: (success, stdout, stderr).
fn atstore_status(db: &std::path::Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_atstore"))
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn concurrent_imports_one_writes_the_others_name_the_holder() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("busy.sqlite");
    let car = corpus("repo.car");
    // A writer that holds the database while three imports try.
    let holder = store::Store::open(&db, store::Config::default()).unwrap();
    let runs: Vec<_> = (0..3)
        .map(|_| {
            let (db, car) = (db.clone(), car.clone());
            std::thread::spawn(move || atstore_status(&db, &["import", car.to_str().unwrap()]))
        })
        .collect();
    let pid = std::process::id().to_string();
    for run in runs {
        let (ok, _, err) = run.join().unwrap();
        assert!(
            !ok,
            "an import succeeded while another writer held the database"
        );
        assert!(
            err.contains("is in use by pid") && err.contains(&pid) && err.contains("busy.sqlite"),
            "{err}"
        );
    }
    drop(holder);
    // Three at once with nobody holding it: exactly one may import; the
    // others are refused by name or find it done.
    let runs: Vec<_> = (0..3)
        .map(|_| {
            let (db, car) = (db.clone(), car.clone());
            std::thread::spawn(move || atstore_status(&db, &["import", car.to_str().unwrap()]))
        })
        .collect();
    let results: Vec<_> = runs.into_iter().map(|r| r.join().unwrap()).collect();
    let ok = results.iter().filter(|r| r.0).count();
    assert!(ok >= 1, "{results:?}");
    for (good, _, err) in &results {
        assert!(
            *good || err.contains("is in use by pid") || err.contains("already"),
            "{err}"
        );
        assert!(!err.contains("UNIQUE constraint"), "{err}");
    }
}

#[test]
fn readers_work_beside_a_writer_and_on_a_read_only_copy() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rw.sqlite");
    let car = corpus("repo.car");
    let out = atstore(&db, &["import", car.to_str().unwrap()]);
    assert!(out.contains("signature NOT checked"), "{out}");
    let did = out.split_whitespace().nth(1).unwrap().to_owned();
    let writer = store::Store::open(&db, store::Config::default()).unwrap();
    let listed = atstore(&db, &["ls", &did]);
    assert_eq!(listed.lines().count(), 23);
    assert!(atstore(&db, &["stats"]).contains("records\t23"));
    drop(writer);

    // A copy whose file and directory nobody may write.
    let ro_dir = dir.path().join("ro");
    std::fs::create_dir(&ro_dir).unwrap();
    let copy = ro_dir.join("copy.sqlite");
    std::fs::copy(&db, &copy).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o444)).unwrap();
    std::fs::set_permissions(&ro_dir, std::fs::Permissions::from_mode(0o555)).unwrap();
    let (ok, listed, err) = atstore_status(&copy, &["ls", &did]);
    std::fs::set_permissions(&ro_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    // Root ignores permissions; either way the listing must work.
    assert!(ok, "{err}");
    assert_eq!(listed.lines().count(), 23);
}

#[test]
fn foreign_databases_and_unknown_accounts_leave_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let foreign = dir.path().join("theirs.sqlite");
    let conn = rusqlite::Connection::open(&foreign).unwrap();
    conn.execute_batch("CREATE TABLE invoices (id INTEGER PRIMARY KEY)")
        .unwrap();
    drop(conn);
    let before = std::fs::read(&foreign).unwrap();
    let car = corpus("repo.car");
    let (ok, _, err) = atstore_status(&foreign, &["import", car.to_str().unwrap()]);
    assert!(!ok);
    assert!(
        err.contains("theirs.sqlite is not an atbench store"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(&foreign).unwrap(),
        before,
        "the file is untouched"
    );

    let db = dir.path().join("ours.sqlite");
    atstore(&db, &["import", car.to_str().unwrap()]);
    let out = dir.path().join("nobody.car");
    let (ok, _, err) = atstore_status(
        &db,
        &["export", "did:plc:nobodyhere", out.to_str().unwrap()],
    );
    assert!(!ok && err.contains("did:plc:nobodyhere"), "{err}");
    assert!(!out.exists(), "no empty CAR left behind");

    let missing = dir.path().join("missing.car");
    let (ok, _, err) = atstore_status(&db, &["import", missing.to_str().unwrap()]);
    assert!(
        !ok && err.contains("missing.car: cannot open the CAR"),
        "{err}"
    );
    let (ok, _, err) = atstore_status(&dir.path().join("absent.sqlite"), &["stats"]);
    assert!(!ok && err.contains("absent.sqlite"), "{err}");
}
