//! [`ByteLru`]: a least-recently-used map bounded by the bytes of its
//! values (not their count), shared between connections behind a mutex.
//! Entries over a quarter of the budget are not kept, so one huge value
//! cannot flush everything else.

use std::hash::Hash;
use std::sync::Mutex;

use lru::LruCache;

/// A value that knows its size in bytes.
pub trait Weigh {
    fn weight(&self) -> usize;
}

impl Weigh for bytes::Bytes {
    fn weight(&self) -> usize {
        self.len()
    }
}

impl Weigh for std::sync::Arc<str> {
    fn weight(&self) -> usize {
        self.len()
    }
}

struct Inner<K: Hash + Eq, V> {
    map: LruCache<K, V>,
    bytes: usize,
}

/// An LRU cache holding at most `budget` bytes of values.
pub struct ByteLru<K: Hash + Eq, V> {
    inner: Mutex<Inner<K, V>>,
    budget: usize,
}

/// Counters for tests and the bench's verification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheStats {
    pub entries: usize,
    pub bytes: usize,
    pub budget: usize,
}

impl<K: Hash + Eq, V: Clone + Weigh> ByteLru<K, V> {
    pub fn new(budget: usize) -> Self {
        ByteLru {
            inner: Mutex::new(Inner {
                map: LruCache::unbounded(),
                bytes: 0,
            }),
            budget,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner<K, V>> {
        // A panic while holding the lock leaves a consistent map (every
        // mutation below is one call), so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The value, marked most recently used.
    pub fn get(&self, k: &K) -> Option<V> {
        self.lock().map.get(k).cloned()
    }

    /// Keeps `v` unless it is over a quarter of the budget; evicts the
    /// least recently used entries until the total fits.
    pub fn insert(&self, k: K, v: V) {
        let w = v.weight();
        if w > self.budget / 4 {
            return;
        }
        let mut g = self.lock();
        if let Some(old) = g.map.put(k, v) {
            g.bytes -= old.weight();
        }
        g.bytes += w;
        while g.bytes > self.budget {
            match g.map.pop_lru() {
                Some((_, old)) => g.bytes -= old.weight(),
                None => break,
            }
        }
    }

    pub fn clear(&self) {
        let mut g = self.lock();
        g.map.clear();
        g.bytes = 0;
    }

    pub fn stats(&self) -> CacheStats {
        let g = self.lock();
        CacheStats {
            entries: g.map.len(),
            bytes: g.bytes,
            budget: self.budget,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    #[test]
    fn stays_within_budget_and_evicts_oldest() {
        let c: ByteLru<u32, Bytes> = ByteLru::new(1000);
        for i in 0..20 {
            c.insert(i, Bytes::from(vec![0u8; 100]));
            assert!(c.stats().bytes <= 1000);
        }
        assert_eq!(c.stats().entries, 10);
        assert!(c.get(&0).is_none());
        assert!(c.get(&19).is_some());
        // A touched entry survives the next eviction.
        assert!(c.get(&10).is_some());
        c.insert(100, Bytes::from(vec![0u8; 100]));
        assert!(c.get(&10).is_some());
        assert!(c.get(&11).is_none());
    }

    #[test]
    fn oversized_values_are_not_kept() {
        let c: ByteLru<u32, Bytes> = ByteLru::new(1000);
        c.insert(1, Bytes::from(vec![0u8; 251]));
        assert_eq!(c.stats().entries, 0);
        c.insert(1, Bytes::from(vec![0u8; 250]));
        assert_eq!(c.stats().entries, 1);
        c.insert(1, Bytes::from(vec![0u8; 10]));
        assert_eq!(c.stats().bytes, 10);
    }
}
