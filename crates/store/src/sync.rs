//! Whole-repository operations: getRepo (CAR export), the
//! subscribeRepos catch-up, CAR import and the repository check.

use std::borrow::Cow;
use std::io::Write;

use repo::Cid;
use repo::car::CarWriter;
use repo::crypto::PublicKey;
use repo::mst::{BlockSource, BlockSourceError, Mst};
use repo::syntax::validate_did;
use rusqlite::{OptionalExtension, params};

use crate::error::{Result, StoreError};
use crate::events::frame_header;
use crate::node_pos::{NodePositions, SharedPositions};
use crate::node_rows::PositionedBlocks;
use crate::read::root_of;
use crate::rows::cid_from_sql;
use crate::{CommitInfo, Event, ExportInfo, RecordProof, Store, import};

impl Store {
    /// getRepo: streams the repository as a CAR to `out` in constant memory
    /// (one block in flight), inside one read transaction: the commit
    /// block from `repo_root`, the MST nodes from `repo_blocks`, then each
    /// distinct record block from `records`. With `since`, only the blocks
    /// added by revs after it (a record counts from the rev that last wrote
    /// it).
    pub fn export_repo<W: Write>(
        &self,
        did: &str,
        since: Option<&str>,
        out: W,
    ) -> Result<ExportInfo> {
        validate_did(did)?;
        if let Some(s) = since {
            repo::syntax::validate_tid(s)?;
        }
        let r = self.reader()?;
        r.execute_batch("BEGIN")?;
        let result = (|| {
            let root =
                root_of(&r, did)?.ok_or_else(|| StoreError::UnknownAccount(did.to_owned()))?;
            let mut car = CarWriter::new(out, &[root.commit])?;
            let mut blocks = 0u64;
            if since.is_none_or(|s| root.rev.as_str() > s) {
                car.write_block(&root.commit, &commit_block(&r, did)?)?;
                blocks += 1;
            }
            let mut st = r.prepare_cached(
                "SELECT cid, bytes FROM repo_blocks WHERE did = ?1 AND (?2 IS NULL OR \
                 COALESCE(repo_rev, (SELECT rev FROM rev_backfill WHERE did = ?1)) > ?2)",
            )?;
            let mut rows = st.query(params![did, since])?;
            while let Some(row) = rows.next()? {
                let cid = cid_from_sql(row.get_ref(0)?.as_blob()?)?;
                car.write_block(&cid, row.get_ref(1)?.as_blob()?)?;
                blocks += 1;
            }
            drop(rows);
            // Record blocks live in their index rows (schema v4); a block
            // two records share is written once (`cid_dup`).
            let mut st = r.prepare_cached(
                "SELECT cid, bytes FROM records WHERE did = ?1 AND cid_dup = 0 \
                 AND (?2 IS NULL OR repo_rev > ?2)",
            )?;
            let mut rows = st.query(params![did, since])?;
            while let Some(row) = rows.next()? {
                let cid = cid_from_sql(row.get_ref(0)?.as_blob()?)?;
                let bytes = row.get_ref(1)?.as_blob().map_err(|_| {
                    StoreError::Corrupt(format!("{did}: record block {cid} missing"))
                })?;
                car.write_block(&cid, bytes)?;
                blocks += 1;
            }
            let bytes = car.bytes_written();
            car.finish()?;
            Ok(ExportInfo {
                root: root.commit,
                blocks,
                bytes,
            })
        })();
        let _ = r.execute_batch("COMMIT");
        result
    }

    /// The oldest event the log holds (`None`: an empty log): the pruned
    /// horizon once [`Store::sweep`] pruned events past their retention
    /// (or the log was trimmed outside the store, a trimmed backup).
    /// subscribeRepos tells a cursor before it with `#info OutdatedCursor`.
    pub fn first_seq(&self) -> Result<Option<i64>> {
        let r = self.reader()?;
        Ok(r.prepare_cached("SELECT MIN(seq) FROM seq_events")?
            .query_row([], |row| row.get::<_, Option<i64>>(0))?)
    }

    /// subscribeRepos catch-up: up to `limit` events after `cursor`, framed.
    pub fn events_after(&self, cursor: i64, limit: usize) -> Result<Vec<Event>> {
        self.events_after_within(cursor, limit, usize::MAX)
    }

    /// [`events_after`](Self::events_after), stopping once the frames
    /// read pass `max_bytes` (the first event is always taken): a page of
    /// large commits holds a bounded buffer.
    pub fn events_after_within(
        &self,
        cursor: i64,
        limit: usize,
        max_bytes: usize,
    ) -> Result<Vec<Event>> {
        let r = self.reader()?;
        let mut st = r.prepare_cached(
            "SELECT seq, kind, payload FROM seq_events WHERE seq > ?1 ORDER BY seq LIMIT ?2",
        )?;
        let mut rows = st.query(params![cursor, i64::try_from(limit).unwrap_or(i64::MAX)])?;
        let mut out = Vec::with_capacity(limit.min(4096));
        let mut headers: Vec<(String, Vec<u8>)> = Vec::new();
        let mut bytes = 0usize;
        while let Some(row) = rows.next()? {
            let seq: i64 = row.get(0)?;
            let kind = row.get_ref(1)?.as_str()?;
            let body = row.get_ref(2)?.as_blob()?;
            let header = match headers.iter().find(|h| h.0 == kind) {
                Some(h) => &h.1,
                None => {
                    headers.push((kind.to_owned(), frame_header(kind)));
                    &headers[headers.len() - 1].1
                }
            };
            let mut frame = Vec::with_capacity(header.len() + body.len());
            frame.extend_from_slice(header);
            frame.extend_from_slice(body);
            bytes += frame.len();
            out.push(Event { seq, frame });
            if bytes >= max_bytes {
                break;
            }
        }
        Ok(out)
    }

    /// Imports a repository CAR (replacing `did`'s repository if present).
    /// Every block is checked against its CID, the MST against the
    /// commit's `data`, and the signature when `key` is given. The account
    /// is read-only unless it already had a signing key here.
    pub fn import_car(
        &self,
        input: impl std::io::Read,
        key: Option<&PublicKey>,
    ) -> Result<CommitInfo> {
        let verified = import::verify_car(input, key)?;
        // The account's lane is held while its repository is replaced, and
        // emptied: the next commit loads the imported root.
        let slot = self.lanes.slot(&verified.did);
        let mut held = crate::lane::hold(&slot);
        *held = None;
        self.submit(move |w| w.import(&verified))
    }

    /// Checks `did`'s repository: the commit block decodes and names the
    /// stored MST root, the MST is well formed and holds exactly the
    /// indexed records. Returns the record count.
    pub fn check_repo(&self, did: &str) -> Result<usize> {
        validate_did(did)?;
        let r = self.reader()?;
        r.execute_batch("BEGIN")?;
        let result = (|| {
            let root =
                root_of(&r, did)?.ok_or_else(|| StoreError::UnknownAccount(did.to_owned()))?;
            let commit_bytes = commit_block(&r, did)?;
            if Cid::for_dag_cbor(&commit_bytes) != root.commit {
                return Err(StoreError::Corrupt(format!(
                    "{did}: commit block does not hash to the root's commit CID"
                )));
            }
            let commit = repo::commit::CommitRef::decode(&commit_bytes)?;
            if commit.data != root.data || commit.rev != root.rev || commit.did != did {
                return Err(StoreError::Corrupt(
                    "commit block disagrees with repo_root".into(),
                ));
            }
            // Fresh positions: every node is read where its parent places
            // it, so a row out of place is a missing node.
            let positions = SharedPositions::new(NodePositions::new(usize::MAX));
            let conn: &rusqlite::Connection = &r;
            let mut mst = Mst::load(
                PositionedBlocks::new(conn, did, root.data, &positions),
                root.data,
            );
            mst.check_structure()?;
            let entries = mst.entries()?;
            let mut st = r.prepare(
                "SELECT collection || '/' || rkey, cid FROM records WHERE did = ?1 ORDER BY collection, rkey",
            )?;
            let mut rows = st.query([did])?;
            let mut index = Vec::new();
            while let Some(row) = rows.next()? {
                index.push((
                    row.get::<_, String>(0)?,
                    cid_from_sql(row.get_ref(1)?.as_blob()?)?,
                ));
            }
            index.sort();
            if index != entries {
                return Err(StoreError::Corrupt(format!(
                    "{did}: MST holds {} records, index {}",
                    entries.len(),
                    index.len()
                )));
            }
            Ok(entries.len())
        })();
        let _ = r.execute_batch("COMMIT");
        result
    }
}

impl Store {
    /// sync.getRecord: the blocks proving `collection/rkey` in `did`'s
    /// current tree, read in one snapshot: the commit block, the MST nodes
    /// of the key's covering proof (root first) and the record block.
    /// `None` when the record does not exist. Reads only the nodes on the key's
    /// path, never the whole repository.
    pub fn record_proof(
        &self,
        did: &str,
        collection: &str,
        rkey: &str,
    ) -> Result<Option<RecordProof>> {
        validate_did(did)?;
        repo::syntax::validate_nsid(collection)?;
        repo::syntax::validate_record_key(rkey)?;
        let r = self.reader()?;
        r.execute_batch("BEGIN")?;
        let result = (|| {
            let root =
                root_of(&r, did)?.ok_or_else(|| StoreError::UnknownAccount(did.to_owned()))?;
            let record: Option<(Vec<u8>, Vec<u8>)> = r
                .prepare_cached(
                    "SELECT cid, bytes FROM records WHERE did = ?1 AND collection = ?2 AND rkey = ?3",
                )?
                .query_row(params![did, collection, rkey], |row| {
                    Ok((row.get(0)?, row.get(1)?))
                })
                .optional()?;
            let Some((rcid, rbytes)) = record else {
                return Ok(None);
            };
            let positions = SharedPositions::new(NodePositions::new(usize::MAX));
            let conn: &rusqlite::Connection = &r;
            let mut mst = Mst::load(
                Recording::new(PositionedBlocks::new(conn, did, root.data, &positions)),
                root.data,
            );
            let key = format!("{collection}/{rkey}");
            let rcid = cid_from_sql(&rcid)?;
            // One walk: the proof's search path finds the value too.
            let (proof, value) = mst.covering_proof_and_value(&key)?;
            if value != Some(rcid) {
                return Err(StoreError::Corrupt(format!(
                    "{did}: record index and MST disagree on {key}"
                )));
            }
            let mut blocks = vec![(root.commit, commit_block(&r, did)?)];
            for cid in proof {
                // The bytes the walk read (a fresh tree reads every node
                // through its source once); re-encoding is the fallback.
                let bytes = match mst.source().take(&cid) {
                    Some(b) => b,
                    None => mst.node_bytes(&cid)?,
                };
                blocks.push((cid, bytes));
            }
            blocks.push((rcid, rbytes));
            Ok(Some(RecordProof {
                root: root.commit,
                blocks,
            }))
        })();
        let _ = r.execute_batch("COMMIT");
        result
    }
}

/// The current commit block of `did` (held in its `repo_root` row since
/// schema v5).
pub(crate) fn commit_block(conn: &rusqlite::Connection, did: &str) -> Result<Vec<u8>> {
    conn.prepare_cached("SELECT commit_bytes FROM repo_root WHERE did = ?1")?
        .query_row([did], |r| r.get::<_, Option<Vec<u8>>>(0))
        .optional()?
        .flatten()
        .ok_or_else(|| StoreError::Corrupt(format!("{did}: commit block missing")))
}

/// A block source that keeps a copy of each block it hands out, so a
/// proof carries the node bytes as stored rather than a re-encoding.
struct Recording<S> {
    inner: S,
    read: std::cell::RefCell<std::collections::HashMap<Cid, Vec<u8>>>,
}

impl<S> Recording<S> {
    fn new(inner: S) -> Self {
        Recording {
            inner,
            read: Default::default(),
        }
    }

    /// The bytes read for `cid` (once: taken out).
    fn take(&self, cid: &Cid) -> Option<Vec<u8>> {
        self.read.borrow_mut().remove(cid)
    }
}

impl<S: BlockSource> BlockSource for Recording<S> {
    fn get_block(&self, cid: &Cid) -> std::result::Result<Option<Cow<'_, [u8]>>, BlockSourceError> {
        let block = self.inner.get_block(cid)?;
        if let Some(b) = &block {
            self.read.borrow_mut().insert(*cid, b.to_vec());
        }
        Ok(block)
    }
}
