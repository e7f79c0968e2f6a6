//! `space.get_record`, `space.list_records`, `space.get_blob_range`: the
//! library (access check, then the read), the route, and the public
//! repo's read of the same records or blob; each result checked after the
//! timing against the seeded records or bytes.

use std::collections::HashMap;

use benches::registry::{count_tier, size_tier};
use hyper::StatusCode;
use repo::Cid;
use space::{ListParams, Need};
use store::ListOptions;

use super::fixture::{BLOB_BYTES, Fixture, LIKE, RANGE, q};
use super::{get, http_rows, lib_rows, sampled};
use crate::routes::{expect, json};

/// Sampled keys of a tier (1,024 draws, the store benches' sampler).
fn sample(records: &[(&'static str, String, Cid)]) -> Vec<(&'static str, String, Cid)> {
    benches::inputs::store_sample(records, 1024, 11)
}

pub fn get_record(target: &mut benches::BenchTarget, fx: &Fixture) {
    let mut g = sampled(target.group("space.get_record"));
    for t in &fx.tiers {
        let tier = count_tier(t.n);
        let keys = sample(&t.records);
        let cids: HashMap<String, Cid> = t
            .records
            .iter()
            .map(|(c, k, cid)| (format!("{c}/{k}"), *cid))
            .collect();
        let key = |caller: usize, i: u64| &keys[(caller * 37 + i as usize) % keys.len()];
        let (spaces, owner) = (&fx.lib_spaces, fx.lib_owner.as_str());
        lib_rows(
            &mut g,
            "lib",
            &tier,
            |caller, i| {
                let (coll, rkey, _) = key(caller, i);
                spaces
                    .authorize(&t.lib_space, owner, Need::Read)
                    .expect("read access");
                let (cid, value) = spaces
                    .get_record(&t.lib_space, owner, coll, rkey)
                    .expect("getRecord");
                (format!("{coll}/{rkey}"), cid, value)
            },
            |(path, cid, value)| {
                assert_eq!(cids.get(path), Some(cid), "{path}");
                assert!(cid.matches(value), "{path}: value does not hash to its CID");
            },
        );
        let space = q(&t.http_space.to_uri());
        let did = fx.owner.did.clone();
        http_rows(
            &mut g,
            fx,
            &tier,
            "http",
            StatusCode::OK,
            |caller, i| {
                let (coll, rkey, _) = key(caller, i);
                get(
                    fx,
                    format!(
                        "/xrpc/com.atproto.space.getRecord?space={space}&repo={did}&collection={coll}&rkey={rkey}"
                    ),
                )
            },
            |a| {
                let v = json(&a.body)?;
                let uri = v["uri"].as_str().unwrap_or_default();
                let path = uri.splitn(8, '/').nth(7).unwrap_or_default();
                let want = cids.get(path).map(Cid::to_string);
                expect(
                    want.is_some_and(|c| v["cid"] == c.as_str()) && v["value"].is_object(),
                    || v.to_string(),
                )
            },
        );
        let store = &fx.lib_store;
        lib_rows(
            &mut g,
            "public-repo",
            &tier,
            |caller, i| {
                let (coll, rkey, _) = key(caller, i);
                let view = store
                    .get_record(&t.public_did, coll, rkey)
                    .expect("getRecord");
                (format!("{coll}/{rkey}"), view)
            },
            |(path, view)| {
                let view = view.as_ref().expect("present");
                assert_eq!(cids.get(path), Some(&view.cid), "{path}");
            },
        );
    }
    g.finish();
}

pub fn list_records(target: &mut benches::BenchTarget, fx: &Fixture) {
    let mut g = sampled(target.group("space.list_records"));
    for t in &fx.tiers {
        let tier = count_tier(t.n);
        let likes: HashMap<&str, Cid> = t
            .records
            .iter()
            .filter(|r| r.0 == LIKE)
            .map(|(_, k, cid)| (k.as_str(), *cid))
            .collect();
        let cursor = |caller: usize, i: u64| {
            t.like_cursors[(caller * 13 + i as usize) % t.like_cursors.len()].as_str()
        };
        // A page is right when it holds 50 known likes in descending order.
        let page_ok = |page: &[(String, String)]| {
            page.len() == 50
                && page.windows(2).all(|w| w[0].0 > w[1].0)
                && page
                    .iter()
                    .all(|(k, c)| likes.get(k.as_str()).is_some_and(|x| x.to_string() == *c))
        };
        let (spaces, owner) = (&fx.lib_spaces, fx.lib_owner.as_str());
        let lib_prefix = format!("{}/{owner}/{LIKE}/", t.lib_space.to_uri());
        lib_rows(
            &mut g,
            "lib",
            &tier,
            |caller, i| {
                spaces
                    .authorize(&t.lib_space, owner, Need::Read)
                    .expect("read access");
                let p = ListParams {
                    collection: Some(LIKE.into()),
                    limit: Some(50),
                    cursor: Some(format!("{lib_prefix}{}", cursor(caller, i))),
                    ..Default::default()
                };
                spaces
                    .list_records(&t.lib_space, owner, &p)
                    .expect("listRecords")
            },
            |page| {
                let got: Vec<(String, String)> = page
                    .records
                    .iter()
                    .map(|r| (r.rkey.clone(), r.cid.to_string()))
                    .collect();
                assert!(page_ok(&got) && page.cursor.is_some(), "{got:?}");
            },
        );
        let space = q(&t.http_space.to_uri());
        let did = fx.owner.did.clone();
        let http_prefix = format!("{}/{did}/{LIKE}/", t.http_space.to_uri());
        http_rows(
            &mut g,
            fx,
            &tier,
            "http",
            StatusCode::OK,
            |caller, i| {
                let c = q(&format!("{http_prefix}{}", cursor(caller, i)));
                get(
                    fx,
                    format!(
                        "/xrpc/com.atproto.space.listRecords?space={space}&repo={did}&collection={LIKE}&limit=50&cursor={c}"
                    ),
                )
            },
            |a| {
                let v = json(&a.body)?;
                let got: Vec<(String, String)> = v["records"]
                    .as_array()
                    .map(Vec::as_slice)
                    .unwrap_or_default()
                    .iter()
                    .map(|r| {
                        let s = |k: &str| r[k].as_str().unwrap_or_default().to_owned();
                        (s("rkey"), s("cid"))
                    })
                    .collect();
                expect(page_ok(&got) && v["cursor"].is_string(), || v.to_string())
            },
        );
        let store = &fx.lib_store;
        lib_rows(
            &mut g,
            "public-repo",
            &tier,
            |caller, i| {
                let opts = ListOptions {
                    limit: 50,
                    cursor: Some(cursor(caller, i)),
                    reverse: false,
                };
                store
                    .list_records(&t.public_did, LIKE, &opts)
                    .expect("listRecords")
            },
            |page| {
                let got: Vec<(String, String)> = page
                    .iter()
                    .map(|r| (r.rkey.clone(), r.cid.to_string()))
                    .collect();
                assert!(page_ok(&got), "{got:?}");
            },
        );
    }
    g.finish();
}

pub fn get_blob_range(target: &mut benches::BenchTarget, fx: &Fixture) {
    let mut g = sampled(target.group("space.get_blob_range"));
    let t = fx.tiers.last().expect("a tier");
    let tier = size_tier((RANGE.1 - RANGE.0 + 1) as usize);
    let want = &fx.blob[RANGE.0 as usize..=RANGE.1 as usize];
    let len = want.len();
    // What the route does in process: the space's access check and blob
    // reference, then the store's blob head and the ranged read.
    let read_range = |did: &str, cid: &Cid| {
        let head = fx
            .lib_store
            .blob_head(did, cid, 0)
            .expect("blob head")
            .expect("the blob");
        assert_eq!(head.size, BLOB_BYTES as u64);
        let mut buf = vec![0u8; len];
        let n = fx
            .lib_store
            .read_blob_at(did, cid, RANGE.0, &mut buf)
            .expect("read")
            .expect("the blob");
        buf.truncate(n);
        buf
    };
    let (spaces, owner) = (&fx.lib_spaces, fx.lib_owner.as_str());
    lib_rows(
        &mut g,
        "lib",
        &tier,
        |_, _| {
            spaces
                .authorize(&t.lib_space, owner, Need::Read)
                .expect("read access");
            assert!(
                spaces
                    .blob_in_space(&t.lib_space, &fx.lib_blob)
                    .expect("blob ref")
            );
            read_range(owner, &fx.lib_blob)
        },
        |got| assert!(got[..] == want[..], "{} bytes, not the range", got.len()),
    );
    let path = format!(
        "/xrpc/com.atproto.space.getBlob?space={}&repo={}&cid={}",
        q(&t.http_space.to_uri()),
        fx.owner.did,
        fx.http_blob
    );
    let range = format!("bytes={}-{}", RANGE.0, RANGE.1);
    http_rows(
        &mut g,
        fx,
        &tier,
        "http",
        StatusCode::PARTIAL_CONTENT,
        |_, _| {
            let (call, body) = get(fx, path.clone());
            (call.header("range", &range), body)
        },
        |a| {
            let cr = a
                .headers
                .get("content-range")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default();
            expect(
                a.body[..] == want[..]
                    && cr == format!("bytes {}-{}/{BLOB_BYTES}", RANGE.0, RANGE.1),
                || format!("{} bytes, content-range {cr:?}", a.body.len()),
            )
        },
    );
    lib_rows(
        &mut g,
        "public-repo",
        &tier,
        |_, _| read_range(owner, &fx.lib_blob),
        |got| assert!(got[..] == want[..], "{} bytes, not the range", got.len()),
    );
    g.finish();
}
