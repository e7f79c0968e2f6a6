//! Caller-side commit plans ([`crate::Config::caller_plans`]).
//!
//! A caller whose commit has others in flight computes its [`Plan`] (the
//! lazy MST update, the covering proof, the k256 signature) on its own
//! thread while the writer thread writes other commits; the writer takes
//! the plan only if the repository is still at the plan's base commit and
//! computes the commit itself otherwise.
//!
//! What a plan starts from, per account, is kept here between commits: the
//! root its last durable commit left (published from the commit's answer)
//! and a decoded-node cache holding that commit's new nodes. With both at
//! hand a plan runs no SQL at all: each write's current CID is the leaf
//! the MST update replaced ([`Current::Mst`]), and only a node missing
//! from the cache is read from `repo_blocks`, through a pooled reader
//! opened on the first miss. A stale root is harmless (the writer rejects
//! the plan and the commit's answer publishes the right root), so nothing
//! else that moves a root needs to report here. Without them (first
//! commit of an account, or another caller planning the same account) the
//! plan reads the root and the record index on a reader snapshot, as the
//! writer would.
//!
//! Signing keys are cached per account for the life of the store: an
//! account's key never changes (`create_account` sets it, an import keeps
//! it, nothing deletes an account).
//!
//! Planners are bounded by a [`Gate`] ([`crate::Config::planners`]): more
//! would only take CPU from the writer thread, which holds the only write
//! lock.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use repo::Cid;
use repo::crypto::{Algorithm, Keypair};
use repo::mst::{BlockSource, BlockSourceError, NodeCache};
use repo::syntax::TidGenerator;

use crate::gate::{Gate, planners};
use crate::node_pos::{NodePositions, SharedPositions};
use crate::node_rows::SqlBlocks;
use crate::plan::{Current, Plan, plan_commit};
use crate::writer::{self, Prepared, Root};
use crate::{CallerPlanStats, CommitInfo, Reader, Store};

/// Accounts whose plan state is kept (all dropped past it).
const ACCOUNTS: usize = 128;
/// Nodes per account's plan cache.
const CACHE_NODES: usize = 4096;
/// Node positions per account's plan state.
const POSITIONS: usize = 4 * CACHE_NODES;

/// Per-account plan state, signing keys and the planners' gate.
pub(crate) struct CallerPlans {
    states: Mutex<HashMap<String, PlanState>>,
    keys: Mutex<HashMap<String, Arc<Keypair>>>,
    gate: Gate,
    /// Plans made, and plans the writer took ([`CallerPlanStats`]).
    planned: AtomicU64,
    taken: AtomicU64,
    /// The store's count of node reads that had to scan.
    scans: Arc<AtomicU64>,
}

/// Where an account's next plan starts.
struct PlanState {
    /// The root of its last durable commit seen here (`key` unset).
    root: Option<Root>,
    /// Decoded MST nodes, that commit's new ones included.
    cache: NodeCache,
    /// Where the nodes the next plan may read are (`node_pos.rs`).
    positions: NodePositions,
}

impl PlanState {
    /// No root known, an empty cache.
    fn empty(scans: &Arc<AtomicU64>) -> Self {
        PlanState {
            root: None,
            cache: NodeCache::new(CACHE_NODES),
            positions: NodePositions::new(POSITIONS, scans.clone()),
        }
    }
}

/// `did`'s state, made empty if missing (every state is dropped first when
/// [`ACCOUNTS`] are kept). `None` never happens: the entry was just made.
fn state_of<'m>(
    states: &'m mut HashMap<String, PlanState>,
    did: &str,
    scans: &Arc<AtomicU64>,
) -> Option<&'m mut PlanState> {
    if !states.contains_key(did) {
        if states.len() >= ACCOUNTS {
            states.clear();
        }
        states.insert(did.to_owned(), PlanState::empty(scans));
    }
    states.get_mut(did)
}

impl CallerPlans {
    /// Empty state; at most `planners` plans at once ([`planners`]: 0 is
    /// one per core).
    pub(crate) fn new(planners_wanted: usize, scans: Arc<AtomicU64>) -> Self {
        CallerPlans {
            states: Mutex::new(HashMap::new()),
            keys: Mutex::new(HashMap::new()),
            gate: Gate::new(planners(planners_wanted)),
            planned: AtomicU64::new(0),
            taken: AtomicU64::new(0),
            scans,
        }
    }

    /// A plan for `writes` on `did`, or `None` whenever anything is off
    /// (the writer then computes the commit and reports the authoritative
    /// error).
    pub(crate) fn plan(
        &self,
        store: &Store,
        revs: &TidGenerator,
        did: &str,
        writes: &[Prepared],
        swap_commit: Option<Cid>,
    ) -> Option<Plan> {
        let _slot = self.gate.enter();
        let (root, mut cache, mut positions) = self.take(did);
        if positions.is_full() {
            cache.clear();
            positions.clear();
        }
        let positions = SharedPositions::new(positions);
        let known = root.and_then(|root| Some((self.key(did, None)?, root)));
        let (plan, cache) = match known {
            Some((key, root)) => {
                let blocks = LazyBlocks {
                    store,
                    did,
                    root: root.data,
                    positions: &positions,
                    reader: OnceCell::new(),
                };
                let (plan, cache) = plan_commit(
                    &blocks,
                    &positions,
                    Current::Mst,
                    cache,
                    revs,
                    did,
                    &root,
                    &key,
                    writes,
                    swap_commit,
                );
                (plan.ok(), cache)
            }
            None => self.plan_on_snapshot(store, revs, did, writes, swap_commit, cache, &positions),
        };
        self.put_back(did, cache, positions.into_inner());
        if plan.is_some() {
            self.planned.fetch_add(1, Ordering::Relaxed);
        }
        plan
    }

    /// The plan of an account with no root or key kept here: the root and
    /// the record index read on a reader snapshot, as the writer would.
    #[allow(clippy::too_many_arguments)]
    fn plan_on_snapshot(
        &self,
        store: &Store,
        revs: &TidGenerator,
        did: &str,
        writes: &[Prepared],
        swap_commit: Option<Cid>,
        cache: NodeCache,
        positions: &SharedPositions,
    ) -> (Option<Plan>, NodeCache) {
        let Ok(r) = store.reader() else {
            return (None, cache);
        };
        if r.execute_batch("BEGIN").is_err() {
            return (None, cache);
        }
        let root = writer::read_root(&r, did).ok().flatten();
        let key = root
            .as_ref()
            .and_then(|root| self.key(did, root.key.as_deref()));
        let out = match (root, key) {
            (Some(root), Some(key)) => {
                let (plan, cache) = plan_commit(
                    SqlBlocks::new(&r, did, root.data, positions),
                    positions,
                    Current::Index(&r),
                    cache,
                    revs,
                    did,
                    &root,
                    &key,
                    writes,
                    swap_commit,
                );
                (plan.ok(), cache)
            }
            _ => (None, cache),
        };
        let _ = r.execute_batch("COMMIT");
        out
    }

    /// Counts so far.
    pub(crate) fn stats(&self) -> CallerPlanStats {
        CallerPlanStats {
            planned: self.planned.load(Ordering::Relaxed),
            taken: self.taken.load(Ordering::Relaxed),
        }
    }

    /// Records the root a durable commit left, unless a newer one is known;
    /// `planned` is the commit CID of the caller's plan, if it made one.
    pub(crate) fn committed(&self, info: &CommitInfo, planned: Option<Cid>) {
        if planned == Some(info.commit) {
            self.taken.fetch_add(1, Ordering::Relaxed);
        }
        let root = Root {
            commit: info.commit,
            rev: info.rev.clone(),
            data: info.data,
            key: None,
        };
        let mut states = self.states.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(state) = state_of(&mut states, &info.did, &self.scans)
            // Revs are TIDs: their strings sort as their times.
            && state.root.as_ref().is_none_or(|r| r.rev < root.rev)
        {
            state.root = Some(root);
        }
    }

    /// Takes `did`'s state out (a second planner of the same account meanwhile
    /// starts from scratch).
    fn take(&self, did: &str) -> (Option<Root>, NodeCache, NodePositions) {
        let taken = self
            .states
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(did);
        let s = taken.unwrap_or_else(|| PlanState::empty(&self.scans));
        (s.root, s.cache, s.positions)
    }

    /// Puts a plan's node cache and positions back; a root published
    /// meanwhile stays.
    fn put_back(&self, did: &str, cache: NodeCache, positions: NodePositions) {
        let mut states = self.states.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(state) = state_of(&mut states, did, &self.scans) {
            state.cache = cache;
            state.positions = positions;
        }
    }

    /// `did`'s signing key: cached, else parsed from `secret`.
    fn key(&self, did: &str, secret: Option<&[u8]>) -> Option<Arc<Keypair>> {
        let mut keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(k) = keys.get(did) {
            return Some(k.clone());
        }
        let k = Arc::new(Keypair::from_bytes(Algorithm::K256, secret?).ok()?);
        if keys.len() > 100_000 {
            keys.clear();
        }
        keys.insert(did.to_owned(), k.clone());
        Some(k)
    }
}

/// `repo_blocks` through a pooled reader taken on the first read. Blocks
/// are content-addressed, so reads need no common snapshot.
struct LazyBlocks<'s> {
    store: &'s Store,
    did: &'s str,
    root: Cid,
    positions: &'s SharedPositions,
    reader: OnceCell<Reader<'s>>,
}

impl BlockSource for LazyBlocks<'_> {
    fn get_block(&self, cid: &Cid) -> Result<Option<Cow<'_, [u8]>>, BlockSourceError> {
        let reader = match self.reader.get() {
            Some(r) => r,
            None => {
                let r = self.store.reader().map_err(BlockSourceError::new)?;
                self.reader.get_or_init(|| r)
            }
        };
        // The plan's root may be stale: trust the positions rather than
        // scan for a node another commit released.
        let blocks =
            SqlBlocks::new(reader, self.did, self.root, self.positions).trusting_positions();
        Ok(blocks.get_block(cid)?.map(|b| Cow::Owned(b.into_owned())))
    }
}
