//! The content check of one sampled answer of each mix route (a child of
//! `mix.rs`), made after the timing.

use std::collections::HashMap;

use serde_json::Value;

use super::{MixSeed, RECORDS, Route, preferences};
use crate::client::Answer;

/// Checks one sampled answer of `route`.
pub(super) fn check(
    seed: &MixSeed,
    cids: &HashMap<String, String>,
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
    };
    if ok {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&a.body[..a.body.len().min(300)]).into_owned())
    }
}
