//! The pack list a ref write names, built from what was read last: at the
//! first attempt from the listing the push started from, and after a
//! failed swap (or each round of an atomic push) from the records read
//! again. A listing cached before a `knot compact` names packs that
//! compaction folded (and deletes after its grace); a write built from it
//! would undo the compaction for its ref, so a retry never reuses it.
//!
//! A new ref's objects are the new pack's plus everything its
//! prerequisites (the remote tips the pack was computed against) reach.
//! For each prerequisite the packs come from a record that reaches it: one
//! whose target is it, else one whose list has an entry with it as tip
//! (a compaction writes `{pack, target}`; a later push keeps that entry
//! after its own). Only when no record read reaches it (every ref that
//! held it moved elsewhere) do the packs of the first read stand.

use std::collections::{BTreeMap, HashSet};

use crate::error::{KnotError, RateLimit, Result};
use crate::git;
use serde_json::{Value, json};

use crate::names::ref_rkey;
use crate::records::{PackEntry, REF_NSID, RefRecord};
use crate::remote::Remote;
use crate::state::CachedRef;

/// The parts of a ref write that do not depend on what the remote holds
/// now: the new pack and the prerequisites with their first-read packs.
#[derive(Debug, Clone, Default)]
pub(crate) struct PackSet {
    /// The new pack's sha-256 (none when the push needs no objects).
    pub(crate) pack: Option<String>,
    /// Each prerequisite target with the packs the first read named for it.
    pub(crate) prereqs: Vec<(String, Vec<PackEntry>)>,
}

impl PackSet {
    /// The pack list for a ref moving to `new`, its prerequisites' packs
    /// taken from `records` (the freshest first) where one reaches them.
    pub(crate) fn entries<'a>(
        &self,
        new: &str,
        records: impl Iterator<Item = &'a CachedRef> + Clone,
    ) -> Vec<PackEntry> {
        let mut v = Vec::new();
        let mut seen = HashSet::new();
        if let Some(p) = &self.pack {
            seen.insert(p.clone());
            v.push(PackEntry {
                pack: p.clone(),
                tip: new.to_owned(),
            });
        }
        for (target, first) in &self.prereqs {
            let reaching = records
                .clone()
                .find(|r| &r.record.target == target)
                .or_else(|| {
                    records
                        .clone()
                        .find(|r| r.record.packs.iter().any(|e| &e.tip == target))
                });
            let packs = reaching.map_or(first.as_slice(), |r| r.record.packs.as_slice());
            v.extend(
                packs
                    .iter()
                    .filter(|e| seen.insert(e.pack.clone()))
                    .cloned(),
            );
        }
        v
    }

    /// [`PackSet::entries`] from the first read alone.
    pub(crate) fn first(&self, new: &str) -> Vec<PackEntry> {
        self.entries(new, std::iter::empty())
    }

    /// [`PackSet::entries`] from `current` (this ref, read again) and a
    /// listing of every ref.
    pub(crate) fn rebuilt(
        &self,
        new: &str,
        current: Option<&CachedRef>,
        listed: Option<&BTreeMap<String, CachedRef>>,
    ) -> Vec<PackEntry> {
        self.entries(
            new,
            current
                .into_iter()
                .chain(listed.into_iter().flat_map(|m| m.values())),
        )
    }
}

/// What the checks say of one ref against the remote's current target.
pub(crate) enum Verdict {
    Go,
    UpToDate,
    Reject(&'static str),
}

pub(crate) struct Plan {
    pub(crate) dst: String,
    pub(crate) new: Option<String>,
    pub(crate) force: bool,
    pub(crate) lease: Option<Option<String>>,
}

/// The check of `plan` against the remote's current target.
pub(crate) fn verdict(p: &Plan, current: Option<&str>) -> Result<Verdict> {
    if let Some(expected) = &p.lease
        && expected.as_deref() != current
    {
        return Ok(Verdict::Reject("stale info"));
    }
    let Some(new) = &p.new else {
        return Ok(if current.is_none() {
            Verdict::UpToDate
        } else {
            Verdict::Go
        });
    };
    if current == Some(new.as_str()) {
        return Ok(Verdict::UpToDate);
    }
    if p.lease.is_some() || p.force {
        return Ok(Verdict::Go);
    }
    let Some(cur) = current else {
        return Ok(Verdict::Go);
    };
    if p.dst.starts_with("refs/tags/") {
        return Ok(Verdict::Reject("already exists"));
    }
    if !git::have(&[cur])?[0] {
        return Ok(Verdict::Reject("fetch first"));
    }
    if !git::is_ancestor(cur, new)? {
        return Ok(Verdict::Reject("non-fast forward"));
    }
    Ok(Verdict::Go)
}

pub(crate) fn is_rate_limit(e: &KnotError) -> Option<RateLimit> {
    match e {
        KnotError::RateLimited { limit, .. } => Some((**limit).clone()),
        _ => None,
    }
}

pub(crate) fn invalid_swap(e: &KnotError) -> Option<&str> {
    match e {
        KnotError::Xrpc { error, message, .. } if error == "InvalidSwap" => Some(message),
        _ => None,
    }
}

pub(crate) enum RefResult {
    /// The record now (`None`: deleted) and the commit that wrote it.
    Landed(Option<CachedRef>, Option<String>),
    Rejected(&'static str),
    Limited(RateLimit),
    Failed(String),
}

/// Ref writes in one `applyWrites` (the reference PDS's limit).
pub(crate) const BATCH_WRITES: usize = 200;

/// Many ref writes at once: `applyWrites` of up to [`BATCH_WRITES`]
/// writes under `swapCommit`. The commit is read first and the refs
/// listed after it, so the checks made against the listing hold at that
/// commit or the swap fails; a failed swap reads both again and rebuilds
/// the batch (checks, `previous`, pack lists) from them. Each landed batch
/// carries its own records forward under the commit it made, so an
/// uncontended push of N refs costs one commit read, one listing and
/// N/200 writes. Results are in `plans`' order.
pub(crate) async fn batched(r: &Remote, plans: &[&Plan], set: &PackSet) -> Vec<RefResult> {
    let mut out: Vec<Option<RefResult>> = plans.iter().map(|_| None).collect();
    let mut view: Option<(String, BTreeMap<String, CachedRef>)> = None;
    for (c, chunk) in plans.chunks(BATCH_WRITES).enumerate() {
        let base = c * BATCH_WRITES;
        let mut rounds = 0;
        loop {
            rounds += 1;
            if rounds > 8 {
                for (k, _) in chunk.iter().enumerate() {
                    out[base + k] = Some(RefResult::Failed(
                        "the repository kept moving; try again".into(),
                    ));
                }
                break;
            }
            let (commit, refs) = match view.take() {
                Some(v) => v,
                None => {
                    let read = async {
                        Ok::<_, KnotError>((r.latest_commit().await?, r.list_refs().await?))
                    };
                    match read.await {
                        Ok(v) => v,
                        Err(e) => {
                            for (k, _) in chunk.iter().enumerate() {
                                out[base + k] = Some(fail(&e));
                            }
                            break;
                        }
                    }
                }
            };
            let mut writes = Vec::new();
            let mut pending: Vec<(usize, Option<RefRecord>)> = Vec::new();
            for (k, p) in chunk.iter().enumerate() {
                let cur = refs.get(&p.dst);
                match verdict(p, cur.map(|c| c.record.target.as_str())) {
                    Ok(Verdict::Go) => {}
                    Ok(Verdict::UpToDate) => {
                        out[base + k] = Some(RefResult::Landed(cur.cloned(), None));
                        continue;
                    }
                    Ok(Verdict::Reject(why)) => {
                        out[base + k] = Some(RefResult::Rejected(why));
                        continue;
                    }
                    Err(e) => {
                        out[base + k] = Some(RefResult::Failed(e.to_string()));
                        continue;
                    }
                }
                let (write, rec) = ref_write(&r.repo, p, cur, set, &refs);
                writes.push(write);
                pending.push((k, rec));
            }
            if pending.is_empty() {
                view = Some((commit, refs));
                break;
            }
            match r.apply_writes_commit(writes, &commit).await {
                Ok((cids, next)) => {
                    let mut refs = refs;
                    for ((k, rec), cid) in pending.into_iter().zip(cids) {
                        let p = chunk[k];
                        let landed = match (rec, cid) {
                            (Some(record), Some(cid)) => {
                                let c = CachedRef { cid, record };
                                refs.insert(p.dst.clone(), c.clone());
                                Some(c)
                            }
                            _ => {
                                refs.remove(&p.dst);
                                None
                            }
                        };
                        out[base + k] = Some(RefResult::Landed(landed, None));
                    }
                    // Without the new commit's CID the next batch reads again.
                    view = next.map(|n| (n, refs));
                    break;
                }
                Err(e) if invalid_swap(&e).is_some() => {
                    for (k, _) in &pending {
                        out[base + k] = None;
                    }
                }
                Err(e) => {
                    for (k, _) in &pending {
                        out[base + k] = Some(fail(&e));
                    }
                    if let RefResult::Limited(_) = fail(&e) {
                        // Nothing more lands under this limit.
                        for slot in out.iter_mut().skip(base + chunk.len()) {
                            *slot = Some(fail(&e));
                        }
                        return out
                            .into_iter()
                            .map(|o| o.unwrap_or(RefResult::Failed("not pushed".into())))
                            .collect();
                    }
                    break;
                }
            }
        }
    }
    out.into_iter()
        .map(|o| o.unwrap_or(RefResult::Failed("not pushed".into())))
        .collect()
}

fn fail(e: &KnotError) -> RefResult {
    match is_rate_limit(e) {
        Some(l) => RefResult::Limited(l),
        None => RefResult::Failed(e.to_string()),
    }
}

/// The `applyWrites` entry that moves `plan`'s ref from `current` (the ref
/// as read, `None` when the remote has none): a create or an update with
/// the record it lands, or a delete (no record). Built from what was read,
/// with the pack list from [`PackSet::rebuilt`], so a retry after a moved
/// commit rebuilds it; shared by the batched and the atomic pushes.
pub(crate) fn ref_write(
    repo: &str,
    plan: &Plan,
    current: Option<&CachedRef>,
    set: &PackSet,
    listed: &BTreeMap<String, CachedRef>,
) -> (Value, Option<RefRecord>) {
    let rkey = ref_rkey(repo, &plan.dst);
    match &plan.new {
        Some(new) => {
            let rec = RefRecord {
                repo: repo.to_owned(),
                name: plan.dst.clone(),
                target: new.clone(),
                previous: current.map(|c| c.record.target.clone()),
                packs: set.rebuilt(new, current, Some(listed)),
            };
            let kind = if current.is_some() {
                "update"
            } else {
                "create"
            };
            let write = json!({"$type": format!("com.atproto.repo.applyWrites#{kind}"),
                               "collection": REF_NSID, "rkey": rkey, "value": rec.to_value()});
            (write, Some(rec))
        }
        None => (
            json!({"$type": "com.atproto.repo.applyWrites#delete", "collection": REF_NSID, "rkey": rkey}),
            None,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::RefRecord;

    fn e(pack: &str, tip: &str) -> PackEntry {
        PackEntry {
            pack: pack.into(),
            tip: tip.into(),
        }
    }

    fn r(target: &str, packs: Vec<PackEntry>) -> CachedRef {
        CachedRef {
            cid: format!("cid-{target}"),
            record: RefRecord {
                repo: "r".into(),
                name: "refs/heads/main".into(),
                target: target.into(),
                previous: None,
                packs,
            },
        }
    }

    #[test]
    fn a_compaction_read_again_replaces_the_cached_packs() {
        let set = PackSet {
            pack: Some("new".into()),
            prereqs: vec![("t1".into(), vec![e("p2", "t1"), e("p1", "t0")])],
        };
        assert_eq!(
            set.first("t2"),
            vec![e("new", "t2"), e("p2", "t1"), e("p1", "t0")]
        );
        let compacted = r("t1", vec![e("c", "t1")]);
        assert_eq!(
            set.rebuilt("t2", Some(&compacted), None),
            vec![e("new", "t2"), e("c", "t1")]
        );
        // Another writer moved the ref on since: its list still reaches t1.
        let moved = r("t9", vec![e("p9", "t9"), e("c", "t1")]);
        assert_eq!(
            set.rebuilt("t2", Some(&moved), None),
            vec![e("new", "t2"), e("p9", "t9"), e("c", "t1")]
        );
        // Nothing read reaches t1: the first read's packs stand.
        let elsewhere = r("t8", vec![e("p8", "t8")]);
        assert_eq!(set.rebuilt("t2", Some(&elsewhere), None), set.first("t2"));
    }
}
