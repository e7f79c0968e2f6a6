//! The local repository, through `git` subprocesses (the helper runs with
//! `GIT_DIR` set by git): resolving names, object presence, ancestry.
//! Packs move through `git pack-objects` and `git index-pack` streams in
//! `push/` and `fetch.rs`.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::error::{KnotError, Result};

fn gerr(cmd: &str, why: impl Into<String>) -> KnotError {
    KnotError::Git {
        cmd: cmd.to_owned(),
        why: why.into(),
    }
}

/// Runs `git args…`, returns its stdout (trimmed).
pub fn run(args: &[&str]) -> Result<String> {
    let t = std::time::Instant::now();
    let out = Command::new("git")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| gerr(args.first().copied().unwrap_or(""), e.to_string()))?;
    crate::trace::mark(&format!("git {}", args.join(" ")), Some(t.elapsed()));
    if !out.status.success() {
        return Err(gerr(
            &args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The object id `name` names locally (not peeled: a tag stays its tag
/// object).
pub fn rev_parse(name: &str) -> Result<String> {
    run(&[
        "rev-parse",
        "--verify",
        "--quiet",
        &format!("{name}^{{object}}"),
    ])
    .map_err(|_| {
        gerr(
            "rev-parse",
            format!("src refspec {name} does not match any"),
        )
    })
}

/// Which of `oids` the local repository holds, in one `cat-file
/// --batch-check`.
pub fn have(oids: &[&str]) -> Result<Vec<bool>> {
    Ok(batch_check(oids)?
        .into_iter()
        .map(|o| o.is_some())
        .collect())
}

/// The object id each of `names` names locally (not peeled: a tag stays
/// its tag object), in one `cat-file --batch-check` whatever their number;
/// a name that names nothing is git's "src refspec … does not match any".
pub fn rev_parse_many(names: &[&str]) -> Result<Vec<Result<String>>> {
    Ok(batch_check(names)?
        .into_iter()
        .zip(names)
        .map(|(o, n)| {
            o.ok_or_else(|| gerr("rev-parse", format!("src refspec {n} does not match any")))
        })
        .collect())
}

/// One `cat-file --batch-check=%(objectname)` over `oids` (object ids or
/// any revision): the object id each names, `None` when missing.
fn batch_check(oids: &[&str]) -> Result<Vec<Option<String>>> {
    if oids.is_empty() {
        return Ok(Vec::new());
    }
    let t = std::time::Instant::now();
    let mut child = Command::new("git")
        .args(["cat-file", "--batch-check=%(objectname)"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| gerr("cat-file", e.to_string()))?;
    let mut input = String::with_capacity(oids.len() * 41);
    for o in oids {
        input.push_str(o);
        input.push('\n');
    }
    // Written from a thread: a long list would otherwise fill both pipes.
    let mut stdin = child
        .stdin
        .take()
        .ok_or_else(|| gerr("cat-file", "no stdin"))?;
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child
        .wait_with_output()
        .map_err(|e| gerr("cat-file", e.to_string()))?;
    let _ = writer.join();
    crate::trace::mark(
        &format!("git cat-file --batch-check ({} ids)", oids.len()),
        Some(t.elapsed()),
    );
    if !out.status.success() {
        return Err(gerr(
            "cat-file",
            String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() != oids.len() {
        return Err(gerr("cat-file", "answered a different number of lines"));
    }
    Ok(lines
        .iter()
        .map(|l| {
            let l = l.trim();
            (l.len() >= 40 && l.bytes().all(|c| c.is_ascii_hexdigit())).then(|| l.to_owned())
        })
        .collect())
}

/// Whether `a` is an ancestor of (or equal to) `b`.
pub fn is_ancestor(a: &str, b: &str) -> Result<bool> {
    let t = std::time::Instant::now();
    let st = Command::new("git")
        .args(["merge-base", "--is-ancestor", a, b])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| gerr("merge-base", e.to_string()))?;
    crate::trace::mark("git merge-base --is-ancestor", Some(t.elapsed()));
    match st.code() {
        Some(0) => Ok(true),
        Some(1) => Ok(false),
        _ => Err(gerr("merge-base", format!("--is-ancestor {a} {b} failed"))),
    }
}

/// The local symbolic ref HEAD points to, if any.
pub fn local_head() -> Option<String> {
    run(&["symbolic-ref", "-q", "HEAD"])
        .ok()
        .filter(|s| s.starts_with("refs/"))
}
