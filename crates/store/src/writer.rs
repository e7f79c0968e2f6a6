//! The writer thread's state and the write path: account creation, one
//! commit's rows and `#commit` event, CAR import. The queue and group
//! commit are in `batch.rs`; the commit's CPU half in `plan.rs`. A caller
//! never sees an acknowledgement for a write that is not committed, and
//! concurrent writers on different accounts share one transaction.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use repo::Cid;
use repo::car::write_car_vec;
use repo::cbor::Encoder;
use repo::commit::UnsignedCommit;
use repo::crypto::{Algorithm, Keypair};
use repo::firehose::{Action, CommitEvent, Frame, RepoOp, SyncEvent};
use repo::mst::{MemoryBlockStore, Mst, NodeCache};
use repo::syntax::{Tid, TidGenerator};
use rusqlite::{CachedStatement, Connection, OptionalExtension, params};

use crate::cid_cache::CidCache;
use crate::error::{Result, StoreError};
use crate::node_pos::{NodePositions, ROOT_POS, SharedPositions, account_key};
use crate::node_rows::{SqlBlocks, place_nodes, put_nodes};
use crate::plan::{Current, Plan, plan_commit};
use crate::{CommitInfo, WriteAction, WriteOutcome};

/// Decoded MST nodes the writer keeps (all accounts).
const WRITER_CACHE_NODES: usize = 1 << 16;

/// A record write after caller-side validation and encoding.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    pub action: WriteAction,
    pub collection: String,
    pub rkey: String,
    /// `collection/rkey`.
    pub path: String,
    /// The record block (creates and updates).
    pub block: Option<(Cid, Vec<u8>)>,
    /// Raw-codec links found in the record (blob references).
    pub blobs: Vec<Cid>,
    /// swapRecord: `Some(None)` = must not exist.
    pub swap_record: Option<Option<Cid>>,
}

/// The writer's state (owned by the writer thread).
pub(crate) struct Writer {
    pub conn: Connection,
    pub next_seq: i64,
    tids: Arc<TidGenerator>,
    cache: NodeCache,
    /// Where the MST nodes the writer may read next are (`node_pos.rs`).
    positions: SharedPositions,
    keys: HashMap<String, Arc<Keypair>>,
    /// The store's `current_cid` cache, and the accounts whose `records`
    /// rows this batch changed (invalidated after it, see `cid_cache.rs`).
    cids: Arc<CidCache>,
    touched: Vec<String>,
    /// Set by a job that failed after it began writing (see
    /// `batch::Job::guarded`).
    pub partial: bool,
}

const SQL_ROOT: &str =
    "SELECT commit_cid, rev, data_cid, signing_key FROM repo_root WHERE did = ?1";
pub(crate) const SQL_INDEX_CID: &str =
    "SELECT cid FROM records WHERE did = ?1 AND collection = ?2 AND rkey = ?3";
// Record rows hold their block's bytes (schema v4). `cid_dup` is kept
// canonical: 0 on the first row of an account holding a CID, in
// `(collection, rkey)` order, 1 on the others. Each statement below is one
// probe of `records_cid` (plus a primary-key update when a flag moves), so
// a write costs the same however many records share its block.

/// Upserts a record row; its `cid_dup` says whether an earlier row holds
/// the same CID.
const SQL_UPSERT_RECORD: &str = "INSERT INTO records (did, collection, rkey, cid, repo_rev, bytes, cid_dup) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, EXISTS (SELECT 1 FROM records INDEXED BY records_cid \
     WHERE did = ?1 AND cid = ?4 AND (collection, rkey) < (?2, ?3))) \
     ON CONFLICT (did, collection, rkey) DO UPDATE SET cid = excluded.cid, \
     repo_rev = excluded.repo_rev, bytes = excluded.bytes, cid_dup = excluded.cid_dup";
/// After an upsert of (?3, ?4) with CID ?2: the next row holding ?2 is not
/// the first (it may have been before the upsert).
const SQL_DEMOTE_NEXT: &str = "UPDATE records SET cid_dup = 1 WHERE did = ?1 AND (collection, rkey) = \
     (SELECT collection, rkey FROM records INDEXED BY records_cid WHERE did = ?1 AND cid = ?2 \
     AND (collection, rkey) > (?3, ?4) ORDER BY collection, rkey LIMIT 1) AND cid_dup = 0";
/// After a row stopped holding CID ?2: the first row still holding it.
const SQL_PROMOTE_FIRST: &str = "UPDATE records SET cid_dup = 0 WHERE did = ?1 AND (collection, rkey) = \
     (SELECT collection, rkey FROM records INDEXED BY records_cid WHERE did = ?1 AND cid = ?2 \
     ORDER BY collection, rkey LIMIT 1) AND cid_dup = 1";
const SQL_DEL_RECORD: &str = "DELETE FROM records WHERE did = ?1 AND collection = ?2 AND rkey = ?3";
const SQL_DEL_RECORD_BLOBS: &str = "DELETE FROM record_blobs WHERE did = ?1 AND record = ?2";
const SQL_PUT_RECORD_BLOB: &str =
    "INSERT OR IGNORE INTO record_blobs (did, blob, record) VALUES (?1, ?2, ?3)";
const SQL_MOVE_ROOT: &str = "UPDATE repo_root SET commit_cid = ?2, rev = ?3, data_cid = ?4, \
     commit_bytes = ?5 WHERE did = ?1";
const SQL_PUT_COMMIT: &str = "INSERT INTO commits (did, rev, cid, seq) VALUES (?1, ?2, ?3, ?4)";
const SQL_PUT_EVENT: &str =
    "INSERT INTO seq_events (seq, did, kind, payload) VALUES (?1, ?2, ?3, ?4)";

/// A cached statement taken from the connection's cache on first use.
struct LazyStatement<'c> {
    conn: &'c Connection,
    sql: &'static str,
    statement: Option<CachedStatement<'c>>,
}

impl<'c> LazyStatement<'c> {
    fn new(conn: &'c Connection, sql: &'static str) -> Self {
        LazyStatement {
            conn,
            sql,
            statement: None,
        }
    }

    fn get(&mut self) -> Result<&mut CachedStatement<'c>> {
        let statement = match self.statement.take() {
            Some(st) => st,
            None => self.conn.prepare_cached(self.sql)?,
        };
        Ok(self.statement.insert(statement))
    }
}

pub(crate) fn cid_from_sql(bytes: &[u8]) -> Result<Cid> {
    Cid::from_bytes(bytes).map_err(|e| StoreError::Corrupt(format!("stored CID: {e}")))
}

/// The frame header bytes `{t: kind, op: 1}`.
pub(crate) fn frame_header(kind: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(24);
    let mut e = Encoder::new(&mut out);
    e.map(2);
    e.text("t");
    e.text(kind);
    e.text("op");
    e.int(1);
    out
}

/// The DAG-CBOR body of a frame (the frame minus its header).
pub(crate) fn frame_body(frame: &Frame<'_>, kind: &str) -> Result<Vec<u8>> {
    let bytes = frame.to_vec();
    frame_body_of(&bytes, kind).map(<[u8]>::to_vec)
}

/// The body of the encoded frame `bytes` of kind `kind` (its bytes after
/// the header).
pub(crate) fn frame_body_of<'b>(bytes: &'b [u8], kind: &str) -> Result<&'b [u8]> {
    bytes
        .strip_prefix(frame_header(kind).as_slice())
        .ok_or_else(|| StoreError::Corrupt("frame header mismatch".into()))
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for now.
pub(crate) fn now_datetime() -> String {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    codec::datetime::rfc3339_millis(ms)
}

/// A repo_root row.
pub(crate) struct Root {
    pub commit: Cid,
    pub rev: String,
    pub data: Cid,
    pub key: Option<Vec<u8>>,
}

/// Reads `did`'s repo_root row.
pub(crate) fn read_root(conn: &Connection, did: &str) -> Result<Option<Root>> {
    let mut st = conn.prepare_cached(SQL_ROOT)?;
    let row = st
        .query_row([did], |r| {
            Ok((
                r.get::<_, Vec<u8>>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Vec<u8>>(2)?,
                r.get::<_, Option<Vec<u8>>>(3)?,
            ))
        })
        .optional()?;
    match row {
        None => Ok(None),
        Some((c, rev, d, key)) => Ok(Some(Root {
            commit: cid_from_sql(&c)?,
            rev,
            data: cid_from_sql(&d)?,
            key,
        })),
    }
}

impl Writer {
    pub(crate) fn new(
        conn: Connection,
        next_seq: i64,
        tids: Arc<TidGenerator>,
        cids: Arc<CidCache>,
        scans: Arc<AtomicU64>,
    ) -> Self {
        Writer {
            conn,
            next_seq,
            tids,
            cache: NodeCache::new(WRITER_CACHE_NODES),
            positions: SharedPositions::new(NodePositions::new(4 * WRITER_CACHE_NODES, scans)),
            keys: HashMap::new(),
            cids,
            touched: Vec::new(),
            partial: false,
        }
    }

    /// Forgets the decoded nodes and node positions, after a rollback (a
    /// rolled-back commit's positions would send later reads to scans).
    pub(crate) fn forget_nodes(&mut self) {
        self.cache.clear();
        self.positions.borrow_mut().clear();
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

    fn root(&self, did: &str) -> Result<Option<Root>> {
        read_root(&self.conn, did)
    }

    fn keypair(&mut self, did: &str, secret: Option<&[u8]>) -> Result<Arc<Keypair>> {
        if let Some(k) = self.keys.get(did) {
            return Ok(k.clone());
        }
        let secret = secret.ok_or_else(|| StoreError::ReadOnlyAccount(did.to_owned()))?;
        let k = Keypair::from_bytes(Algorithm::K256, secret)
            .map_err(|e| StoreError::Corrupt(format!("signing key of {did}: {e}")))?;
        let k = Arc::new(k);
        if self.keys.len() > 100_000 {
            self.keys.clear();
        }
        self.keys.insert(did.to_owned(), k.clone());
        Ok(k)
    }

    pub(crate) fn put_event(&mut self, did: &str, kind: &str, body: &[u8]) -> Result<()> {
        let seq = self.next_seq;
        self.conn
            .prepare_cached(SQL_PUT_EVENT)?
            .execute(params![seq, did, kind, body])?;
        self.next_seq += 1;
        Ok(())
    }

    fn sync_event(
        &mut self,
        did: &str,
        commit: &Cid,
        commit_bytes: &[u8],
        rev: &str,
    ) -> Result<i64> {
        let seq = self.next_seq;
        let car = write_car_vec(&[*commit], [(commit, commit_bytes)]);
        let time = now_datetime();
        let frame = Frame::Sync(SyncEvent {
            seq,
            did,
            blocks: &car,
            rev,
            time: &time,
        });
        let body = frame_body(&frame, "#sync")?;
        self.put_event(did, "#sync", &body)?;
        Ok(seq)
    }

    /// Creates an account with an empty repository (signed genesis commit)
    /// and emits `#sync`.
    pub(crate) fn create_account(&mut self, did: &str, secret: [u8; 32]) -> Result<CommitInfo> {
        if self.root(did)?.is_some() {
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
        self.conn
            .prepare_cached(
                "INSERT INTO repo_root (did, commit_cid, rev, data_cid, signing_key, commit_bytes) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![
                did,
                &ccid.to_bytes()[..],
                rev,
                &c.root.to_bytes()[..],
                &secret[..],
                cbytes
            ])?;
        // A new account announces itself as the reference PDS does:
        // #identity (no handle yet), #account (active), then #sync.
        self.identity_event(did, None)?;
        self.account_event(did, true, None)?;
        let seq = self.sync_event(did, &ccid, &cbytes, &rev)?;
        self.conn.prepare_cached(SQL_PUT_COMMIT)?.execute(params![
            did,
            rev,
            &ccid.to_bytes()[..],
            seq
        ])?;
        self.keys.insert(did.to_owned(), Arc::new(key));
        Ok(CommitInfo {
            did: did.to_owned(),
            commit: ccid,
            rev,
            data: c.root,
            seq,
            results: Vec::new(),
        })
    }

    /// One commit of `writes` to `did` (the whole write path). `plan` is
    /// the caller's precomputed MST update and signed commit; it is used
    /// when it was computed against the current commit, else everything is
    /// computed here.
    pub(crate) fn apply(
        &mut self,
        did: &str,
        writes: &[Prepared],
        swap_commit: Option<Cid>,
        plan: Option<Plan>,
    ) -> Result<CommitInfo> {
        let root = self
            .root(did)?
            .ok_or_else(|| StoreError::UnknownAccount(did.to_owned()))?;
        // Checked before either branch: a caller's plan adds the positions
        // its walk learned too, so a writer whose commits are all planned
        // by callers would otherwise grow its map past the bound. A
        // forgotten position costs one counted scan, never a wrong row.
        if self.positions.borrow().is_full() {
            self.forget_nodes();
        }
        let plan = match plan {
            Some(mut p) if p.base_commit == root.commit && p.base_rev == root.rev => {
                // The writer sees every commit: its positions are current,
                // the caller's plan state's may not be.
                let acct = account_key(did);
                let mut positions = self.positions.borrow_mut();
                positions.correct(acct, &mut p.blocks);
                positions.apply(acct, &p.blocks);
                drop(positions);
                p
            }
            _ => {
                let key = self.keypair(did, root.key.as_deref())?;
                let cache = std::mem::take(&mut self.cache);
                let (plan, cache) = plan_commit(
                    SqlBlocks::new(&self.conn, did, root.data, &self.positions),
                    &self.positions,
                    Current::Index(&self.conn),
                    cache,
                    &self.tids,
                    did,
                    &root,
                    &key,
                    writes,
                    swap_commit,
                );
                self.cache = cache;
                plan?
            }
        };
        let written = self.write_plan(did, &root, writes, plan);
        if written.is_err() {
            self.partial = true;
        }
        written
    }

    fn write_plan(
        &mut self,
        did: &str,
        root: &Root,
        writes: &[Prepared],
        plan: Plan,
    ) -> Result<CommitInfo> {
        let Plan {
            result,
            blocks,
            car,
            rev,
            commit: (ccid, cbytes),
            ..
        } = plan;
        let current = &result.previous;
        self.touch(did);
        // Blocks in, each at its position.
        put_nodes(
            &self.conn,
            did,
            Some(&rev),
            (result.commit.new_blocks.iter().zip(&blocks.put))
                .map(|((cid, b), pos)| (*pos, cid, b.as_slice())),
        )?;
        // Records (index row and block bytes together) and blob references.
        {
            // Each statement is taken from the cache once per commit, and
            // only if a write needs it.
            let conn = &self.conn;
            let mut up = LazyStatement::new(conn, SQL_UPSERT_RECORD);
            let mut del = LazyStatement::new(conn, SQL_DEL_RECORD);
            let mut demote = LazyStatement::new(conn, SQL_DEMOTE_NEXT);
            let mut promote = LazyStatement::new(conn, SQL_PROMOTE_FIRST);
            let mut del_rb = LazyStatement::new(conn, SQL_DEL_RECORD_BLOBS);
            let mut put_rb = LazyStatement::new(conn, SQL_PUT_RECORD_BLOB);
            for (w, cur) in writes.iter().zip(current) {
                if cur.is_some() {
                    del_rb.get()?.execute(params![did, w.path])?;
                }
                let new_cid = w.block.as_ref().map(|b| b.0);
                match &w.block {
                    Some((cid, bytes)) => {
                        let c = cid.to_bytes();
                        up.get()?.execute(params![
                            did,
                            w.collection,
                            w.rkey,
                            &c[..],
                            rev,
                            bytes
                        ])?;
                        demote
                            .get()?
                            .execute(params![did, &c[..], w.collection, w.rkey])?;
                        for b in &w.blobs {
                            put_rb
                                .get()?
                                .execute(params![did, &b.to_bytes()[..], w.path])?;
                        }
                    }
                    None => {
                        del.get()?.execute(params![did, w.collection, w.rkey])?;
                    }
                }
                if let Some(old) = cur
                    && new_cid != Some(*old)
                {
                    promote.get()?.execute(params![did, &old.to_bytes()[..]])?;
                }
            }
        }
        // Blocks out: the replaced MST nodes (the previous commit block is
        // overwritten in `repo_root`); unchanged nodes that changed place.
        place_nodes(&self.conn, did, &blocks, &self.positions.borrow())?;
        self.positions.borrow_mut().land(account_key(did), &blocks);
        self.conn.prepare_cached(SQL_MOVE_ROOT)?.execute(params![
            did,
            &ccid.to_bytes()[..],
            rev,
            &result.commit.root.to_bytes()[..],
            cbytes
        ])?;

        // The #commit event, around the plan's CAR (commit block, new
        // records, new MST nodes and the rest of the covering proof).
        let seq = self.next_seq;
        let mut results = Vec::with_capacity(writes.len());
        let mut repo_ops = Vec::with_capacity(writes.len());
        for (w, cur) in writes.iter().zip(current) {
            let cid = w.block.as_ref().map(|b| b.0);
            repo_ops.push(RepoOp {
                action: match (w.action, cur) {
                    (WriteAction::Delete, _) => Action::Delete,
                    (_, Some(_)) => Action::Update,
                    (_, None) => Action::Create,
                },
                path: &w.path,
                cid,
                prev: *cur,
            });
            results.push(WriteOutcome {
                uri: format!("at://{did}/{}", w.path),
                cid,
            });
        }
        let time = now_datetime();
        let frame = Frame::Commit(CommitEvent {
            seq,
            rebase: false,
            too_big: false,
            repo: did,
            commit: ccid,
            rev: &rev,
            since: Some(&root.rev),
            blocks: &car,
            ops: repo_ops,
            blobs: Vec::new(),
            prev_data: Some(root.data),
            time: &time,
        });
        let mut bytes = Vec::with_capacity(car.len() + 512 + 128 * writes.len());
        frame.encode(&mut bytes);
        self.put_event(did, "#commit", frame_body_of(&bytes, "#commit")?)?;
        self.conn.prepare_cached(SQL_PUT_COMMIT)?.execute(params![
            did,
            rev,
            &ccid.to_bytes()[..],
            seq
        ])?;
        Ok(CommitInfo {
            did: did.to_owned(),
            commit: ccid,
            rev,
            data: result.commit.root,
            seq,
            results,
        })
    }

    /// Replaces (or creates) `did`'s repository with an imported one and
    /// emits `#sync`.
    pub(crate) fn import(&mut self, imp: &crate::import::Verified) -> Result<CommitInfo> {
        let did = imp.did.as_str();
        self.touch(did);
        for sql in [
            "DELETE FROM repo_blocks WHERE did = ?1",
            "DELETE FROM records WHERE did = ?1",
            "DELETE FROM record_blobs WHERE did = ?1",
            "DELETE FROM rev_backfill WHERE did = ?1",
        ] {
            self.conn.prepare_cached(sql)?.execute([did])?;
        }
        // The commit block is not in the tree; it goes to `repo_root`.
        let placed = self.positions.borrow_mut().commit_ops(
            account_key(did),
            None,
            imp.data,
            &imp.blocks,
            &[],
        );
        put_nodes(
            &self.conn,
            did,
            Some(&imp.rev),
            (imp.blocks.iter().zip(&placed.put))
                .filter(|((cid, _), _)| *cid != imp.commit)
                .map(|((cid, b), pos)| (*pos, cid, b.as_slice())),
        )?;
        {
            let mut up = self.conn.prepare_cached(SQL_UPSERT_RECORD)?;
            // MST order is not `(collection, rkey)` order, so the write
            // path's flag upkeep runs for each row as it would for a write.
            let mut demote = self.conn.prepare_cached(SQL_DEMOTE_NEXT)?;
            for (coll, rkey, cid, bytes) in &imp.records {
                let c = cid.to_bytes();
                up.execute(params![did, coll, rkey, &c[..], imp.rev, bytes])?;
                demote.execute(params![did, &c[..], coll, rkey])?;
            }
            let mut put_rb = self.conn.prepare_cached(SQL_PUT_RECORD_BLOB)?;
            for (path, blob) in &imp.blob_refs {
                put_rb.execute(params![did, &blob.to_bytes()[..], path])?;
            }
        }
        let commit_bytes = imp
            .blocks
            .iter()
            .find(|b| b.0 == imp.commit)
            .map(|b| b.1.clone())
            .ok_or_else(|| StoreError::InvalidRepo("commit block missing".into()))?;
        self.conn
            .prepare_cached(
                "INSERT INTO repo_root (did, commit_cid, rev, data_cid, signing_key, commit_bytes) \
                 VALUES (?1, ?2, ?3, ?4, NULL, ?5) ON CONFLICT (did) DO UPDATE SET \
                 commit_cid = excluded.commit_cid, rev = excluded.rev, \
                 data_cid = excluded.data_cid, commit_bytes = excluded.commit_bytes",
            )?
            .execute(params![
                did,
                &imp.commit.to_bytes()[..],
                imp.rev,
                &imp.data.to_bytes()[..],
                commit_bytes
            ])?;
        let seq = self.sync_event(did, &imp.commit, &commit_bytes, &imp.rev)?;
        self.conn.prepare_cached(SQL_PUT_COMMIT)?.execute(params![
            did,
            imp.rev,
            &imp.commit.to_bytes()[..],
            seq
        ])?;
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

#[cfg(test)]
#[path = "writer_tests.rs"]
mod tests;
