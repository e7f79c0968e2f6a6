//! A small, fixed workload for profiling the store under callgrind:
//!
//! ```sh
//! cargo build --release -p store --example profile
//! valgrind --tool=callgrind target/release/examples/profile <mode> [n]
//! ```
//!
//! `mode` is one of `current_cid`, `get_record`, `list_records`, `apply`
//! (one caller's createRecord), `apply_delete` (a create and its delete),
//! `tier` (the bench's size tiers: a create, timed, then its delete),
//! `apply_callers_<c>` (`c` threads creating records on their own
//! accounts, `n` creates in all), `blob_get_<bytes>` (reads of one blob,
//! after `PROFILE_BIG_PUTS` puts of 1 MiB blobs). The fixture (one account,
//! `PROFILE_RECORDS` records, default 2,000) is built in a temp dir (or at
//! `PROFILE_DB`) before the measured loop; `n` operations follow.
//! `PROFILE_WAL_FRAMES` sets `Config::wal_restart_frames` and
//! `PROFILE_CHECKPOINT_MS` `Config::checkpoint_interval`;
//! `PROFILE_CALLER_RECORDS` seeds each `apply_callers_<c>` account with
//! that many records first, and `PROFILE_WARM_OPS` runs that many
//! single-caller creates on the first of them before the timed loop (the
//! bench's order).
//!
//! Which tables a commit's WAL frames go to: keep the database, let
//! nothing checkpoint, and abort right after the loop so the WAL stays:
//!
//! ```sh
//! PROFILE_DB=/tmp/t/p.sqlite PROFILE_CHECKPOINT_MS=1000000 \
//!   PROFILE_WAL_FRAMES=100000000 PROFILE_ABORT=1 PROFILE_RECORDS=100000 \
//!   target/release/examples/profile tier 2000
//! python3 scripts/wal_frames.py /tmp/t/p.sqlite 4000
//! ```

use std::hint::black_box;
use std::time::Instant;

use repo::crypto::{Algorithm, Keypair};
use store::{Config, ListOptions, RecordWrite, Store};

fn cbor(v: &serde_json::Value) -> Vec<u8> {
    match repo::cbor::json::from_json_value(v) {
        Ok(value) => repo::cbor::to_vec(&value),
        Err(e) => panic!("datagen record is not atproto JSON: {e}"),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "current_cid".into());
    let n: usize = args
        .next()
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(20_000);
    let dir = tempfile::tempdir()?;
    // `PROFILE_DB` keeps the database (e.g. to map WAL pages to tables).
    let path = std::env::var_os("PROFILE_DB")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| dir.path().join("p.sqlite"));
    let mut config = Config::default();
    if let Some(frames) = env_number("PROFILE_WAL_FRAMES") {
        config.wal_restart_frames = frames;
    }
    if let Some(ms) = env_number("PROFILE_CHECKPOINT_MS") {
        config.checkpoint_interval = std::time::Duration::from_millis(ms);
    }
    let store = Store::open(path, config)?;
    let size: usize = env_number("PROFILE_RECORDS").unwrap_or(2_000);
    let (did, recs) = seeded_account(&store, 1, size)?;
    let keys: Vec<(&str, String)> = recs
        .iter()
        .map(|r| (r.collection, r.rkey.clone()))
        .collect();
    let likes: Vec<&str> = keys
        .iter()
        .filter(|k| k.0 == "app.bsky.feed.like")
        .map(|k| k.1.as_str())
        .collect();
    let bodies: Vec<Vec<u8>> = (0..32)
        .map(|k| cbor(&datagen::store::post(1, k).value))
        .collect();
    if let Some(callers) = mode.strip_prefix("apply_callers_") {
        return apply_callers(&store, callers.parse()?, n, &bodies);
    }
    if let Some(bytes) = mode.strip_prefix("blob_get_") {
        return blob_get(&store, &did, bytes.parse()?, n);
    }
    let mut timed = std::time::Duration::ZERO;
    let t = Instant::now();
    for i in 0..n {
        let (coll, rkey) = &keys[(i * 7919) % keys.len()];
        match mode.as_str() {
            "current_cid" => {
                black_box(store.current_cid(&did, coll, rkey)?);
            }
            "get_record" => {
                black_box(store.get_record(&did, coll, rkey)?);
            }
            "list_records" => {
                let opts = ListOptions {
                    limit: 50,
                    cursor: Some(likes[50 + i % (likes.len() - 50)]),
                    reverse: false,
                };
                black_box(store.list_records(&did, "app.bsky.feed.like", &opts)?);
            }
            "apply" => {
                let body = bodies[i % bodies.len()].clone();
                black_box(store.create_record(&did, "app.bsky.feed.post", None, body, None)?);
            }
            // The bench's size tiers: a create, then its delete.
            "apply_delete" => {
                let body = bodies[i % bodies.len()].clone();
                let c = store.create_record(&did, "app.bsky.feed.post", None, body, None)?;
                let rkey = c.results[0].uri.rsplit('/').next().unwrap_or_default();
                store.delete_record(&did, "app.bsky.feed.post", rkey, None, None)?;
            }
            "tier" => {
                let body = bodies[i % bodies.len()].clone();
                let t0 = Instant::now();
                let c = store.create_record(&did, "app.bsky.feed.post", None, body, None)?;
                timed += t0.elapsed();
                let rkey = c.results[0].uri.rsplit('/').next().unwrap_or_default();
                store.delete_record(&did, "app.bsky.feed.post", rkey, None, None)?;
            }
            other => return Err(format!("unknown mode {other}").into()),
        }
    }
    let el = t.elapsed();
    abort_if_asked();
    eprintln!(
        "{mode}: {n} ops in {el:.2?} ({:.0} ops/s)",
        n as f64 / el.as_secs_f64()
    );
    if mode == "tier" {
        eprintln!(
            "timed creates: {:.1} us each",
            timed.as_secs_f64() * 1e6 / n as f64
        );
    }
    Ok(())
}

/// `apply_callers_<c>`: `c` threads, each creating records on its own
/// account, `n` creates in all (the bench's `callers-<c>` shape).
fn apply_callers(
    store: &Store,
    callers: usize,
    n: usize,
    bodies: &[Vec<u8>],
) -> Result<(), Box<dyn std::error::Error>> {
    let seed: usize = env_number("PROFILE_CALLER_RECORDS").unwrap_or(0);
    let mut dids = Vec::new();
    for c in 0..callers {
        dids.push(seeded_account(store, 1000 + c as u64, seed)?.0);
    }
    // `PROFILE_WARM_OPS`: that many single-caller creates on the first
    // account first (the bench runs callers-1 before callers-10).
    let warm: usize = env_number("PROFILE_WARM_OPS").unwrap_or(0);
    for i in 0..warm {
        let body = bodies[i % bodies.len()].clone();
        black_box(store.create_record(&dids[0], "app.bsky.feed.post", None, body, None)?);
    }
    let t = Instant::now();
    std::thread::scope(|s| {
        for did in &dids {
            s.spawn(move || {
                for i in 0..n / callers {
                    let body = bodies[i % bodies.len()].clone();
                    let r = store.create_record(did, "app.bsky.feed.post", None, body, None);
                    black_box(r.expect("create"));
                }
            });
        }
    });
    let el = t.elapsed();
    abort_if_asked();
    eprintln!(
        "apply x{callers}: {n} ops in {el:.2?} ({:.0} ops/s)",
        n as f64 / el.as_secs_f64()
    );
    Ok(())
}

/// `blob_get_<bytes>`: `n` reads of one blob of that many bytes (the
/// shape of `store.blob_get/ours/<tier>`), after `PROFILE_BIG_PUTS` puts
/// of 1 MiB blobs (default 0; the bench's store has had its
/// `store.blob_put` rows first).
fn blob_get(
    store: &Store,
    did: &str,
    bytes: usize,
    n: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let big: usize = env_number("PROFILE_BIG_PUTS").unwrap_or(0);
    for k in 0..big {
        let buf = datagen::random_bytes(0x424c_4f42 + (k % 8) as u64, 1 << 20);
        store.put_blob(did, buf, "image/jpeg")?;
    }
    let buf = datagen::random_bytes(0x5052_4f42, bytes);
    let cid = store.put_blob(did, buf.clone(), "image/jpeg")?;
    if store.get_blob(did, &cid)?.map(|b| b.bytes) != Some(buf) {
        return Err("blob read back differs".into());
    }
    let t = Instant::now();
    for _ in 0..n {
        black_box(store.get_blob(did, &cid)?);
    }
    let el = t.elapsed();
    abort_if_asked();
    eprintln!(
        "blob_get {bytes} B: {n} reads in {el:.2?} ({:.2} us each)",
        el.as_secs_f64() * 1e6 / n as f64
    );
    Ok(())
}

/// Creates datagen account `i` and writes its first `n` records, 200 per
/// applyWrites; returns its DID and the records.
fn seeded_account(
    store: &Store,
    i: u64,
    n: usize,
) -> Result<(String, Vec<datagen::store::GenRecord>), Box<dyn std::error::Error>> {
    let did = datagen::store::did(i);
    let key = Keypair::from_bytes(Algorithm::K256, &datagen::store::signing_secret(i))?;
    store.create_account(&did, &key)?;
    let recs = datagen::store::records(i, n);
    for chunk in recs.chunks(200) {
        let writes = chunk
            .iter()
            .map(|r| RecordWrite::create(r.collection, Some(&r.rkey), cbor(&r.value)))
            .collect();
        store.apply_writes(&did, writes, None)?;
    }
    Ok((did, recs))
}

/// `PROFILE_ABORT`: ends the process right after the measured loop, with
/// no close and no last checkpoint, so the WAL stays for
/// `scripts/wal_frames.py`.
fn abort_if_asked() {
    if std::env::var_os("PROFILE_ABORT").is_some() {
        std::process::abort();
    }
}

/// The number in environment variable `name`, if it is set and parses.
fn env_number<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok()?.parse().ok()
}
