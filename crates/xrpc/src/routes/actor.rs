//! `app.bsky.actor.getPreferences` and `app.bsky.actor.putPreferences`:
//! each account's preference array, the one `app.bsky` state a PDS keeps
//! for its accounts rather than proxying to an appview.
//!
//! The array is opaque to the server, as the lexicon leaves it (a union of
//! preference objects that grows with the app): what is checked is what
//! the lexicon and the reference PDS check — the input is an object with a
//! `preferences` array, every element an object with a `$type` string in
//! the `app.bsky` namespace (`app.bsky.actor.defs#adultContentPref`, ...).
//! The array is stored as the JSON text the client sent, re-serialised
//! (so nothing but what was parsed is kept), by the account file
//! (`accounts.rs`), and answered as `{"preferences": [...]}`; an account
//! that never put any gets an empty array. The body cap is the server's
//! JSON cap.

use std::sync::Arc;

use http::Response;
use http::request::Parts;
use hyper::body::Incoming;
use serde_json::Value;

use crate::app::{App, blocking};
use crate::error::{XResult, XrpcError};
use crate::request::json_body;
use crate::response::{Body, ok};

/// The namespace a preference's `$type` must be in.
const NAMESPACE: &str = "app.bsky";

/// Whether `ty` is `app.bsky` or under it (`app.bsky.…`).
fn in_namespace(ty: &str) -> bool {
    ty == NAMESPACE
        || ty
            .strip_prefix(NAMESPACE)
            .is_some_and(|rest| rest.starts_with('.'))
}

/// Checks a putPreferences input; returns the array's JSON text.
pub fn checked_preferences(input: &Value) -> Result<String, String> {
    let Some(obj) = input.as_object() else {
        return Err("input must be a JSON object".into());
    };
    let Some(prefs) = obj.get("preferences") else {
        return Err("preferences: required".into());
    };
    let Some(items) = prefs.as_array() else {
        return Err("preferences: must be an array".into());
    };
    for (i, item) in items.iter().enumerate() {
        let Some(item) = item.as_object() else {
            return Err(format!("preferences[{i}]: must be an object"));
        };
        match item.get("$type").and_then(Value::as_str) {
            None => return Err(format!("preferences[{i}].$type: required (a string)")),
            Some(ty) if !in_namespace(ty) => {
                return Err(format!(
                    "preferences[{i}].$type: {ty:?} is not in the {NAMESPACE} namespace"
                ));
            }
            Some(_) => {}
        }
    }
    serde_json::to_string(prefs).map_err(|e| format!("preferences: {e}"))
}

/// `app.bsky.actor.getPreferences` (access token).
pub async fn get_preferences(app: &Arc<App>, parts: &Parts) -> XResult<Response<Body>> {
    let did = app.access_did(parts)?;
    let app2 = app.clone();
    let stored = app
        .reads
        .run(move || app2.accounts.preferences(&did).map_err(XrpcError::fault))
        .await?;
    let array = stored.unwrap_or_else(|| "[]".to_owned());
    Ok(ok(format!("{{\"preferences\":{array}}}")))
}

/// `app.bsky.actor.putPreferences` (access token).
pub async fn put_preferences(
    app: &Arc<App>,
    parts: &Parts,
    body: Incoming,
) -> XResult<Response<Body>> {
    let did = app.access_did(parts)?;
    let input: Value = json_body(app, parts, body).await?;
    let text = checked_preferences(&input).map_err(XrpcError::invalid)?;
    let app2 = app.clone();
    blocking(move || {
        app2.accounts
            .put_preferences(&did, &text)
            .map_err(XrpcError::fault)
    })
    .await?;
    Ok(Response::new(Body::empty()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn accepts_app_bsky_preferences_and_names_what_is_wrong() {
        let good = json!({"preferences": [
            {"$type": "app.bsky.actor.defs#adultContentPref", "enabled": false},
            {"$type": "app.bsky.actor.defs#savedFeedsPrefV2", "items": []},
        ]});
        let text = checked_preferences(&good).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            good["preferences"]
        );
        assert_eq!(
            checked_preferences(&json!({"preferences": []})).unwrap(),
            "[]"
        );
        for (input, field) in [
            (json!([]), "input"),
            (json!({}), "preferences: required"),
            (json!({"preferences": {}}), "preferences: must be an array"),
            (
                json!({"preferences": [1]}),
                "preferences[0]: must be an object",
            ),
            (
                json!({"preferences": [{"enabled": true}]}),
                "preferences[0].$type: required",
            ),
            (
                json!({"preferences": [{"$type": 7}]}),
                "preferences[0].$type: required",
            ),
            (
                json!({"preferences": [{"$type": "app.bsky.actor.defs#x"}, {"$type": "com.example.pref"}]}),
                "preferences[1].$type",
            ),
            (
                json!({"preferences": [{"$type": "app.bskyx.pref"}]}),
                "not in the app.bsky namespace",
            ),
        ] {
            let e = checked_preferences(&input).unwrap_err();
            assert!(e.contains(field), "{input}: {e}");
        }
    }

    proptest! {
        #[test]
        fn never_panics_and_keeps_what_it_accepts(types in proptest::collection::vec("[a-z.#]{0,24}", 0..6)) {
            let prefs: Vec<Value> = types.iter().map(|t| json!({"$type": t, "v": 1})).collect();
            let input = json!({"preferences": prefs});
            let all_ok = types.iter().all(|t| in_namespace(t));
            match checked_preferences(&input) {
                Ok(text) => {
                    prop_assert!(all_ok);
                    prop_assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), input["preferences"].clone());
                }
                Err(_) => prop_assert!(!all_ok),
            }
        }
    }
}
