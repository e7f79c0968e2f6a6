//! Frame decoding and encoding.

use super::{
    AccountEvent, Action, CommitEvent, ErrorFrame, Frame, IdentityEvent, InfoEvent, RepoOp,
    SyncEvent,
};
use crate::cbor::{DecodeError, Encoder, Reader};

/// Why a frame could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// Header or body is not strict DAG-CBOR, or a field has the wrong type.
    #[error("frame: {0}")]
    Cbor(#[from] DecodeError),
    /// A required field is absent.
    #[error("frame {t}: missing field {field:?}")]
    Missing {
        /// The message type.
        t: &'static str,
        /// The field.
        field: &'static str,
    },
    /// A header `op` other than 1 or -1.
    #[error("frame: unknown op {0}")]
    UnknownOp(i64),
    /// `op: 1` without `t`.
    #[error("frame: message without a type")]
    MissingType,
    /// An op action other than create/update/delete.
    #[error("frame: unknown op action {0:?}")]
    BadAction(String),
}

fn need<T>(v: Option<T>, t: &'static str, field: &'static str) -> Result<T, FrameError> {
    v.ok_or(FrameError::Missing { t, field })
}

impl<'a> Frame<'a> {
    /// Decodes one frame (header then body, nothing after).
    pub fn decode(bytes: &'a [u8]) -> Result<Frame<'a>, FrameError> {
        let mut r = Reader::new(bytes);
        let n = r.read_map_len()?;
        let (mut op, mut t) = (None, None);
        let mut prev = None;
        for _ in 0..n {
            match r.read_key(&mut prev)? {
                "t" => t = Some(r.read_text()?),
                "op" => op = Some(r.read_int()?),
                _ => r.skip()?,
            }
        }
        let frame = match need(op, "header", "op")? {
            1 => match t.ok_or(FrameError::MissingType)? {
                "#commit" => Frame::Commit(commit(&mut r)?),
                "#sync" => Frame::Sync(sync(&mut r)?),
                "#identity" => Frame::Identity(identity(&mut r)?),
                "#account" => Frame::Account(account(&mut r)?),
                "#info" => Frame::Info(info(&mut r)?),
                other => {
                    let body = r.rest();
                    r.skip()?;
                    Frame::Unknown { t: other, body }
                }
            },
            -1 => Frame::Error(error_body(&mut r)?),
            other => return Err(FrameError::UnknownOp(other)),
        };
        r.finish()?;
        Ok(frame)
    }

    /// Appends the frame's bytes (header and body).
    pub fn encode(&self, out: &mut Vec<u8>) {
        self.encode_header(out);
        self.encode_body(out);
    }

    /// Appends the frame's header: `{t, op: 1}`, or `{op: -1}` for an
    /// error frame.
    pub fn encode_header(&self, out: &mut Vec<u8>) {
        let mut e = Encoder::new(out);
        let t = match self {
            Frame::Commit(_) => Some("#commit"),
            Frame::Sync(_) => Some("#sync"),
            Frame::Identity(_) => Some("#identity"),
            Frame::Account(_) => Some("#account"),
            Frame::Info(_) => Some("#info"),
            Frame::Unknown { t, .. } => Some(*t),
            Frame::Error(_) => None,
        };
        match t {
            Some(t) => {
                e.map(2);
                e.text("t");
                e.text(t);
                e.text("op");
                e.int(1);
            }
            None => {
                e.map(1);
                e.text("op");
                e.int(-1);
            }
        }
    }

    /// Appends the frame's body alone (what follows the header): a store
    /// that keeps bodies by kind encodes them without a header to strip.
    pub fn encode_body(&self, out: &mut Vec<u8>) {
        let mut e = Encoder::new(out);
        match self {
            Frame::Commit(c) => encode_commit(&mut e, c),
            Frame::Sync(s) => {
                e.map(5);
                e.text("did");
                e.text(s.did);
                e.text("rev");
                e.text(s.rev);
                e.text("seq");
                e.int(s.seq);
                e.text("time");
                e.text(s.time);
                e.text("blocks");
                e.bytes(s.blocks);
            }
            Frame::Identity(i) => {
                e.map(3 + usize::from(i.handle.is_some()));
                e.text("did");
                e.text(i.did);
                e.text("seq");
                e.int(i.seq);
                e.text("time");
                e.text(i.time);
                if let Some(h) = i.handle {
                    e.text("handle");
                    e.text(h);
                }
            }
            Frame::Account(a) => {
                e.map(4 + usize::from(a.status.is_some()));
                e.text("did");
                e.text(a.did);
                e.text("seq");
                e.int(a.seq);
                e.text("time");
                e.text(a.time);
                e.text("active");
                e.bool(a.active);
                if let Some(s) = a.status {
                    e.text("status");
                    e.text(s);
                }
            }
            Frame::Info(i) => name_message(&mut e, "name", i.name, i.message),
            Frame::Error(x) => name_message(&mut e, "error", x.error, x.message),
            Frame::Unknown { body, .. } => e.raw(body),
        }
    }

    /// The frame's bytes.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(256);
        self.encode(&mut out);
        out
    }
}

fn name_message(e: &mut Encoder<'_>, key: &str, name: &str, message: Option<&str>) {
    e.map(1 + usize::from(message.is_some()));
    e.text(key);
    e.text(name);
    if let Some(m) = message {
        e.text("message");
        e.text(m);
    }
}

fn encode_commit(e: &mut Encoder<'_>, c: &CommitEvent<'_>) {
    e.map(11 + usize::from(c.prev_data.is_some()));
    // Canonical order: ops rev seq repo time blobs since blocks commit
    // rebase tooBig prevData.
    e.text("ops");
    e.list(c.ops.len());
    for op in &c.ops {
        e.map(3 + usize::from(op.prev.is_some()));
        e.text("cid");
        e.link_or_null(op.cid.as_ref());
        e.text("path");
        e.text(op.path);
        if let Some(p) = &op.prev {
            e.text("prev");
            e.link(p);
        }
        e.text("action");
        e.text(op.action.as_str());
    }
    e.text("rev");
    e.text(c.rev);
    e.text("seq");
    e.int(c.seq);
    e.text("repo");
    e.text(c.repo);
    e.text("time");
    e.text(c.time);
    e.text("blobs");
    e.list(c.blobs.len());
    for b in &c.blobs {
        e.link(b);
    }
    e.text("since");
    match c.since {
        Some(s) => e.text(s),
        None => e.null(),
    }
    e.text("blocks");
    e.bytes(c.blocks);
    e.text("commit");
    e.link(&c.commit);
    e.text("rebase");
    e.bool(c.rebase);
    e.text("tooBig");
    e.bool(c.too_big);
    if let Some(p) = &c.prev_data {
        e.text("prevData");
        e.link(p);
    }
}

fn text_or_null<'a>(r: &mut Reader<'a>) -> Result<Option<&'a str>, DecodeError> {
    if r.read_null() {
        Ok(None)
    } else {
        r.read_text().map(Some)
    }
}

fn commit<'a>(r: &mut Reader<'a>) -> Result<CommitEvent<'a>, FrameError> {
    const T: &str = "#commit";
    let n = r.read_map_len()?;
    let mut prev = None;
    let (mut seq, mut rebase, mut too_big, mut repo, mut commit, mut rev) =
        (None, None, None, None, None, None);
    let (mut since, mut blocks, mut ops, mut blobs, mut prev_data, mut time) =
        (None, None, None, None, None, None);
    for _ in 0..n {
        match r.read_key(&mut prev)? {
            "ops" => {
                let count = r.read_list_len()?;
                let mut v = Vec::with_capacity(count);
                for _ in 0..count {
                    v.push(repo_op(r)?);
                }
                ops = Some(v);
            }
            "rev" => rev = Some(r.read_text()?),
            "seq" => seq = Some(r.read_int()?),
            "repo" => repo = Some(r.read_text()?),
            "time" => time = Some(r.read_text()?),
            "blobs" => {
                let count = r.read_list_len()?;
                let mut v = Vec::with_capacity(count);
                for _ in 0..count {
                    v.push(r.read_link()?);
                }
                blobs = Some(v);
            }
            "since" => since = Some(text_or_null(r)?),
            "blocks" => blocks = Some(r.read_bytes()?),
            "commit" => commit = Some(r.read_link()?),
            "rebase" => rebase = Some(r.read_bool()?),
            "tooBig" => too_big = Some(r.read_bool()?),
            "prevData" => prev_data = r.read_link_or_null()?,
            _ => r.skip()?,
        }
    }
    Ok(CommitEvent {
        seq: need(seq, T, "seq")?,
        rebase: rebase.unwrap_or(false),
        too_big: too_big.unwrap_or(false),
        repo: need(repo, T, "repo")?,
        commit: need(commit, T, "commit")?,
        rev: need(rev, T, "rev")?,
        since: since.flatten(),
        blocks: need(blocks, T, "blocks")?,
        ops: need(ops, T, "ops")?,
        blobs: blobs.unwrap_or_default(),
        prev_data,
        time: need(time, T, "time")?,
    })
}

fn repo_op<'a>(r: &mut Reader<'a>) -> Result<RepoOp<'a>, FrameError> {
    const T: &str = "#commit op";
    let n = r.read_map_len()?;
    let mut last = None;
    let (mut action, mut path, mut cid, mut prev) = (None, None, None, None);
    for _ in 0..n {
        match r.read_key(&mut last)? {
            "cid" => cid = Some(r.read_link_or_null()?),
            "path" => path = Some(r.read_text()?),
            "prev" => prev = r.read_link_or_null()?,
            "action" => {
                action = Some(match r.read_text()? {
                    "create" => Action::Create,
                    "update" => Action::Update,
                    "delete" => Action::Delete,
                    other => return Err(FrameError::BadAction(other.to_owned())),
                })
            }
            _ => r.skip()?,
        }
    }
    Ok(RepoOp {
        action: need(action, T, "action")?,
        path: need(path, T, "path")?,
        cid: need(cid, T, "cid")?,
        prev,
    })
}

fn sync<'a>(r: &mut Reader<'a>) -> Result<SyncEvent<'a>, FrameError> {
    const T: &str = "#sync";
    let n = r.read_map_len()?;
    let mut last = None;
    let (mut seq, mut did, mut blocks, mut rev, mut time) = (None, None, None, None, None);
    for _ in 0..n {
        match r.read_key(&mut last)? {
            "did" => did = Some(r.read_text()?),
            "rev" => rev = Some(r.read_text()?),
            "seq" => seq = Some(r.read_int()?),
            "time" => time = Some(r.read_text()?),
            "blocks" => blocks = Some(r.read_bytes()?),
            _ => r.skip()?,
        }
    }
    Ok(SyncEvent {
        seq: need(seq, T, "seq")?,
        did: need(did, T, "did")?,
        blocks: need(blocks, T, "blocks")?,
        rev: need(rev, T, "rev")?,
        time: need(time, T, "time")?,
    })
}

fn identity<'a>(r: &mut Reader<'a>) -> Result<IdentityEvent<'a>, FrameError> {
    const T: &str = "#identity";
    let n = r.read_map_len()?;
    let mut last = None;
    let (mut seq, mut did, mut time, mut handle) = (None, None, None, None);
    for _ in 0..n {
        match r.read_key(&mut last)? {
            "did" => did = Some(r.read_text()?),
            "seq" => seq = Some(r.read_int()?),
            "time" => time = Some(r.read_text()?),
            "handle" => handle = text_or_null(r)?,
            _ => r.skip()?,
        }
    }
    Ok(IdentityEvent {
        seq: need(seq, T, "seq")?,
        did: need(did, T, "did")?,
        time: need(time, T, "time")?,
        handle,
    })
}

fn account<'a>(r: &mut Reader<'a>) -> Result<AccountEvent<'a>, FrameError> {
    const T: &str = "#account";
    let n = r.read_map_len()?;
    let mut last = None;
    let (mut seq, mut did, mut time, mut active, mut status) = (None, None, None, None, None);
    for _ in 0..n {
        match r.read_key(&mut last)? {
            "did" => did = Some(r.read_text()?),
            "seq" => seq = Some(r.read_int()?),
            "time" => time = Some(r.read_text()?),
            "active" => active = Some(r.read_bool()?),
            "status" => status = text_or_null(r)?,
            _ => r.skip()?,
        }
    }
    Ok(AccountEvent {
        seq: need(seq, T, "seq")?,
        did: need(did, T, "did")?,
        time: need(time, T, "time")?,
        active: need(active, T, "active")?,
        status,
    })
}

fn info<'a>(r: &mut Reader<'a>) -> Result<InfoEvent<'a>, FrameError> {
    let (name, message) = named(r, "name", "#info")?;
    Ok(InfoEvent { name, message })
}

fn error_body<'a>(r: &mut Reader<'a>) -> Result<ErrorFrame<'a>, FrameError> {
    let (error, message) = named(r, "error", "error frame")?;
    Ok(ErrorFrame { error, message })
}

fn named<'a>(
    r: &mut Reader<'a>,
    key: &'static str,
    t: &'static str,
) -> Result<(&'a str, Option<&'a str>), FrameError> {
    let n = r.read_map_len()?;
    let mut last = None;
    let (mut name, mut message) = (None, None);
    for _ in 0..n {
        let k = r.read_key(&mut last)?;
        if k == key {
            name = Some(r.read_text()?);
        } else if k == "message" {
            message = text_or_null(r)?;
        } else {
            r.skip()?;
        }
    }
    Ok((need(name, t, key)?, message))
}
