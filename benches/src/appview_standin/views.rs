//! The stand-in's answers (a child of `appview_standin.rs`): the
//! lexicon-shaped views it renders, deterministic in the caller, the query
//! and datagen's seeded text.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{AUTHORS, TIMELINE_DEPTH};

const CDN: &str = "https://cdn.appview.atbench.test";
/// Time of the newest timeline post: 2024-07-01T00:00:00Z.
const TIMELINE_TOP_US: u64 = 1_719_792_000_000_000;

/// 64 bits of sha-256 over the parts (the answers' only source of
/// variety besides datagen's text).
fn h64(parts: &[&[u8]]) -> u64 {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    let d = h.finalize();
    u64::from_le_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]])
}

fn cid_of_raw(seed: &str) -> String {
    repo::Cid::for_raw(seed.as_bytes()).to_string()
}

fn at_time(us: u64) -> String {
    datagen::store::datetime(us)
}

/// The viewer state of `caller` toward `did`.
fn viewer_of(caller: &str, did: &str) -> Value {
    let h = h64(&[caller.as_bytes(), did.as_bytes()]);
    let mut v = json!({"muted": false, "blockedBy": false});
    if h.is_multiple_of(3) {
        v["following"] = json!(format!(
            "at://{caller}/app.bsky.graph.follow/{}",
            datagen::store::tid(datagen::store::BASE_TIME_US + (h >> 20) % 1_000_000_000, 7)
        ));
    }
    if h.is_multiple_of(5) {
        v["followedBy"] = json!(format!(
            "at://{did}/app.bsky.graph.follow/{}",
            datagen::store::tid(datagen::store::BASE_TIME_US + (h >> 24) % 1_000_000_000, 9)
        ));
    }
    v
}

fn display_name(seed: u64) -> Value {
    datagen::store::profile(seed % 1_000_000).value["displayName"].clone()
}

pub(super) fn profile_detailed(caller: &str, did: &str, handle: &str) -> Value {
    let h = h64(&[did.as_bytes()]);
    let profile = datagen::store::profile(h % 1_000_000).value;
    let mut v = json!({
        "did": did,
        "handle": handle,
        "displayName": profile["displayName"],
        "description": profile["description"],
        "avatar": format!("{CDN}/img/avatar/plain/{did}/{}@jpeg", cid_of_raw(&format!("avatar {did}"))),
        "banner": format!("{CDN}/img/banner/plain/{did}/{}@jpeg", cid_of_raw(&format!("banner {did}"))),
        "followersCount": h % 5_000,
        "followsCount": (h >> 16) % 1_000,
        "postsCount": (h >> 32) % 3_000,
        "associated": {"lists": 0, "feedgens": 0, "starterPacks": (h >> 40) % 2, "labeler": false, "chat": {"allowIncoming": "following"}},
        "indexedAt": at_time(datagen::store::BASE_TIME_US),
        "createdAt": at_time(datagen::store::BASE_TIME_US),
        "viewer": viewer_of(caller, did),
        "labels": [],
    });
    if h.is_multiple_of(2) {
        let uri = format!(
            "at://{did}/app.bsky.feed.post/{}",
            datagen::store::tid(datagen::store::BASE_TIME_US + (h >> 8) % 1_000_000_000, 3)
        );
        let cid = cid_of_raw(&uri);
        v["pinnedPost"] = json!({"uri": uri, "cid": cid});
    }
    v
}

/// Synthetic author `a`: (DID, handle).
fn author(a: u64) -> (String, String) {
    (
        datagen::store::did(1_000_000 + a),
        format!("author{a}.appview.atbench.test"),
    )
}

fn profile_basic(caller: &str, a: u64) -> Value {
    let (did, handle) = author(a);
    json!({
        "did": did,
        "handle": handle,
        "displayName": display_name(a),
        "avatar": format!("{CDN}/img/avatar/plain/{did}/{}@jpeg", cid_of_raw(&format!("avatar {did}"))),
        "associated": {"chat": {"allowIncoming": "all"}},
        "viewer": viewer_of(caller, &did),
        "labels": [],
        "createdAt": at_time(datagen::store::BASE_TIME_US),
    })
}

/// One post of the synthetic network: its record (datagen's text), written
/// by author `a` at `us`; the images it embeds, if any.
struct Post {
    uri: String,
    cid: String,
    author: u64,
    record: Value,
    images: Vec<(String, u64)>,
    us: u64,
}

fn post(a: u64, us: u64, n: u64, images: usize, reply: Option<(&Post, &Post)>) -> Post {
    let (did, _) = author(a);
    let rkey = datagen::store::tid(us, (a % 1024) as u16);
    let uri = format!("at://{did}/app.bsky.feed.post/{rkey}");
    let mut record = datagen::store::post(a, n).value;
    record["createdAt"] = json!(at_time(us));
    let images: Vec<(String, u64)> = (0..images)
        .map(|i| {
            let cid = repo::Cid::for_raw(format!("image {uri} {i}").as_bytes()).to_string();
            (cid, 40_000 + (n * 7919 + i as u64 * 104_729) % 400_000)
        })
        .collect();
    if !images.is_empty() {
        record["embed"] = json!({
            "$type": "app.bsky.embed.images",
            "images": images.iter().map(|(cid, size)| json!({
                "alt": "",
                "image": {"$type": "blob", "ref": {"$link": cid}, "mimeType": "image/jpeg", "size": size},
                "aspectRatio": {"width": 1200, "height": 900},
            })).collect::<Vec<_>>(),
        });
    }
    if let Some((root, parent)) = reply {
        record["reply"] = json!({
            "root": {"uri": root.uri, "cid": root.cid},
            "parent": {"uri": parent.uri, "cid": parent.cid},
        });
    }
    let cid = match repo::cbor::json::from_json_value(&record) {
        Ok(cbor) => repo::Cid::for_dag_cbor(&repo::cbor::to_vec(&cbor)).to_string(),
        Err(_) => cid_of_raw(&uri),
    };
    Post {
        uri,
        cid,
        author: a,
        record,
        images,
        us,
    }
}

fn post_view(caller: &str, p: &Post, typed: bool) -> Value {
    let h = h64(&[caller.as_bytes(), p.uri.as_bytes()]);
    let (did, _) = author(p.author);
    let mut v = json!({
        "uri": p.uri,
        "cid": p.cid,
        "author": profile_basic(caller, p.author),
        "record": p.record,
        "replyCount": h % 12,
        "repostCount": (h >> 8) % 30,
        "likeCount": (h >> 16) % 200,
        "quoteCount": (h >> 24) % 4,
        "indexedAt": at_time(p.us + 1_500),
        "viewer": {"threadMuted": false, "embeddingDisabled": false},
        "labels": [],
    });
    if (h >> 32).is_multiple_of(4) {
        v["viewer"]["like"] = json!(format!(
            "at://{caller}/app.bsky.feed.like/{}",
            datagen::store::tid(p.us + 60_000_000, 5)
        ));
    }
    if typed {
        v["$type"] = json!("app.bsky.feed.defs#postView");
    }
    if !p.images.is_empty() {
        v["embed"] = json!({
            "$type": "app.bsky.embed.images#view",
            "images": p.images.iter().map(|(cid, _)| json!({
                "thumb": format!("{CDN}/img/feed_thumbnail/plain/{did}/{cid}@jpeg"),
                "fullsize": format!("{CDN}/img/feed_fullsize/plain/{did}/{cid}@jpeg"),
                "alt": "",
                "aspectRatio": {"width": 1200, "height": 900},
            })).collect::<Vec<_>>(),
        });
    }
    v
}

/// Item `k` of `caller`'s timeline.
fn feed_item(caller: &str, k: usize) -> Value {
    let s = h64(&[caller.as_bytes(), &(k as u64).to_le_bytes()]);
    let us = TIMELINE_TOP_US - k as u64 * 90_000_000 - s % 60_000_000;
    let a = s % AUTHORS;
    let kind = (s >> 20) % 20;
    let images = if (7..12).contains(&kind) {
        1 + ((s >> 28) % 2) as usize
    } else {
        0
    };
    let n = s >> 40;
    if kind < 5 {
        let root = post((s >> 8) % AUTHORS, us - 3_600_000_000, n + 1, 0, None);
        let parent = post(
            (s >> 14) % AUTHORS,
            us - 1_800_000_000,
            n + 2,
            0,
            Some((&root, &root)),
        );
        let p = post(a, us, n, images, Some((&root, &parent)));
        return json!({
            "post": post_view(caller, &p, false),
            "reply": {
                "root": post_view(caller, &root, true),
                "parent": post_view(caller, &parent, true),
                "grandparentAuthor": profile_basic(caller, root.author),
            },
        });
    }
    let p = post(a, us, n, images, None);
    let mut item = json!({"post": post_view(caller, &p, false)});
    if kind < 7 {
        item["reason"] = json!({
            "$type": "app.bsky.feed.defs#reasonRepost",
            "by": profile_basic(caller, (s >> 44) % AUTHORS),
            "indexedAt": at_time(us + 600_000_000),
        });
    }
    item
}

pub(super) fn timeline(caller: &str, limit: usize, offset: usize) -> Value {
    let end = (offset + limit).min(TIMELINE_DEPTH);
    let feed: Vec<Value> = (offset..end).map(|k| feed_item(caller, k)).collect();
    let mut v = json!({"feed": feed});
    if end < TIMELINE_DEPTH {
        v["cursor"] = json!(format!("o{end}"));
    }
    v
}
