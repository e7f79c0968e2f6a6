//! `space.create_space` (a fresh space per operation, its key a TID) and
//! `space.write` (a putRecord replacing a seeded post with a new value, so
//! the space keeps its size; the public repo's `put_record` beside it).
//! Checked after the timing: every sampled space exists with an empty
//! writer repo; after the writes each repo's LtHash equals the one
//! recomputed from its records and the one replayed from its log, and the
//! public repo's MST matches its index.

use std::sync::atomic::{AtomicU64, Ordering};

use benches::registry::count_tier;
use bytes::Bytes;
use hyper::StatusCode;
use serde_json::{Value, json};
use space::lthash::LtHash;
use space::{Need, OpsParams, Policy, SpaceRef, SpaceStore, Write};

use super::fixture::{Fixture, POST, SPACE_TYPE, drisl};
use super::{http_rows, lib_rows, sampled};
use crate::client::Call;
use crate::routes::{expect, json};

pub fn create_space(target: &mut benches::BenchTarget, fx: &Fixture) {
    let mut g = sampled(target.group("space.create_space"));
    let (spaces, owner) = (&fx.lib_spaces, fx.lib_owner.as_str());
    let empty = LtHash::new();
    let check = |spaces: &SpaceStore, sp: &SpaceRef, owner: &str| {
        let state = spaces.repo_state(sp, owner).expect("the new space's repo");
        assert!(
            state.hash == empty && state.rev.is_empty(),
            "{sp}: not empty"
        );
        spaces
            .authorize(sp, owner, Need::Admin)
            .expect("the authority");
    };
    lib_rows(
        &mut g,
        "lib",
        "",
        |_, _| {
            spaces
                .create_space(owner, SPACE_TYPE, None, Policy::MemberList, "open")
                .expect("createSpace")
        },
        |sp| check(spaces, sp, owner),
    );
    let body = Bytes::from(json!({"type": SPACE_TYPE}).to_string());
    http_rows(
        &mut g,
        fx,
        "",
        "http",
        StatusCode::OK,
        |_, _| {
            (
                Call::post("/xrpc/com.atproto.space.createSpace").bearer(&fx.owner.access),
                body.clone(),
            )
        },
        |a| {
            let v = json(&a.body)?;
            let sp = SpaceRef::parse(v["uri"].as_str().unwrap_or_default())
                .map_err(|e| format!("{v}: {e}"))?;
            check(&fx.http_spaces, &sp, &fx.owner.did);
            Ok(())
        },
    );
    g.finish();
}

/// A new value for post `rkey` (write `n`): datagen's post with the
/// write's number in its text.
fn post_value(caller: usize, n: u64) -> Value {
    let mut v = datagen::store::post(caller as u64, n).value;
    v["text"] = Value::String(format!("space write #{n}"));
    v
}

/// The repo's LtHash equals the one recomputed from its records and the
/// one its log replays to.
fn check_state(spaces: &SpaceStore, sp: &SpaceRef, owner: &str) {
    let mut from_records = LtHash::new();
    let mut state = None;
    spaces
        .export(
            sp,
            owner,
            false,
            &mut |s| {
                state = Some(s.clone());
                Ok(())
            },
            &mut |path, cid, _| {
                let (c, r) = path.split_once('/').expect("a path");
                from_records.apply_op(c, r, Some(&cid), None);
                Ok(())
            },
        )
        .expect("export");
    let state = state.expect("a state");
    assert_eq!(from_records, state.hash, "{sp}: records != state");
    let mut replayed = LtHash::new();
    let mut cursor = None;
    loop {
        let p = OpsParams {
            limit: Some(1000),
            cursor: cursor.take(),
            exclude_values: true,
            ..Default::default()
        };
        let page = spaces.list_repo_ops(sp, owner, &p).expect("ops");
        for op in &page.ops {
            replayed.apply_op(&op.collection, &op.rkey, op.cid.as_ref(), op.prev.as_ref());
        }
        match page.cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(replayed, state.hash, "{sp}: log replay != state");
}

pub fn write(target: &mut benches::BenchTarget, fx: &Fixture) {
    let mut g = sampled(target.group("space.write"));
    let counter = AtomicU64::new(1);
    for t in &fx.tiers {
        let tier = count_tier(t.n);
        let rkey = |caller: usize, i: u64| &t.posts[(caller * 31 + i as usize) % t.posts.len()];
        let (spaces, owner) = (&fx.lib_spaces, fx.lib_owner.as_str());
        lib_rows(
            &mut g,
            "lib",
            &tier,
            |caller, i| {
                let value = drisl(&post_value(caller, counter.fetch_add(1, Ordering::Relaxed)));
                spaces
                    .authorize(&t.lib_space, owner, Need::Write { repo: owner })
                    .expect("write access");
                let w = Write::Update {
                    collection: POST.into(),
                    rkey: rkey(caller, i).clone(),
                    value,
                };
                spaces
                    .apply_writes(&t.lib_space, owner, vec![w])
                    .expect("putRecord")
            },
            |r| assert!(r.results.len() == 1 && r.results[0].cid.is_some() && !r.rev.is_empty()),
        );
        check_state(spaces, &t.lib_space, owner);
        let space = t.http_space.to_uri();
        let did = fx.owner.did.clone();
        let call = Call::post("/xrpc/com.atproto.space.putRecord").bearer(&fx.owner.access);
        http_rows(
            &mut g,
            fx,
            &tier,
            "http",
            StatusCode::OK,
            |caller, i| {
                let n = counter.fetch_add(1, Ordering::Relaxed);
                let body = json!({"space": space, "repo": did, "collection": POST, "rkey": rkey(caller, i), "record": post_value(caller, n)});
                (call.clone(), Bytes::from(body.to_string()))
            },
            |a| {
                let v = json(&a.body)?;
                expect(v["cid"].is_string() && v["rev"].is_string(), || {
                    v.to_string()
                })
            },
        );
        check_state(&fx.http_spaces, &t.http_space, &fx.owner.did);
        let store = &fx.lib_store;
        lib_rows(
            &mut g,
            "public-repo",
            &tier,
            |caller, i| {
                let value = drisl(&post_value(caller, counter.fetch_add(1, Ordering::Relaxed)));
                store
                    .put_record(&t.public_did, POST, rkey(caller, i), value, None, None)
                    .expect("putRecord")
            },
            |c| assert!(!c.rev.is_empty()),
        );
        assert_eq!(store.check_repo(&t.public_did).expect("MST == index"), t.n);
    }
    g.finish();
}
