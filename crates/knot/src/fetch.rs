//! `fetch`: only the packs the local repository lacks (a pack entry whose
//! tip the repository holds is skipped: it holds every object of that
//! pack), each pack record checked, its parts downloaded `concurrency` at
//! a time and streamed in order into `git index-pack --stdin`. Every part
//! is checked against its CID before index-pack sees it, and the whole
//! pack against its sha-256 before index-pack sees the end of its input,
//! so a corrupt or missing part stops the fetch before anything is kept
//! and before git moves a ref.

use std::collections::HashSet;
use std::path::Path;
use std::process::Stdio;

use futures_util::StreamExt;
use futures_util::stream;
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::error::{KnotError, Result};
use crate::git;
use crate::records::PackRecord;
use crate::remote::Remote;

/// What a fetch moved.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FetchStats {
    /// Packs downloaded.
    pub packs: usize,
    /// Parts downloaded.
    pub parts: usize,
    /// Bytes downloaded.
    pub bytes: u64,
}

fn gerr(why: impl Into<String>) -> KnotError {
    KnotError::Git {
        cmd: "index-pack".into(),
        why: why.into(),
    }
}

/// Fetches what the refs named in `wants` (`(oid, name)`) need.
pub async fn fetch(
    remote: &mut Remote,
    wants: &[(String, String)],
    concurrency: usize,
    progress: bool,
) -> Result<FetchStats> {
    let refs = match remote.state.refs.clone() {
        Some(r) => r,
        None => remote.read_refs().await?,
    };
    let mut entries = Vec::new();
    let mut seen = HashSet::new();
    for (oid, name) in wants {
        let r = refs.get(name).ok_or_else(|| {
            KnotError::Protocol(format!("fetch of {name}, which the remote does not list"))
        })?;
        if &r.record.target != oid {
            return Err(KnotError::Protocol(format!(
                "fetch of {name} at {oid}, which the remote lists at {}",
                r.record.target
            )));
        }
        for e in &r.record.packs {
            // A pack pushed for several refs has an entry per tip: it is
            // needed when any of the wanted tips is missing.
            if seen.insert((e.pack.clone(), e.tip.clone())) {
                entries.push(e.clone());
            }
        }
    }
    let tips: Vec<&str> = entries.iter().map(|e| e.tip.as_str()).collect();
    let have = git::have(&tips)?;
    let mut ids: Vec<String> = Vec::new();
    let mut id_seen = HashSet::new();
    // Oldest first: the order they were pushed in.
    for (e, h) in entries.iter().zip(have).rev() {
        if !h && id_seen.insert(e.pack.clone()) {
            ids.push(e.pack.clone());
        }
    }
    if ids.is_empty() {
        return Ok(FetchStats::default());
    }
    let stats = download(remote, &ids, concurrency, progress, None).await?;
    // The refs' targets must now be here.
    let targets: Vec<&str> = wants.iter().map(|(o, _)| o.as_str()).collect();
    if let Some((o, _)) = git::have(&targets)?
        .iter()
        .zip(wants)
        .find(|(h, _)| !**h)
        .map(|(_, w)| w)
    {
        return Err(KnotError::Record {
            what: "ref".into(),
            why: format!("the packs of {o} do not hold it"),
        });
    }
    Ok(stats)
}

/// Downloads the packs `ids` (oldest first) into the repository at
/// `git_dir` (the helper's own, from `GIT_DIR`, when `None`): each pack
/// record read and checked, its parts streamed into `git index-pack`.
pub async fn download(
    r: &Remote,
    ids: &[String],
    concurrency: usize,
    progress: bool,
    git_dir: Option<&Path>,
) -> Result<FetchStats> {
    let mut stats = FetchStats::default();
    let packs: Vec<PackRecord> = stream::iter(ids.iter().map(|id| r.read_pack(id)))
        .buffered(concurrency.max(1))
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<Result<_>>()?;
    for p in &packs {
        if p.repo != r.repo {
            return Err(KnotError::Record {
                what: "pack".into(),
                why: format!("pack {} belongs to repository {}", p.sha256, p.repo),
            });
        }
    }
    // Every part of every pack, in order, `concurrency` downloads ahead.
    let all: Vec<(usize, usize)> = packs
        .iter()
        .enumerate()
        .flat_map(|(pi, p)| (0..p.parts.len()).map(move |i| (pi, i)))
        .collect();
    let mut parts = stream::iter(all.into_iter().map(|(pi, i)| {
        let part = &packs[pi].parts[i];
        async move {
            r.pds
                .get_blob(&r.did, &part.cid, part.size)
                .await
                .map(|b| (pi, b))
        }
    }))
    .buffered(concurrency.max(1));
    for (pi, p) in packs.iter().enumerate() {
        if progress {
            eprintln!(
                "knot: fetching pack {} of {} ({} objects, {:.1} MiB)",
                pi + 1,
                packs.len(),
                p.objects,
                p.size as f64 / (1 << 20) as f64
            );
        }
        let mut cmd = tokio::process::Command::new("git");
        if let Some(d) = git_dir {
            cmd.env("GIT_DIR", d);
        }
        let mut child = cmd
            .args(["index-pack", "--stdin"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| gerr(e.to_string()))?;
        let mut stdin = child.stdin.take().ok_or_else(|| gerr("no stdin"))?;
        let mut stdout = child.stdout.take().ok_or_else(|| gerr("no stdout"))?;
        // index-pack's stdout ("pack\t<hash>") must not reach git's wire.
        let reader = tokio::spawn(async move {
            let mut s = Vec::new();
            let _ = (&mut stdout).take(4096).read_to_end(&mut s).await;
            s
        });
        let mut whole = Sha256::new();
        let mut size = 0u64;
        for _ in 0..p.parts.len() {
            let (got_pi, bytes) = match parts.next().await {
                Some(Ok(x)) => x,
                Some(Err(e)) => {
                    let _ = child.kill().await;
                    return Err(e);
                }
                None => {
                    let _ = child.kill().await;
                    return Err(gerr("ran out of parts"));
                }
            };
            debug_assert_eq!(got_pi, pi);
            whole.update(&bytes);
            size += bytes.len() as u64;
            stats.parts += 1;
            stats.bytes += bytes.len() as u64;
            if let Err(e) = stdin.write_all(&bytes).await {
                let _ = child.kill().await;
                return Err(gerr(format!("writing the pack: {e}")));
            }
        }
        let digest = data_encoding::HEXLOWER.encode(&whole.finalize());
        if digest != p.sha256 || size != p.size {
            // index-pack has not seen the end of its input: killed, it keeps nothing.
            let _ = child.kill().await;
            return Err(KnotError::HashMismatch {
                what: format!("pack {}", p.sha256),
                expected: p.sha256.clone(),
                got: digest,
            });
        }
        drop(stdin);
        let st = child.wait().await.map_err(|e| gerr(e.to_string()))?;
        let _ = reader.await;
        if !st.success() {
            return Err(gerr(format!("pack {} was refused ({st})", p.sha256)));
        }
        stats.packs += 1;
    }
    Ok(stats)
}
