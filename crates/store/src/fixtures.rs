//! The startup history fixture (feature `bench-internals`, re-exported by
//! `bench_internals`): the store `store.startup/ours/history-10k` opens,
//! written through the store's public API, with one account's MST nodes
//! returned to how a build that predates revisions left them
//! (`schema::forget_revisions`), so every open runs the revision backfill.
//!
//! What it writes, in order: `accounts` accounts ([`Store::create_account`],
//! a signed genesis commit and `#identity`/`#account`/`#sync` each); each
//! account's bulk of records as one signed repository CAR
//! ([`Store::import_car`], one `#sync`: the bulk adds blocks without adding
//! events); then `commits` createRecord commits spread over the accounts
//! from one thread per account (each a real signed commit and its
//! `#commit` event, which carries the record). Records are posts of about
//! `record_bytes` bytes.

use std::path::Path;

use repo::Cid;
use repo::car::write_car_vec;
use repo::cbor::{Map, Value, to_vec};
use repo::commit::UnsignedCommit;
use repo::crypto::{Algorithm, Keypair};
use repo::mst::{MemoryBlockStore, Mst};
use repo::syntax::Tid;

use crate::{Config, Result, Stats, Store, StoreError};

/// The collection every fixture record is in.
const COLLECTION: &str = "app.bsky.feed.post";

/// The bulk's revs and record keys: 2023-11-14, before any commit the
/// clock makes.
const BULK_MICROS: u64 = 1_700_000_000_000_000;

/// The shape of a history fixture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryShape {
    /// Accounts; the first one's MST nodes are left unversioned.
    pub accounts: usize,
    /// Records the first account's imported repository holds (its MST
    /// nodes, about one per four records, are what each open backfills).
    pub imported_first: usize,
    /// Records each other account's imported repository holds.
    pub imported_per_account: usize,
    /// createRecord commits after the imports, round robin over the
    /// accounts.
    pub commits: usize,
    /// About how many bytes each record block holds.
    pub record_bytes: usize,
}

impl HistoryShape {
    /// `store.startup/ours/history-10k`: 10,000 commits of 4 KiB records
    /// (10,000 `#commit` events), 60,000-odd blocks (50,000-odd records of
    /// 4 KiB and their MST nodes), the first account's 2,000-odd MST nodes
    /// unversioned.
    pub const HISTORY_10K: HistoryShape = HistoryShape {
        accounts: 10,
        imported_first: 6_600,
        imported_per_account: 3_600,
        commits: 10_000,
        record_bytes: 4096,
    };

    /// The same shape at a hundredth of the size (a `--test` smoke run).
    pub const SMOKE: HistoryShape = HistoryShape {
        accounts: 2,
        imported_first: 66,
        imported_per_account: 36,
        commits: 100,
        record_bytes: 4096,
    };
}

/// What [`build_history_fixture`] wrote.
#[derive(Debug, Clone)]
pub struct HistoryFixture {
    /// The account whose MST nodes are unversioned.
    pub unversioned_did: String,
    /// How many of its node rows are unversioned (what each open
    /// backfills).
    pub unversioned: usize,
    /// The store's counts after the build (blocks, bytes, events).
    pub stats: Stats,
    /// The bytes of the `#commit` events' bodies, summed.
    pub commit_event_bytes: u64,
    /// The number of `#commit` events.
    pub commit_events: u64,
}

/// The fixture's `i`th account and its signing key.
fn account(i: usize) -> Result<(String, Keypair)> {
    let mut secret = [0x5au8; 32];
    secret[..8].copy_from_slice(&(i as u64 + 1).to_le_bytes());
    let key = Keypair::from_bytes(Algorithm::K256, &secret)
        .map_err(|e| StoreError::Corrupt(format!("fixture key: {e}")))?;
    Ok((format!("did:plc:history{i:017}"), key))
}

/// A post of about `bytes` bytes, distinct for each `(account, n)`.
fn post(account: usize, n: usize, bytes: usize) -> Vec<u8> {
    let mut text = format!("history post {account}/{n} ");
    while text.len() + 64 < bytes {
        text.push_str("lorem ipsum dolor sit amet ");
    }
    let map: Map = [
        ("$type".to_owned(), Value::Text(COLLECTION.to_owned())),
        (
            "createdAt".to_owned(),
            Value::Text("2023-11-14T22:13:20.000Z".to_owned()),
        ),
        ("text".to_owned(), Value::Text(text)),
    ]
    .into_iter()
    .collect();
    to_vec(&Value::Map(map))
}

/// Account `i`'s bulk as a signed repository CAR of `records` posts.
fn bulk_car(
    i: usize,
    did: &str,
    key: &Keypair,
    records: usize,
    record_bytes: usize,
) -> Result<Vec<u8>> {
    let mut blocks: Vec<(Cid, Vec<u8>)> = Vec::with_capacity(records + 1);
    let mut mst = Mst::empty(MemoryBlockStore::new());
    for n in 0..records {
        let bytes = post(i, n, record_bytes);
        let cid = Cid::for_dag_cbor(&bytes);
        let rkey = Tid::from_parts(BULK_MICROS + n as u64, 0);
        mst.insert(&format!("{COLLECTION}/{rkey}"), cid)?;
        blocks.push((cid, bytes));
    }
    let c = mst.commit()?;
    let rev = Tid::from_parts(BULK_MICROS + records as u64, 0);
    let (commit, commit_bytes) = UnsignedCommit::new(did, c.root, rev).sign(key).to_block();
    blocks.extend(c.new_blocks);
    blocks.push((commit, commit_bytes));
    Ok(write_car_vec(
        &[commit],
        blocks.iter().map(|(c, b)| (c, b.as_slice())),
    ))
}

/// Builds the history fixture of `shape` in a new store at `path` through
/// the public API (see the module doc), then leaves the first account's
/// MST nodes unversioned. Checks each account's repository (MST ==
/// index) before returning.
pub fn build_history_fixture(path: &Path, shape: &HistoryShape) -> Result<HistoryFixture> {
    let accounts = (0..shape.accounts.max(1))
        .map(account)
        .collect::<Result<Vec<_>>>()?;
    let stats = {
        let store = Store::open(path, Config::default())?;
        for (i, (did, key)) in accounts.iter().enumerate() {
            store.create_account(did, key)?;
            let records = match i {
                0 => shape.imported_first,
                _ => shape.imported_per_account,
            };
            let car = bulk_car(i, did, key, records, shape.record_bytes)?;
            store.import_car(&car[..], Some(&key.public_key()))?;
        }
        let per = shape.commits.div_ceil(accounts.len());
        std::thread::scope(|sc| -> Result<()> {
            let store = &store;
            let workers: Vec<_> = (accounts.iter().enumerate())
                .map(|(i, (did, _))| {
                    let n = per.min(shape.commits.saturating_sub(i * per));
                    sc.spawn(move || -> Result<()> {
                        for k in 0..n {
                            let record = post(i, 1_000_000 + k, shape.record_bytes);
                            store.create_record(did, COLLECTION, None, record, None)?;
                        }
                        Ok(())
                    })
                })
                .collect();
            for w in workers {
                w.join()
                    .map_err(|_| StoreError::Corrupt("a fixture writer panicked".into()))??;
            }
            Ok(())
        })?;
        for (did, _) in &accounts {
            store.check_repo(did)?;
        }
        store.stats()?
    };
    let (commit_events, commit_event_bytes) = commit_events(path)?;
    let unversioned_did = accounts[0].0.clone();
    let unversioned = crate::schema::forget_revisions(path, &unversioned_did)?;
    Ok(HistoryFixture {
        unversioned_did,
        unversioned,
        stats,
        commit_event_bytes,
        commit_events,
    })
}

/// The `#commit` events' count and their bodies' bytes, summed (read
/// through the catch-up API, in pages).
fn commit_events(path: &Path) -> Result<(u64, u64)> {
    let store = Store::open_read_only(path, Config::default())?;
    let header = crate::events::frame_header("#commit");
    let (mut n, mut bytes, mut cursor) = (0u64, 0u64, 0i64);
    loop {
        let page = store.events_after(cursor, 1_000)?;
        let Some(last) = page.last() else { break };
        cursor = last.seq;
        for e in &page {
            if e.frame.starts_with(&header) {
                n += 1;
                bytes += (e.frame.len() - header.len()) as u64;
            }
        }
    }
    Ok((n, bytes))
}

/// Puts the fixture back as it was before an open backfilled it: `did`'s
/// MST nodes unversioned, no `rev_backfill` row. Returns how many node
/// rows are unversioned.
pub fn reset_unversioned(path: &Path, did: &str) -> Result<usize> {
    crate::schema::forget_revisions(path, did)
}
