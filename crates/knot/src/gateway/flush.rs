//! Landing a queue: every waiting link at once, as one pack (the chain's
//! end minus the landed tip, from the scratch repository, streamed into
//! parts by `upload.rs`), one pack record, then one compare-and-swap of the
//! ref record, as `push/` orders a push. Only then does each writer hear
//! `ok`, with the commit its work landed as.
//!
//! A failed swap means a writer outside the gateway moved the branch: the
//! gateway reads the record, mirrors what it names, replays the chain onto
//! it (`queue::replan`) and lands again. A 429 waits out the PDS's
//! `Retry-After` and lands again; the budget (`bucket.rs`) makes that rare.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::Core;
use super::bucket::Kind;
use super::queue::{Queue, Reply, replan};
use super::sync::mirror;
use crate::error::{KnotError, Result};
use crate::names::{pack_rkey, ref_rkey};
use crate::push::{invalid_swap, is_rate_limit};
use crate::records::{
    PACK_NSID, PART_SIZE, PackEntry, PackRecord, REF_NSID, REPO_NSID, RefRecord, RepoRecord,
};
use crate::remote::Swap;
use crate::state::CachedRef;
use crate::upload::pack_and_upload_in;

/// Most links landed by one flush.
pub const MAX_BATCH: usize = 256;
/// Longest wait for a 429's window, before the flush gives up on its links.
pub const MAX_RATE_WAIT: Duration = Duration::from_secs(3600);

/// The queue's flusher: lands whatever waits, until the gateway stops.
pub async fn run(core: Arc<Core>, q: Arc<Queue>) {
    loop {
        {
            let mut c = q.chain.lock().await;
            if c.waiting.is_empty() {
                drop(c);
                q.wake.notified().await;
                continue;
            }
            let n = c.waiting.len().min(MAX_BATCH);
            let batch: Vec<_> = c.waiting.drain(..n).collect();
            c.in_flight = batch;
        }
        if let Err(e) = land(&core, &q).await {
            let e_text = e.to_string();
            eprintln!(
                "knot gateway: {} {}: flush failed: {e}",
                q.remote.repo, q.branch
            );
            core.stats.failed.fetch_add(1, Ordering::Relaxed);
            let mut c = q.chain.lock().await;
            // A failed write may still have landed: the next flush starts
            // from the record as the PDS has it.
            let now = q.remote.read_ref(&q.branch).await.ok();
            let landed_tip = now
                .as_ref()
                .and_then(|r| r.as_ref().map(|r| r.record.target.clone()));
            let flight: Vec<_> = c.in_flight.drain(..).collect();
            if let Some(fresh) = now {
                c.landed = fresh;
            }
            let mut answered_to = None;
            for (i, e) in flight.iter().enumerate() {
                if landed_tip.as_deref() == Some(e.tip.as_str()) {
                    answered_to = Some(i);
                }
            }
            for (i, e) in flight.into_iter().enumerate() {
                if answered_to.is_some_and(|a| i <= a) {
                    let (tip, rebased) = (e.tip.clone(), e.rebased);
                    e.answer(Reply::Landed { tip, rebased });
                } else {
                    e.answer(Reply::Failed(format!("gateway: {e_text}")));
                }
            }
            // What waited was chained on links that did not land.
            let end = c.landed.clone();
            if let Err(e) = replan(&core.scratch, &mut c, end).await {
                for w in c.waiting.drain(..) {
                    w.answer(Reply::Failed(format!("gateway: {e}")));
                }
            }
        }
    }
}

/// One flush of the in-flight links; retried here after failed swaps and
/// 429s. On return every in-flight link has heard its answer (or the error
/// is the caller's to report).
async fn land(core: &Core, q: &Queue) -> Result<()> {
    let r = &q.remote;
    for _ in 0..64 {
        let (landed, tip, bytes, repo_exists) = {
            let c = q.chain.lock().await;
            let Some(last) = c.in_flight.last() else {
                return Ok(());
            };
            (
                c.landed.clone(),
                last.tip.clone(),
                c.in_flight.iter().map(|e| e.bytes).sum::<u64>(),
                c.repo_exists,
            )
        };
        let base = landed.as_ref().map(|l| l.record.target.clone());
        if base.as_deref() == Some(tip.as_str()) {
            answer_all(core, q).await;
            return Ok(());
        }
        // Reference costs: the pack record a create, the ref an update (a
        // create when new), the repository record a create.
        let points = 3 + if landed.is_some() { 2 } else { 3 } + if repo_exists { 0 } else { 3 };
        let uploads = (bytes / PART_SIZE as u64) as u32 + 1;
        let waited = core
            .budget
            .take(&[
                (Kind::Points, points),
                (Kind::Uploads, uploads),
                (Kind::Requests, uploads + 3),
            ])
            .await
            .map_err(|e| KnotError::Protocol(e.to_string()))?;
        core.stats
            .budget_wait_ms
            .fetch_add(waited.as_millis() as u64, Ordering::Relaxed);

        let negatives: Vec<String> = base.iter().cloned().collect();
        let up = pack_and_upload_in(
            Some(core.scratch.dir()),
            &r.pds,
            r.auth.clone(),
            std::slice::from_ref(&tip),
            &negatives,
            crate::helper::CONCURRENCY,
            false,
        )
        .await;
        let result = match up {
            Ok(up) => write(core, q, landed.as_ref(), &tip, &negatives, up, repo_exists).await,
            Err(e) => Err(e),
        };
        match result {
            Ok(cid_rec) => {
                q.chain.lock().await.landed = Some(cid_rec);
                answer_all(core, q).await;
                return Ok(());
            }
            Err(e) if invalid_swap(&e).is_some() => {
                core.stats.swap_retries.fetch_add(1, Ordering::Relaxed);
                let now = r.read_ref(&q.branch).await?;
                if let Some(n) = &now {
                    mirror(r, &core.scratch, &n.record).await?;
                }
                let mut c = q.chain.lock().await;
                let refused = replan(&core.scratch, &mut c, now).await?;
                core.stats
                    .refused
                    .fetch_add(refused as u64, Ordering::Relaxed);
                // replan put every link back in `waiting`: take the batch again.
                let n = c.waiting.len().min(MAX_BATCH);
                let batch: Vec<_> = c.waiting.drain(..n).collect();
                c.in_flight = batch;
            }
            Err(e) => {
                let Some(l) = is_rate_limit(&e) else {
                    return Err(e);
                };
                core.stats.rate_limited.fetch_add(1, Ordering::Relaxed);
                let now = std::time::SystemTime::now();
                let secs = l
                    .retry_at(now)
                    .map(|at| {
                        at.saturating_sub(
                            now.duration_since(std::time::UNIX_EPOCH)
                                .map_or(0, |d| d.as_secs()),
                        )
                    })
                    .unwrap_or(60);
                let wait = Duration::from_secs(secs.max(1));
                if wait > MAX_RATE_WAIT {
                    return Err(e);
                }
                eprintln!(
                    "knot gateway: {} {}: rate limited ({}); waiting {wait:?}",
                    r.repo, q.branch, l.message
                );
                tokio::time::sleep(wait).await;
            }
        }
    }
    Err(KnotError::Protocol(
        "the branch kept moving under the gateway (64 failed swaps)".into(),
    ))
}

/// Writes the pack record, the repository record when new, then the ref
/// record under swap. Returns the ref as written.
async fn write(
    core: &Core,
    q: &Queue,
    landed: Option<&CachedRef>,
    tip: &str,
    negatives: &[String],
    up: crate::upload::Uploaded,
    repo_exists: bool,
) -> Result<CachedRef> {
    let r = &q.remote;
    let now = crate::now_iso();
    let mut packs = Vec::new();
    if up.objects > 0 {
        let p = PackRecord {
            repo: r.repo.clone(),
            sha256: up.sha256.clone(),
            size: up.size,
            objects: up.objects,
            parts: up.parts,
            prerequisites: negatives.to_vec(),
            tips: vec![tip.to_owned()],
        };
        r.put_record(
            PACK_NSID,
            &pack_rkey(&r.repo, &p.sha256),
            &p.to_value(&now),
            &Swap::Any,
        )
        .await?;
        packs.push(PackEntry {
            pack: p.sha256,
            tip: tip.to_owned(),
        });
    }
    if let Some(l) = landed {
        packs.extend(
            l.record
                .packs
                .iter()
                .filter(|e| e.pack != up.sha256)
                .cloned(),
        );
    }
    if !repo_exists {
        let rec = RepoRecord {
            name: r.repo.clone(),
            head: q.branch.clone(),
            object_format: "sha1".into(),
        };
        match r
            .put_record(REPO_NSID, &r.repo, &rec.to_value(&now), &Swap::Absent)
            .await
        {
            Ok(_) => {}
            Err(e) if invalid_swap(&e).is_some() => {}
            Err(e) => return Err(e),
        }
        q.chain.lock().await.repo_exists = true;
    }
    let record = RefRecord {
        repo: r.repo.clone(),
        name: q.branch.clone(),
        target: tip.to_owned(),
        previous: landed.map(|l| l.record.target.clone()),
        packs,
    };
    let swap = landed.map_or(Swap::Absent, |l| Swap::At(l.cid.clone()));
    let cid = r
        .put_record(
            REF_NSID,
            &ref_rkey(&r.repo, &q.branch),
            &record.to_value(),
            &swap,
        )
        .await?;
    core.stats.flushes.fetch_add(1, Ordering::Relaxed);
    Ok(CachedRef { cid, record })
}

/// Every in-flight link landed: each writer hears its commit.
async fn answer_all(core: &Core, q: &Queue) {
    let mut c = q.chain.lock().await;
    for e in c.in_flight.drain(..) {
        core.stats.landed.fetch_add(1, Ordering::Relaxed);
        if e.rebased {
            core.stats.rebased.fetch_add(1, Ordering::Relaxed);
        }
        let (tip, rebased) = (e.tip.clone(), e.rebased);
        e.answer(Reply::Landed { tip, rebased });
    }
}
