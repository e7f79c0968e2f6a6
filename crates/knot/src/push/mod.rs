//! `push`: the fast-forward checks git cannot make, the pack streamed into
//! blob parts (`upload.rs`), the pack record, then each ref record under
//! compare-and-swap (or, with `--atomic`, every write in one `applyWrites`
//! guarded by `swapCommit`). A failed swap re-reads the ref, checks again
//! and retries without uploading again. Write points are announced before
//! anything is written, and a push costing more than the PDS's last answer
//! said remains is refused then (`budget.rs`); a rate limit met anyway
//! keeps what landed and names the rest.
//!
//! `plan.rs` holds the batch's types (a leaf), `budget.rs` the cost line
//! and the refusal, `atomic.rs` the `--atomic` landing; the checks and the ref writes' pack lists are `land.rs`'s.

use std::collections::{BTreeMap, HashSet};

use futures_util::StreamExt;

use crate::error::{KnotError, Result};
use crate::git;
use crate::land::PackSet;
use crate::names::{pack_rkey, ref_rkey};
use crate::records::{
    PACK_NSID, PackEntry, PackRecord, REF_NSID, REPO_NSID, RefRecord, RepoRecord,
};
use crate::remote::{Remote, Swap, swap_from_message};
use crate::state::{CachedRef, CachedRepo, LastCommit};
use crate::upload::{Uploaded, pack_and_upload};
use budget::Cost;

mod atomic;
mod budget;
mod plan;

pub(crate) use crate::land::{Plan, RefResult, Verdict, invalid_swap, is_rate_limit, verdict};
pub use budget::ref_list;
pub use plan::{PushCmd, PushOptions, PushOutcome, REF_WRITES_IN_FLIGHT};

/// Pushes the batch.
pub async fn push(
    remote: &mut Remote,
    cmds: Vec<PushCmd>,
    opts: &PushOptions,
) -> Result<PushOutcome> {
    // Listed again when older than the refs' time to live: the pack lists
    // copied from it must not name packs a compaction deleted since.
    let refs = match remote.state.fresh_refs().cloned() {
        Some(r) => r,
        None => remote.read_refs().await?,
    };
    let repo = match remote.state.repo.clone() {
        Some(r) => r,
        None => remote.read_repo().await?,
    };
    let mut out = PushOutcome::default();
    let mut plans: Vec<(usize, Plan)> = Vec::new();
    let mut status: Vec<Option<std::result::Result<(), String>>> = vec![None; cmds.len()];
    // Every source resolved in one git process, whatever their number.
    let srcs: Vec<&str> = cmds.iter().filter_map(|c| c.src.as_deref()).collect();
    let mut resolved = git::rev_parse_many(&srcs)?.into_iter();
    for (i, c) in cmds.iter().enumerate() {
        let new = match &c.src {
            Some(_) => match resolved.next() {
                Some(Ok(o)) => Some(o),
                Some(Err(e)) => {
                    status[i] = Some(Err(e.to_string()));
                    continue;
                }
                None => return Err(KnotError::Protocol("a source left unresolved".into())),
            },
            None => None,
        };
        let plan = Plan {
            dst: c.dst.clone(),
            new,
            force: c.force,
            lease: opts.cas.get(&c.dst).cloned(),
        };
        let current = refs.get(&c.dst).map(|r| r.record.target.as_str());
        match verdict(&plan, current)? {
            Verdict::Go => plans.push((i, plan)),
            Verdict::UpToDate => status[i] = Some(Ok(())),
            Verdict::Reject(why) => status[i] = Some(Err(why.to_owned())),
        }
    }
    let finish = |status: Vec<Option<std::result::Result<(), String>>>, out: &mut PushOutcome| {
        out.statuses = cmds
            .iter()
            .zip(status)
            .map(|(c, s)| (c.dst.clone(), s.unwrap_or_else(|| Err("not pushed".into()))))
            .collect();
    };
    if opts.atomic && status.iter().any(|s| matches!(s, Some(Err(_)))) {
        for (i, _) in &plans {
            status[*i] = Some(Err("atomic push failed".into()));
        }
        finish(status, &mut out);
        return Ok(out);
    }
    if plans.is_empty() {
        finish(status, &mut out);
        return Ok(out);
    }

    // Objects: every new target minus what the remote's refs reach.
    let remote_targets: Vec<&str> = refs.values().map(|r| r.record.target.as_str()).collect();
    let present = git::have(&remote_targets)?;
    let positives: Vec<String> = {
        let mut seen = HashSet::new();
        plans
            .iter()
            .filter_map(|(_, p)| p.new.clone())
            .filter(|n| seen.insert(n.clone()))
            .collect()
    };
    let needs_pack = positives
        .iter()
        .any(|p| !remote_targets.contains(&p.as_str()));
    // Negatives: the remote tips the new targets build on (all present
    // ones when the check would take too many git calls).
    let candidates: Vec<&CachedRef> = refs
        .values()
        .zip(&present)
        .filter(|(_, h)| **h)
        .map(|(r, _)| r)
        .collect();
    let few = candidates.len() * positives.len() <= 64;
    let mut base: Vec<&CachedRef> = Vec::new();
    for r in candidates {
        if !few
            || positives
                .iter()
                .any(|p| git::is_ancestor(&r.record.target, p).unwrap_or(false))
        {
            base.push(r);
        }
    }
    let negatives: Vec<String> = {
        let mut seen = HashSet::new();
        base.iter()
            .map(|r| r.record.target.clone())
            .filter(|t| seen.insert(t.clone()))
            .collect()
    };

    // Write points, announced before anything is written.
    let creates_repo = repo.head.is_none() && plans.iter().any(|(_, p)| p.new.is_some());
    // One ref moving on from the record this helper wrote last, in the
    // account's commit it is still at: the pack record and the ref go in
    // one applyWrites under swapCommit (one request instead of two).
    let one_request = match (plans.as_slice(), &remote.state.last_commit) {
        ([(_, p)], Some(lc)) => {
            !opts.atomic
                && needs_pack
                && !creates_repo
                && p.new.is_some()
                && lc.name == p.dst
                && refs.contains_key(&p.dst)
        }
        _ => false,
    };
    let mut cost = Cost::default();
    // Many refs go in applyWrites batches (land.rs), where a create costs 3.
    let batch = !opts.atomic && plans.len() > REF_WRITES_IN_FLIGHT;
    let (c_cost, u_cost) = if opts.atomic || batch { (3, 2) } else { (2, 2) };
    if needs_pack {
        cost.fixed
            .push(("pack", if one_request || opts.atomic { 3 } else { 2 }));
    }
    if creates_repo {
        cost.fixed
            .push(("repository", if opts.atomic { 3 } else { 2 }));
    }
    for (_, p) in &plans {
        let (what, c) = match (&p.new, refs.contains_key(&p.dst)) {
            (None, _) => ("delete", 1),
            (Some(_), true) => ("update", u_cost),
            (Some(_), false) => ("create", c_cost),
        };
        cost.refs.push((what, p.dst.clone(), c));
    }
    let points = cost.points();
    out.points = points;
    // One line: counts per kind; every ref under KNOT_TRACE=1.
    eprintln!(
        "knot: this push {} {points} write point{} ({}){}",
        if opts.dry_run {
            "would cost"
        } else {
            "costs at most"
        },
        if points == 1 { "" } else { "s" },
        cost.describe(crate::trace::on()),
        if opts.atomic {
            " in one applyWrites"
        } else {
            ""
        }
    );
    // Refused before anything is written when the PDS said less remains.
    if let Some(why) = cost.refusal(remote.pds.write_allowance()) {
        eprintln!("{why}");
        if !opts.dry_run {
            for (i, _) in &plans {
                status[*i] = Some(Err("would exceed the PDS's rate limit".into()));
            }
            finish(status, &mut out);
            return Ok(out);
        }
    }
    if opts.dry_run {
        for (i, _) in &plans {
            status[*i] = Some(Ok(()));
        }
        finish(status, &mut out);
        return Ok(out);
    }

    let uploaded = if needs_pack {
        match pack_and_upload(
            &remote.pds,
            remote.auth.clone(),
            &positives,
            &negatives,
            opts.concurrency,
            opts.progress,
        )
        .await
        {
            Ok(u) => u,
            Err(e) => {
                if let Some(l) = is_rate_limit(&e) {
                    out.rate_limited = Some(l);
                    finish(status, &mut out);
                    return Ok(out);
                }
                return Err(e);
            }
        }
    } else {
        Uploaded {
            sha256: String::new(),
            size: 0,
            objects: 0,
            parts: Vec::new(),
        }
    };
    let pack = (uploaded.objects > 0).then(|| PackRecord {
        repo: remote.repo.clone(),
        sha256: uploaded.sha256.clone(),
        size: uploaded.size,
        objects: uploaded.objects,
        parts: uploaded.parts.clone(),
        prerequisites: negatives.clone(),
        tips: positives.clone(),
    });
    // Every updated ref: this pack, then what the tips it builds on need
    // (rebuilt from the records read again when a swap fails: land.rs).
    let set = PackSet {
        pack: pack.as_ref().map(|p| p.sha256.clone()),
        prereqs: {
            let mut seen = HashSet::new();
            base.iter()
                .filter(|r| seen.insert(r.record.target.clone()))
                .map(|r| (r.record.target.clone(), r.record.packs.clone()))
                .collect()
        },
    };
    let entries_for = |new: &str| set.first(new);
    let now = crate::now_iso();
    let head_choice = || -> String {
        let pushed: Vec<&str> = plans
            .iter()
            .filter(|(_, p)| p.new.is_some())
            .map(|(_, p)| p.dst.as_str())
            .collect();
        let local = git::local_head();
        if pushed.contains(&"refs/heads/main") {
            "refs/heads/main".into()
        } else if let Some(l) = local.filter(|l| pushed.contains(&l.as_str())) {
            l
        } else {
            pushed
                .iter()
                .find(|d| d.starts_with("refs/heads/"))
                .or(pushed.first())
                .map_or("refs/heads/main".into(), |s| (*s).to_owned())
        }
    };

    if opts.atomic {
        remote.state.last_commit = None;
        atomic::atomic(
            remote,
            &plans,
            &mut status,
            pack.as_ref(),
            &set,
            creates_repo.then(head_choice),
            &now,
            &mut out,
        )
        .await?;
        finish(status, &mut out);
        return Ok(out);
    }

    if one_request && let (Some(p), [(i, plan)]) = (&pack, plans.as_slice()) {
        match one_write(remote, p, plan, refs.get(&plan.dst), &entries_for, &now).await {
            Ok(true) => {
                status[*i] = Some(Ok(()));
                finish(status, &mut out);
                return Ok(out);
            }
            Ok(false) => {}
            Err(e) => {
                if let Some(l) = is_rate_limit(&e) {
                    out.rate_limited = Some(l);
                    finish(status, &mut out);
                    return Ok(out);
                }
                return Err(e);
            }
        }
    }
    remote.state.last_commit = None;
    if let Some(p) = &pack
        && let Err(e) = remote
            .put_record(
                PACK_NSID,
                &pack_rkey(&remote.repo, &p.sha256),
                &p.to_value(&now),
                &Swap::Any,
            )
            .await
    {
        if let Some(l) = is_rate_limit(&e) {
            out.rate_limited = Some(l);
            finish(status, &mut out);
            return Ok(out);
        }
        return Err(e);
    }
    if creates_repo {
        let rec = RepoRecord {
            name: remote.repo.clone(),
            head: head_choice(),
            object_format: "sha1".into(),
        };
        match remote
            .put_record(REPO_NSID, &remote.repo, &rec.to_value(&now), &Swap::Absent)
            .await
        {
            Ok(_) => {
                remote.state.repo = Some(CachedRepo {
                    head: Some(rec.head),
                })
            }
            Err(e) if invalid_swap(&e).is_some() => {
                remote.read_repo().await?;
            }
            Err(e) => {
                if let Some(l) = is_rate_limit(&e) {
                    out.rate_limited = Some(l);
                    finish(status, &mut out);
                    return Ok(out);
                }
                return Err(e);
            }
        }
    }

    let r: &Remote = remote;
    // Read once for the whole batch, when a first swap fails.
    let listed = tokio::sync::OnceCell::new();
    let (set, listed) = (&set, &listed);
    // At most REF_WRITES_IN_FLIGHT at once, in the batch's order; more
    // refs than that in applyWrites batches.
    let results: Vec<RefResult> = if batch {
        let ps: Vec<&Plan> = plans.iter().map(|(_, p)| p).collect();
        crate::land::batched(r, &ps, set).await
    } else {
        futures_util::stream::iter(plans.iter().map(|(_, p)| {
            let cached = refs.get(&p.dst).cloned();
            async move { write_ref(r, p, cached, set, listed).await }
        }))
        .buffered(REF_WRITES_IN_FLIGHT)
        .collect()
        .await
    };
    let single = plans.len() == 1;
    let mut last = None;
    let cache = remote.state.refs.get_or_insert_with(BTreeMap::new);
    for ((i, p), res) in plans.iter().zip(results) {
        status[*i] = Some(match res {
            RefResult::Landed(Some(c), commit) => {
                cache.insert(p.dst.clone(), c);
                last = commit.filter(|_| single).map(|commit| LastCommit {
                    commit,
                    name: p.dst.clone(),
                });
                Ok(())
            }
            RefResult::Landed(None, _) => {
                cache.remove(&p.dst);
                Ok(())
            }
            RefResult::Rejected(why) => Err(why.to_owned()),
            RefResult::Limited(l) => {
                let msg = format!("rate limited; push again {}", l.when());
                out.rate_limited = Some(l);
                Err(msg)
            }
            RefResult::Failed(why) => Err(why),
        });
    }
    remote.state.last_commit = last;
    finish(status, &mut out);
    Ok(out)
}

/// The pack record and `plan`'s ref in one `applyWrites` under the
/// commit this helper's last write of that ref made: `Ok(false)` when
/// the account moved since (or the server refused the pair), and the
/// caller writes them one by one, each under its own swap.
async fn one_write(
    remote: &mut Remote,
    pack: &PackRecord,
    plan: &Plan,
    cached: Option<&CachedRef>,
    entries_for: &dyn Fn(&str) -> Vec<PackEntry>,
    now: &str,
) -> Result<bool> {
    let (Some(lc), Some(cached), Some(new)) = (remote.state.last_commit.clone(), cached, &plan.new)
    else {
        return Ok(false);
    };
    let rec = RefRecord {
        repo: remote.repo.clone(),
        name: plan.dst.clone(),
        target: new.clone(),
        previous: Some(cached.record.target.clone()),
        packs: entries_for(new),
    };
    let writes = vec![
        serde_json::json!({"$type": "com.atproto.repo.applyWrites#create", "collection": PACK_NSID,
                           "rkey": pack_rkey(&remote.repo, &pack.sha256), "value": pack.to_value(now)}),
        serde_json::json!({"$type": "com.atproto.repo.applyWrites#update", "collection": REF_NSID,
                           "rkey": ref_rkey(&remote.repo, &plan.dst), "value": rec.to_value()}),
    ];
    match remote.apply_writes_commit(writes, &lc.commit).await {
        Ok((cids, commit)) => {
            let Some(Some(cid)) = cids.into_iter().nth(1) else {
                return Err(KnotError::bad(
                    "com.atproto.repo.applyWrites",
                    "no CID for the ref's update",
                ));
            };
            remote
                .state
                .refs
                .get_or_insert_with(BTreeMap::new)
                .insert(plan.dst.clone(), CachedRef { cid, record: rec });
            remote.state.last_commit = commit.map(|commit| LastCommit {
                commit,
                name: plan.dst.clone(),
            });
            Ok(true)
        }
        // The commit moved (InvalidSwap), or the pack record exists already.
        Err(KnotError::Xrpc { status: 400, .. }) => {
            remote.state.last_commit = None;
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// One ref's compare-and-swap, retried after failed swaps. Each retry
/// rebuilds the whole record from what it read again: the swap CID, the
/// `previous` target and the pack list (`land.rs`), never the first
/// read's.
async fn write_ref(
    r: &Remote,
    p: &Plan,
    cached: Option<CachedRef>,
    set: &PackSet,
    listed: &tokio::sync::OnceCell<Option<BTreeMap<String, CachedRef>>>,
) -> RefResult {
    let rkey = ref_rkey(&r.repo, &p.dst);
    let mut current = cached;
    let mut reread = false;
    for _ in 0..8 {
        let swap_cid = current.as_ref().map(|c| c.cid.clone());
        let result = match &p.new {
            Some(new) => {
                let packs = if reread {
                    let listed = listed
                        .get_or_init(|| async { r.list_refs().await.ok() })
                        .await;
                    set.rebuilt(new, current.as_ref(), listed.as_ref())
                } else {
                    set.first(new)
                };
                let rec = RefRecord {
                    repo: r.repo.clone(),
                    name: p.dst.clone(),
                    target: new.clone(),
                    previous: current.as_ref().map(|c| c.record.target.clone()),
                    packs,
                };
                let swap = swap_cid.map_or(Swap::Absent, Swap::At);
                r.put_record_commit(REF_NSID, &rkey, &rec.to_value(), &swap)
                    .await
                    .map(|(cid, commit)| (Some(CachedRef { cid, record: rec }), commit))
            }
            _ => match &swap_cid {
                Some(c) => r
                    .delete_record(REF_NSID, &rkey, Some(c))
                    .await
                    .map(|()| (None, None)),
                None => return RefResult::Landed(None, None),
            },
        };
        let e = match result {
            Ok((c, commit)) => return RefResult::Landed(c, commit),
            Err(e) => e,
        };
        if let Some(l) = is_rate_limit(&e) {
            return RefResult::Limited(l);
        }
        let Some(message) = invalid_swap(&e) else {
            return RefResult::Failed(e.to_string());
        };
        // The message names what the record was ("Record was at <cid>" or
        // "... at null", the reference PDS's wording and atpds's). No
        // record: the checks need no target, so no re-read. Otherwise the
        // ref is read again, forced writes included: the record written
        // next names the target it replaces as `previous`, and a CID does
        // not say which target that is (the cached one is stale).
        let seen = swap_from_message(message);
        reread = true;
        current = match seen {
            Some(None) => None,
            _ => match r.read_ref(&p.dst).await {
                Ok(c) => c,
                Err(e) => return RefResult::Failed(e.to_string()),
            },
        };
        match verdict(p, current.as_ref().map(|c| c.record.target.as_str())) {
            Ok(Verdict::Go) => {}
            Ok(Verdict::UpToDate) => return RefResult::Landed(current, None),
            Ok(Verdict::Reject(why)) => return RefResult::Rejected(why),
            Err(e) => return RefResult::Failed(e.to_string()),
        }
    }
    RefResult::Failed("the ref kept moving; try again".into())
}
