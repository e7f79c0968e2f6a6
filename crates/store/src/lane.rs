//! Account lanes: the one owner of each active account's commit state.
//!
//! A [`Lane`] holds what planning an account's next commit starts from:
//! its current root (commit, rev, MST root), its signing key, the decoded
//! MST nodes its last commits read or wrote, and where each of those
//! nodes' rows is (`node_pos.rs`). A commit locks its account's lane for
//! its whole path (`commit.rs`): it plans on its caller's thread from the
//! lane (node misses read through a pooled reader, [`LazyReader`]), moves
//! the lane to the planned commit, hands the writer only the rows, and
//! keeps the lane locked until the writer answers. So the lane is never
//! behind the rows: every commit of the account passes through it, and a
//! commit that does not land (refused by the writer, or in a rolled-back
//! batch) empties the lane, which reloads from the rows on next use. An
//! import replaces a repository under its lane the same way.
//!
//! Lanes are kept for at most [`LANES`] accounts; past that, the idle ones
//! are dropped (a lane in use stays, and is dropped when a later commit
//! finds the map full and the lane idle).

use std::cell::OnceCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use repo::Cid;
use repo::crypto::{Algorithm, Keypair};
use repo::mst::NodeCache;
use rusqlite::Connection;

use crate::error::{Result, StoreError};
use crate::node_pos::{NodePositions, ROOT_POS, SharedPositions};
use crate::node_rows::NodeRows;
use crate::rows::read_root;
use crate::{Reader, Store};

/// Accounts whose lanes are kept (the idle ones are dropped past it).
pub(crate) const LANES: usize = 128;
/// Decoded nodes per lane.
const CACHE_NODES: usize = 4096;
/// Node positions per lane (the nodes and their children).
const POSITIONS: usize = 4 * CACHE_NODES;

/// An account's current commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Head {
    pub commit: Cid,
    pub rev: String,
    pub data: Cid,
}

/// One account's commit state (see the module docs).
pub(crate) struct Lane {
    pub did: String,
    pub head: Head,
    pub key: Arc<Keypair>,
    /// Decoded MST nodes, the last commit's new ones included.
    pub cache: NodeCache,
    /// Where the nodes the next commit may read are.
    pub positions: SharedPositions,
}

impl Lane {
    /// A lane at `head` with empty caches of the given bounds.
    pub(crate) fn new(
        did: &str,
        head: Head,
        key: Arc<Keypair>,
        cache_nodes: usize,
        positions: usize,
    ) -> Lane {
        let mut known = NodePositions::new(positions);
        known.note(head.data, ROOT_POS);
        Lane {
            did: did.to_owned(),
            head,
            key,
            cache: NodeCache::new(cache_nodes),
            positions: SharedPositions::new(known),
        }
    }

    /// `did`'s lane as its rows are now.
    pub(crate) fn load(conn: &Connection, did: &str) -> Result<Lane> {
        let root =
            read_root(conn, did)?.ok_or_else(|| StoreError::UnknownAccount(did.to_owned()))?;
        let secret = root
            .key
            .ok_or_else(|| StoreError::ReadOnlyAccount(did.to_owned()))?;
        let key = Keypair::from_bytes(Algorithm::K256, &secret)
            .map_err(|e| StoreError::Corrupt(format!("signing key of {did}: {e}")))?;
        let head = Head {
            commit: root.commit,
            rev: root.rev,
            data: root.data,
        };
        Ok(Lane::new(did, head, Arc::new(key), CACHE_NODES, POSITIONS))
    }

    /// Drops the decoded nodes and positions together once the positions
    /// are full (a cached node whose children's positions were forgotten
    /// could not be read under); the next commit reads its path again.
    pub(crate) fn bound(&mut self) {
        let mut positions = self.positions.borrow_mut();
        if positions.is_full() {
            positions.clear();
            positions.note(self.head.data, ROOT_POS);
            self.cache.clear();
        }
    }
}

/// An account's lane, `None` until loaded (or after a commit that did
/// not land).
pub(crate) type Slot = Arc<Mutex<Option<Lane>>>;

/// The lanes of the accounts written lately.
#[derive(Default)]
pub(crate) struct Lanes {
    slots: Mutex<HashMap<String, Slot>>,
}

impl Lanes {
    /// `did`'s slot, made empty if missing (lock it with [`hold`]).
    pub(crate) fn slot(&self, did: &str) -> Slot {
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = slots.get(did) {
            return s.clone();
        }
        if slots.len() >= LANES {
            // Only this map holds an idle slot (a slot is cloned out under
            // this lock), so no one can be using what goes.
            slots.retain(|_, s| Arc::strong_count(s) > 1);
        }
        let s = Slot::default();
        slots.insert(did.to_owned(), s.clone());
        s
    }
}

/// Locks `slot` for as long as its account's state is in use. A lane
/// left by a caller that panicked while holding it may be ahead of its
/// rows, so it is emptied.
pub(crate) fn hold(slot: &Slot) -> MutexGuard<'_, Option<Lane>> {
    slot.lock().unwrap_or_else(|poisoned| {
        let mut held = poisoned.into_inner();
        *held = None;
        held
    })
}

/// Node rows through a pooled reader taken on the first read (a commit
/// whose path is cached reads none). Blocks are content-addressed, and
/// the lane's root is durable, so reads need no common snapshot.
pub(crate) struct LazyReader<'s> {
    store: &'s Store,
    reader: OnceCell<Reader<'s>>,
}

impl<'s> LazyReader<'s> {
    /// No reader taken yet.
    pub(crate) fn new(store: &'s Store) -> Self {
        LazyReader {
            store,
            reader: OnceCell::new(),
        }
    }
}

impl NodeRows for LazyReader<'_> {
    fn conn(&self) -> Result<&Connection> {
        if let Some(r) = self.reader.get() {
            return Ok(&**r);
        }
        let r = self.store.reader()?;
        Ok(&**self.reader.get_or_init(|| r))
    }
}
