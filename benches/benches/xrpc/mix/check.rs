//! The content check of one sampled answer of each mix route (a child of
//! `mix.rs`), made after the timing.

use std::collections::HashMap;

use benches::appview_standin::AppviewStandin;
use bytes::Bytes;
use hyper::StatusCode;
use serde_json::Value;

use super::{MixSeed, RECORDS, Route, TIMELINE_LIMIT, preferences};
use crate::client::{Answer, Call, Conn};

/// Checks one sampled answer of `route`.
pub(super) fn check(
    seed: &MixSeed,
    cids: &HashMap<String, String>,
    standin: &AppviewStandin,
    route: Route,
    a: &Answer,
) -> Result<(), String> {
    let v = || -> Result<Value, String> {
        serde_json::from_slice(&a.body).map_err(|e| format!("not JSON ({e})"))
    };
    let ok = match route {
        Route::GetSession => v()?["did"].as_str().is_some_and(|d| d.starts_with("did:")),
        Route::GetPreferences => v()?["preferences"] == preferences(),
        Route::CreateRecord | Route::CreateWithBlob => {
            let v = v()?;
            v["uri"].as_str().is_some_and(|u| u.starts_with("at://")) && v["cid"].is_string()
        }
        Route::ApplyWrites => v()?["results"].as_array().is_some_and(|r| r.len() == 3),
        Route::GetRecord => {
            let v = v()?;
            let uri = v["uri"].as_str().unwrap_or_default();
            cids.get(uri).is_some_and(|c| v["cid"] == c.as_str())
        }
        Route::ListRecords => v()?["records"]
            .as_array()
            .is_some_and(|r| !r.is_empty() && r.len() <= 50),
        Route::UploadBlob => v()?["blob"]["ref"]["$link"].is_string(),
        Route::GetRepo => {
            let car = repo::car::CarSlice::parse(&a.body, true).map_err(|e| format!("CAR: {e}"))?;
            !car.roots.is_empty() && car.blocks.len() > RECORDS
        }
        Route::GetBlob => seed.blobs.values().any(|b| b[..] == a.body[..]),
        Route::GetLatestCommit => v()?["cid"].is_string(),
        Route::ListRepos => v()?["repos"]
            .as_array()
            .is_some_and(|r| r.len() >= seed.accounts.len().min(100)),
        Route::GetProfile | Route::GetTimeline => {
            let (caller, path) = a.asked.as_ref().ok_or("no record of what was asked")?;
            let want = standin.expected(caller, path)?;
            let v = v()?;
            if route == Route::GetProfile {
                let actor = path.rsplit_once("actor=").map_or("", |(_, d)| d);
                if v["did"] != actor {
                    return Err(format!("asked for {actor}, answered {}", v["did"]));
                }
            } else {
                let want: Value = serde_json::from_slice(&want).map_err(|e| e.to_string())?;
                let items = v["feed"].as_array().map_or(0, Vec::len);
                if items != TIMELINE_LIMIT || v["cursor"] != want["cursor"] {
                    return Err(format!(
                        "{items} items and cursor {}, the stand-in made {TIMELINE_LIMIT} and {}",
                        v["cursor"], want["cursor"]
                    ));
                }
            }
            a.body == want
        }
    };
    if ok {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&a.body[..a.body.len().min(300)]).into_owned())
    }
}

/// One getProfile and one getTimeline through the server's proxy outside
/// the timing, checked as the sampled answers are: a `--test` run (one
/// operation in all) never reaches their slots, and a full run should not
/// find a broken proxy only after its timing.
pub(super) fn probe_proxied(
    name: &str,
    seed: &MixSeed,
    cids: &HashMap<String, String>,
    standin: &AppviewStandin,
) {
    let (Some(me), Some(other)) = (seed.accounts.first(), seed.accounts.last()) else {
        return;
    };
    let mut conn = Conn::open(seed.addr);
    let asks = [
        (
            Route::GetProfile,
            format!("/xrpc/app.bsky.actor.getProfile?actor={}", other.acct.did),
        ),
        (
            Route::GetTimeline,
            format!("/xrpc/app.bsky.feed.getTimeline?limit={TIMELINE_LIMIT}"),
        ),
    ];
    for (route, path) in asks {
        let mut a = conn.answer(
            &Call::get(path.clone()).bearer(&me.acct.access),
            Bytes::new(),
        );
        assert_eq!(
            a.status,
            StatusCode::OK,
            "xrpc.mix/{name}: proxied {}: {} (the stand-in's first refusal: {:?})",
            route.name(),
            String::from_utf8_lossy(&a.body),
            standin.first_refusal()
        );
        a.asked = Some((me.acct.did.clone(), path));
        if let Err(e) = check(seed, cids, standin, route, &a) {
            panic!(
                "xrpc.mix/{name}: the proxied {} answer is wrong: {e}",
                route.name()
            );
        }
    }
}
