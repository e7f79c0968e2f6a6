//! The five hot-path line generators. Each appends one JSON object (no
//! newline) for line `index` of its kind, drawing only from the kind's own
//! stream. The order of draws is part of the data: changing it changes every
//! later line (the pinned digests in the tests catch that).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use rand::Rng;
use rand::RngCore;
use rand_chacha::ChaCha8Rng;

use crate::json::{push_fixed, push_hex, push_int, push_key, push_str};

/// Prose vocabulary (a few non-ASCII words so UTF-8 travels too).
#[rustfmt::skip]
const WORDS: &[&str] = &[
    "the", "a", "record", "commit", "repo", "blob", "index", "segment", "reader", "writer",
    "quickly", "slowly", "merged", "sealed", "replayed", "archived", "signed", "verified",
    "tree", "node", "leaf", "branch", "cursor", "stream", "event", "label", "post", "like",
    "follow", "block", "list", "feed", "and", "with", "from", "into", "after", "before",
    "every", "some", "no", "one", "two", "many", "small", "large", "cold", "warm", "fresh",
    "stale", "café", "naïve", "résumé", "日本語", "🦀", "über", "data", "gateway", "path", "hot",
    "cache", "miss", "hit",
];
#[rustfmt::skip]
const TAGS: &[&str] = &[
    "alpha", "beta", "gamma", "delta", "prod", "staging", "dev", "eu", "us", "apac", "hot",
    "cold", "pii", "public", "internal", "archived", "pinned", "draft",
];
#[rustfmt::skip]
const PROJECTS: &[&str] = &[
    "atlas", "borealis", "cygnus", "draco", "eridanus", "fornax", "gemini", "hydra", "indus",
    "lyra", "mensa", "norma", "orion", "pavo",
];
const SOURCES: &[&str] = &["firehose", "backfill", "import", "api", "replay", "sync"];
#[rustfmt::skip]
const REGIONS: &[&str] = &[
    "eu-west-1", "eu-central-1", "us-east-1", "us-west-2", "ap-south-1", "ap-northeast-1",
];
const CLIENTS: &[&str] = &["bsky-app", "graysky", "skeets", "deck", "cli", "bot"];
const LANGS: &[&str] = &["en", "ja", "de", "pt", "es", "fr", "ko"];
#[rustfmt::skip]
const COLLECTIONS: &[&str] = &[
    "app.bsky.feed.post", "app.bsky.feed.like", "app.bsky.graph.follow", "app.bsky.feed.repost",
    "app.bsky.actor.profile", "notes", "events", "embeddings",
];
#[rustfmt::skip]
const CONTENT_TYPES: &[&str] = &[
    "application/octet-stream", "image/jpeg", "image/png", "application/cbor",
    "application/json", "text/plain; charset=utf-8", "video/mp4",
];
const EXTENSIONS: &[&str] = &["bin", "jpg", "png", "cbor", "json", "txt", "mp4"];

/// Blob payload sizes, cycled by line index: 16 B, 256 B, 4 KiB, 64 KiB.
pub(crate) const BLOB_SIZES: [usize; 4] = [16, 256, 4096, 65536];

/// 2026-06-02T00:00:00Z in Unix seconds; record timestamps fall in the 90
/// days before it.
const EPOCH_2026_06_02: i64 = 1_780_358_400;

fn pick<'a>(rng: &mut ChaCha8Rng, items: &[&'a str]) -> &'a str {
    items[rng.random_range(0..items.len() as u32) as usize]
}

fn fill(rng: &mut ChaCha8Rng, scratch: &mut Vec<u8>, len: usize) {
    scratch.clear();
    scratch.resize(len, 0);
    rng.fill_bytes(scratch);
}

/// Appends `"<base64 of len random bytes>"` (standard alphabet, padded).
fn push_b64(out: &mut String, rng: &mut ChaCha8Rng, scratch: &mut Vec<u8>, len: usize) {
    fill(rng, scratch, len);
    out.push('"');
    STANDARD.encode_string(&scratch[..], out);
    out.push('"');
}

/// Appends `words` words of prose, capitalised sentences ending in periods.
fn push_prose(out: &mut String, rng: &mut ChaCha8Rng, words: u32) {
    let mut prose = String::with_capacity(words as usize * 8);
    let mut start = true;
    for i in 0..words {
        if i > 0 {
            prose.push(' ');
        }
        let w = pick(rng, WORDS);
        if start {
            let mut cs = w.chars();
            if let Some(c) = cs.next() {
                prose.extend(c.to_uppercase());
                prose.push_str(cs.as_str());
            }
        } else {
            prose.push_str(w);
        }
        start = rng.random_range(0..8u32) == 0;
        if start || i + 1 == words {
            prose.push('.');
        }
    }
    push_str(out, &prose);
}

/// `records.ndjson`: one row touching every JSON value kind (~550 B).
pub(crate) fn record(rng: &mut ChaCha8Rng, index: u64, scratch: &mut Vec<u8>, out: &mut String) {
    out.push('{');
    push_key(out, "id");
    fill(rng, scratch, 16);
    push_hex(out, scratch);
    out.push(',');
    push_key(out, "tenant");
    push_str(out, &format!("tenant-{:03}", rng.random_range(0..64u32)));
    out.push(',');
    push_key(out, "project");
    let project = format!("{}-{:02}", pick(rng, PROJECTS), rng.random_range(0..32u32));
    push_str(out, &project);
    out.push(',');
    push_key(out, "seq");
    push_int(out, 1_000_000 + index as i64);
    out.push(',');
    push_key(out, "score");
    push_fixed(out, rng.random_range(0..=1_000_000i64), 4);
    out.push(',');
    push_key(out, "ratio");
    push_fixed(out, rng.random_range(0..=1_000_000i64), 6);
    out.push(',');
    push_key(out, "active");
    out.push_str(if rng.random_bool(0.7) {
        "true"
    } else {
        "false"
    });
    out.push(',');
    push_key(out, "flagged");
    out.push_str(match rng.random_range(0..5u32) {
        0 | 1 => "null",
        2 => "true",
        _ => "false",
    });
    out.push(',');
    push_key(out, "tags");
    out.push('[');
    for i in 0..rng.random_range(0..=5u32) {
        if i > 0 {
            out.push(',');
        }
        push_str(out, pick(rng, TAGS));
    }
    out.push_str("],");
    push_key(out, "counts");
    out.push('{');
    push_key(out, "views");
    push_int(out, rng.random_range(0..250_000i64));
    out.push(',');
    push_key(out, "likes");
    push_int(out, rng.random_range(0..20_000i64));
    out.push(',');
    push_key(out, "reposts");
    push_int(out, rng.random_range(0..2_000i64));
    out.push(',');
    push_key(out, "replies");
    push_int(out, rng.random_range(0..500i64));
    out.push(',');
    push_key(out, "delta");
    push_int(out, rng.random_range(-500..=500i64));
    out.push_str("},");
    push_key(out, "metadata");
    out.push('{');
    push_key(out, "source");
    out.push('{');
    push_key(out, "kind");
    push_str(out, pick(rng, SOURCES));
    out.push(',');
    push_key(out, "region");
    push_str(out, pick(rng, REGIONS));
    out.push_str("},");
    push_key(out, "client");
    out.push('{');
    push_key(out, "name");
    push_str(out, pick(rng, CLIENTS));
    out.push(',');
    push_key(out, "version");
    let version = format!(
        "{}.{}.{}",
        rng.random_range(0..4u32),
        rng.random_range(0..20u32),
        rng.random_range(0..10u32)
    );
    push_str(out, &version);
    out.push_str("},");
    push_key(out, "lang");
    push_str(out, pick(rng, LANGS));
    out.push_str("},");
    push_key(out, "note");
    let words = rng.random_range(2..=8u32);
    push_prose(out, rng, words);
    out.push(',');
    push_key(out, "payload_b64");
    let len = rng.random_range(8..=96u32) as usize;
    push_b64(out, rng, scratch, len);
    out.push(',');
    push_key(out, "created_at");
    let back_ms = rng.random_range(0..90 * 86_400_000i64);
    push_str(
        out,
        &codec::datetime::rfc3339_millis(EPOCH_2026_06_02 * 1000 - back_ms),
    );
    out.push('}');
}

/// `object_dispatch.ndjson`: an object-store request with its payload inline
/// (~2.9 KB; 64-4096 random bytes, or text of similar length).
pub(crate) fn object(rng: &mut ChaCha8Rng, _index: u64, scratch: &mut Vec<u8>, out: &mut String) {
    out.push('{');
    push_key(out, "op");
    push_str(
        out,
        match rng.random_range(0..20u32) {
            0..=11 => "put",
            12..=14 => "upsert",
            15..=16 => "append",
            17..=18 => "get",
            _ => "delete",
        },
    );
    out.push(',');
    let bucket_key = if rng.random_bool(0.7) {
        "bucket"
    } else {
        "container"
    };
    push_key(out, bucket_key);
    push_str(
        out,
        &format!("{}-{:02}", pick(rng, PROJECTS), rng.random_range(0..16u32)),
    );
    out.push(',');
    let object_key = if rng.random_bool(0.75) {
        "key"
    } else {
        "object"
    };
    push_key(out, object_key);
    let ext_idx = rng.random_range(0..EXTENSIONS.len() as u32) as usize;
    fill(rng, scratch, 6);
    let mut key = format!(
        "tenant-{:03}/{}/2026/{:02}/",
        rng.random_range(0..64u32),
        pick(rng, COLLECTIONS),
        rng.random_range(1..=6u32)
    );
    for b in scratch.iter() {
        key.push_str(&format!("{b:02x}"));
    }
    key.push('.');
    key.push_str(EXTENSIONS[ext_idx]);
    push_str(out, &key);
    out.push(',');
    if rng.random_range(0..10u32) < 8 {
        push_key(out, "content_type");
        push_str(out, CONTENT_TYPES[ext_idx]);
        out.push(',');
    }
    let len = rng.random_range(64..=4096u32) as usize;
    match rng.random_range(0..20u32) {
        0..=13 => {
            push_key(out, "data_base64");
            push_b64(out, rng, scratch, len);
        }
        14..=16 => {
            push_key(out, "content_base64");
            push_b64(out, rng, scratch, len);
        }
        field => {
            // Text of about the base64 length, so the aliases weigh alike.
            push_key(
                out,
                if field < 19 {
                    "data_text"
                } else {
                    "content_text"
                },
            );
            let mut text = String::with_capacity(len * 4 / 3 + 16);
            while text.len() < len * 4 / 3 {
                if !text.is_empty() {
                    text.push_str(match rng.random_range(0..12u32) {
                        0 => "\n",
                        1 => " \"quoted\" ",
                        _ => " ",
                    });
                }
                text.push_str(pick(rng, WORDS));
            }
            push_str(out, &text);
        }
    }
    out.push('}');
}

/// `blobs.ndjson`: one base64 blob, sizes cycling through [`BLOB_SIZES`].
pub(crate) fn blob(rng: &mut ChaCha8Rng, index: u64, scratch: &mut Vec<u8>, out: &mut String) {
    let size = BLOB_SIZES[(index % BLOB_SIZES.len() as u64) as usize];
    out.push('{');
    push_key(out, "id");
    fill(rng, scratch, 16);
    push_hex(out, scratch);
    out.push(',');
    push_key(out, "size");
    push_int(out, size as i64);
    out.push(',');
    push_key(out, "data_base64");
    push_b64(out, rng, scratch, size);
    out.push('}');
}

/// One SQL parameter: string, int, float, bool or null.
fn push_param(out: &mut String, rng: &mut ChaCha8Rng, scratch: &mut Vec<u8>) {
    match rng.random_range(0..10u32) {
        0..=2 => {
            fill(rng, scratch, 16);
            push_hex(out, scratch);
        }
        3 => push_str(out, &format!("tenant-{:03}", rng.random_range(0..64u32))),
        4..=6 => push_int(out, rng.random_range(0..10_000_000i64)),
        7 => push_fixed(out, rng.random_range(-100_000..=100_000i64), 3),
        8 => out.push_str(if rng.random_bool(0.5) {
            "true"
        } else {
            "false"
        }),
        _ => out.push_str("null"),
    }
}

/// SQL templates with their placeholder counts.
const SQL: &[(&str, u32)] = &[
    (
        "SELECT id, tenant, project, seq, score, payload FROM records WHERE id = $1 AND tenant = $2",
        2,
    ),
    (
        "SELECT id, seq, score, ratio FROM records WHERE tenant = $1 AND project = $2 AND seq > $3 ORDER BY seq LIMIT $4",
        4,
    ),
    (
        "SELECT count(*) AS n FROM events WHERE project = $1 AND created_at >= $2",
        2,
    ),
    (
        "UPDATE records SET score = $3, ratio = $4, flagged = $5, updated_at = now() WHERE id = $1 AND tenant = $2",
        5,
    ),
    (
        "INSERT INTO blobs (id, tenant, project, size, created_at) VALUES ($1, $2, $3, $4, now())",
        4,
    ),
    ("DELETE FROM sessions WHERE id = $1 AND tenant = $2", 2),
    (
        "SELECT name, value, updated_at FROM settings WHERE tenant = $1 AND key = $2",
        2,
    ),
];

/// `sql_dispatch.ndjson`: `{"sql", "params"|"parameters"?}` (~146 B).
pub(crate) fn sql(rng: &mut ChaCha8Rng, _index: u64, scratch: &mut Vec<u8>, out: &mut String) {
    out.push('{');
    push_key(out, "sql");
    let shape = rng.random_range(0..20u32);
    if shape < 2 {
        // No placeholders, no params field.
        push_str(
            out,
            "SELECT id, tenant, project, seq FROM records ORDER BY seq DESC LIMIT 100",
        );
        out.push('}');
        return;
    }
    let (text, n) = SQL[rng.random_range(0..SQL.len() as u32) as usize];
    push_str(out, text);
    out.push(',');
    push_key(out, if shape < 6 { "parameters" } else { "params" });
    out.push('[');
    for i in 0..n {
        if i > 0 {
            out.push(',');
        }
        push_param(out, rng, scratch);
    }
    out.push_str("]}");
}

/// `rest_dispatch.ndjson`: `{"path", "method"?, "body"?}` with an
/// embedding vector of 8, 16 or 32 floats in most bodies (~265 B).
pub(crate) fn rest(rng: &mut ChaCha8Rng, _index: u64, scratch: &mut Vec<u8>, out: &mut String) {
    out.push('{');
    push_key(out, "path");
    fill(rng, scratch, 6);
    let mut path = format!("/v1/{}/", pick(rng, COLLECTIONS));
    for b in scratch.iter() {
        path.push_str(&format!("{b:02x}"));
    }
    push_str(out, &path);
    if rng.random_range(0..10u32) < 8 {
        out.push(',');
        push_key(out, "method");
        push_str(
            out,
            match rng.random_range(0..10u32) {
                0..=5 => "POST",
                6..=7 => "PUT",
                8 => "PATCH",
                _ => "GET",
            },
        );
    }
    if rng.random_range(0..10u32) < 9 {
        out.push(',');
        push_key(out, "body");
        out.push('{');
        push_key(out, "id");
        fill(rng, scratch, 8);
        push_hex(out, scratch);
        out.push(',');
        push_key(out, "namespace");
        push_str(out, &format!("tenant-{:03}", rng.random_range(0..64u32)));
        out.push(',');
        push_key(out, "k");
        push_int(out, rng.random_range(1..=50i64));
        out.push(',');
        push_key(out, "vector");
        out.push('[');
        let dims = match rng.random_range(0..3u32) {
            0 => 8,
            1 => 16,
            _ => 32,
        };
        for i in 0..dims {
            if i > 0 {
                out.push(',');
            }
            push_fixed(out, rng.random_range(-9999..=9999i64), 4);
        }
        out.push(']');
        if rng.random_bool(0.5) {
            out.push(',');
            push_key(out, "filter");
            out.push('{');
            push_key(out, "lang");
            push_str(out, pick(rng, LANGS));
            out.push(',');
            push_key(out, "min_score");
            push_fixed(out, rng.random_range(0..=100i64), 2);
            out.push('}');
        }
        out.push('}');
    }
    out.push('}');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_epoch_constant_is_the_date_it_names() {
        // The conversion is `codec::datetime`'s (tested there).
        assert_eq!(
            codec::datetime::rfc3339_millis(EPOCH_2026_06_02 * 1000),
            "2026-06-02T00:00:00.000Z"
        );
    }
}
