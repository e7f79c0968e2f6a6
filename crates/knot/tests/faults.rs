//! Failures: a corrupt part in the store, a helper killed mid-push, a 429
//! mid-push, a push above the PDS's remaining write points, and hostile servers (bad JSON, wrong CIDs, wrong bytes,
//! endless bodies): typed errors, no panic, local state untouched.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use knot::KnotError;
use knot::Remote;
use knot::Xrpc;
use support::fault::{Action, FaultProxy, method};
use support::{Sandbox, signed_in, stderr, url};

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Every ref of the repository names packs whose records exist and whose
/// parts download and hash right.
fn assert_complete(pds_url: &str, did: &str, repo: &str) -> usize {
    rt().block_on(async {
        let mut r = Remote::open(&format!("at+{pds_url}/{did}/{repo}"), None)
            .await
            .unwrap();
        let refs = r.read_refs().await.unwrap();
        for (name, c) in &refs {
            for e in &c.record.packs {
                let p = r
                    .read_pack(&e.pack)
                    .await
                    .unwrap_or_else(|err| panic!("{name}: {err}"));
                for part in &p.parts {
                    r.pds
                        .get_blob(&r.did, &part.cid, part.size)
                        .await
                        .unwrap_or_else(|err| panic!("{name}: {err}"));
                }
            }
        }
        refs.len()
    })
}

fn pack_files(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir.join(".git/objects/pack"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".pack"))
        .collect();
    v.sort();
    v
}

#[test]
fn corrupt_part_fails_the_fetch_and_leaves_the_clone_alone() {
    let (pds, did, sb) = signed_in("corrupt.test");
    let u = url(&pds.url, &did, "r");
    let a = sb.init("a");
    let c1 = sb.commit(&a, "f", "one\n");
    sb.git(&a, &["remote", "add", "origin", &u]);
    sb.git(&a, &["push", "-q", "origin", "main"]);
    sb.git(sb.home.path(), &["clone", "-q", &u, "b"]);
    let b = sb.path("b");
    sb.commit(&a, "g", &"two\n".repeat(1000));
    sb.git(&a, &["push", "-q", "origin", "main"]);
    // The newest blob is the second push's only part: flip its bytes.
    let db = rusqlite::Connection::open(pds.db()).unwrap();
    let n = db
        .execute(
            "UPDATE blobs SET bytes = zeroblob(size) WHERE rowid = (SELECT max(rowid) FROM blobs)",
            [],
        )
        .unwrap();
    assert_eq!(n, 1);
    drop(db);
    let before = pack_files(&b);
    let o = sb.try_git(&b, &["fetch", "origin"]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("content hash mismatch"), "{e}");
    assert!(!e.contains("panicked"), "{e}");
    assert_eq!(sb.rev(&b, "origin/main"), c1, "the ref did not move");
    assert_eq!(pack_files(&b), before, "no pack kept");
    sb.git(&b, &["fsck", "--no-progress"]);
    // A fresh clone fails the same way, clearly.
    let o = sb.try_git(sb.home.path(), &["clone", &u, "c"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("content hash mismatch"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn sigkill_mid_push_leaves_every_ref_complete() {
    let (pds, did, sb) = signed_in("kill.test");
    let hang_at = Arc::new(std::sync::Mutex::new(String::new()));
    let reached = Arc::new(AtomicBool::new(false));
    let (h, r2) = (hang_at.clone(), reached.clone());
    let proxy = FaultProxy::start(
        Some(pds.url.clone()),
        Arc::new(move |p, body| {
            let want = h.lock().unwrap().clone();
            if !want.is_empty()
                && method(p) == want.split('|').next().unwrap()
                && want
                    .split('|')
                    .nth(1)
                    .is_none_or(|s| String::from_utf8_lossy(body).contains(s))
            {
                r2.store(true, Ordering::SeqCst);
                return Action::Hang;
            }
            Action::Forward
        }),
    );
    let u = url(&proxy.url, &did, "r");
    let a = sb.init("a");
    sb.commit(&a, "f", "one\n");
    sb.git(&a, &["remote", "add", "origin", &u]);
    sb.git(&a, &["push", "-q", "origin", "main"]);
    // Warm, the pack record and the ref go in one applyWrites; cold (the
    // warm state removed), the ref is its own putRecord.
    for (point, cold) in [
        ("com.atproto.repo.uploadBlob", false),
        ("com.atproto.repo.applyWrites|dev.atbench.knot.ref", false),
        ("com.atproto.repo.putRecord|dev.atbench.knot.ref", true),
    ] {
        if cold {
            let _ = std::fs::remove_dir_all(a.join(".git/knot"));
        }
        sb.commit(&a, "f", &format!("{point}\n"));
        *hang_at.lock().unwrap() = point.to_owned();
        reached.store(false, Ordering::SeqCst);
        let mut child = sb
            .cmd(&a, &["push", "-q", "origin", "main"])
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let t0 = std::time::Instant::now();
        while !reached.load(Ordering::SeqCst) {
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "the push never reached {point}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        // The helper is git's child.
        let helper = helper_child(child.id()).expect("git-remote-at is running");
        unsafe { libc::kill(helper, libc::SIGKILL) };
        let st = child.wait().unwrap();
        assert!(!st.success());
        assert_eq!(assert_complete(&pds.url, &did, "r"), 1);
        hang_at.lock().unwrap().clear();
    }
    // The next push succeeds and a clone is whole.
    sb.git(&a, &["push", "-q", "origin", "main"]);
    assert_complete(&pds.url, &did, "r");
    sb.git(sb.home.path(), &["clone", "-q", &u, "c"]);
    let c = sb.path("c");
    assert_eq!(sb.rev(&c, "HEAD"), sb.rev(&a, "HEAD"));
    sb.git(&c, &["fsck", "--no-progress"]);
}

/// The `git-remote-at` below `root` (git runs it through `git remote-at`).
fn helper_child(root: u32) -> Option<i32> {
    let mut procs = Vec::new();
    for e in std::fs::read_dir("/proc").ok()? {
        let e = e.ok()?;
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some((comm, rest)) = stat.split_once(") ") else {
            continue;
        };
        let ppid: u32 = rest
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        procs.push((pid, ppid, comm.ends_with("(git-remote-at")));
    }
    let parent_of = |p: u32| procs.iter().find(|x| x.0 == p).map(|x| x.1);
    procs.iter().filter(|x| x.2).find_map(|&(pid, _, _)| {
        let mut cur = pid;
        for _ in 0..4 {
            cur = parent_of(cur)?;
            if cur == root {
                return i32::try_from(pid).ok();
            }
        }
        None
    })
}

#[test]
fn rate_limit_mid_push_keeps_what_landed_and_names_the_rest() {
    let (pds, did, sb) = signed_in("limit.test");
    let limited = Arc::new(AtomicBool::new(true));
    let l2 = limited.clone();
    // A window of 3 s: the helper remembers it and waits it out.
    let reset = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
            + 3
    };
    let proxy = FaultProxy::start(
        Some(pds.url.clone()),
        Arc::new(move |p, body| {
            if l2.load(Ordering::SeqCst)
                && method(p) == "com.atproto.repo.putRecord"
                && String::from_utf8_lossy(body).contains("refs:heads:second")
            {
                return Action::Respond(
                    429,
                    vec![
                        ("content-type", "application/json".into()),
                        ("retry-after", "3".into()),
                        ("ratelimit-limit", "5000".into()),
                        ("ratelimit-remaining", "0".into()),
                        ("ratelimit-reset", reset().to_string()),
                        ("ratelimit-policy", "5000;w=3600".into()),
                    ],
                    Bytes::from_static(
                        br#"{"error":"RateLimitExceeded","message":"Rate Limit Exceeded"}"#,
                    ),
                );
            }
            Action::Forward
        }),
    );
    let u = url(&proxy.url, &did, "r");
    let a = sb.init("a");
    let c1 = sb.commit(&a, "f", "one\n");
    sb.git(&a, &["remote", "add", "origin", &u]);
    let o = sb.try_git(&a, &["push", "origin", "main", "main:refs/heads/second"]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("not pushed: refs/heads/second"), "{e}");
    assert!(e.contains("pushed: refs/heads/main"), "{e}");
    assert!(e.contains("push again after"), "{e}");
    let ls = sb.git(&a, &["ls-remote", &url(&pds.url, &did, "r")]);
    assert!(ls.contains(&format!("{c1}\trefs/heads/main")), "{ls}");
    assert!(!ls.contains("second"), "{ls}");
    assert_complete(&pds.url, &did, "r");
    let limited_at = std::time::Instant::now();
    // While the window lasts, the helper refuses before writing.
    let o = sb.try_git(&a, &["push", "origin", "main:refs/heads/second"]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("nothing was written"), "{e}");
    assert!(e.contains("once the window resets"), "{e}");
    // Once the window is over, the same push lands the rest.
    limited.store(false, Ordering::SeqCst);
    std::thread::sleep(Duration::from_secs(4).saturating_sub(limited_at.elapsed()));
    sb.git(
        &a,
        &["push", "-q", "origin", "main", "main:refs/heads/second"],
    );
    let ls = sb.git(&a, &["ls-remote", &url(&pds.url, &did, "r")]);
    assert!(ls.contains(&format!("{c1}\trefs/heads/second")), "{ls}");
}

#[test]
fn hostile_servers_give_typed_errors() {
    let rt = rt();
    let case = |action: fn() -> Action| FaultProxy::start(None, Arc::new(move |_, _| action()));
    // Bad JSON.
    let p = case(|| Action::Respond(200, vec![], Bytes::from_static(b"{not json")));
    let x = Xrpc::new(&p.url, Duration::from_secs(10));
    let e = rt
        .block_on(x.query("com.atproto.repo.listRecords", &[], None))
        .unwrap_err();
    assert!(matches!(e, KnotError::BadResponse { .. }), "{e}");
    // An error that is not JSON.
    let p = case(|| Action::Respond(500, vec![], Bytes::from_static(b"<html>oops")));
    let e = rt
        .block_on(Xrpc::new(&p.url, Duration::from_secs(10)).query("x.y.z", &[], None))
        .unwrap_err();
    assert!(matches!(e, KnotError::Xrpc { status: 500, .. }), "{e}");
    // uploadBlob naming another CID.
    let p = case(|| {
        Action::Respond(200, vec![], Bytes::from_static(br#"{"blob":{"$type":"blob","ref":{"$link":"bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku"},"mimeType":"x","size":5}}"#))
    });
    let e = rt
        .block_on(Xrpc::new(&p.url, Duration::from_secs(10)).upload_blob(
            Bytes::from_static(b"hello"),
            "x",
            "t",
        ))
        .unwrap_err();
    assert!(matches!(e, KnotError::HashMismatch { .. }), "{e}");
    // A part with the wrong bytes.
    let p = case(|| Action::Respond(200, vec![], Bytes::from_static(b"hellp")));
    let cid = knot::names::raw_cid(b"hello");
    let e = rt
        .block_on(Xrpc::new(&p.url, Duration::from_secs(10)).get_blob("did:plc:x", &cid, 5))
        .unwrap_err();
    assert!(matches!(e, KnotError::HashMismatch { .. }), "{e}");
    // Endless bodies stop at the bound for their kind (a part's size, the JSON cap).
    let p = case(|| Action::Endless);
    let x = Xrpc::new(&p.url, Duration::from_secs(60));
    let e = rt.block_on(x.get_blob("did:plc:x", &cid, 5)).unwrap_err();
    assert!(matches!(e, KnotError::TooLarge { limit: 5, .. }), "{e}");
    let e = rt
        .block_on(x.query("com.atproto.repo.listRecords", &[], None))
        .unwrap_err();
    assert!(matches!(e, KnotError::TooLarge { .. }), "{e}");
    // A ref record that breaks its lexicon.
    let p = case(|| {
        Action::Respond(200, vec![], Bytes::from_static(br#"{"records":[{"uri":"at://did:plc:x/dev.atbench.knot.ref/r:refs:heads:main","cid":"bafyx","value":{"repo":"r","ref":"refs/heads/main","target":"nothex","packs":[]}}]}"#))
    });
    let e = rt.block_on(async {
        let mut r = Remote::open(&format!("at+{}/did:plc:x/r", p.url), None)
            .await
            .unwrap();
        r.read_refs().await.unwrap_err()
    });
    assert!(matches!(e, KnotError::Record { .. }), "{e}");

    // Through git: a clone from a server answering garbage fails in words, without a panic.
    let sb = Sandbox::new("did:plc:x");
    let p = case(|| Action::Respond(200, vec![], Bytes::from_static(b"[1,2")));
    let o = sb.try_git(
        sb.home.path(),
        &["clone", &url(&p.url, "did:plc:x", "r"), "x"],
    );
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("malformed answer") && !e.contains("panicked"),
        "{e}"
    );
}

#[test]
fn a_push_above_the_remaining_write_points_is_refused_before_writing() {
    // 30 write points an hour; the first push spends 6 (pack, repository
    // and ref records at 2), and its answers say 24 remain.
    let pds = support::Pds::start_with(|c| {
        let mut limits = xrpc::RateLimits::reference();
        limits.writes_hour = xrpc::Limit::per(30, 3600);
        c.rate_limits = Some(limits);
    });
    let did = pds.account("budget.test");
    let sb = Sandbox::new("budget.test");
    let u = url(&pds.url, &did, "r");
    let a = sb.init("a");
    sb.commit(&a, "f", "one\n");
    sb.git(&a, &["remote", "add", "origin", &u]);
    sb.git(&a, &["push", "-q", "origin", "main"]);
    for i in 0..20 {
        sb.git(&a, &["tag", &format!("t{i:02}")]);
    }
    // 20 tags in applyWrites batches: 60 points, above the 24 left.
    let before = sb.git(&a, &["ls-remote", &u]);
    let o = sb.try_git(&a, &["push", "origin", "--tags"]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("needs 60 write points"), "{e}");
    assert!(e.contains("24 remain"), "{e}");
    assert!(e.contains("nothing was written"), "{e}");
    assert!(e.contains("push at most 8 refs"), "{e}");
    assert!(e.contains("git push <remote> refs/tags/t00"), "{e}");
    assert_eq!(sb.git(&a, &["ls-remote", &u]), before);
    // Five fit (putRecord creates at 2): they land, announced on one line.
    let five: Vec<String> = (0..5).map(|i| format!("refs/tags/t{i:02}")).collect();
    let mut args = vec!["push", "origin"];
    args.extend(five.iter().map(String::as_str));
    let o = sb.try_git(&a, &args);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    let cost: Vec<&str> = e.lines().filter(|l| l.contains("write point")).collect();
    assert_eq!(cost.len(), 1, "{e}");
    assert!(cost[0].contains("(5 ref creates x 2)"), "{e}");
    let ls = sb.git(&a, &["ls-remote", &u]);
    assert_eq!(ls.lines().count(), before.lines().count() + 5, "{ls}");
}
