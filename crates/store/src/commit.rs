//! Where a commit's path starts: `applyWrites` and the createRecord,
//! putRecord and deleteRecord calls built on it.
//!
//! A commit runs on its caller's thread up to its rows: the writes are
//! checked and encoded (`prepare.rs`), the account's lane is locked
//! (`lane.rs`, loaded through a pooled reader if empty), the commit is
//! planned from it (`plan.rs`: MST update, proof, signature, CAR), and
//! only then is a job queued for the writer (`writer.rs`), which checks
//! that the account is still at the plan's base commit and writes the
//! rows in its next group commit (`batch.rs`). The lane stays locked
//! until the writer answers, so the next commit of the account plans on
//! this one; a commit that does not land empties the lane.

use std::sync::Arc;

use repo::Cid;
use repo::syntax::validate_did;

use crate::error::{Failed, Result, StoreError};
use crate::lane::{Lane, LazyReader, hold};
use crate::plan::plan_commit;
use crate::{CommitInfo, RecordWrite, Store};

impl Store {
    /// applyWrites: up to [`crate::Config::max_writes`] writes as one
    /// commit. Its `#commit` event reaches the store's feed
    /// ([`crate::Config::feed`]) before this returns.
    pub fn apply_writes(
        &self,
        did: &str,
        writes: Vec<RecordWrite>,
        swap_commit: Option<Cid>,
    ) -> Result<CommitInfo> {
        validate_did(did)?;
        let writes = Arc::new(self.prepare_writes(writes)?);
        if self.is_read_only() {
            return Err(StoreError::ReadOnly(self.path().to_path_buf()));
        }
        let slot = self.lanes.slot(did);
        let mut held = hold(&slot);
        let lane = match &mut *held {
            Some(lane) => lane,
            empty => empty.insert(Lane::load(&*self.reader()?, did)?),
        };
        let plan = {
            // More planners than cores would only take CPU from the
            // writer, which holds the only write lock.
            let _slot = self.planners.enter();
            plan_commit(
                lane,
                &LazyReader::new(self),
                &self.revs,
                &writes,
                swap_commit,
            )?
        };
        if let Some(cid) = plan.blocks.unknown() {
            // Every node the plan released or moved was read through the
            // lane, which noted its row; one it did not is a bug or a
            // corrupt row, and must not be written over.
            *held = None;
            return Err(StoreError::Corrupt(format!(
                "{did}: no known row for MST node {cid}"
            )));
        }
        let owned = did.to_owned();
        let answer = self.submit_job(
            move |w| -> std::result::Result<CommitInfo, Failed> {
                w.commit(&owned, &writes, &plan)
            },
            false,
        );
        if answer.is_err() {
            // The lane moved with the plan; the rows did not.
            *held = None;
        }
        answer
    }

    /// createRecord.
    pub fn create_record(
        &self,
        did: &str,
        collection: &str,
        rkey: Option<&str>,
        record: Vec<u8>,
        swap_commit: Option<Cid>,
    ) -> Result<CommitInfo> {
        self.apply_writes(
            did,
            vec![RecordWrite::create(collection, rkey, record)],
            swap_commit,
        )
    }

    /// putRecord (`swap_record`: `Some(None)` = must not exist).
    pub fn put_record(
        &self,
        did: &str,
        collection: &str,
        rkey: &str,
        record: Vec<u8>,
        swap_record: Option<Option<Cid>>,
        swap_commit: Option<Cid>,
    ) -> Result<CommitInfo> {
        let mut w = RecordWrite::update(collection, rkey, record);
        w.swap_record = swap_record;
        self.apply_writes(did, vec![w], swap_commit)
    }

    /// deleteRecord.
    pub fn delete_record(
        &self,
        did: &str,
        collection: &str,
        rkey: &str,
        swap_record: Option<Cid>,
        swap_commit: Option<Cid>,
    ) -> Result<CommitInfo> {
        let mut w = RecordWrite::delete(collection, rkey);
        w.swap_record = swap_record.map(Some);
        self.apply_writes(did, vec![w], swap_commit)
    }
}
