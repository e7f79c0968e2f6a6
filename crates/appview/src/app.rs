//! [`AppView`]: the application. Its canonical state is one atproto
//! repository in a `crates/store` database; every flow, run and state
//! change is a record there, written as a signed commit, and the index is
//! fed by those commits as they land.
//!
//! A write: under the appview's write lock, the input is checked and
//! planned against the index (`plan.rs`; a refusal writes nothing), its
//! records are encoded and committed in one `applyWrites` (a run with its
//! first state, or a state with the run it moves: the commit is the
//! transaction), and the index catches up with the store's event feed.
//!
//! How the index is fed: the appview opens its store with a feed
//! ([`store::Config::feed`]), so the store's writer, the one owner of the
//! event order, queues every committed event's frame (the same bytes
//! `events_after` returns) in seq order before the commit call returns.
//! The index is not updated inside that hook (decoding a commit there
//! would hold up the writer); instead the write path drains the queue
//! right after its commit returns, still under the write lock, so a write
//! reads its own result and the index applies commits in the order they
//! landed, including any made through [`AppView::store`] directly. The
//! queue is bounded: past [`FEED_EVENTS`] events it is dropped and marked,
//! and the next catch-up rebuilds the index from the repository instead
//! (which holds every one of them), so nothing is lost or reordered.
//! Opening rebuilds the index from the repository alone
//! ([`crate::rebuild`]), and so does a frame the index fails to apply, so
//! it never lags a commit that landed.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard};

use repo::crypto::{Algorithm, Keypair};
use store::{Config, Event, EventFeed, RecordWrite, Store, StoreError};

use crate::error::{AppviewError, Result};
use crate::index::Index;
use crate::logs::{LogStore, logs_path};
use crate::model::{Mutation, RecordRef};
use crate::plan::{Input, plan};
use crate::query::{Page, Query, ReadBackend};
use crate::record;

/// The store's file inside an appview directory.
pub(crate) const STORE_FILE: &str = "appview.sqlite";
/// The DID of the appview's repository. Its key is fixed
/// ([`signing_key`]): the appview is a benchmark subject, and a fixed key
/// lets a test or a bench verify its commits and rebuild an equal store.
pub const APPVIEW_DID: &str = "did:plc:atbenchappviewrepo234567";

/// The appview's signing key (fixed, derived like the store fixtures'
/// account keys: `datagen::store::signing_secret(0x4150_5056)`, which a
/// test checks, so a test or a bench can verify its commits).
pub fn signing_key() -> Result<Keypair> {
    let mut secret = codec::sha256::digest(b"atbench-store-key-1095782486");
    // Well below the secp256k1 order, as the fixtures' keys.
    secret[0] &= 0x7f;
    secret[31] |= 1;
    Keypair::from_bytes(Algorithm::K256, &secret)
        .map_err(|e| AppviewError::BadCommit(format!("signing key: {e}")))
}

/// Events the feed queues for the index before it gives up on them and
/// has the index rebuilt instead (see the module doc).
pub const FEED_EVENTS: usize = 4096;

/// The store's events as they commit, queued for the index.
#[derive(Default)]
struct Feed(Mutex<Queued>);

#[derive(Default)]
struct Queued {
    events: VecDeque<Event>,
    /// Events were dropped: the index must be rebuilt.
    overflowed: bool,
}

impl EventFeed for Feed {
    /// On the store's committing thread: queue and return.
    fn committed(&self, events: Vec<Event>) {
        let mut q = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if q.overflowed {
            return;
        }
        if q.events.len() + events.len() > FEED_EVENTS {
            q.events = VecDeque::new();
            q.overflowed = true;
            return;
        }
        q.events.extend(events);
    }
}

impl Feed {
    /// What was queued since the last call (`None`: events were dropped,
    /// rebuild).
    fn take(&self) -> Option<VecDeque<Event>> {
        let mut q = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if std::mem::take(&mut q.overflowed) {
            return None;
        }
        Some(std::mem::take(&mut q.events))
    }
}

/// The store path of directory `dir`.
pub fn store_path(dir: &Path) -> PathBuf {
    dir.join(STORE_FILE)
}

/// The application: a store, its repository, and the index.
pub struct AppView {
    store: Store,
    did: String,
    index: RwLock<Index>,
    /// The store's events not yet applied (none for a read-only appview).
    feed: Arc<Feed>,
    writes: Mutex<()>,
    /// The log lines, beside the store (`crate::logs`: not records).
    logs: LogStore,
}

impl AppView {
    /// Opens (creating when missing) the appview in `dir` with the store's
    /// `config` (its feed replaced by the index's) and its log table
    /// (durable as the store), and rebuilds the index from the repository.
    pub fn open(dir: &Path, config: Config) -> Result<AppView> {
        std::fs::create_dir_all(dir)?;
        let feed = Arc::new(Feed::default());
        let config = Config {
            feed: Some(feed.clone()),
            ..config
        };
        let logs = LogStore::open(&logs_path(dir), config.durable)?;
        let store = Store::open(store_path(dir), config)?;
        match store.create_account(APPVIEW_DID, &signing_key()?) {
            Ok(_) | Err(StoreError::AccountExists(_)) => {}
            Err(e) => return Err(e.into()),
        }
        AppView::over(store, feed, logs)
    }

    /// The appview over an opened `store` feeding `feed`, its index
    /// rebuilt from the repository (which holds whatever was queued so
    /// far).
    fn over(store: Store, feed: Arc<Feed>, logs: LogStore) -> Result<AppView> {
        feed.take();
        let index = crate::rebuild::rebuild(&store, APPVIEW_DID)?;
        Ok(AppView {
            store,
            did: APPVIEW_DID.to_owned(),
            index: RwLock::new(index),
            feed,
            writes: Mutex::new(()),
            logs,
        })
    }

    /// A read fixture: an appview in `dir` whose index is `index`, bulk
    /// loaded through [`Index::apply_record`] (the benches' 10^5-run tier
    /// behind the REST server, as in process). Its repository does not
    /// hold the bulk records, so it is for reads: a write still commits
    /// and indexes, but an index rebuilt from the repository (after a
    /// frame that fails to apply) would lose them.
    pub fn read_fixture(dir: &Path, index: Index) -> Result<AppView> {
        let app = AppView::open(dir, Config::default())?;
        *app.index.write().unwrap_or_else(|p| p.into_inner()) = index;
        Ok(app)
    }

    /// Opens an existing appview read-only (the CLI's queries): an error
    /// naming `dir` when it holds none.
    pub fn open_existing(dir: &Path) -> Result<AppView> {
        let path = store_path(dir);
        if !path.is_file() {
            return Err(AppviewError::NoDatabase(dir.to_path_buf()));
        }
        let store = Store::open_read_only(&path, Config::default())?;
        let logs = LogStore::open_read_only(&logs_path(dir))?;
        AppView::over(store, Arc::default(), logs)
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The repository's DID.
    pub fn did(&self) -> &str {
        &self.did
    }

    /// The log lines (`POST /logs/`, `/logs/filter`).
    pub fn logs(&self) -> &LogStore {
        &self.logs
    }

    /// The live index.
    pub fn index(&self) -> RwLockReadGuard<'_, Index> {
        self.index.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Checks, plans, commits and indexes one client operation; returns
    /// what it wrote.
    pub fn apply(&self, input: &Input) -> Result<Mutation> {
        let _writer = self.writes.lock().unwrap_or_else(|p| p.into_inner());
        let mutation = plan(&*self.index(), input)?;
        let writes = store_writes(&mutation);
        self.store.apply_writes(&self.did, writes, None)?;
        // The commit's `#commit` frame was queued by the store's writer
        // before `apply_writes` returned.
        self.catch_up()?;
        Ok(mutation)
    }

    /// Applies the queued events to the index, in seq order (other kinds
    /// than `#commit` change nothing). The commits stand whatever the
    /// index does with them, so when a frame fails to apply, or events
    /// were dropped from the queue, the index is rebuilt from the
    /// repository (which holds them all) and the rest of what was queued
    /// is dropped with it; a failed frame's error is then returned: the
    /// index never stays behind the repository. Called under the write
    /// lock.
    fn catch_up(&self) -> Result<()> {
        let queued = self.feed.take();
        let mut index = self.index.write().unwrap_or_else(|p| p.into_inner());
        let failed = match queued {
            None => None,
            Some(events) => match events
                .iter()
                .try_for_each(|e| index.apply_commit(&e.frame).map(|_| ()))
            {
                Ok(()) => return Ok(()),
                Err(e) => Some(e),
            },
        };
        *index = crate::rebuild::rebuild(&self.store, &self.did)?;
        failed.map_or(Ok(()), Err)
    }

    /// Like [`apply`](Self::apply), with the input made by `make` from the
    /// index under the write lock (so an input stamped with the time, or
    /// read from the current state, is planned against that same state:
    /// the REST server's writes). `make` returning `None` writes nothing.
    pub fn apply_with(
        &self,
        make: impl FnOnce(&Index) -> Result<Option<Input>>,
    ) -> Result<Option<Mutation>> {
        let _writer = self.writes.lock().unwrap_or_else(|p| p.into_inner());
        let mutation = {
            let index = self.index();
            let Some(input) = make(&index)? else {
                return Ok(None);
            };
            plan(&*index, &input)?
        };
        self.store
            .apply_writes(&self.did, store_writes(&mutation), None)?;
        self.catch_up()?;
        Ok(Some(mutation))
    }

    /// Commits the record writes `make` returns from the index under the
    /// write lock, as one signed commit, and indexes them (the task runs'
    /// writes, `crate::task_run`); `None` writes nothing. Returns whether
    /// it committed.
    pub fn commit_with(
        &self,
        make: impl FnOnce(&Index) -> Result<Option<Vec<RecordWrite>>>,
    ) -> Result<bool> {
        let _writer = self.writes.lock().unwrap_or_else(|p| p.into_inner());
        let Some(writes) = make(&self.index())? else {
            return Ok(false);
        };
        self.store.apply_writes(&self.did, writes, None)?;
        self.catch_up()?;
        Ok(true)
    }

    /// [`apply`](Self::apply) of a workload operation.
    #[cfg(feature = "workload")]
    pub fn apply_op(&self, op: &datagen::appview::Op) -> Result<Mutation> {
        self.apply(&Input::from_op(op)?)
    }

    /// Rebuilds an index from the repository alone (an export of it).
    pub fn rebuild_index(&self) -> Result<Index> {
        crate::rebuild::rebuild(&self.store, &self.did)
    }
}

impl ReadBackend for AppView {
    fn query(&self, query: &Query) -> Result<Page> {
        Ok(self.index().read(query))
    }
}

/// The store writes of `mutation`, one `applyWrites` (one signed commit):
/// what [`AppView::apply`] commits for it. Public so a probe can commit
/// the same writes through the store alone (`appview.seed_write`'s store
/// floor).
pub fn store_writes(mutation: &Mutation) -> Vec<RecordWrite> {
    mutation.records().map(|r| write_of(r, mutation)).collect()
}

/// The store write of one record of `mutation`: a run is created by
/// `CreateRun` and replaced by `SetState`; everything else is new.
fn write_of(r: RecordRef<'_>, mutation: &Mutation) -> RecordWrite {
    let rkey = r.id().to_string();
    let bytes = record::encode(r);
    match (r, mutation) {
        (RecordRef::Run(_), Mutation::SetState(..)) => {
            RecordWrite::update(r.collection(), &rkey, bytes)
        }
        _ => RecordWrite::create(r.collection(), Some(&rkey), bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Flow;
    use crate::uuid::Uuid;

    fn flow(name: &str, id: u128) -> Mutation {
        Mutation::CreateFlow(Flow {
            id: Uuid(id),
            name: name.into(),
            tags: vec![],
            created: 1,
            updated: 1,
        })
    }

    #[test]
    fn a_frame_the_index_refuses_rebuilds_it_from_the_repository() {
        let dir = tempfile::tempdir().unwrap();
        let app = AppView::open(dir.path(), Config::default()).unwrap();
        // A commit made past the appview (through its store), and ahead of
        // it in the queue a frame that does not decode: the index must
        // come back to the repository, commit included.
        app.feed.committed(vec![Event {
            seq: 0,
            frame: b"not a frame".to_vec(),
        }]);
        let behind = flow("behind", 0x0f3a_9e2c_1b4d_4e5f_8a6b_7c8d_9e0f_1a2b);
        app.store
            .apply_writes(&app.did, store_writes(&behind), None)
            .unwrap();
        assert_eq!(app.index().flow_count(), 0);
        let e = app.catch_up().unwrap_err();
        assert!(matches!(e, AppviewError::BadCommit(_)), "{e}");
        assert_eq!(app.index().flow_count(), 1);
        assert_eq!(*app.index(), app.rebuild_index().unwrap());
    }

    #[test]
    fn commits_past_the_appview_reach_the_index_in_order_and_an_overflow_rebuilds() {
        let dir = tempfile::tempdir().unwrap();
        let app = AppView::open(dir.path(), Config::default()).unwrap();
        let past = flow("past", 0x1f3a_9e2c_1b4d_4e5f_8a6b_7c8d_9e0f_1a2b);
        app.store
            .apply_writes(&app.did, store_writes(&past), None)
            .unwrap();
        // The next write through the appview applies both, in order.
        app.apply(&Input::Flow(crate::plan::NewFlow {
            id: Uuid(0x2f3a_9e2c_1b4d_4e5f_8a6b_7c8d_9e0f_1a2b),
            name: "mine".into(),
            tags: vec![],
            created: 1,
        }))
        .unwrap();
        assert_eq!(app.index().flow_count(), 2);
        // More events than the queue holds: dropped, and rebuilt from the
        // repository at the next catch-up.
        app.feed.committed(
            (0..=FEED_EVENTS as i64)
                .map(|seq| Event {
                    seq,
                    frame: Vec::new(),
                })
                .collect(),
        );
        let more = flow("more", 0x3f3a_9e2c_1b4d_4e5f_8a6b_7c8d_9e0f_1a2b);
        app.store
            .apply_writes(&app.did, store_writes(&more), None)
            .unwrap();
        app.catch_up().unwrap();
        assert_eq!(app.index().flow_count(), 3);
        assert_eq!(*app.index(), app.rebuild_index().unwrap());
    }
}
