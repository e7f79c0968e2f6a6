//! [`AppView`]: the application. Its canonical state is one atproto
//! repository in a `crates/store` database; every flow, run and state
//! change is a record there, written as a signed commit, and the index is
//! fed by those commits as they land.
//!
//! A write: under the appview's write lock, the input is checked and
//! planned against the index (`plan.rs`; a refusal writes nothing), its
//! records are encoded and committed in one `applyWrites` (a run with its
//! first state, or a state with the run it moves: the commit is the
//! transaction), and the index applies the `#commit` event frame the
//! store stored for it, which the store hands back with the commit
//! (`Store::apply_writes_framed`: the same bytes `events_after` returns,
//! without a read back). Opening rebuilds the index
//! from the repository alone ([`crate::rebuild`]), and so does a frame
//! the index fails to apply, so it never lags a commit that landed.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, RwLock, RwLockReadGuard};

use repo::crypto::{Algorithm, Keypair};
use store::{Config, RecordWrite, Store, StoreError};

use crate::error::{AppviewError, Result};
use crate::index::Index;
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

/// The store path of directory `dir`.
pub fn store_path(dir: &Path) -> PathBuf {
    dir.join(STORE_FILE)
}

/// The application: a store, its repository, and the index.
pub struct AppView {
    store: Store,
    did: String,
    index: RwLock<Index>,
    writes: Mutex<()>,
}

impl AppView {
    /// Opens (creating when missing) the appview in `dir` with the store's
    /// `config`, and rebuilds the index from the repository.
    pub fn open(dir: &Path, config: Config) -> Result<AppView> {
        std::fs::create_dir_all(dir)?;
        let store = Store::open(store_path(dir), config)?;
        match store.create_account(APPVIEW_DID, &signing_key()?) {
            Ok(_) | Err(StoreError::AccountExists(_)) => {}
            Err(e) => return Err(e.into()),
        }
        AppView::over(store)
    }

    /// The appview over an opened `store`, its index rebuilt from the
    /// repository.
    fn over(store: Store) -> Result<AppView> {
        let index = crate::rebuild::rebuild(&store, APPVIEW_DID)?;
        Ok(AppView {
            store,
            did: APPVIEW_DID.to_owned(),
            index: RwLock::new(index),
            writes: Mutex::new(()),
        })
    }

    /// Opens an existing appview read-only (the CLI's queries): an error
    /// naming `dir` when it holds none.
    pub fn open_existing(dir: &Path) -> Result<AppView> {
        let path = store_path(dir);
        if !path.is_file() {
            return Err(AppviewError::NoDatabase(dir.to_path_buf()));
        }
        let store = Store::open_read_only(&path, Config::default())?;
        AppView::over(store)
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The repository's DID.
    pub fn did(&self) -> &str {
        &self.did
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
        // The store hands back the `#commit` frame it stored for this
        // commit (the bytes a `subscribeRepos` consumer gets), so the index
        // decodes the commit's blocks without reading the event back.
        let committed = self.store.apply_writes_framed(&self.did, writes, None)?;
        self.index_commit(&committed.frame)?;
        Ok(mutation)
    }

    /// Feeds the index the frame of a commit the store has already made.
    /// The commit stands whatever the index does with it, so when the
    /// frame fails to apply the index is rebuilt from the repository
    /// (which holds the commit) before the error is returned: the index
    /// never stays behind the repository. Called under the write lock.
    fn index_commit(&self, frame: &[u8]) -> Result<()> {
        let mut index = self.index.write().unwrap_or_else(|p| p.into_inner());
        let Err(e) = index.apply_commit(frame) else {
            return Ok(());
        };
        *index = crate::rebuild::rebuild(&self.store, &self.did)?;
        Err(e)
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

    #[test]
    fn a_frame_the_index_refuses_rebuilds_it_from_the_repository() {
        let dir = tempfile::tempdir().unwrap();
        let app = AppView::open(dir.path(), Config::default()).unwrap();
        // A commit the index has not seen (written past it), then a frame
        // that does not decode: the index must come back to the repository.
        let flow = Mutation::CreateFlow(Flow {
            id: Uuid(0x0f3a_9e2c_1b4d_4e5f_8a6b_7c8d_9e0f_1a2b),
            name: "behind".into(),
            tags: vec![],
            created: 1,
            updated: 1,
        });
        app.store
            .apply_writes_framed(&app.did, store_writes(&flow), None)
            .unwrap();
        assert_eq!(app.index().flow_count(), 0);
        let e = app.index_commit(b"not a frame").unwrap_err();
        assert!(matches!(e, AppviewError::BadCommit(_)), "{e}");
        assert_eq!(app.index().flow_count(), 1);
        assert_eq!(*app.index(), app.rebuild_index().unwrap());
    }
}
