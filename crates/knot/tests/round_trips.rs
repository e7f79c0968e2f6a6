//! Round trips per operation, counted by the latency proxy (at RTT 0: the
//! counts do not depend on the delay). Targets (issue 35): a warm push of
//! one commit in at most 3, a warm no-op fetch in 1, a clone of a small
//! repository in at most 4 + ceil(parts / concurrency).

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
    assert!(fetch_one.round_trips <= 3, "{fetch_one:?}");
}
