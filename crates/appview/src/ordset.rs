//! [`OrdSet`]: an ordered set with rank access, the structure behind every
//! ordered read of the index (Redis' sorted sets answer the same
//! questions with a skip list whose links carry spans).
//!
//! Layout: the keys live in sorted chunks of at most `2 * chunk` keys (a
//! chunk splits in two when it passes that, and is dropped when empty),
//! and a Fenwick tree over the chunks' lengths gives the number of keys
//! before any chunk. So, with `c` chunks:
//! - insert / remove: a binary search over the chunks' last keys (kept
//!   side by side in one array, so the search touches no chunk), one in
//!   the chunk, a shift of at most `2 * chunk` keys and an O(log c) update
//!   (a split or a dropped chunk rebuilds the tree in O(c), amortised over
//!   `chunk` inserts); the chunk of the last update is tried before the
//!   search (a finger), and the tree update of the last changed chunk is
//!   held back until another chunk changes, so the two halves of a move
//!   within one chunk cost neither;
//! - the key at rank k, and the rank of a key: O(log c + log chunk);
//! - a page of `limit` keys from rank k, either direction: O(log c +
//!   limit), never O(k).
//!
//! Why our own and not a crate: the index needs exactly these four
//! operations on small `Copy` keys; this is the layout of `indexset`'s
//! two-level B-tree and of Python's `sortedcontainers`, in ~200 lines
//! with no dependency. `appview.ordset_page/{ours,btreeset}/100k` measures
//! it against the standard library's B-tree, which has no rank access
//! (an offset costs a walk).

/// Default chunk size (a chunk holds `chunk..=2*chunk` keys after a split).
/// 64 rather than 256: an insert or remove shifts half a chunk, which at
/// 256 cost more than the standard library's B-tree walk on
/// `appview.ordset_rescore` (16-byte keys); the chunk search is over the
/// contiguous `lasts` array, so more chunks cost little there, and pages
/// (`appview.ordset_page`) cross a chunk boundary every 64-128 keys.
pub(crate) const DEFAULT_CHUNK: usize = 64;

/// An ordered set of `Copy` keys with rank access.
#[derive(Debug, Clone)]
pub struct OrdSet<K> {
    chunks: Vec<Vec<K>>,
    /// `lasts[i]` = the largest key of `chunks[i]`: the chunk search reads
    /// this one contiguous array instead of one heap chunk per probe
    /// (`appview.ordset_rescore` spends most of a move there otherwise).
    lasts: Vec<K>,
    /// Fenwick tree (1-based) over `chunks[i].len()`, except for the
    /// change `pending` holds.
    tree: Vec<usize>,
    /// A change of one chunk's length not yet in `tree` (chunk, delta):
    /// a move (remove, then insert a nearby key) lands both halves in one
    /// chunk and they cancel, so `appview.ordset_rescore` pays no tree
    /// update for it; the reads add it in (one comparison).
    pending: Option<(usize, isize)>,
    /// The chunk the last insert or remove went to: tried first (two key
    /// comparisons) before the binary search over `lasts`, since a move's
    /// second half and the next update of a nearby key land there.
    finger: usize,
    len: usize,
    chunk: usize,
}

impl<K: Ord + Copy> Default for OrdSet<K> {
    fn default() -> Self {
        OrdSet::with_chunk(DEFAULT_CHUNK)
    }
}

impl<K: Ord + Copy> PartialEq for OrdSet<K> {
    /// Same keys in the same order (chunking aside).
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl<K: Ord + Copy> Eq for OrdSet<K> {}

impl<K: Ord + Copy> OrdSet<K> {
    /// An empty set whose chunks split past `2 * chunk` keys (`chunk`
    /// clamped to `1..=usize::MAX / 2`, so `2 * chunk` cannot overflow).
    pub fn with_chunk(chunk: usize) -> Self {
        OrdSet {
            chunks: Vec::new(),
            lasts: Vec::new(),
            tree: vec![0],
            pending: None,
            finger: 0,
            len: 0,
            chunk: chunk.clamp(1, usize::MAX / 2),
        }
    }

    /// Keys held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn rebuild(&mut self) {
        self.pending = None;
        let n = self.chunks.len();
        self.tree.clear();
        self.tree.resize(n + 1, 0);
        for i in 1..=n {
            self.tree[i] += self.chunks[i - 1].len();
            let parent = i + (i & i.wrapping_neg());
            if parent <= n {
                self.tree[parent] += self.tree[i];
            }
        }
    }

    /// Records that `chunk` grew or shrank by one key.
    fn add(&mut self, chunk: usize, grow: bool) {
        let d: isize = if grow { 1 } else { -1 };
        match self.pending {
            Some((c, p)) if c == chunk => self.pending = Some((c, p + d)),
            _ => {
                self.flush();
                self.pending = Some((chunk, d));
            }
        }
    }

    /// Puts the pending change into the tree.
    fn flush(&mut self) {
        let Some((chunk, d)) = self.pending.take() else {
            return;
        };
        if d == 0 {
            return;
        }
        let mut i = chunk + 1;
        while i < self.tree.len() {
            self.tree[i] = self.tree[i].wrapping_add_signed(d);
            i += i & i.wrapping_neg();
        }
    }

    /// The pending change when its chunk is in `from..to`, else 0.
    fn pending_in(&self, from: usize, to: usize) -> isize {
        match self.pending {
            Some((c, d)) if from <= c && c < to => d,
            _ => 0,
        }
    }

    /// Keys in chunks before `chunk`.
    fn before(&self, chunk: usize) -> usize {
        let mut i = chunk;
        let mut sum = 0usize;
        while i > 0 {
            sum += self.tree[i];
            i &= i - 1;
        }
        sum.wrapping_add_signed(self.pending_in(0, chunk))
    }

    /// The chunk that holds or would hold `key`.
    fn chunk_of(&self, key: &K) -> usize {
        let i = self.lasts.partition_point(|last| last < key);
        i.min(self.chunks.len().saturating_sub(1))
    }

    /// [`chunk_of`](Self::chunk_of) for an update: the finger's chunk
    /// when it is the one (every earlier chunk's last key below `key`,
    /// and `key` not above its own last unless it is the last chunk).
    fn chunk_for_update(&mut self, key: &K) -> usize {
        let f = self.finger;
        let n = self.chunks.len();
        if f < n && (f == 0 || self.lasts[f - 1] < *key) && (f + 1 == n || *key <= self.lasts[f]) {
            return f;
        }
        let ci = self.chunk_of(key);
        self.finger = ci;
        ci
    }

    /// Inserts `key`; false when it was there.
    pub fn insert(&mut self, key: K) -> bool {
        if self.chunks.is_empty() {
            self.chunks.push(vec![key]);
            self.lasts.clear();
            self.lasts.push(key);
            self.len = 1;
            self.rebuild();
            return true;
        }
        let ci = self.chunk_for_update(&key);
        let chunk = &mut self.chunks[ci];
        let at = match chunk.binary_search(&key) {
            Ok(_) => return false,
            Err(at) => at,
        };
        chunk.insert(at, key);
        if at + 1 == chunk.len() {
            // Only the last chunk can grow at its end (every other
            // chunk's last key is above `key`).
            self.lasts[ci] = key;
        }
        self.len += 1;
        if chunk.len() > 2 * self.chunk {
            let tail = chunk.split_off(self.chunk);
            // The head keeps the first `chunk` keys (chunk >= 1); the
            // tail keeps the old last key.
            let head_last = chunk[chunk.len() - 1];
            self.chunks.insert(ci + 1, tail);
            self.lasts.insert(ci, head_last);
            self.rebuild();
        } else {
            self.add(ci, true);
        }
        true
    }

    /// Removes `key`; false when it was not there.
    pub fn remove(&mut self, key: &K) -> bool {
        if self.chunks.is_empty() {
            return false;
        }
        let ci = self.chunk_for_update(key);
        let chunk = &mut self.chunks[ci];
        let Ok(at) = chunk.binary_search(key) else {
            return false;
        };
        chunk.remove(at);
        self.len -= 1;
        if let Some(&last) = chunk.last()
            && at == chunk.len()
        {
            self.lasts[ci] = last;
        }
        if chunk.is_empty() {
            self.chunks.remove(ci);
            self.lasts.remove(ci);
            self.rebuild();
        } else {
            self.add(ci, false);
        }
        true
    }

    /// Whether `key` is held (the model test's; the index asks its maps).
    #[cfg(test)]
    pub fn contains(&self, key: &K) -> bool {
        !self.chunks.is_empty() && self.chunks[self.chunk_of(key)].binary_search(key).is_ok()
    }

    /// Keys less than `key`.
    pub fn rank(&self, key: &K) -> usize {
        if self.chunks.is_empty() {
            return 0;
        }
        let ci = self.lasts.partition_point(|last| last < key);
        if ci == self.chunks.len() {
            return self.len;
        }
        self.before(ci) + self.chunks[ci].partition_point(|k| k < key)
    }

    /// (chunk, offset) of rank `r` < len.
    fn locate(&self, mut r: usize) -> (usize, usize) {
        let n = self.chunks.len();
        let mut pos = 0;
        let mut step = if n == 0 {
            0
        } else {
            1 << (usize::BITS - 1 - n.leading_zeros())
        };
        while step > 0 {
            if pos + step <= n {
                // Node pos+step counts chunks pos..pos+step.
                let keys =
                    self.tree[pos + step].wrapping_add_signed(self.pending_in(pos, pos + step));
                if keys <= r {
                    pos += step;
                    r -= keys;
                }
            }
            step >>= 1;
        }
        (pos, r)
    }

    /// The key at rank `r` (0 = smallest).
    pub fn get(&self, r: usize) -> Option<&K> {
        if r >= self.len {
            return None;
        }
        let (c, o) = self.locate(r);
        self.chunks.get(c)?.get(o)
    }

    /// Keys from rank `r` upwards (the ascending sorts of
    /// [`crate::RunFilter`] pages).
    pub fn iter_from(&self, r: usize) -> impl Iterator<Item = &K> + '_ {
        let (c, o) = if r >= self.len {
            (self.chunks.len(), 0)
        } else {
            self.locate(r)
        };
        self.chunks
            .get(c..)
            .unwrap_or_default()
            .iter()
            .enumerate()
            .flat_map(move |(i, chunk)| chunk[if i == 0 { o } else { 0 }..].iter())
    }

    /// Keys in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = &K> + '_ {
        self.chunks.iter().flatten()
    }

    /// Keys below rank `end` (exclusive), downwards: the largest first.
    /// `rev_from(len() - k)` skips the `k` largest keys.
    pub fn rev_from(&self, end: usize) -> impl Iterator<Item = &K> + '_ {
        let end = end.min(self.len);
        // The chunk holding rank end-1 and the keys of it to take.
        let (c, take) = if end == 0 {
            (0, 0)
        } else {
            let (c, o) = self.locate(end - 1);
            (c + 1, o + 1)
        };
        self.chunks[..c]
            .iter()
            .rev()
            .enumerate()
            .flat_map(move |(i, chunk)| {
                chunk[..if i == 0 { take } else { chunk.len() }]
                    .iter()
                    .rev()
            })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::*;

    #[derive(Debug, Clone)]
    enum Step {
        Insert(u16),
        Remove(u16),
        /// Remove `k`, insert `k + d` (a rescore).
        Move(u16, u16),
        Get(usize),
        Rank(u16),
        Rev(usize, usize),
        From(usize, usize),
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            4 => any::<u16>().prop_map(|k| Step::Insert(k % 512)),
            2 => any::<u16>().prop_map(|k| Step::Remove(k % 512)),
            2 => (any::<u16>(), 0..8u16).prop_map(|(k, d)| Step::Move(k % 512, d)),
            1 => (0..600usize).prop_map(Step::Get),
            1 => any::<u16>().prop_map(|k| Step::Rank(k % 512)),
            1 => (0..600usize, 0..40usize).prop_map(|(a, b)| Step::Rev(a, b)),
            1 => (0..600usize, 0..40usize).prop_map(|(a, b)| Step::From(a, b)),
        ]
    }

    proptest! {
        #[test]
        fn matches_a_naive_model(chunk in 1..6usize, steps in proptest::collection::vec(step(), 0..400)) {
            let mut set = OrdSet::with_chunk(chunk);
            let mut model = BTreeSet::new();
            for s in steps {
                match s {
                    Step::Insert(k) => prop_assert_eq!(set.insert(k), model.insert(k)),
                    Step::Remove(k) => prop_assert_eq!(set.remove(&k), model.remove(&k)),
                    Step::Move(k, d) => {
                        prop_assert_eq!(set.remove(&k), model.remove(&k));
                        prop_assert_eq!(set.insert(k + d), model.insert(k + d));
                    }
                    Step::Get(r) => prop_assert_eq!(set.get(r), model.iter().nth(r)),
                    Step::Rank(k) => {
                        prop_assert_eq!(set.rank(&k), model.range(..k).count());
                        prop_assert_eq!(set.contains(&k), model.contains(&k));
                    }
                    Step::Rev(end, n) => {
                        let got: Vec<u16> = set.rev_from(end).take(n).copied().collect();
                        let want: Vec<u16> = model.iter().take(end).rev().take(n).copied().collect();
                        prop_assert_eq!(got, want);
                    }
                    Step::From(r, n) => {
                        let got: Vec<u16> = set.iter_from(r).take(n).copied().collect();
                        let want: Vec<u16> = model.iter().skip(r).take(n).copied().collect();
                        prop_assert_eq!(got, want);
                    }
                }
                prop_assert_eq!(set.len(), model.len());
                let lasts: Vec<u16> = set.chunks.iter().filter_map(|c| c.last().copied()).collect();
                prop_assert_eq!(&set.lasts, &lasts);
                prop_assert!(set.chunks.iter().all(|c| !c.is_empty()));
            }
            prop_assert!(set.iter().copied().eq(model.iter().copied()));
        }
    }

    #[test]
    fn a_huge_chunk_does_not_overflow() {
        let mut set = OrdSet::with_chunk(usize::MAX);
        for k in 0..10u32 {
            assert!(set.insert(k));
        }
        assert_eq!(set.len(), 10);
        assert!(set.remove(&3));
        assert_eq!(set.rank(&9), 8);
    }

    #[test]
    fn equality_ignores_chunking() {
        let mut a = OrdSet::with_chunk(1);
        let mut b = OrdSet::with_chunk(64);
        for k in (0..100u32).rev() {
            a.insert(k);
            b.insert(k);
        }
        assert_eq!(a, b);
        b.remove(&7);
        assert_ne!(a, b);
    }
}
