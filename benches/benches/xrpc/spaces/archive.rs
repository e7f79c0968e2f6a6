//! `space.get_repo` (E2 CAR, E4 STAR; the public repo's CAR export beside
//! them) and `space.oplog_catchup` (listRepoOps pages of 1,000 from zero
//! or from the middle of the log to its last page, whose commit is built).
//! Archives are parsed and counted, and catch-ups counted, after the
//! timing; the log replayed from zero is checked against the state once.

use std::sync::Mutex;

use benches::callers::bench_callers;
use benches::registry::count_tier;
use bytes::Bytes;
use hyper::StatusCode;
use space::envelope::{Envelope, RequestAuth};
use space::lthash::LtHash;
use space::{Need, OpsParams, SpaceRef, SpaceStore};

use super::fixture::{Fixture, OPS_PAGE, Tier, q};
use super::{CALLERS, get, http_rows, lib_rows, sampled};
use crate::client::{Call, Conn};
use crate::routes::{expect, json};

/// An archive's check: its bytes and the records it must hold.
type Check = fn(&[u8], usize) -> Result<(), String>;

/// One library getRepo row: its implementation, envelope, request and check.
type Era<'a> = (&'static str, &'a dyn Envelope, RequestAuth, Check);

/// E2's CAR: two roots, then the commit, the index and one block per record.
fn check_car(bytes: &[u8], records: usize) -> Result<(), String> {
    let mut car = repo::car::CarReader::new(bytes)
        .map_err(|e| format!("CAR: {e}"))?
        .verify(true);
    let roots = car.roots().len();
    let mut blocks = 0;
    while car.next_block().map_err(|e| format!("CAR: {e}"))?.is_some() {
        blocks += 1;
    }
    expect(roots == 2 && blocks == records + 2, || {
        format!("{roots} roots, {blocks} blocks for {records} records")
    })
}

/// E4's STAR: one entry per record, in bytewise key order.
fn check_star(bytes: &[u8], records: usize) -> Result<(), String> {
    let star = space::star::parse(bytes).map_err(|e| format!("STAR: {e:?}"))?;
    expect(
        star.entries.len() == records && star.entries.windows(2).all(|w| w[0].0 < w[1].0),
        || format!("{} entries for {records} records", star.entries.len()),
    )
}

pub fn get_repo(target: &mut benches::BenchTarget, fx: &Fixture) {
    let mut g = sampled(target.group("space.get_repo"));
    for t in &fx.tiers {
        let tier = count_tier(t.n);
        let (spaces, owner) = (&fx.lib_spaces, fx.lib_owner.as_str());
        let eras: [Era<'_>; 2] = [
            ("lib.e2-car", &fx.e2, RequestAuth::default(), check_car),
            (
                "lib.e4-star",
                &fx.e4,
                RequestAuth {
                    key_share: Some(fx.lib_key_share.clone()),
                },
                check_star,
            ),
        ];
        for (implementation, env, req, check) in &eras {
            lib_rows(
                &mut g,
                implementation,
                &tier,
                |_, _| {
                    spaces
                        .authorize(&t.lib_space, owner, Need::Read)
                        .expect("read access");
                    let mut out = Vec::new();
                    env.get_repo(spaces, &t.lib_space, owner, false, req, &mut out)
                        .expect("getRepo");
                    out
                },
                |out| check(out, t.ops).unwrap_or_else(|e| panic!("{implementation}: {e}")),
            );
        }
        let path = format!(
            "/xrpc/com.atproto.space.getRepo?space={}&repo={}",
            q(&t.http_space.to_uri()),
            fx.owner.did
        );
        http_rows(
            &mut g,
            fx,
            &tier,
            "http.e2-car",
            StatusCode::OK,
            |_, _| get(fx, path.clone()),
            |a| check_car(&a.body, t.ops),
        );
        let mac = format!("profile=commit;key-share=\"{}\"", fx.http_key_share);
        http_rows(
            &mut g,
            fx,
            &tier,
            "http.e4-star",
            StatusCode::OK,
            |_, _| {
                let (call, body) = get(fx, path.clone());
                let call = call
                    .header("accept", "application/vnd.dasl.star")
                    .header(space::envelope::MAC_HEADER, &mac);
                (call, body)
            },
            |a| {
                expect(a.headers.contains_key(space::envelope::MAC_HEADER), || {
                    "no MAC header".into()
                })?;
                check_star(&a.body, t.ops)
            },
        );
        let store = &fx.lib_store;
        let head = store
            .repo_root(&t.public_did)
            .expect("root")
            .expect("root")
            .commit;
        lib_rows(
            &mut g,
            "public-repo",
            &tier,
            |_, _| {
                let mut out = Vec::new();
                store
                    .export_repo(&t.public_did, None, &mut out)
                    .expect("export");
                out
            },
            |out| {
                let mut car = repo::car::CarReader::new(&out[..])
                    .expect("CAR")
                    .verify(true);
                assert_eq!(car.roots(), &[head]);
                let mut blocks = 0;
                while car.next_block().expect("block").is_some() {
                    blocks += 1;
                }
                assert!(blocks > t.n, "{blocks} blocks for {} records", t.n);
            },
        );
    }
    g.finish();
}

/// Pages from `cursor` to the last page; the ops read and the last page's
/// commit, built by E2 as the route does by default.
fn catch_up(
    fx: &Fixture,
    spaces: &SpaceStore,
    space: &SpaceRef,
    owner: &str,
    mut cursor: Option<String>,
) -> (usize, repo::cbor::Value) {
    spaces
        .authorize(space, owner, Need::Read)
        .expect("read access");
    let mut ops = 0;
    loop {
        let p = OpsParams {
            limit: Some(OPS_PAGE),
            cursor: cursor.take(),
            ..Default::default()
        };
        let page = spaces.list_repo_ops(space, owner, &p).expect("listRepoOps");
        ops += page.ops.len();
        match (page.cursor, page.state) {
            (Some(c), None) => cursor = Some(c),
            (None, Some(state)) => {
                let a = fx
                    .e2
                    .commit(space, owner, &state, &RequestAuth::default())
                    .expect("commit");
                return (ops, a.commit);
            }
            other => panic!("a page with cursor and state {other:?}"),
        }
    }
}

/// The log replayed from zero folds to the state's LtHash.
fn check_replay(spaces: &SpaceStore, t: &Tier, space: &SpaceRef, owner: &str) {
    let mut h = LtHash::new();
    let mut cursor = None;
    loop {
        let p = OpsParams {
            limit: Some(OPS_PAGE),
            cursor: cursor.take(),
            exclude_values: true,
            ..Default::default()
        };
        let page = spaces.list_repo_ops(space, owner, &p).expect("listRepoOps");
        for op in &page.ops {
            h.apply_op(&op.collection, &op.rkey, op.cid.as_ref(), op.prev.as_ref());
        }
        if let Some(state) = page.state {
            assert_eq!(h, state.hash, "{}: replay != state", t.n);
            return;
        }
        cursor = page.cursor;
    }
}

/// One HTTP catch-up on `conn`: the ops read and whether the last page
/// carried a commit.
fn http_catch_up(conn: &mut Conn, fx: &Fixture, base: &str, start: Option<&str>) -> (usize, bool) {
    let mut cursor = start.map(q);
    let mut ops = 0;
    loop {
        let path = match &cursor {
            Some(c) => format!("{base}&cursor={c}"),
            None => base.to_owned(),
        };
        let a = conn.answer(&Call::get(path).bearer(&fx.owner.access), Bytes::new());
        assert_eq!(
            a.status,
            StatusCode::OK,
            "{}",
            String::from_utf8_lossy(&a.body)
        );
        let v = json(&a.body).unwrap_or_else(|e| panic!("{e}"));
        ops += v["ops"].as_array().map_or(0, Vec::len);
        match v["cursor"].as_str() {
            Some(c) => cursor = Some(q(c)),
            None => return (ops, v["commit"].is_object()),
        }
    }
}

pub fn oplog_catchup(target: &mut benches::BenchTarget, fx: &Fixture) {
    let mut g = sampled(target.group("space.oplog_catchup"));
    for t in &fx.tiers {
        let tier = count_tier(t.n);
        let (spaces, owner) = (&fx.lib_spaces, fx.lib_owner.as_str());
        check_replay(spaces, t, &t.lib_space, owner);
        check_replay(&fx.http_spaces, t, &t.http_space, &fx.owner.did);
        let starts = [
            ("from-zero", None, None, t.ops),
            (
                "middle",
                Some(t.lib_middle.as_str()),
                Some(t.http_middle.as_str()),
                t.ops - t.n / 2,
            ),
        ];
        for (from, lib_start, http_start, want) in starts {
            lib_rows(
                &mut g,
                &format!("lib.{from}"),
                &tier,
                |_, _| {
                    catch_up(
                        fx,
                        spaces,
                        &t.lib_space,
                        owner,
                        lib_start.map(str::to_owned),
                    )
                },
                |(ops, commit)| {
                    assert_eq!(*ops, want, "lib.{from}: ops read");
                    assert!(commit.get("sig").is_some(), "lib.{from}: a signed commit");
                },
            );
            let base = format!(
                "/xrpc/com.atproto.space.listRepoOps?space={}&repo={}&limit={OPS_PAGE}",
                q(&t.http_space.to_uri()),
                fx.owner.did
            );
            let name = format!("http.{from}");
            for callers in CALLERS {
                let row = format!("{name}.callers-{callers}");
                let kept = Mutex::new(Vec::new());
                bench_callers(&mut g, &row, &tier, callers, |_| {
                    let mut conn = Conn::open(fx.addr);
                    let (base, kept) = (&base, &kept);
                    move |i: u64| {
                        let r = http_catch_up(&mut conn, fx, base, http_start);
                        if i == 0 {
                            super::keep(kept, r);
                        }
                    }
                });
                for (ops, commit) in kept.into_inner().unwrap_or_else(|p| p.into_inner()) {
                    assert!(
                        ops == want && commit,
                        "{row}: {ops} ops (want {want}), commit {commit}"
                    );
                }
            }
        }
    }
    g.finish();
}
