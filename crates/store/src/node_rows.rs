//! MST node rows in `repo_blocks` (schema v6, keyed `(did, pos, cid)`; see
//! `node_pos.rs` for the position rule): reading nodes by position for a
//! tree ([`SqlBlocks`]), and writing, releasing and moving the rows a
//! commit's [`BlockOps`] name.

use std::borrow::Cow;

use repo::Cid;
use repo::mst::{BlockSource, BlockSourceError};
use rusqlite::{Connection, OptionalExtension, params};

use crate::error::Result;
use crate::node_pos::{BlockOps, NodePositions, ROOT_POS, SharedPositions, account_key};

/// A node at its known position: one primary-key seek.
const SQL_GET_NODE: &str = "SELECT bytes FROM repo_blocks WHERE did = ?1 AND pos = ?2 AND cid = ?3";
/// A node at an unknown position: a scan of the account's rows.
const SQL_FIND_NODE: &str = "SELECT pos, bytes FROM repo_blocks WHERE did = ?1 AND cid = ?2";
const SQL_PUT_NODE: &str = "INSERT OR IGNORE INTO repo_blocks (did, pos, cid, repo_rev, bytes) VALUES (?1, ?2, ?3, ?4, ?5)";
const SQL_DEL_NODE: &str = "DELETE FROM repo_blocks WHERE did = ?1 AND pos = ?2 AND cid = ?3";
const SQL_DEL_NODE_ANYWHERE: &str = "DELETE FROM repo_blocks WHERE did = ?1 AND cid = ?2";
const SQL_MOVE_NODE: &str =
    "UPDATE repo_blocks SET pos = ?4 WHERE did = ?1 AND pos = ?2 AND cid = ?3";
const SQL_MOVE_NODE_ANYWHERE: &str = "UPDATE repo_blocks SET pos = ?3 WHERE did = ?1 AND cid = ?2";

/// MST nodes straight from `repo_blocks`: one primary-key seek per node at
/// the position `positions` knows (`root` is at [`ROOT_POS`]), a scan of
/// the account's rows for one it does not; the children of every node
/// read are noted in `positions`.
pub(crate) struct SqlBlocks<'c> {
    conn: &'c Connection,
    did: &'c str,
    acct: u64,
    root: Cid,
    positions: &'c SharedPositions,
    scan_on_miss: bool,
}

impl<'c> SqlBlocks<'c> {
    /// `did`'s nodes, for a tree whose root is `root`.
    pub(crate) fn new(
        conn: &'c Connection,
        did: &'c str,
        root: Cid,
        positions: &'c SharedPositions,
    ) -> Self {
        SqlBlocks {
            conn,
            did,
            acct: account_key(did),
            root,
            positions,
            scan_on_miss: true,
        }
    }

    /// A node missing from the position noted for it is reported missing,
    /// not looked for elsewhere: for a caller's plan on a root that may
    /// be stale (its nodes released meanwhile), which the writer computes
    /// again when it fails. A scan there would cost a read of the whole
    /// account for a plan the writer discards anyway.
    pub(crate) fn trusting_positions(mut self) -> Self {
        self.scan_on_miss = false;
        self
    }

    fn read(&self, cid: &Cid) -> rusqlite::Result<Option<Vec<u8>>> {
        let c = cid.to_bytes();
        let is_root = *cid == self.root;
        let known = if is_root {
            Some(ROOT_POS)
        } else {
            self.positions.borrow().get(self.acct, cid)
        };
        if let Some(pos) = known {
            let found = self
                .conn
                .prepare_cached(SQL_GET_NODE)?
                .query_row(params![self.did, pos, &c[..]], |r| r.get::<_, Vec<u8>>(0))
                .optional()?;
            if found.is_some() {
                // Any other position came from `positions` already.
                if is_root {
                    self.positions.borrow_mut().note(self.acct, *cid, pos);
                }
                return Ok(found);
            }
            if !self.scan_on_miss {
                return Ok(None);
            }
        }
        let mut positions = self.positions.borrow_mut();
        positions.count_scan();
        let found = self
            .conn
            .prepare_cached(SQL_FIND_NODE)?
            .query_row(params![self.did, &c[..]], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?))
            })
            .optional()?;
        Ok(found.map(|(pos, bytes)| {
            positions.note(self.acct, *cid, pos);
            bytes
        }))
    }
}

impl BlockSource for SqlBlocks<'_> {
    fn get_block(&self, cid: &Cid) -> std::result::Result<Option<Cow<'_, [u8]>>, BlockSourceError> {
        let bytes = self.read(cid).map_err(BlockSourceError::new)?;
        if let Some(b) = &bytes {
            self.positions.borrow_mut().note_children(self.acct, b);
        }
        Ok(bytes.map(Cow::Owned))
    }
}

/// Writes node rows of `did`, each at its position (a row already there
/// is kept), through one prepared statement.
pub(crate) fn put_nodes<'b>(
    conn: &Connection,
    did: &str,
    rev: Option<&str>,
    rows: impl IntoIterator<Item = (i64, &'b Cid, &'b [u8])>,
) -> Result<()> {
    let mut put = conn.prepare_cached(SQL_PUT_NODE)?;
    for (pos, cid, bytes) in rows {
        put.execute(params![did, pos, &cid.to_bytes()[..], rev, bytes])?;
    }
    Ok(())
}

/// Releases and moves `did`'s node rows as `ops` says; a row not at its
/// noted position is found by a scan (counted in `positions`).
pub(crate) fn place_nodes(
    conn: &Connection,
    did: &str,
    ops: &BlockOps,
    positions: &NodePositions,
) -> Result<()> {
    if !ops.released.is_empty() {
        let mut del = conn.prepare_cached(SQL_DEL_NODE)?;
        for (cid, pos) in &ops.released {
            let c = cid.to_bytes();
            let n = match pos {
                Some(p) => del.execute(params![did, p, &c[..]])?,
                None => 0,
            };
            if n == 0 {
                positions.count_scan();
                conn.prepare_cached(SQL_DEL_NODE_ANYWHERE)?
                    .execute(params![did, &c[..]])?;
            }
        }
    }
    if !ops.moved.is_empty() {
        let mut mv = conn.prepare_cached(SQL_MOVE_NODE)?;
        for (cid, from, to) in &ops.moved {
            let c = cid.to_bytes();
            let n = match from {
                Some(p) => mv.execute(params![did, p, &c[..], to])?,
                None => 0,
            };
            if n == 0 {
                positions.count_scan();
                conn.prepare_cached(SQL_MOVE_NODE_ANYWHERE)?
                    .execute(params![did, &c[..], to])?;
            }
        }
    }
    Ok(())
}
