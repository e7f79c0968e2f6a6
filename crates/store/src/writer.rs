//! The writer: the one read-write connection and what only it does —
//! hands out sequence numbers and writes rows. A commit arrives planned
//! (`plan.rs`, on its caller's thread): the writer checks the one cheap
//! guard (the account is still at the plan's base commit) and writes the
//! plan's rows and its `#commit` event. Account creation and CAR import
//! are written here too. Every event goes through [`Writer::put_event`],
//! which also keeps its frame for the feed (`feed.rs`) until the batch
//! commits. The queue and group commit are `batch.rs`.

use std::sync::Arc;

use repo::commit::UnsignedCommit;
use repo::crypto::{Algorithm, Keypair};
use repo::mst::{MemoryBlockStore, Mst};
use repo::syntax::{Tid, TidGenerator};
use rusqlite::Connection;

use crate::CommitInfo;
use crate::cid_cache::CidCache;
use crate::error::{Failed, Result, StoreError};
use crate::events::{Encoded, commit_frame, insert_event, sync_frame};
use crate::feed::Pending;
use crate::node_pos::{NodePositions, ROOT_POS};
use crate::node_rows::{place_nodes, put_nodes};
use crate::plan::Plan;
use crate::prepare::Prepared;
use crate::rows::{
    RootWrite, import_records, log_commit, read_root, root_commit, write_records, write_root,
};

/// The writer's state (owned by the writer thread, or by a lone caller
/// running its batch, see `batch.rs`).
pub(crate) struct Writer {
    pub conn: Connection,
    pub next_seq: i64,
    tids: Arc<TidGenerator>,
    /// The store's `current_cid` cache, and the accounts whose `records`
    /// rows this batch changed (invalidated after it, see `cid_cache.rs`).
    cids: Arc<CidCache>,
    touched: Vec<String>,
    /// The batch's events, for the feed once it commits.
    pub events: Pending,
    /// How far the orphan sweep has read `blobs_age` (`sweep.rs`).
    pub orphans: crate::sweep::OrphanCursor,
}

impl Writer {
    pub(crate) fn new(
        conn: Connection,
        next_seq: i64,
        tids: Arc<TidGenerator>,
        cids: Arc<CidCache>,
        events: Pending,
    ) -> Self {
        Writer {
            conn,
            next_seq,
            tids,
            cids,
            touched: Vec::new(),
            events,
            orphans: Default::default(),
        }
    }

    /// Takes back the seqs from `seq` on (a job that handed them out was
    /// rolled back), with their events.
    pub(crate) fn rewind(&mut self, seq: i64) {
        self.next_seq = seq;
        self.events.rewind(seq);
    }

    /// Forgets the cached `current_cid` answers of the accounts this batch
    /// touched (after its COMMIT or failure, before its callers hear back).
    pub(crate) fn invalidate_touched(&mut self) {
        self.cids
            .invalidate(self.touched.iter().map(String::as_str));
        self.touched.clear();
    }

    /// Notes that this batch changes `did`'s `records` rows (call before
    /// writing them).
    pub(crate) fn touch(&mut self, did: &str) {
        if !self.touched.iter().any(|d| d == did) {
            self.touched.push(did.to_owned());
        }
    }

    /// Appends an event of `did` with the next sequence number (the seq
    /// its frame carries): its body to the log, its frame to the batch's
    /// events for the feed.
    pub(crate) fn put_event(&mut self, did: &str, kind: &str, event: Encoded) -> Result<()> {
        insert_event(&self.conn, self.next_seq, did, kind, event.body())?;
        self.events.push(self.next_seq, event.frame);
        self.next_seq += 1;
        Ok(())
    }

    /// Appends `#sync` for `did`'s repository at `commit`; returns its seq.
    fn sync_event(
        &mut self,
        did: &str,
        commit: &repo::Cid,
        commit_bytes: &[u8],
        rev: &str,
    ) -> Result<i64> {
        let seq = self.next_seq;
        let frame = sync_frame(seq, did, commit, commit_bytes, rev);
        self.put_event(did, "#sync", frame)?;
        Ok(seq)
    }

    /// Creates an account with an empty repository (signed genesis commit)
    /// and emits `#sync`.
    pub(crate) fn create_account(&mut self, did: &str, secret: [u8; 32]) -> Result<CommitInfo> {
        if read_root(&self.conn, did)?.is_some() {
            return Err(StoreError::AccountExists(did.to_owned()));
        }
        let key = Keypair::from_bytes(Algorithm::K256, &secret)
            .map_err(|e| StoreError::Corrupt(format!("signing key: {e}")))?;
        let mut mst = Mst::empty(MemoryBlockStore::new());
        let c = mst.commit()?;
        let rev = self.tids.next_tid().to_string();
        let rev_tid = Tid::parse(&rev)?;
        let signed = UnsignedCommit::new(did, c.root, rev_tid).sign(&key);
        let (ccid, cbytes) = signed.to_block();
        put_nodes(
            &self.conn,
            did,
            Some(&rev),
            c.new_blocks
                .iter()
                .map(|(cid, b)| (ROOT_POS, cid, b.as_slice())),
        )?;
        write_root(
            &self.conn,
            RootWrite::New { secret: &secret },
            did,
            (&ccid, &cbytes),
            &rev,
            &c.root,
        )?;
        // A new account announces itself as the reference PDS does:
        // #identity (no handle yet), #account (active), then #sync.
        self.identity_event(did, None)?;
        self.account_event(did, true, None)?;
        let seq = self.sync_event(did, &ccid, &cbytes, &rev)?;
        log_commit(&self.conn, did, &rev, &ccid, seq)?;
        Ok(CommitInfo {
            did: did.to_owned(),
            commit: ccid,
            rev,
            data: c.root,
            seq,
            results: Vec::new(),
        })
    }

    /// Writes the planned commit of `writes` to `did`: refused, having
    /// written nothing, unless the account is still at the plan's base
    /// commit; else its node rows, record rows, root, `#commit` event and
    /// commit log entry.
    pub(crate) fn commit(
        &mut self,
        did: &str,
        writes: &[Prepared],
        plan: &Plan,
    ) -> std::result::Result<CommitInfo, Failed> {
        match root_commit(&self.conn, did).map_err(Failed::clean)? {
            None => return Err(Failed::clean(StoreError::UnknownAccount(did.to_owned()))),
            Some(c) if c != plan.base.commit => {
                return Err(Failed::clean(StoreError::RootMoved(did.to_owned())));
            }
            Some(_) => {}
        }
        crate::blob_refs::check_uploaded(&self.conn, did, writes).map_err(Failed::clean)?;
        self.write_commit(did, writes, plan).map_err(Failed::wrote)
    }

    fn write_commit(&mut self, did: &str, writes: &[Prepared], plan: &Plan) -> Result<CommitInfo> {
        let (ccid, cbytes) = &plan.commit;
        let rev = plan.rev.as_str();
        let data = plan.result.commit.root;
        self.touch(did);
        // Blocks in, each at its position.
        put_nodes(
            &self.conn,
            did,
            Some(rev),
            (plan.result.commit.new_blocks.iter().zip(&plan.blocks.put))
                .map(|((cid, b), pos)| (*pos, cid, b.as_slice())),
        )?;
        write_records(&self.conn, did, rev, writes, &plan.result.previous)?;
        // Blocks out: the replaced MST nodes (the previous commit block is
        // overwritten in `repo_root`); unchanged nodes that changed place.
        place_nodes(&self.conn, did, &plan.blocks)?;
        write_root(&self.conn, RootWrite::Move, did, (ccid, cbytes), rev, &data)?;
        // The #commit event, around the plan's CAR (commit block, new
        // records, new MST nodes and the rest of the covering proof).
        let seq = self.next_seq;
        let (frame, results) = commit_frame(seq, did, writes, plan, &plan.base.rev, plan.base.data);
        self.put_event(did, "#commit", frame)?;
        log_commit(&self.conn, did, rev, ccid, seq)?;
        Ok(CommitInfo {
            did: did.to_owned(),
            commit: *ccid,
            rev: rev.to_owned(),
            data,
            seq,
            results,
        })
    }

    /// Replaces (or creates) `did`'s repository with an imported one and
    /// emits `#sync`. Blobs the replaced records named and the imported
    /// ones do not are freed, as a delete would free them.
    pub(crate) fn import(&mut self, imp: &crate::import::Verified) -> Result<CommitInfo> {
        let did = imp.did.as_str();
        self.touch(did);
        let named: Vec<Vec<u8>> = self
            .conn
            .prepare_cached("SELECT DISTINCT blob FROM record_blobs WHERE did = ?1")?
            .query_map([did], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        for sql in [
            "DELETE FROM repo_blocks WHERE did = ?1",
            "DELETE FROM records WHERE did = ?1",
            "DELETE FROM record_blobs WHERE did = ?1",
            "DELETE FROM rev_backfill WHERE did = ?1",
        ] {
            self.conn.prepare_cached(sql)?.execute([did])?;
        }
        // Every reachable node's position, from a walk of the new tree.
        let placed = NodePositions::new(usize::MAX).commit_ops(None, imp.data, &imp.blocks, &[]);
        // The commit block is not in the tree; it goes to `repo_root`.
        put_nodes(
            &self.conn,
            did,
            Some(&imp.rev),
            (imp.blocks.iter().zip(&placed.put))
                .filter(|((cid, _), _)| *cid != imp.commit)
                .map(|((cid, b), pos)| (*pos, cid, b.as_slice())),
        )?;
        import_records(&self.conn, did, &imp.rev, &imp.records, &imp.blob_refs)?;
        crate::blob_refs::free_unnamed(&self.conn, did, &named)?;
        let commit_bytes = imp
            .blocks
            .iter()
            .find(|b| b.0 == imp.commit)
            .map(|b| b.1.clone())
            .ok_or_else(|| StoreError::InvalidRepo("commit block missing".into()))?;
        write_root(
            &self.conn,
            RootWrite::Import,
            did,
            (&imp.commit, &commit_bytes),
            &imp.rev,
            &imp.data,
        )?;
        let seq = self.sync_event(did, &imp.commit, &commit_bytes, &imp.rev)?;
        log_commit(&self.conn, did, &imp.rev, &imp.commit, seq)?;
        Ok(CommitInfo {
            did: did.to_owned(),
            commit: imp.commit,
            rev: imp.rev.clone(),
            data: imp.data,
            seq,
            results: Vec::new(),
        })
    }
}
