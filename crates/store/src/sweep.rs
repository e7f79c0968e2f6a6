//! The sweep: what the store frees by age rather than by a commit. Uploads
//! no record named within their grace are deleted, and firehose events
//! older than the log's retention are pruned. The server runs
//! [`Store::sweep`] periodically; it runs as one writer job, so it is
//! ordered with the commits around it (a commit naming a blob the sweep
//! deleted is refused with `BlobNotFound` by the writer's guard).
//!
//! # Orphan uploads
//!
//! A blob whose last reference a commit drops is freed by that commit
//! (`blob_refs.rs`), so the only orphans left for the sweep are uploads that
//! were never named. Each pass reads `blobs_age` from where the last one
//! stopped up to the grace line, so a pass costs the uploads that crossed
//! the line since, not every blob; the position is the writer's and
//! starts from the beginning at each open (one pass over every blob's
//! index entry per process). An upload whose time moved back past the
//! position (the clock stepped back), and the orphans of a pass whose
//! batch was rolled back (an I/O error), wait for the next open.
//!
//! # Event retention
//!
//! An event's age is its `time` field: the pass finds the first event
//! younger than the retention by a binary search over seq (about log2 of
//! the log's length bodies decoded) and deletes the events and commit log
//! rows below it, at most [`PRUNE_MAX`] per pass. The newest event is
//! always kept, so the next seq never goes back, and the log's first event
//! is the pruned horizon: subscribeRepos tells a cursor before it with
//! `#info OutdatedCursor` (`Store::first_seq`).

use std::time::{Duration, SystemTime};

use rusqlite::{Connection, OptionalExtension, params};

use crate::Store;
use crate::blob_refs::{named_by_a_space, unix_secs};
use crate::error::Result;

/// Uploads examined per pass at most (the next pass goes on): a pass is
/// one writer job, and the commits queued behind it wait for it.
const ORPHANS_MAX: i64 = 10_000;
/// Events pruned per pass at most (the next pass goes on).
const PRUNE_MAX: i64 = 10_000;

/// What a sweep frees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sweep {
    /// How long an upload no record names is kept.
    pub orphan_grace: Duration,
    /// How long events are kept in the log; `None` keeps them all.
    pub event_retention: Option<Duration>,
}

/// What a sweep freed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Swept {
    /// Orphan uploads deleted.
    pub blobs: u64,
    /// Their bytes.
    pub blob_bytes: u64,
    /// Events pruned.
    pub events: u64,
    /// A bound stopped the pass: another one right away frees more.
    pub more: bool,
}

/// The writer's place in `blobs_age`: uploads up to it were examined.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OrphanCursor {
    at: i64,
    rowid: i64,
}

impl Default for OrphanCursor {
    fn default() -> Self {
        OrphanCursor {
            at: i64::MIN,
            rowid: i64::MIN,
        }
    }
}

impl Store {
    /// Frees what is older than `rules` allow at time `now` (the server
    /// passes the clock's; tests pass a later one instead of waiting).
    pub fn sweep(&self, now: SystemTime, rules: &Sweep) -> Result<Swept> {
        let line = unix_secs(
            now.checked_sub(rules.orphan_grace)
                .unwrap_or(SystemTime::UNIX_EPOCH),
        );
        let horizon = rules.event_retention.map(|keep| {
            let at = now.checked_sub(keep).unwrap_or(SystemTime::UNIX_EPOCH);
            let ms = at
                .duration_since(SystemTime::UNIX_EPOCH)
                .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
                .unwrap_or(0);
            codec::datetime::rfc3339_millis(ms)
        });
        self.submit(move |w| {
            let mut swept = Swept::default();
            let (cursor, full, blobs, bytes) = sweep_orphans(&w.conn, w.orphans, line)?;
            w.orphans = cursor;
            swept.blobs = blobs;
            swept.blob_bytes = bytes;
            swept.more = full;
            if let Some(cutoff) = horizon {
                swept.events = prune_events(&w.conn, &cutoff)?;
                swept.more |= swept.events == PRUNE_MAX as u64;
            }
            Ok(swept)
        })
    }
}

/// Deletes the uploads after `from` up to `line` (unix seconds) that no
/// record names; the new cursor, whether the page was full, how many and
/// their bytes.
fn sweep_orphans(
    conn: &Connection,
    from: OrphanCursor,
    line: i64,
) -> Result<(OrphanCursor, bool, u64, u64)> {
    let mut st = conn.prepare_cached(
        "SELECT b.rowid, b.created_at, b.size, NOT EXISTS (SELECT 1 FROM record_blobs rb \
         WHERE rb.did = b.did AND rb.blob = b.cid), b.cid FROM blobs b INDEXED BY blobs_age \
         WHERE (b.created_at, b.rowid) > (?1, ?2) AND b.created_at <= ?3 \
         ORDER BY b.created_at, b.rowid LIMIT ?4",
    )?;
    let mut last = from;
    let mut seen = 0;
    let mut orphans = Vec::new();
    let mut rows = st.query(params![from.at, from.rowid, line, ORPHANS_MAX])?;
    while let Some(row) = rows.next()? {
        seen += 1;
        last = OrphanCursor {
            rowid: row.get(0)?,
            at: row.get(1)?,
        };
        if row.get::<_, bool>(3)? {
            orphans.push((last.rowid, row.get::<_, i64>(2)?, row.get::<_, Vec<u8>>(4)?));
        }
    }
    drop(rows);
    // A full page goes on after its last row. Otherwise the next pass
    // reads the line's second again: an upload made within it after this
    // pass may have taken the rowid of a row this pass deleted (SQLite
    // hands out the largest rowid plus one), which is not after `last`.
    let full = seen == ORPHANS_MAX;
    let cursor = if full {
        last
    } else {
        OrphanCursor {
            at: line.saturating_sub(1),
            rowid: i64::MAX,
        }
    };
    let mut del = conn.prepare_cached("DELETE FROM blobs WHERE rowid = ?1")?;
    let (mut count, mut bytes) = (0u64, 0u64);
    for (rowid, size, cid) in &orphans {
        if named_by_a_space(conn, cid)? {
            continue;
        }
        del.execute([rowid])?;
        count += 1;
        bytes += u64::try_from(*size).unwrap_or(0);
    }
    Ok((cursor, full, count, bytes))
}

/// The `time` of the first event at or after seq `at`, and its seq.
/// An event whose body does not decode or has no time counts as young
/// (kept).
fn event_at(conn: &Connection, at: i64) -> Result<Option<(i64, Option<String>)>> {
    let mut st = conn.prepare_cached(
        "SELECT seq, payload FROM seq_events WHERE seq >= ?1 ORDER BY seq LIMIT 1",
    )?;
    Ok(st
        .query_row([at], |row| {
            let seq: i64 = row.get(0)?;
            let body = row.get_ref(1)?.as_blob()?;
            let time = match repo::cbor::decode(body) {
                Ok(repo::cbor::ValueRef::Map(m)) => match m.get("time") {
                    Some(repo::cbor::ValueRef::Text(t)) => Some((*t).to_owned()),
                    _ => None,
                },
                _ => None,
            };
            Ok((seq, time))
        })
        .optional()?)
}

/// Prunes the events (and commit log rows) whose time is before `cutoff`
/// (`YYYY-MM-DDTHH:MM:SS.mmmZ`, which orders as text), keeping the newest
/// event; how many events went.
fn prune_events(conn: &Connection, cutoff: &str) -> Result<u64> {
    let (first, last): (Option<i64>, Option<i64>) =
        conn.query_row("SELECT MIN(seq), MAX(seq) FROM seq_events", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
    let (Some(first), Some(last)) = (first, last) else {
        return Ok(0);
    };
    let (mut lo, mut hi) = (first, last);
    // The boundary `b` in [first, last]: every event below it is older
    // than the cutoff, the first at or after it is not (or is the newest).
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match event_at(conn, mid)? {
            Some((seq, Some(t))) if t.as_str() < cutoff => lo = seq + 1,
            _ => hi = mid,
        }
    }
    let below = lo.min(last).min(first.saturating_add(PRUNE_MAX));
    if below <= first {
        return Ok(0);
    }
    let n = conn
        .prepare_cached("DELETE FROM seq_events WHERE seq < ?1")?
        .execute([below])?;
    conn.prepare_cached("DELETE FROM commits WHERE seq < ?1")?
        .execute([below])?;
    Ok(n as u64)
}
