//! An in-memory cache of the record index for `current_cid`, kept
//! coherent by the writer thread.
//!
//! Entries map (did, collection, rkey) to the CID the index held (or its
//! absence). They are spread over [`SHARDS`] shards by the hash of the
//! whole key, so callers reading one account's records (the common case: a
//! popular repository) take different locks and never sleep on each
//! other; a hit writes no memory another shard's reader reads. Only
//! readers fill the cache, from what their SQLite snapshot returned.
//!
//! Coherence rule: each account has an epoch, and each entry carries the
//! epoch its account had when the reader that filled it *started* its SQL
//! read. Every writer job that changes `records` rows names the account
//! ([`crate::writer::Writer::touch`]); after the batch's COMMIT (and after
//! a failed batch too) and before any caller of the batch is answered, the
//! writer bumps those accounts' epochs ([`CidCache::invalidate`]). An
//! entry is served only while its epoch is still its account's. So an
//! answer read from a snapshot older than a commit is never served after
//! that commit's invalidation (whenever it was inserted), and a caller that
//! got its write acknowledged never reads the old value back from the
//! cache. Readers therefore see what a fresh SQLite read would, except that
//! a lookup racing a commit may still return the value from just before
//! it, as a snapshot read also may.
//!
//! Invalidation is one atomic add per account (no entry is visited: a stale
//! entry is overwritten by the next fill of its key, or dropped with its
//! shard). The account table is touched only by misses and by the writer.
//! Memory is bounded: a shard past [`SHARD_CAP`] entries is emptied, and
//! so is the account table past [`ACCOUNT_CAP`] accounts, whose epochs are
//! then set to [`DEAD`] under the table's lock so that no entry made under
//! them matches again.

use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use repo::Cid;

/// Shards (a power of two).
pub(crate) const SHARDS: usize = 64;
/// Entries per shard before it is emptied (bounds memory: ~256k entries).
const SHARD_CAP: usize = 4096;
/// Accounts with an epoch before the table is emptied.
const ACCOUNT_CAP: usize = 1 << 16;
/// The epoch of an account dropped from the table: matches no entry.
const DEAD: u64 = u64::MAX;

/// One account's epoch (see the module docs).
struct Account {
    did: Box<str>,
    epoch: AtomicU64,
}

struct Entry {
    account: Arc<Account>,
    collection: Box<str>,
    rkey: Box<str>,
    cid: Option<Cid>,
    /// The account's epoch when the filling reader started its read.
    epoch: u64,
}

impl Entry {
    fn is(&self, did: &str, collection: &str, rkey: &str) -> bool {
        &*self.rkey == rkey && &*self.collection == collection && &*self.account.did == did
    }
}

#[derive(Default)]
struct Shard {
    len: usize,
    /// Entries under the hash of their key.
    buckets: HashMap<u64, Vec<Entry>>,
}

/// See the module docs.
pub(crate) struct CidCache {
    shards: Vec<Mutex<Shard>>,
    accounts: Mutex<HashMap<Box<str>, Arc<Account>>>,
    hasher: RandomState,
}

impl Default for CidCache {
    fn default() -> Self {
        CidCache {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            accounts: Mutex::new(HashMap::new()),
            hasher: RandomState::new(),
        }
    }
}

/// A miss: the account's epoch taken before the SQL read, to present when
/// inserting its answer.
pub(crate) struct Miss {
    account: Arc<Account>,
    epoch: u64,
}

impl CidCache {
    fn key_hash(&self, did: &str, collection: &str, rkey: &str) -> u64 {
        let mut h = self.hasher.build_hasher();
        did.hash(&mut h);
        collection.hash(&mut h);
        rkey.hash(&mut h);
        h.finish()
    }

    fn shard(&self, hash: u64) -> &Mutex<Shard> {
        &self.shards[(hash as usize) & (SHARDS - 1)]
    }

    /// `Ok(answer)` on a hit; `Err(miss)` otherwise (call before reading
    /// the index).
    pub(crate) fn get(&self, did: &str, collection: &str, rkey: &str) -> Result<Option<Cid>, Miss> {
        let kh = self.key_hash(did, collection, rkey);
        {
            let shard = self.shard(kh).lock().unwrap_or_else(|p| p.into_inner());
            let found = shard
                .buckets
                .get(&kh)
                .and_then(|b| b.iter().find(|e| e.is(did, collection, rkey)));
            if let Some(e) = found
                && e.epoch == e.account.epoch.load(Ordering::Acquire)
            {
                return Ok(e.cid);
            }
        }
        let account = self.account(did);
        let epoch = account.epoch.load(Ordering::Acquire);
        Err(Miss { account, epoch })
    }

    /// `did`'s epoch, made (at 0) if it has none.
    fn account(&self, did: &str) -> Arc<Account> {
        let mut accounts = self.accounts.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(a) = accounts.get(did) {
            return a.clone();
        }
        if accounts.len() >= ACCOUNT_CAP {
            for a in accounts.values() {
                a.epoch.store(DEAD, Ordering::Release);
            }
            accounts.clear();
        }
        let a = Arc::new(Account {
            did: did.into(),
            epoch: AtomicU64::new(0),
        });
        accounts.insert(did.into(), a.clone());
        a
    }

    /// Records what the index answered, unless the account was written
    /// since `miss` was taken (then the entry would never match anyway).
    pub(crate) fn insert(
        &self,
        miss: Miss,
        did: &str,
        collection: &str,
        rkey: &str,
        cid: Option<Cid>,
    ) {
        if miss.account.epoch.load(Ordering::Acquire) != miss.epoch {
            return;
        }
        self.put(miss, did, collection, rkey, cid);
    }

    /// [`insert`](Self::insert) past its epoch check: the entry goes in
    /// with the miss's epoch, which may be stale by now (a commit between
    /// the check and the shard's lock), so it is never served then.
    fn put(&self, miss: Miss, did: &str, collection: &str, rkey: &str, cid: Option<Cid>) {
        let kh = self.key_hash(did, collection, rkey);
        let mut shard = self.shard(kh).lock().unwrap_or_else(|p| p.into_inner());
        if shard.len >= SHARD_CAP {
            shard.buckets.clear();
            shard.len = 0;
        }
        let bucket = shard.buckets.entry(kh).or_default();
        match bucket.iter_mut().find(|e| e.is(did, collection, rkey)) {
            Some(e) => {
                e.account = miss.account;
                e.epoch = miss.epoch;
                e.cid = cid;
            }
            None => {
                bucket.push(Entry {
                    account: miss.account,
                    collection: collection.into(),
                    rkey: rkey.into(),
                    cid,
                    epoch: miss.epoch,
                });
                shard.len += 1;
            }
        }
    }

    /// Makes every entry of the given accounts stale (called by the writer
    /// after each batch, before its callers are answered).
    pub(crate) fn invalidate<'a>(&self, dids: impl IntoIterator<Item = &'a str>) {
        let accounts = self.accounts.lock().unwrap_or_else(|p| p.into_inner());
        for did in dids {
            // An account without an epoch has no entry, and a reader that
            // makes its epoch later reads after this commit.
            if let Some(a) = accounts.get(did) {
                a.epoch.fetch_add(1, Ordering::AcqRel);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hit_miss_and_invalidation() {
        let c = CidCache::default();
        let cid = Cid::for_dag_cbor(b"x");
        let miss = c.get("did:plc:a", "a.b.c", "k").err().unwrap();
        c.insert(miss, "did:plc:a", "a.b.c", "k", Some(cid));
        assert_eq!(c.get("did:plc:a", "a.b.c", "k").ok(), Some(Some(cid)));
        assert!(c.get("did:plc:a", "a.b.c", "j").is_err());
        assert!(c.get("did:plc:b", "a.b.c", "k").is_err());
        // An absent record is cached as absent.
        let miss = c.get("did:plc:a", "a.b.c", "j").err().unwrap();
        c.insert(miss, "did:plc:a", "a.b.c", "j", None);
        assert_eq!(c.get("did:plc:a", "a.b.c", "j").ok(), Some(None));
        // Another account's write leaves these entries alone.
        let miss = c.get("did:plc:b", "a.b.c", "k").err().unwrap();
        c.insert(miss, "did:plc:b", "a.b.c", "k", None);
        c.invalidate(["did:plc:b"]);
        assert_eq!(c.get("did:plc:a", "a.b.c", "k").ok(), Some(Some(cid)));
        c.invalidate(["did:plc:a"]);
        assert!(c.get("did:plc:a", "a.b.c", "k").is_err());
        assert!(c.get("did:plc:a", "a.b.c", "j").is_err());
        // Filled again after the write: served again.
        let miss = c.get("did:plc:a", "a.b.c", "k").err().unwrap();
        c.insert(miss, "did:plc:a", "a.b.c", "k", None);
        assert_eq!(c.get("did:plc:a", "a.b.c", "k").ok(), Some(None));
    }

    #[test]
    fn a_read_racing_a_write_is_not_cached() {
        let c = CidCache::default();
        let old = Cid::for_dag_cbor(b"old");
        let miss = c.get("did:plc:a", "a.b.c", "k").err().unwrap();
        // The writer commits and invalidates between the reader's epoch
        // read and its insert: the (possibly stale) answer is dropped.
        c.invalidate(["did:plc:a"]);
        c.insert(miss, "did:plc:a", "a.b.c", "k", Some(old));
        assert!(c.get("did:plc:a", "a.b.c", "k").is_err());
    }

    #[test]
    fn an_entry_inserted_after_its_invalidation_is_never_served() {
        // The reader passed the insert's epoch check just before the
        // commit's invalidation: the entry goes in, stale, and is not
        // served.
        let c = CidCache::default();
        let old = Cid::for_dag_cbor(b"old");
        let Err(miss) = c.get("did:plc:a", "a.b.c", "k") else {
            panic!("empty cache hit");
        };
        c.invalidate(["did:plc:a"]);
        c.put(miss, "did:plc:a", "a.b.c", "k", Some(old));
        assert!(c.get("did:plc:a", "a.b.c", "k").is_err());
    }

    #[test]
    fn dropped_accounts_entries_never_match() {
        let c = CidCache::default();
        let cid = Cid::for_dag_cbor(b"x");
        let miss = c.get("did:plc:a", "a.b.c", "k").err().unwrap();
        c.insert(miss, "did:plc:a", "a.b.c", "k", Some(cid));
        // Fill the account table past its cap: did:plc:a's epoch is
        // dropped, and with it its entry (a write to it could no longer
        // reach that entry).
        for i in 0..ACCOUNT_CAP {
            let _ = c.get(&format!("did:plc:x{i}"), "a.b.c", "k");
        }
        assert!(c.get("did:plc:a", "a.b.c", "k").is_err());
        assert!(c.accounts.lock().unwrap().len() <= ACCOUNT_CAP);
    }

    #[test]
    fn bounded() {
        let c = CidCache::default();
        for i in 0..(SHARDS * SHARD_CAP * 2) {
            let did = format!("did:plc:{}", i % 97);
            let rkey = i.to_string();
            if let Err(m) = c.get(&did, "a.b.c", &rkey) {
                c.insert(m, &did, "a.b.c", &rkey, None);
            }
        }
        for s in &c.shards {
            let s = s.lock().unwrap();
            assert!(s.len <= SHARD_CAP);
            assert_eq!(s.len, s.buckets.values().map(Vec::len).sum::<usize>());
        }
    }
}
