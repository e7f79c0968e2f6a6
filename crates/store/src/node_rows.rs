//! MST node rows in `repo_blocks` (schema v6, keyed `(did, pos, cid)`; see
//! `node_pos.rs` for the position rule): reading a tree's nodes by their
//! positions ([`PositionedBlocks`]), and writing, releasing and moving the
//! rows a commit's [`BlockOps`] name.

use std::borrow::Cow;

use repo::Cid;
use repo::mst::{BlockSource, BlockSourceError};
use rusqlite::{Connection, OptionalExtension, params};

use crate::error::{Result, StoreError};
use crate::node_pos::{BlockOps, ROOT_POS, SharedPositions};

/// A node at its position: one primary-key seek.
const SQL_GET_NODE: &str = "SELECT bytes FROM repo_blocks WHERE did = ?1 AND pos = ?2 AND cid = ?3";
const SQL_PUT_NODE: &str = "INSERT OR IGNORE INTO repo_blocks (did, pos, cid, repo_rev, bytes) VALUES (?1, ?2, ?3, ?4, ?5)";
const SQL_DEL_NODE: &str = "DELETE FROM repo_blocks WHERE did = ?1 AND pos = ?2 AND cid = ?3";
const SQL_MOVE_NODE: &str =
    "UPDATE repo_blocks SET pos = ?4 WHERE did = ?1 AND pos = ?2 AND cid = ?3";

/// Where node rows are read from: a connection, or one taken on first use
/// (`lane.rs`).
pub(crate) trait NodeRows {
    /// The connection to read through.
    fn conn(&self) -> Result<&Connection>;
}

impl NodeRows for Connection {
    fn conn(&self) -> Result<&Connection> {
        Ok(self)
    }
}

/// The MST nodes of `did`'s tree rooted at `root`, straight from
/// `repo_blocks`: one primary-key seek per node at the position
/// `positions` knows (`root` is at [`ROOT_POS`]); the children of every
/// node read are noted in `positions`. A node whose position is not known,
/// or whose row is not there, is reported missing (the tree then fails
/// with the MST's error naming it).
pub(crate) struct PositionedBlocks<'a, R: ?Sized> {
    rows: &'a R,
    did: &'a str,
    root: Cid,
    positions: &'a SharedPositions,
}

impl<'a, R: NodeRows + ?Sized> PositionedBlocks<'a, R> {
    /// `did`'s nodes read through `rows`, for the tree whose root is `root`.
    pub(crate) fn new(
        rows: &'a R,
        did: &'a str,
        root: Cid,
        positions: &'a SharedPositions,
    ) -> Self {
        PositionedBlocks {
            rows,
            did,
            root,
            positions,
        }
    }

    fn read(&self, cid: &Cid) -> Result<Option<Vec<u8>>> {
        let pos = if *cid == self.root {
            Some(ROOT_POS)
        } else {
            self.positions.borrow().get(cid)
        };
        let Some(pos) = pos else {
            return Ok(None);
        };
        Ok(self
            .rows
            .conn()?
            .prepare_cached(SQL_GET_NODE)?
            .query_row(params![self.did, pos, &cid.to_bytes()[..]], |r| {
                r.get::<_, Vec<u8>>(0)
            })
            .optional()?)
    }
}

impl<R: NodeRows + ?Sized> BlockSource for PositionedBlocks<'_, R> {
    fn get_block(&self, cid: &Cid) -> std::result::Result<Option<Cow<'_, [u8]>>, BlockSourceError> {
        let bytes = self.read(cid).map_err(BlockSourceError::new)?;
        if let Some(b) = &bytes {
            let mut positions = self.positions.borrow_mut();
            if *cid == self.root {
                positions.note(*cid, ROOT_POS);
            }
            positions.note_children(b);
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

/// Releases and moves `did`'s node rows as `ops` says. Every row must be
/// where `ops` says (the commit refused unknown positions before it
/// wrote); one that is not is a corrupt store.
pub(crate) fn place_nodes(conn: &Connection, did: &str, ops: &BlockOps) -> Result<()> {
    let misplaced =
        |cid: &Cid| StoreError::Corrupt(format!("{did}: MST node {cid} not at its row"));
    if !ops.released.is_empty() {
        let mut del = conn.prepare_cached(SQL_DEL_NODE)?;
        for (cid, pos) in &ops.released {
            let pos = pos.ok_or_else(|| misplaced(cid))?;
            if del.execute(params![did, pos, &cid.to_bytes()[..]])? == 0 {
                return Err(misplaced(cid));
            }
        }
    }
    if !ops.moved.is_empty() {
        let mut mv = conn.prepare_cached(SQL_MOVE_NODE)?;
        for (cid, from, to) in &ops.moved {
            let from = from.ok_or_else(|| misplaced(cid))?;
            if mv.execute(params![did, from, &cid.to_bytes()[..], to])? == 0 {
                return Err(misplaced(cid));
            }
        }
    }
    Ok(())
}
