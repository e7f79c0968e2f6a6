//! The `xrpc.route/<route>/c50` rows of the routes the PDS benchmark notes
//! measure beyond the first 17 (`routes.rs`, its parent): the server's did:web
//! document, the OAuth discovery documents and JWKS, getServiceAuth,
//! getPreferences, and the account and security reads
//! (checkAccountStatus, listAppPasswords), plus sync.getBlocks. Same
//! runner, same checks after the timing.
//!
//! On a peer (the official PDS) each of these rows first sends one request
//! outside the timing: a route it does not answer 200 (say, OAuth metadata
//! of a provider it was started without) is skipped with the printed
//! reason, so the peer's rows are those both servers serve. Ours must
//! answer every one.

use bytes::Bytes;
use hyper::StatusCode;

use super::{Route, expect, get, json};
use crate::client::{Call, once_bytes};
use crate::seed::Seed;

/// The rows (c50).
pub fn routes(seed: &Seed) -> Vec<Route> {
    let r = &seed.reader;
    let did = r.did.clone();
    // Three record CIDs and the head per call, rotating over the records.
    let blocks_calls: Vec<(Call, Bytes)> = seed
        .records
        .chunks(3)
        .take(64)
        .map(|chunk| {
            let mut q = format!(
                "/xrpc/com.atproto.sync.getBlocks?did={did}&cids={}",
                seed.head
            );
            for (_, _, cid) in chunk {
                q.push_str("&cids=");
                q.push_str(cid);
            }
            get(q)
        })
        .collect();
    vec![
        Route {
            name: "well_known_did_json",
            calls: vec![get("/.well-known/did.json".into())],
            per_caller: false,
            check: Box::new(|_, b| {
                let v = json(b)?;
                expect(
                    v["id"].as_str().is_some_and(|d| d.starts_with("did:web:"))
                        && v["service"].is_array(),
                    || v.to_string(),
                )
            }),
        },
        Route {
            name: "oauth_protected_resource",
            calls: vec![get("/.well-known/oauth-protected-resource".into())],
            per_caller: false,
            check: Box::new(|_, b| {
                let v = json(b)?;
                expect(
                    v["resource"].is_string() && v["authorization_servers"].is_array(),
                    || v.to_string(),
                )
            }),
        },
        Route {
            name: "oauth_authorization_server",
            calls: vec![get("/.well-known/oauth-authorization-server".into())],
            per_caller: false,
            check: Box::new(|_, b| {
                let v = json(b)?;
                expect(
                    v["issuer"].is_string() && v["jwks_uri"].is_string(),
                    || v.to_string(),
                )
            }),
        },
        Route {
            name: "oauth_jwks",
            calls: vec![get("/oauth/jwks".into())],
            per_caller: false,
            check: Box::new(|_, b| {
                let v = json(b)?;
                expect(v["keys"].is_array(), || v.to_string())
            }),
        },
        Route {
            name: "get_service_auth",
            calls: seed
                .writers
                .iter()
                .map(|w| {
                    let path = format!(
                        "/xrpc/com.atproto.server.getServiceAuth?aud={did}&lxm=app.bsky.feed.getTimeline"
                    );
                    (Call::get(path).bearer(&w.access), Bytes::new())
                })
                .collect(),
            per_caller: true,
            check: Box::new(|_, b| {
                let v = json(b)?;
                let token = v["token"].as_str().unwrap_or_default();
                expect(token.split('.').count() == 3, || v.to_string())
            }),
        },
        Route {
            name: "get_preferences",
            calls: seed
                .writers
                .iter()
                .map(|w| {
                    (
                        Call::get("/xrpc/app.bsky.actor.getPreferences").bearer(&w.access),
                        Bytes::new(),
                    )
                })
                .collect(),
            per_caller: true,
            check: Box::new(|_, b| {
                let v = json(b)?;
                expect(v["preferences"].is_array(), || v.to_string())
            }),
        },
        Route {
            name: "check_account_status",
            calls: vec![(
                Call::get("/xrpc/com.atproto.server.checkAccountStatus").bearer(&r.access),
                Bytes::new(),
            )],
            per_caller: false,
            check: {
                let (head, records) = (seed.head.clone(), seed.records.len() as u64);
                Box::new(move |_, b| {
                    let v = json(b)?;
                    expect(
                        v["repoCommit"] == head.as_str()
                            && v["indexedRecords"].as_u64() == Some(records)
                            && v["activated"] == true,
                        || v.to_string(),
                    )
                })
            },
        },
        Route {
            name: "list_app_passwords",
            calls: seed
                .writers
                .iter()
                .map(|w| {
                    (
                        Call::get("/xrpc/com.atproto.server.listAppPasswords").bearer(&w.access),
                        Bytes::new(),
                    )
                })
                .collect(),
            per_caller: true,
            check: Box::new(|_, b| {
                let v = json(b)?;
                expect(v["passwords"].is_array(), || v.to_string())
            }),
        },
        Route {
            name: "sync_get_blocks",
            calls: blocks_calls,
            per_caller: false,
            check: {
                let head = seed.head.clone();
                Box::new(move |_, b| {
                    let car =
                        repo::car::CarSlice::parse(b, true).map_err(|e| format!("CAR: {e}"))?;
                    let has_head = car.blocks.iter().any(|(c, _)| c.to_string() == head);
                    expect(has_head && car.blocks.len() >= 2, || {
                        format!("{} blocks, head there: {has_head}", car.blocks.len())
                    })
                })
            },
        },
    ]
}

/// Whether a peer answers `route` 200 (one request outside the timing);
/// the reason to skip its row otherwise.
pub fn peer_serves(seed: &Seed, route: &Route) -> Result<(), String> {
    let (call, body) = &route.calls[0];
    let (status, answer) = once_bytes(seed.addr, call, body.clone());
    if status == StatusCode::OK {
        Ok(())
    } else {
        Err(format!(
            "{} answered {status}: {}",
            call.path,
            String::from_utf8_lossy(&answer[..answer.len().min(200)])
        ))
    }
}
