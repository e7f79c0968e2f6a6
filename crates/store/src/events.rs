//! The sequenced event log's frames: headers and bodies (a row holds a
//! frame minus its header, so catch-up prepends one of a few headers), the
//! `#sync` and `#commit` frames the write path appends, and the row
//! insert. Each event is encoded once, header and body in one buffer
//! ([`Encoded`]): the row takes the body, the feed (`feed.rs`) the whole
//! frame, with no copy. Sequence numbers are handed out by the writer
//! (`writer.rs`).

use repo::Cid;
use repo::car::write_car_vec;
use repo::cbor::Encoder;
use repo::firehose::{Action, CommitEvent, Frame, RepoOp, SyncEvent};
use rusqlite::{Connection, params};

use crate::error::Result;
use crate::plan::Plan;
use crate::prepare::Prepared;
use crate::{WriteAction, WriteOutcome};

const SQL_PUT_EVENT: &str =
    "INSERT INTO seq_events (seq, did, kind, payload) VALUES (?1, ?2, ?3, ?4)";

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

/// One event's frame, encoded once: header then body in one buffer.
pub(crate) struct Encoded {
    /// Header and body.
    pub frame: Vec<u8>,
    /// Where the body starts.
    body_at: usize,
}

impl Encoded {
    /// Encodes `frame` into a buffer of `capacity` bytes to begin with.
    pub(crate) fn new(frame: &Frame<'_>, capacity: usize) -> Self {
        let mut out = Vec::with_capacity(capacity);
        frame.encode_header(&mut out);
        let body_at = out.len();
        frame.encode_body(&mut out);
        Encoded {
            frame: out,
            body_at,
        }
    }

    /// A frame encoded elsewhere whose body starts at `body_at`.
    #[cfg(any(test, feature = "bench-internals"))]
    pub(crate) fn from_parts(frame: Vec<u8>, body_at: usize) -> Self {
        Encoded { frame, body_at }
    }

    /// The body (what a log row holds).
    pub(crate) fn body(&self) -> &[u8] {
        &self.frame[self.body_at..]
    }
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for now.
pub(crate) fn now_datetime() -> String {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    codec::datetime::rfc3339_millis(ms)
}

/// Appends the event `seq` of `did`.
pub(crate) fn insert_event(
    conn: &Connection,
    seq: i64,
    did: &str,
    kind: &str,
    body: &[u8],
) -> Result<()> {
    conn.prepare_cached(SQL_PUT_EVENT)?
        .execute(params![seq, did, kind, body])?;
    Ok(())
}

/// The `#sync` frame `seq` announcing `did`'s repository at `commit`.
pub(crate) fn sync_frame(
    seq: i64,
    did: &str,
    commit: &Cid,
    commit_bytes: &[u8],
    rev: &str,
) -> Encoded {
    let car = write_car_vec(&[*commit], [(commit, commit_bytes)]);
    let time = now_datetime();
    let frame = Frame::Sync(SyncEvent {
        seq,
        did,
        blocks: &car,
        rev,
        time: &time,
    });
    Encoded::new(&frame, 64 + did.len() + car.len())
}

/// The encoded `#commit` frame `seq` of `plan` (the commit of `writes` to
/// `did` on top of the commit at `since` / `prev_data`), and each write's
/// outcome.
pub(crate) fn commit_frame(
    seq: i64,
    did: &str,
    writes: &[Prepared],
    plan: &Plan,
    since: &str,
    prev_data: Cid,
) -> (Encoded, Vec<WriteOutcome>) {
    let current = &plan.result.previous;
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
        commit: plan.commit.0,
        rev: &plan.rev,
        since: Some(since),
        blocks: &plan.car,
        ops: repo_ops,
        blobs: Vec::new(),
        prev_data: Some(prev_data),
        time: &time,
    });
    let capacity = plan.car.len() + 512 + 128 * writes.len();
    (Encoded::new(&frame, capacity), results)
}
