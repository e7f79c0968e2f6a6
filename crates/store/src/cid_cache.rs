//! An in-memory cache of the record index for `current_cid`, kept
//! coherent by the writer thread.
//!
//! Entries map (did, collection, rkey) to the CID the index held (or its
//! absence), grouped per account in one of [`SHARDS`] shards chosen by the
//! DID. Only readers fill it, from what their SQLite snapshot returned.
//!
//! Coherence rule: every writer job that changes `records` rows names the
//! account ([`crate::writer::Writer::touch`]); after the batch's COMMIT
//! (and after a failed batch too) and before any caller of the batch is
//! answered, the writer drops those accounts' entries and bumps their
//! shards' epoch ([`CidCache::invalidate`]). A reader that misses reads
//! the shard's epoch *before* its SQL read and inserts its answer only if
//! the epoch is unchanged afterwards. So an answer from a snapshot older
//! than a commit can never be inserted after that commit's invalidation
//! (the epoch moved), and a caller that got its write acknowledged never
//! reads the old value back from the cache. Readers therefore see what a
//! fresh SQLite read would, except that a lookup racing a commit may still
//! return the value from just before it, as a snapshot read also may.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::Mutex;

use repo::Cid;

/// Shards (a power of two).
pub(crate) const SHARDS: usize = 64;
/// Entries per shard before it is emptied (bounds memory: ~256k entries).
const SHARD_CAP: usize = 4096;

/// Entries of one account under the hash of (collection, rkey).
type Bucket = Vec<(Box<str>, Box<str>, Option<Cid>)>;

#[derive(Default)]
struct Shard {
    epoch: u64,
    len: usize,
    accounts: HashMap<Box<str>, HashMap<u64, Bucket>>,
}

/// See the module docs.
pub(crate) struct CidCache {
    shards: Vec<Mutex<Shard>>,
    hasher: std::collections::hash_map::RandomState,
}

impl Default for CidCache {
    fn default() -> Self {
        CidCache {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            hasher: std::collections::hash_map::RandomState::new(),
        }
    }
}

/// A miss: the epoch to present when inserting.
pub(crate) struct Miss(u64);

impl CidCache {
    fn key_hash(&self, collection: &str, rkey: &str) -> u64 {
        let mut h = self.hasher.build_hasher();
        collection.hash(&mut h);
        rkey.hash(&mut h);
        h.finish()
    }

    fn shard(&self, did: &str) -> &Mutex<Shard> {
        &self.shards[(self.hasher.hash_one(did) as usize) & (SHARDS - 1)]
    }

    /// `Ok(answer)` on a hit; `Err(miss)` otherwise.
    pub(crate) fn get(&self, did: &str, collection: &str, rkey: &str) -> Result<Option<Cid>, Miss> {
        let kh = self.key_hash(collection, rkey);
        let shard = self.shard(did).lock().unwrap_or_else(|p| p.into_inner());
        let hit = shard.accounts.get(did).and_then(|m| {
            m.get(&kh)?
                .iter()
                .find(|e| &*e.0 == collection && &*e.1 == rkey)
                .map(|e| e.2)
        });
        match hit {
            Some(v) => Ok(v),
            None => Err(Miss(shard.epoch)),
        }
    }

    /// Records what the index answered, unless the account was written
    /// since `miss` was taken.
    pub(crate) fn insert(
        &self,
        miss: Miss,
        did: &str,
        collection: &str,
        rkey: &str,
        cid: Option<Cid>,
    ) {
        let kh = self.key_hash(collection, rkey);
        let mut shard = self.shard(did).lock().unwrap_or_else(|p| p.into_inner());
        if shard.epoch != miss.0 {
            return;
        }
        if shard.len >= SHARD_CAP {
            shard.accounts.clear();
            shard.len = 0;
        }
        let bucket = shard
            .accounts
            .entry(did.into())
            .or_default()
            .entry(kh)
            .or_default();
        match bucket
            .iter_mut()
            .find(|e| &*e.0 == collection && &*e.1 == rkey)
        {
            Some(e) => e.2 = cid,
            None => {
                bucket.push((collection.into(), rkey.into(), cid));
                shard.len += 1;
            }
        }
    }

    /// Drops every entry of the given accounts (called by the writer after
    /// each batch, before its callers are answered).
    pub(crate) fn invalidate<'a>(&self, dids: impl IntoIterator<Item = &'a str>) {
        for did in dids {
            let mut shard = self.shard(did).lock().unwrap_or_else(|p| p.into_inner());
            shard.epoch = shard.epoch.wrapping_add(1);
            if let Some(m) = shard.accounts.remove(did) {
                shard.len -= m.values().map(Vec::len).sum::<usize>();
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
        // An absent record is cached as absent.
        let miss = c.get("did:plc:a", "a.b.c", "j").err().unwrap();
        c.insert(miss, "did:plc:a", "a.b.c", "j", None);
        assert_eq!(c.get("did:plc:a", "a.b.c", "j").ok(), Some(None));
        c.invalidate(["did:plc:a"]);
        assert!(c.get("did:plc:a", "a.b.c", "k").is_err());
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
            let n: usize = s
                .accounts
                .values()
                .flat_map(|m| m.values())
                .map(Vec::len)
                .sum();
            assert_eq!(s.len, n);
        }
    }
}
