//! Shared by knot-serve's integration tests: a real repository made with
//! git in a temporary directory, its bare mirror, and a raw HTTP/1.1
//! client (raw so hostile request lines reach the server unchanged).

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

pub fn git(dir: &Path, home: &Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Knot & Test")
        .env("GIT_AUTHOR_EMAIL", "knot@example.com")
        .env("GIT_COMMITTER_NAME", "Knot Test")
        .env("GIT_COMMITTER_EMAIL", "knot@example.com")
        .env("GIT_AUTHOR_DATE", "2026-12-01T10:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-12-01T10:00:00Z")
        .env_remove("GIT_DIR")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).trim().to_owned()
}

pub const MAIN_RS_1: &str = "fn main() {\n    println!(\"hello <world> & friends\");\n}\n";
pub const MAIN_RS_2: &str =
    "mod lib;\n\nfn main() {\n    let n = lib::answer();\n    println!(\"answer: {n}\");\n}\n";
pub const WEIRD: &str = "a<b>&\"c'.txt";

/// A repository with three commits on `main`, a branch `feature/x` and a
/// tag `v1`; returns (work tree, bare mirror, commit ids oldest first).
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub work: PathBuf,
    pub mirror: PathBuf,
    pub commits: Vec<String>,
}

impl Fixture {
    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    pub fn git(&self, args: &[&str]) -> String {
        git(&self.work, &self.home(), args)
    }
}

pub fn write(dir: &Path, rel: &str, content: &[u8]) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, content).unwrap();
}

/// The working repository only (no mirror).
pub fn work_repo() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    git(&work, &home, &["init", "-q", "-b", "main"]);
    write(
        &work,
        "README.md",
        b"# Demo repo\n\nHello <script>alert(1)</script> **world**.\n\n[x](javascript:alert(1))\n",
    );
    write(&work, "src/main.rs", MAIN_RS_1.as_bytes());
    write(&work, "docs/guide.md", b"Guide\n");
    write(&work, WEIRD, b"weird\n");
    git(&work, &home, &["add", "-A"]);
    git(
        &work,
        &home,
        &["commit", "-q", "-m", "first: initial files"],
    );
    let c1 = git(&work, &home, &["rev-parse", "HEAD"]);
    git(&work, &home, &["tag", "v1"]);
    write(&work, "src/main.rs", MAIN_RS_2.as_bytes());
    write(
        &work,
        "src/lib.rs",
        b"pub fn answer() -> u32 {\n    42\n}\n",
    );
    git(&work, &home, &["add", "-A"]);
    git(
        &work,
        &home,
        &["commit", "-q", "-m", "second: add lib <b>bold</b> & more"],
    );
    let c2 = git(&work, &home, &["rev-parse", "HEAD"]);
    git(&work, &home, &["branch", "feature/x"]);
    write(&work, "data.bin", &[0u8, 1, 2, 3, 0, 255]);
    git(&work, &home, &["add", "-A"]);
    git(&work, &home, &["commit", "-q", "-m", "third: binary"]);
    let c3 = git(&work, &home, &["rev-parse", "HEAD"]);
    let mirror = dir.path().join("mirror.git");
    Fixture {
        dir,
        work,
        mirror,
        commits: vec![c1, c2, c3],
    }
}

/// The fixture with its bare mirror cloned.
pub fn fixture() -> Fixture {
    let f = work_repo();
    let m = f.mirror.to_str().unwrap().to_owned();
    git(
        f.dir.path(),
        &f.home(),
        &["clone", "-q", "--bare", "work", &m],
    );
    f
}

/// One raw request; returns (status, headers, body).
pub fn raw(addr: SocketAddr, request: &[u8]) -> (u16, String, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(request).unwrap();
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    let end = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(buf.len());
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = buf.get(end + 4..).unwrap_or_default().to_vec();
    (status, head, body)
}

/// `GET path` with `Connection: close`.
pub fn get(addr: SocketAddr, path: &str) -> (u16, String, Vec<u8>) {
    raw(
        addr,
        format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n").as_bytes(),
    )
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}
