//! `knot gateway` driven by real `git` (the helper configured with
//! `knot.gateway`) against an in-process atpds: concurrent writers on one
//! branch all land, a non-fast-forward is replayed or refused, a writer
//! outside the gateway is not overwritten, the budget waits instead of
//! tripping 429s, and bad requests are refused.

mod support;

use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use knot::gateway::{Kind, Limit};
use support::{PASSWORD, Pds, Sandbox, signed_in, stderr, url};

/// The gateway's config for `account` on `pds` (signed in with
/// [`PASSWORD`]), its scratch repository in `dir`.
fn config(pds: &Pds, account: &str, dir: &Path) -> knot::gateway::Config {
    let mut cfg = knot::gateway::Config::new(
        &pds.url,
        account,
        "127.0.0.1:0".parse().unwrap(),
        dir.join("gateway.git"),
    );
    cfg.password = Some(PASSWORD.into());
    cfg
}

fn gateway(pds: &Pds, account: &str, dir: &Path) -> knot::gateway::Running {
    knot::gateway::spawn(config(pds, account, dir)).unwrap()
}

/// A seeded repository `repo` and `n` clones of it using the gateway.
fn seeded(sb: &Sandbox, u: &str, gw: &str, n: usize) -> Vec<std::path::PathBuf> {
    let seed = sb.init("seed");
    sb.commit(&seed, "README", "seed\n");
    sb.git(&seed, &["remote", "add", "origin", u]);
    sb.git(&seed, &["push", "-q", "origin", "main"]);
    (0..n)
        .map(|i| {
            let name = format!("w{i}");
            sb.git(sb.home.path(), &["clone", "-q", u, &name]);
            let d = sb.path(&name);
            sb.git(&d, &["config", "knot.gateway", gw]);
            d
        })
        .collect()
}

fn stat(gw: &knot::gateway::Running, k: &str) -> u64 {
    gw.stats()[k].as_u64().unwrap()
}

#[test]
fn concurrent_writers_all_land() {
    let (pds, did, sb) = signed_in("gw1.test");
    let gw = gateway(&pds, &did, sb.home.path());
    let u = url(&pds.url, &did, "many");
    let n = 8;
    let clones = seeded(&sb, &u, &gw.url(), n);
    for (i, d) in clones.iter().enumerate() {
        sb.commit(d, &format!("w{i}.txt"), &format!("writer {i}\n"));
    }
    let outs: Vec<_> = std::thread::scope(|s| {
        let hs: Vec<_> = clones
            .iter()
            .map(|d| s.spawn(|| sb.try_git(d, &["push", "origin", "main"])))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for o in &outs {
        assert!(o.status.success(), "{}", stderr(o));
        assert!(stderr(o).contains("landed as"), "{}", stderr(o));
    }
    // Every writer's commit is on the branch, and the repository is whole.
    sb.git(sb.home.path(), &["clone", "-q", &u, "check"]);
    let check = sb.path("check");
    sb.git(&check, &["fsck", "--strict"]);
    let log = sb.git(&check, &["log", "--format=%s"]);
    for i in 0..n {
        assert!(
            log.contains(&format!("w{i}.txt: ")),
            "writer {i} lost:\n{log}"
        );
        assert!(check.join(format!("w{i}.txt")).exists());
    }
    assert_eq!(log.lines().count(), n + 1, "{log}");
    assert_eq!(stat(&gw, "landed"), n as u64);
    assert!(stat(&gw, "flushes") <= n as u64);
    // A writer adopts what landed with `git pull --rebase`: its replayed
    // commit replaces its own, nothing is duplicated.
    for d in &clones {
        sb.git(d, &["pull", "-q", "--rebase", "origin", "main"]);
        assert_eq!(sb.rev(d, "HEAD"), sb.rev(&check, "HEAD"));
    }
}

#[test]
fn non_fast_forward_is_replayed_or_refused() {
    let (pds, did, sb) = signed_in("gw2.test");
    let gw = gateway(&pds, &did, sb.home.path());
    let u = url(&pds.url, &did, "nff");
    let c = seeded(&sb, &u, &gw.url(), 3);
    let (a, b, x) = (&c[0], &c[1], &c[2]);
    let ca = sb.commit(a, "README", "changed by a\n");
    let o = sb.try_git(a, &["push", "origin", "main"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("landed as {ca}")),
        "{}",
        stderr(&o)
    );
    // b is behind and touches another file: replayed onto a's commit.
    let cb = sb.commit(b, "other.txt", "from b\n");
    let o = sb.try_git(b, &["push", "origin", "main"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("(rebased"), "{}", stderr(&o));
    let tip = sb.git(b, &["ls-remote", "origin", "refs/heads/main"])[..40].to_owned();
    assert_ne!(tip, cb);
    assert!(
        stderr(&o).contains(&format!("landed as {tip}")),
        "{}",
        stderr(&o)
    );
    sb.git(b, &["fetch", "-q", "origin"]);
    assert_eq!(sb.git(b, &["rev-parse", "origin/main^"]), ca);
    assert_eq!(
        sb.git(b, &["show", "-s", "--format=%an %s", "origin/main"]),
        sb.git(b, &["show", "-s", "--format=%an %s", &cb])
    );
    assert_eq!(sb.git(b, &["show", "origin/main:other.txt"]), "from b");
    // x changes the line a changed: refused in git's words, nothing moves.
    sb.commit(x, "README", "changed by x\n");
    let o = sb.try_git(x, &["push", "origin", "main"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("fetch first"), "{}", stderr(&o));
    assert!(
        sb.git(b, &["ls-remote", "origin", "refs/heads/main"])
            .starts_with(&tip)
    );
    assert_eq!(stat(&gw, "rebased"), 1);
}

#[test]
fn a_direct_writer_is_not_overwritten() {
    let (pds, did, sb) = signed_in("gw3.test");
    let gw = gateway(&pds, &did, sb.home.path());
    let u = url(&pds.url, &did, "race");
    let c = seeded(&sb, &u, &gw.url(), 2);
    let (a, d) = (&c[0], &c[1]);
    sb.git(d, &["config", "--unset", "knot.gateway"]);
    // The gateway opens its queue (and caches the ref record).
    sb.commit(a, "a1.txt", "a1\n");
    sb.git(a, &["push", "-q", "origin", "main"]);
    // A writer outside the gateway moves the branch.
    sb.git(d, &["pull", "-q", "--rebase", "origin", "main"]);
    let cd = sb.commit(d, "d.txt", "direct\n");
    sb.git(d, &["push", "-q", "origin", "main"]);
    // The gateway's swap fails; it re-reads, replays, lands on top.
    sb.commit(a, "a2.txt", "a2\n");
    let o = sb.try_git(a, &["push", "origin", "main"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stat(&gw, "swap_retries") >= 1, "{}", gw.stats());
    sb.git(sb.home.path(), &["clone", "-q", &u, "check"]);
    let check = sb.path("check");
    sb.git(&check, &["fsck", "--strict"]);
    assert!(
        sb.git(&check, &["merge-base", "--is-ancestor", &cd, "HEAD"])
            .is_empty()
    );
    for f in ["a1.txt", "a2.txt", "d.txt"] {
        assert!(check.join(f).exists(), "{f} lost");
    }
}

/// An atpds whose write points are `limit`, with a gateway on it whose
/// budget is `budget`; `pushes` sequential pushes through it. Returns the
/// gateway's counters.
fn flood(limit: xrpc::Limit, budget: Limit, pushes: usize) -> serde_json::Value {
    let pds = Pds::start_with(|c| {
        let mut limits = xrpc::RateLimits::reference();
        limits.writes_hour = limit;
        c.rate_limits = Some(limits);
    });
    let did = pds.account("flood.test");
    let sb = Sandbox::new("flood.test");
    let mut cfg = config(&pds, &did, sb.home.path());
    cfg.limits = vec![(Kind::Points, budget)];
    let gw = knot::gateway::spawn(cfg).unwrap();
    let u = url(&pds.url, &did, "flood");
    // Every write goes through the gateway, the first (creating) one too.
    let a = sb.init("a");
    sb.git(&a, &["config", "knot.gateway", &gw.url()]);
    sb.git(&a, &["remote", "add", "origin", &u]);
    for i in 0..pushes {
        sb.commit(&a, &format!("f{i}"), "x\n");
        let o = sb.try_git(&a, &["push", "origin", "main"]);
        assert!(o.status.success(), "push {i}: {}", stderr(&o));
    }
    sb.git(sb.home.path(), &["clone", "-q", &u, "check"]);
    let n: usize = sb
        .git(&sb.path("check"), &["rev-list", "--count", "HEAD"])
        .parse()
        .unwrap();
    assert_eq!(n, pushes);
    gw.stats()
}

#[test]
fn the_budget_waits_instead_of_429() {
    // 24 points per 3 s at the PDS; a flush costs it 4 (6 the first).
    let window = Duration::from_secs(3);
    let pds_limit = xrpc::Limit { points: 24, window };
    let s = flood(pds_limit, Limit { points: 24, window }, 10);
    assert_eq!(s["rate_limited"], 0, "{s}");
    assert!(s["budget_wait_ms"].as_u64().unwrap() > 0, "{s}");
    // The same flood with a budget far above the PDS's limit trips it
    // (the gateway then waits out Retry-After, so the pushes still land).
    let s = flood(
        pds_limit,
        Limit {
            points: 100_000,
            window,
        },
        10,
    );
    assert!(s["rate_limited"].as_u64().unwrap() > 0, "{s}");
}

#[test]
fn bad_requests_are_refused() {
    let (pds, did, sb) = signed_in("gw5.test");
    let mut cfg = config(&pds, &did, sb.home.path());
    cfg.max_push_bytes = 1 << 16;
    let gw = knot::gateway::spawn(cfg).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let x = knot::Xrpc::new(&gw.url(), Duration::from_secs(30));
    let oid = "a".repeat(40);
    let post = |q: String, body: Vec<u8>| {
        let req = http::Request::builder()
            .method("POST")
            .uri(format!("{}/v1/push?{q}", gw.url()))
            .body(Full::new(Bytes::from(body)))
            .unwrap();
        match rt.block_on(x.send("push", req, 1 << 16)) {
            Ok(_) => 200,
            Err(knot::KnotError::Xrpc { status, .. }) => status,
            Err(e) => panic!("{e}"),
        }
    };
    assert_eq!(post("repo=r&ref=refs/heads/main".into(), vec![]), 400);
    assert_eq!(
        post(format!("repo=../x&ref=refs/heads/main&new={oid}"), vec![]),
        400
    );
    assert_eq!(
        post(format!("repo=r&ref=refs/tags/v1&new={oid}"), vec![]),
        400
    );
    assert_eq!(
        post(format!("repo=r&ref=refs/heads/a..b&new={oid}"), vec![]),
        400
    );
    assert_eq!(
        post("repo=r&ref=refs/heads/main&new=xyz".into(), vec![]),
        400
    );
    // Not a pack.
    let q = format!("repo=r&ref=refs/heads/main&new={oid}");
    assert_eq!(post(q.clone(), b"PACK garbage".to_vec()), 400);
    // A pack without the commit it names.
    assert_eq!(post(q.clone(), vec![]), 400);
    // Past the body bound.
    assert_eq!(post(q, vec![0u8; 1 << 17]), 413);
    let req = http::Request::builder()
        .uri(format!("{}/nope", gw.url()))
        .body(Full::new(Bytes::new()))
        .unwrap();
    assert!(rt.block_on(x.send("nope", req, 1 << 16)).is_err());
    assert_eq!(gw.stats()["landed"], 0);
}
