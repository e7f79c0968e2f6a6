//! Streaming a pack from `git pack-objects --revs --stdout` into 4 MiB blob
//! parts: each part is uploaded as soon as it fills, with at most
//! `concurrency` uploads in flight, so the helper holds at most
//! `concurrency + 1` parts whatever the pack's size. The whole pack's
//! sha-256 and its object count (from the header) are computed on the way.

use std::process::Stdio;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::client::Xrpc;
use crate::error::{KnotError, Result};
use crate::records::{PART_MIME, PART_SIZE, Part};
use crate::remote::Auth;

/// A pack once uploaded.
#[derive(Debug, Clone)]
pub struct Uploaded {
    /// sha-256 of the whole pack (hex).
    pub sha256: String,
    /// Its length.
    pub size: u64,
    /// Its object count.
    pub objects: u64,
    /// The parts, in order.
    pub parts: Vec<Part>,
}

fn gerr(why: impl Into<String>) -> KnotError {
    KnotError::Git {
        cmd: "pack-objects".into(),
        why: why.into(),
    }
}

/// Runs `git pack-objects` for `positives` minus `negatives` and uploads
/// the pack. A pack without objects is not uploaded (`parts` empty).
pub async fn pack_and_upload(
    pds: &Xrpc,
    auth: Arc<Auth>,
    positives: &[String],
    negatives: &[String],
    concurrency: usize,
    progress: bool,
) -> Result<Uploaded> {
    pack_and_upload_in(None, pds, auth, positives, negatives, concurrency, progress).await
}

/// [`pack_and_upload`] from the repository at `git_dir` (the gateway's
/// scratch repository) instead of the one `GIT_DIR` names.
pub async fn pack_and_upload_in(
    git_dir: Option<&std::path::Path>,
    pds: &Xrpc,
    auth: Arc<Auth>,
    positives: &[String],
    negatives: &[String],
    concurrency: usize,
    progress: bool,
) -> Result<Uploaded> {
    let mut cmd = tokio::process::Command::new("git");
    if let Some(d) = git_dir {
        cmd.arg("--git-dir").arg(d);
    }
    cmd.args(["pack-objects", "--revs", "--stdout", "--delta-base-offset"]);
    cmd.arg(if progress { "--progress" } else { "-q" });
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    cmd.kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| gerr(e.to_string()))?;
    let mut input = String::new();
    for p in positives {
        input.push_str(p);
        input.push('\n');
    }
    for n in negatives {
        input.push('^');
        input.push_str(n);
        input.push('\n');
    }
    let mut stdin = child.stdin.take().ok_or_else(|| gerr("no stdin"))?;
    let writer = tokio::spawn(async move {
        let r = stdin.write_all(input.as_bytes()).await;
        drop(stdin);
        r
    });
    let mut out = child.stdout.take().ok_or_else(|| gerr("no stdout"))?;

    let slots = Arc::new(Semaphore::new(concurrency.max(1)));
    let mut uploads: JoinSet<Result<(usize, Part)>> = JoinSet::new();
    let mut whole = Sha256::new();
    let mut size: u64 = 0;
    let mut header = [0u8; 12];
    let mut parts_n = 0usize;
    let mut done = false;
    let mut first: Option<Bytes> = None;
    let mut done_parts: Vec<(usize, Part)> = Vec::new();
    while !done {
        // The slot is taken before the buffer is filled: at most
        // `concurrency` parts uploading plus this one.
        let permit = slots
            .clone()
            .acquire_owned()
            .await
            .map_err(|e| gerr(e.to_string()))?;
        let mut buf = BytesMut::with_capacity(PART_SIZE);
        while buf.len() < PART_SIZE {
            let n = out
                .read_buf(&mut buf)
                .await
                .map_err(|e| gerr(e.to_string()))?;
            if n == 0 {
                done = true;
                break;
            }
        }
        // Collect finished uploads (failing early when one failed).
        while let Some(r) = uploads.try_join_next() {
            done_parts.push(r.map_err(|e| gerr(e.to_string()))??);
        }
        if buf.is_empty() {
            break;
        }
        if size == 0 {
            crate::trace::mark("pack-objects: first part read", None);
            if buf.len() < 12 || &buf[..4] != b"PACK" {
                return Err(gerr("output is not a pack"));
            }
            header.copy_from_slice(&buf[..12]);
        }
        whole.update(&buf);
        size += buf.len() as u64;
        let bytes = buf.freeze();
        let idx = parts_n;
        parts_n += 1;
        if idx == 0 && done {
            // A single part: held back until the object count is known
            // (an empty pack is not uploaded).
            first = Some(bytes);
            drop(permit);
            break;
        }
        let (pds, auth) = (pds.clone(), auth.clone());
        if progress {
            eprintln!(
                "knot: uploading part {} ({:.1} MiB so far)",
                idx + 1,
                size as f64 / (1 << 20) as f64
            );
        }
        uploads.spawn(async move {
            let _permit = permit;
            let len = bytes.len() as u64;
            let cid = auth
                .with(|t| {
                    let b = bytes.clone();
                    let pds = &pds;
                    async move { pds.upload_blob(b, PART_MIME, &t).await }
                })
                .await?;
            Ok((idx, Part { cid, size: len }))
        });
    }
    let status = child.wait().await.map_err(|e| gerr(e.to_string()))?;
    crate::trace::mark("pack-objects exited", None);
    let _ = writer.await;
    if !status.success() {
        return Err(gerr(format!("exited with {status}")));
    }
    let objects = u64::from(u32::from_be_bytes([
        header[8], header[9], header[10], header[11],
    ]));
    let mut parts: Vec<Option<Part>> = vec![None; parts_n];
    if let Some(bytes) = first
        && objects > 0
    {
        let len = bytes.len() as u64;
        let cid = auth
            .with(|t| {
                let b = bytes.clone();
                async move { pds.upload_blob(b, PART_MIME, &t).await }
            })
            .await?;
        parts[0] = Some(Part { cid, size: len });
    }
    while let Some(r) = uploads.join_next().await {
        done_parts.push(r.map_err(|e| gerr(e.to_string()))??);
    }
    for (i, p) in done_parts {
        if let Some(slot) = parts.get_mut(i) {
            *slot = Some(p);
        }
    }
    let parts: Vec<Part> = if objects == 0 {
        Vec::new()
    } else {
        parts.into_iter().flatten().collect()
    };
    if objects > 0 && parts.len() != parts_n {
        return Err(gerr("a part was not uploaded"));
    }
    Ok(Uploaded {
        sha256: data_encoding::HEXLOWER.encode(&whole.finalize()),
        size,
        objects,
        parts,
    })
}
