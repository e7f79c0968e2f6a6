//! The inputs of `peers/official-pds/probe.js`, from the same datagen seeds
//! and samplers as `--bench store`'s rows:
//!
//! - `writers`: the write accounts (DID, k256 secret, 32 post bodies each,
//!   in atproto JSON), one per caller of `store.apply_commit`;
//! - `reader`: the 10k-record account (`sizes.sqlite`'s second account):
//!   every record in atproto JSON with the CID of our DAG-CBOR encoding
//!   (`records.json`), the 1024 sampled keys of `store.current_cid` and
//!   `store.get_record`, the 256 cursors of `store.list_records`, and for
//!   the first 16 cursors the rkeys of the page we return.
//!
//! The probe writes the account through the PDS's own commit path and
//! checks that its record CIDs equal ours (same DAG-CBOR bytes), that the
//! sampled reads find them, and that its pages equal ours. Smoke mode uses
//! 300 records (the ten write accounts stay, so its ids are the full run's).

use std::path::PathBuf;

use repo::Cid;
use serde_json::json;

use super::{Inputs, Mode};
use crate::inputs::{STORE_10K_ACCOUNT, store_list_cursors, store_sample};

const LIKE: &str = "app.bsky.feed.like";

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Our DAG-CBOR CID of an atproto JSON record.
fn record_cid(value: &serde_json::Value) -> Cid {
    let value = repo::cbor::json::from_json_value(value).expect("datagen records are valid");
    Cid::for_dag_cbor(&repo::cbor::to_vec(&value))
}

/// Writes the inputs into `dir`; returns it.
pub fn build(dir: PathBuf, mode: Mode) -> std::io::Result<PathBuf> {
    let smoke = mode == Mode::Smoke;
    let mut inputs = Inputs::new(dir)?;
    inputs.set("mode", json!(mode.name()));

    let writers: Vec<_> = (0..10u64)
        .map(|i| {
            let bodies: Vec<_> = (0..32).map(|k| datagen::store::post(i, k).value).collect();
            json!({
                "did": datagen::store::did(i),
                "secret_hex": hex(&datagen::store::signing_secret(i)),
                "bodies": bodies,
            })
        })
        .collect();
    inputs.set("writers", json!(writers));

    let n = if smoke { 300 } else { 10_000 };
    let generated = datagen::store::records(STORE_10K_ACCOUNT, n);
    let records: Vec<_> = generated
        .iter()
        .map(|r| {
            json!({
                "collection": r.collection,
                "rkey": r.rkey,
                "cid": record_cid(&r.value).to_string(),
                "value": r.value,
            })
        })
        .collect();
    let file = inputs.file(
        "records.json",
        &serde_json::to_vec(&records).map_err(std::io::Error::other)?,
    )?;
    let keys: Vec<(&str, &str)> = generated
        .iter()
        .map(|r| (r.collection, r.rkey.as_str()))
        .collect();
    let sampled: Vec<_> = store_sample(&keys, 1024, 11)
        .into_iter()
        .map(|(c, r)| json!([c, r]))
        .collect();
    let mut likes: Vec<&str> = keys
        .iter()
        .filter(|(c, _)| *c == LIKE)
        .map(|(_, r)| *r)
        .collect();
    likes.sort_unstable();
    let cursors = store_list_cursors(&likes);
    let pages: Vec<_> = cursors
        .iter()
        .take(16)
        .map(|cursor| {
            let below = likes.partition_point(|r| *r < cursor.as_str());
            let page: Vec<&str> = likes[..below].iter().rev().take(50).copied().collect();
            json!({"cursor": cursor, "rkeys": page})
        })
        .collect();
    inputs.set(
        "reader",
        json!({
            "did": datagen::store::did(STORE_10K_ACCOUNT),
            "secret_hex": hex(&datagen::store::signing_secret(STORE_10K_ACCOUNT)),
            "records_file": file,
            "records": n,
            "sampled": sampled,
            "list_collection": LIKE,
            "cursors": cursors,
            "pages": pages,
        }),
    );
    inputs.finish()
}
