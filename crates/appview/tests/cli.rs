//! The CLI: seed a directory, print every pattern from both backends (the
//! same table), and the errors a person meets.

use std::process::Command;

fn appview(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_appview"))
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
fn seed_then_query_every_pattern_on_both_backends() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("av");
    let db = db.to_str().unwrap();
    let (ok, out, err) = appview(&["seed", "--runs", "40", "--db", db]);
    assert!(ok, "{err}");
    assert!(out.contains("40 runs"), "{out}");
    for pattern in appview::Pattern::ALL.map(appview::Pattern::name) {
        let (ok, index, err) = appview(&["query", pattern, "--db", db]);
        assert!(ok, "{pattern}: {err}");
        let (ok, sqlite, err) = appview(&["query", pattern, "--backend", "sqlite", "--db", db]);
        assert!(ok, "{pattern}: {err}");
        // The first line names the backend; the tables must be identical.
        let body = |s: &str| {
            s.split_once('\n')
                .map(|(_, b)| b.to_owned())
                .unwrap_or_default()
        };
        assert_eq!(body(&index), body(&sqlite), "{pattern}");
        assert!(body(&index).lines().count() >= 2, "{pattern}: {index}");
    }
    let (ok, out, _) = appview(&["query", "count_completed", "--db", db]);
    assert!(
        ok && out
            .lines()
            .nth(2)
            .is_some_and(|l| l.parse::<u64>().is_ok_and(|n| n > 10)),
        "{out}"
    );
    // Seeding again is refused.
    let (ok, _, err) = appview(&["seed", "--runs", "5", "--db", db]);
    assert!(!ok && err.contains("already"), "{err}");
}

#[test]
fn unknown_pattern_and_empty_directory_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().to_str().unwrap();
    let (ok, _, err) = appview(&["query", "completed_51", "--db", db]);
    assert!(
        !ok && err.contains("unknown read pattern \"completed_51\"")
            && err.contains("completed_1h"),
        "{err}"
    );
    for backend in ["index", "sqlite"] {
        let (ok, _, err) = appview(&["query", "paginated", "--backend", backend, "--db", db]);
        assert!(
            !ok && err.contains("no appview database here"),
            "{backend}: {err}"
        );
    }
    let (ok, _, err) = appview(&["query", "point_lookup", "--run", "nope", "--db", db]);
    assert!(!ok && err.contains("UUID"), "{err}");
}

#[test]
fn an_absurd_run_count_is_refused_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("av");
    let db = db.to_str().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_appview"))
        .args(["seed", "--runs", &u64::MAX.to_string(), "--db", db])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--runs") && !err.contains("panicked"), "{err}");
    assert!(!dir.path().join("av").exists(), "nothing was written");
}

#[test]
fn serve_prints_its_address_and_answers_prefects_health_route() {
    use std::io::{BufRead, BufReader, Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("served");
    let mut child = Command::new(env!("CARGO_BIN_EXE_appview"))
        .args([
            "serve",
            "--db",
            db.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|s| s.split('/').next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    s.write_all(b"GET /api/health HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        out.starts_with("HTTP/1.1 200") && out.ends_with("true"),
        "{out}"
    );
    assert!(
        db.join("appview.sqlite").is_file(),
        "serve creates the appview"
    );
}
