//! The peers' probes in smoke mode (a few seconds each, small inputs), so a
//! broken probe is caught without running the peers' full measurement
//! (which `.ci/run` does not do). Each installs its peer on first use
//! (`npm ci`). Without node the tests skip with the reason, unless
//! `BENCH_REQUIRE_LIVE=1` (CI), where a missing node fails them.

#![cfg(feature = "bench-internals")]

use std::path::PathBuf;

use benches::corpus::Corpus;
use benches::peers::{self, Mode, Peer};
use benches::registry::Registry;

fn require_live() -> bool {
    std::env::var("BENCH_REQUIRE_LIVE").as_deref() == Ok("1")
}

/// A scratch directory of this test's own under target/atbench.
fn scratch(name: &str) -> PathBuf {
    let dir = benches::sidecar::atbench_dir()
        .join("peer-smoke")
        .join(name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).expect("clear the scratch dir");
    }
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// Node and the installed peer, or `None` (printed) when the test skips.
fn ready(peer: Peer) -> Option<()> {
    if let Err(reason) = peers::node_version() {
        assert!(!require_live(), "BENCH_REQUIRE_LIVE=1 and {reason}");
        eprintln!("skipped: {reason}");
        return None;
    }
    peers::ensure_installed(peer).unwrap_or_else(|e| panic!("{e}"));
    Some(())
}

/// Every id is a registered comparison row of its group.
fn registered(ids: &[String]) {
    let registry = Registry::load().expect("units.toml");
    for id in ids {
        let mut parts = id.split('/');
        let group = parts.next().unwrap_or_default();
        let implementation = parts.next().unwrap_or_default();
        let spec = registry
            .groups
            .get(group)
            .unwrap_or_else(|| panic!("{id}: group not in units.toml"));
        assert!(
            spec.compare.iter().any(|c| c == implementation),
            "{id}: {implementation} is not in {group}'s compare list"
        );
    }
}

fn groups_of(ids: &[String]) -> Vec<&str> {
    let mut groups: Vec<&str> = Vec::new();
    for group in ids.iter().filter_map(|i| i.split('/').next()) {
        if !groups.contains(&group) {
            groups.push(group);
        }
    }
    groups
}

#[test]
fn atproto_repo_probe_runs_every_group_and_checks_against_ours() {
    let Some(()) = ready(peers::ATPROTO_REPO) else {
        return;
    };
    let dir = scratch("atproto-repo");
    let corpus = Corpus::load();
    let inputs =
        peers::repo_inputs::build(dir.join("inputs"), Mode::Smoke, &corpus).expect("write inputs");
    let ids = peers::run_probe(
        peers::ATPROTO_REPO,
        &inputs,
        &dir.join("out"),
        Mode::Smoke,
        &[],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        groups_of(&ids),
        [
            "repo.cbor_encode",
            "repo.cbor_decode",
            "repo.cid",
            "repo.mst_add",
            "repo.mst_diff",
            "repo.commit_sign",
            "repo.commit_verify",
            "repo.car_read"
        ],
        "{ids:?}"
    );
    registered(&ids);

    // The check is real: a CID of ours that the peer does not reproduce
    // fails the probe, and no result is reported.
    let manifest = inputs.join("inputs.json");
    let mut value: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest).expect("manifest")).expect("JSON");
    value["cid"][0]["cid"] =
        serde_json::json!(repo::Cid::for_dag_cbor(b"another block").to_string());
    std::fs::write(&manifest, serde_json::to_vec(&value).expect("JSON")).expect("rewrite");
    let err = peers::run_probe(
        peers::ATPROTO_REPO,
        &inputs,
        &dir.join("out-tampered"),
        Mode::Smoke,
        &["repo.cid".to_owned()],
    )
    .expect_err("a CID that differs from the peer's must fail the probe");
    assert!(err.contains("failed"), "{err}");
}

#[test]
fn official_pds_probe_runs_every_group_and_checks_against_ours() {
    let Some(()) = ready(peers::OFFICIAL_PDS) else {
        return;
    };
    let dir = scratch("official-pds");
    let inputs = peers::store_inputs::build(dir.join("inputs"), Mode::Smoke).expect("inputs");
    let ids = peers::run_probe(
        peers::OFFICIAL_PDS,
        &inputs,
        &dir.join("out"),
        Mode::Smoke,
        &[],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        groups_of(&ids),
        [
            "store.apply_commit",
            "store.current_cid",
            "store.get_record",
            "store.list_records"
        ],
        "{ids:?}"
    );
    registered(&ids);
}

/// The official PDS as a whole server (`benches::official_pds`): it starts
/// healthy on its own port and directory, creates accounts with real
/// did:plc identities at its local PLC, takes a write and reads it back,
/// refuses a write without a token, and leaves no process or directory
/// behind when dropped.
#[test]
fn the_official_pds_runs_as_a_whole_server() {
    use benches::official_pds::{self, OfficialPds};
    if ready(official_pds::OFFICIAL_PDS_SERVER).is_none() {
        return;
    }
    let pds = OfficialPds::start().unwrap_or_else(|e| panic!("{e}"));
    let addr = pds.addr();
    let accounts = pds.create_accounts("smoke", 2);
    assert_eq!(accounts.len(), 2);
    assert!(accounts.iter().all(|a| a.did.starts_with("did:plc:")));
    assert_ne!(accounts[0].did, accounts[1].did);
    let a = &accounts[0];
    let record = serde_json::json!({"$type": "app.bsky.feed.post", "text": "hello", "createdAt": "2024-06-01T00:00:00.000Z"});
    let made = official_pds::post_json(
        addr,
        "/xrpc/com.atproto.repo.createRecord",
        Some(&a.access_jwt),
        &serde_json::json!({"repo": a.did, "collection": "app.bsky.feed.post", "record": record}),
    )
    .expect("createRecord");
    let rkey = made["uri"]
        .as_str()
        .and_then(|u| u.rsplit('/').next())
        .expect("uri");
    let got = official_pds::get_json(
        addr,
        &format!(
            "/xrpc/com.atproto.repo.getRecord?repo={}&collection=app.bsky.feed.post&rkey={rkey}",
            a.did
        ),
        None,
    )
    .expect("getRecord");
    assert_eq!(got["cid"], made["cid"]);
    assert_eq!(got["value"]["text"], "hello");
    let refused = official_pds::post_json(
        addr,
        "/xrpc/com.atproto.repo.createRecord",
        None,
        &serde_json::json!({"repo": a.did, "collection": "app.bsky.feed.post", "record": record}),
    );
    assert!(refused.is_err(), "a write without a token was taken");
    let dir = pds.data_dir();
    assert!(dir.join("account.sqlite").exists());
    drop(pds);
    assert!(!dir.exists(), "{} was left behind", dir.display());
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "the server still answers at {addr}"
    );
}

/// The official PDS pointed at the appview stand-in (`start.js
/// --appview-url/--appview-did`, as `xrpc.mix` starts it) proxies
/// getProfile and getTimeline with a service-auth JWT the stand-in
/// accepts, and passes the stand-in's answers on unchanged: its
/// read-after-write step finds none of the caller's records newer than the
/// stand-in's `atproto-repo-rev`, even right after the caller wrote one.
#[test]
fn the_official_pds_proxies_app_bsky_reads_to_the_appview_standin() {
    use benches::appview_standin::AppviewStandin;
    use benches::official_pds::{self, OfficialPds};
    use hyper::{Method, StatusCode};
    if ready(official_pds::OFFICIAL_PDS_SERVER).is_none() {
        return;
    }
    let standin = AppviewStandin::start().expect("the appview stand-in");
    let pds = OfficialPds::start_with(Some(&standin.appview())).unwrap_or_else(|e| panic!("{e}"));
    let accounts = pds.create_accounts("proxied", 2);
    standin.add_actors(accounts.iter().map(|a| (a.did.as_str(), a.handle.as_str())));
    let (me, other) = (&accounts[0], &accounts[1]);
    let record = serde_json::json!({"$type": "app.bsky.feed.post", "text": "mine", "createdAt": "2024-06-01T00:00:00.000Z"});
    official_pds::post_json(
        pds.addr(),
        "/xrpc/com.atproto.repo.createRecord",
        Some(&me.access_jwt),
        &serde_json::json!({"repo": me.did, "collection": "app.bsky.feed.post", "record": record}),
    )
    .expect("createRecord");
    let paths = [
        format!("/xrpc/app.bsky.actor.getProfile?actor={}", other.did),
        format!("/xrpc/app.bsky.actor.getProfile?actor={}", me.did),
        "/xrpc/app.bsky.feed.getTimeline?limit=30".to_owned(),
    ];
    for path in &paths {
        let (status, body) = official_pds::request(
            pds.addr(),
            Method::GET,
            path,
            Some(&me.access_jwt),
            bytes::Bytes::new(),
        )
        .expect("a proxied read");
        assert_eq!(
            status,
            StatusCode::OK,
            "{path}: {} (stand-in refusal: {:?})",
            String::from_utf8_lossy(&body),
            standin.first_refusal()
        );
        let want = standin
            .expected(&me.did, path)
            .expect("the stand-in's answer");
        assert!(body == want, "{path}: the answer is not the stand-in's");
    }
    let counts = standin.counts();
    assert_eq!((counts.profiles, counts.timelines), (2, 1), "{counts:?}");
    assert_eq!((counts.refused, counts.other), (0, 0), "{counts:?}");
    // Without a session the PDS answers itself, and nothing reaches the
    // stand-in.
    let (status, _) = official_pds::request(
        pds.addr(),
        Method::GET,
        &paths[0],
        None,
        bytes::Bytes::new(),
    )
    .expect("an unauthenticated read");
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(standin.counts(), counts);
}
