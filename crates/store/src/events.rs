//! The sequenced event log's bodies: frame headers and bodies (a row holds
//! a frame minus its header, so catch-up prepends one of a few headers),
//! the `#sync` and `#commit` bodies the write path appends, and the row
//! insert. Sequence numbers are handed out by the writer (`writer.rs`).

use repo::Cid;
use repo::car::write_car_vec;
use repo::cbor::Encoder;
use repo::firehose::{Action, CommitEvent, Frame, RepoOp, SyncEvent};
use rusqlite::{Connection, params};

use crate::error::{Result, StoreError};
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

/// The `#sync` body announcing `did`'s repository at `commit`.
pub(crate) fn sync_body(
    seq: i64,
    did: &str,
    commit: &Cid,
    commit_bytes: &[u8],
    rev: &str,
) -> Result<Vec<u8>> {
    let car = write_car_vec(&[*commit], [(commit, commit_bytes)]);
    let time = now_datetime();
    let frame = Frame::Sync(SyncEvent {
        seq,
        did,
        blocks: &car,
        rev,
        time: &time,
    });
    frame_body(&frame, "#sync")
}

/// The encoded `#commit` frame `seq` of `plan` (the commit of `writes` to
/// `did` on top of the commit at `since` / `prev_data`), and each write's
/// outcome. The caller stores the frame's body ([`frame_body_of`]).
pub(crate) fn commit_frame(
    seq: i64,
    did: &str,
    writes: &[Prepared],
    plan: &Plan,
    since: &str,
    prev_data: Cid,
) -> (Vec<u8>, Vec<WriteOutcome>) {
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
    let mut bytes = Vec::with_capacity(plan.car.len() + 512 + 128 * writes.len());
    frame.encode(&mut bytes);
    (bytes, results)
}

/// An event body encoded before its seq is known, with the seq's value cut
/// out; the writer that appends it puts back the seq it hands out. What
/// the index-only write unit appends (`bench_internals`): the body is
/// built outside the timing, so the timed write does no frame encoding
/// beyond the seq's few bytes.
#[cfg(any(test, feature = "bench-internals"))]
#[derive(Debug, Clone)]
pub struct SeqlessEvent {
    kind: String,
    before: Vec<u8>,
    after: Vec<u8>,
}

#[cfg(any(test, feature = "bench-internals"))]
impl SeqlessEvent {
    /// From `frame(seq)`, the encoded frame of kind `kind` carrying `seq`
    /// and otherwise the same whatever `seq` is: encoded at seq 0 and at
    /// seq 1, the one byte where the two bodies differ is the seq's value.
    pub fn new(kind: &str, frame: impl Fn(i64) -> Vec<u8>) -> Result<Self> {
        let (zero, one) = (frame(0), frame(1));
        let (zero, one) = (frame_body_of(&zero, kind)?, frame_body_of(&one, kind)?);
        let mut differ = (zero.iter().zip(one).enumerate()).filter(|(_, (a, b))| a != b);
        let at = match (differ.next(), differ.next()) {
            (Some((at, (0x00, 0x01))), None) if zero.len() == one.len() => at,
            _ => {
                return Err(StoreError::InvalidEvent(
                    "the frame differs at seq 0 and 1 other than in one seq byte",
                ));
            }
        };
        Ok(SeqlessEvent {
            kind: kind.to_owned(),
            before: zero[..at].to_vec(),
            after: zero[at + 1..].to_vec(),
        })
    }

    /// The event's kind (`#commit`, ...).
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The body carrying `seq`, into `out` (cleared first).
    pub(crate) fn body_into(&self, seq: i64, out: &mut Vec<u8>) {
        out.clear();
        out.reserve(self.before.len() + 9 + self.after.len());
        out.extend_from_slice(&self.before);
        Encoder::new(out).int(seq);
        out.extend_from_slice(&self.after);
    }
}
