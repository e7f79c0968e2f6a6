//! Round trips per operation, counted by the latency proxy (at RTT 0: the
//! counts do not depend on the delay). Targets (issue 35): a warm push of
//! one commit in at most 3, a warm no-op fetch in 1, a clone of a small
//! repository in at most 4 + ceil(parts / concurrency); and (issue 55) a
//! no-op fetch in at most 2 requests whatever the ref count.

mod support;

use std::time::Duration;

use knot::helper::CONCURRENCY;
use knot::proxy::LatencyProxy;
use support::{signed_in, url};

#[test]
fn round_trips_per_operation() {
    let (pds, did, sb) = signed_in("rt.test");
    let proxy = LatencyProxy::start(pds.addr(), Duration::ZERO).unwrap();
    let u = url(&proxy.url(), &did, "r");
    let a = sb.init("a");
    sb.commit(&a, "f", "one\n");
    sb.git(&a, &["remote", "add", "origin", &u]);
    proxy.take();
    sb.git(&a, &["push", "-q", "origin", "main"]);
    let cold_push = proxy.take();

    sb.commit(&a, "g", "two\n");
    sb.git(&a, &["push", "-q", "origin", "main"]);
    let warm_push = proxy.take();

    sb.git(sb.home.path(), &["clone", "-q", &u, "b"]);
    let clone = proxy.take();
    let b = sb.path("b");

    sb.git(&b, &["fetch", "-q", "origin"]);
    let noop_fetch = proxy.take();

    sb.git(&a, &["push", "-q", "origin", "main:refs/heads/topic"]);
    let new_branch = proxy.take();
    sb.git(&a, &["push", "-q", "origin", ":refs/heads/topic"]);
    let delete = proxy.take();

    sb.commit(&a, "h", "three\n");
    sb.git(&a, &["push", "-q", "origin", "main"]);
    proxy.take();
    sb.git(&b, &["fetch", "-q", "origin"]);
    let fetch_one = proxy.take();

    for (name, s) in [
        ("cold push", cold_push),
        ("warm push", warm_push),
        ("clone (2 packs)", clone),
        ("warm no-op fetch", noop_fetch),
        ("new branch", new_branch),
        ("delete", delete),
        ("fetch of one commit", fetch_one),
    ] {
        eprintln!(
            "{name:20} requests {:2} round trips {:2} connects {}",
            s.requests, s.round_trips, s.connects
        );
    }
    assert!(warm_push.round_trips <= 3, "{warm_push:?}");
    assert_eq!(noop_fetch.round_trips, 1, "{noop_fetch:?}");
    // Two pushes so far: two packs of one part each.
    let parts = 2u64;
    assert!(
        clone.round_trips <= 4 + parts.div_ceil(CONCURRENCY as u64),
        "{clone:?}"
    );
    assert_eq!(new_branch.round_trips, 1, "{new_branch:?}");
    assert_eq!(delete.round_trips, 1, "{delete:?}");
    // The account's commit, asked before the listing it found moved,
    // then the listing, the pack record and its part.
    assert!(fetch_one.round_trips <= 4, "{fetch_one:?}");
}

/// Requests of `git fetch` in `dir`.
fn fetch_requests(sb: &support::Sandbox, proxy: &LatencyProxy, dir: &std::path::Path) -> u64 {
    proxy.take();
    sb.git(dir, &["fetch", "-q", "origin"]);
    proxy.take().requests
}

/// Issue 55: a no-op fetch of 300 refs asks the account's latest commit
/// and lists nothing (one request, where the listing is four pages);
/// another writer's push moves the commit and the next fetch sees it; a
/// state written by an older knot (no `refs_commit`) lists as before.
#[test]
fn noop_fetch_of_many_refs_is_one_request() {
    let (pds, did, sb) = signed_in("many.test");
    let proxy = LatencyProxy::start(pds.addr(), Duration::ZERO).unwrap();
    let u = url(&proxy.url(), &did, "r");
    let a = sb.init("a");
    sb.commit(&a, "f", "one\n");
    let mut tx = String::new();
    for i in 0..299 {
        tx.push_str(&format!("create refs/tags/t{i:03} HEAD\n"));
    }
    let mut c = sb.cmd(&a, &["update-ref", "--stdin"]);
    c.stdin(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), tx.as_bytes()).unwrap();
    assert!(child.wait().unwrap().success());
    sb.git(&a, &["remote", "add", "origin", &u]);
    sb.git(&a, &["push", "-q", "origin", "main", "--tags"]);
    sb.git(sb.home.path(), &["clone", "-q", &u, "b"]);
    let b = sb.path("b");
    assert_eq!(sb.git(&b, &["tag"]).lines().count(), 299);

    let noop = fetch_requests(&sb, &proxy, &b);
    eprintln!("no-op fetch of 300 refs: {noop} requests");
    assert!(noop <= 2, "{noop} requests");

    // Another writer's push between two fetches is seen.
    let c2 = sb.commit(&a, "g", "two\n");
    sb.git(&a, &["push", "-q", "origin", "main:refs/heads/topic"]);
    let moved = fetch_requests(&sb, &proxy, &b);
    assert_eq!(sb.rev(&b, "origin/topic"), c2);
    assert!(moved > 2, "a moved commit lists the refs: {moved} requests");
    assert!(fetch_requests(&sb, &proxy, &b) <= 2);
    // And its delete.
    sb.git(&a, &["push", "-q", "origin", ":refs/heads/topic"]);
    sb.git(&b, &["fetch", "-q", "--prune", "origin"]);
    assert!(
        sb.try_git(&b, &["rev-parse", "-q", "--verify", "origin/topic"])
            .stdout
            .is_empty()
    );

    // A state without `refs_commit` (an older knot's) lists again, then
    // the fetches after it are one request again.
    let dir = b.join(".git/knot");
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
        assert!(v.as_object_mut().unwrap().remove("refs_commit").is_some());
        std::fs::write(&p, v.to_string()).unwrap();
    }
    let old = fetch_requests(&sb, &proxy, &b);
    assert!(old > 2, "an old state lists the refs: {old} requests");
    assert!(fetch_requests(&sb, &proxy, &b) <= 2);
}
