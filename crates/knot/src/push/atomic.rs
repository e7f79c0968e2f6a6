//! `--atomic` pushes: the current commit, the refs as of it, and every
//! write (the pack record, a new repository record, each ref) in one
//! `applyWrites` guarded by `swapCommit`; a moved commit starts over
//! without uploading again. The checks and the pack lists are `land.rs`'s,
//! as for the other pushes; each round's lists come from that round's
//! listing.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::error::Result;
use crate::land::{PackSet, Plan, Verdict, invalid_swap, is_rate_limit, ref_write, verdict};
use crate::names::pack_rkey;
use crate::records::{PACK_NSID, PackRecord, REPO_NSID, RefRecord, RepoRecord};
use crate::remote::Remote;
use crate::state::{CachedRef, CachedRepo};

use super::plan::PushOutcome;

/// `--atomic`: the current commit, the refs as of it, one `applyWrites`
/// under `swapCommit`; a moved commit starts over (without uploading again).
#[allow(clippy::too_many_arguments)]
pub(crate) async fn atomic(
    remote: &mut Remote,
    plans: &[(usize, Plan)],
    status: &mut [Option<std::result::Result<(), String>>],
    pack: Option<&PackRecord>,
    set: &PackSet,
    head: Option<String>,
    now: &str,
    out: &mut PushOutcome,
) -> Result<()> {
    let mut with_pack = pack.is_some();
    for _ in 0..8 {
        let commit = remote.latest_commit().await?;
        let refs = remote.read_refs().await?;
        let repo = remote.read_repo().await?;
        let mut writes: Vec<Value> = Vec::new();
        let mut landed: Vec<(usize, String, Option<RefRecord>)> = Vec::new();
        if let (true, Some(p)) = (with_pack, pack) {
            writes.push(json!({"$type": "com.atproto.repo.applyWrites#create", "collection": PACK_NSID,
                               "rkey": pack_rkey(&remote.repo, &p.sha256), "value": p.to_value(now)}));
        }
        if let (Some(h), None) = (&head, &repo.head) {
            let rec = RepoRecord {
                name: remote.repo.clone(),
                head: h.clone(),
                object_format: "sha1".into(),
            };
            writes.push(
                json!({"$type": "com.atproto.repo.applyWrites#create", "collection": REPO_NSID,
                               "rkey": remote.repo, "value": rec.to_value(now)}),
            );
        }
        let first_ref = writes.len();
        let mut rejected = None;
        for (i, p) in plans {
            let cur = refs.get(&p.dst);
            match verdict(p, cur.map(|c| c.record.target.as_str()))? {
                Verdict::Reject(why) => {
                    rejected = Some((*i, why));
                    break;
                }
                Verdict::UpToDate => status[*i] = Some(Ok(())),
                Verdict::Go => {
                    let (write, rec) = ref_write(&remote.repo, p, cur, set, &refs);
                    writes.push(write);
                    landed.push((*i, p.dst.clone(), rec));
                }
            }
        }
        if let Some((ri, why)) = rejected {
            for (i, _) in plans {
                status[*i] = Some(Err(if *i == ri {
                    why.to_owned()
                } else {
                    "atomic push failed".to_owned()
                }));
            }
            return Ok(());
        }
        if landed.is_empty() {
            return Ok(());
        }
        match remote.apply_writes(writes, &commit).await {
            Ok(cids) => {
                if head.is_some() && repo.head.is_none() {
                    remote.state.repo = Some(CachedRepo { head: head.clone() });
                }
                let cache = remote.state.refs.get_or_insert_with(BTreeMap::new);
                for ((i, dst, rec), cid) in landed.into_iter().zip(cids.into_iter().skip(first_ref))
                {
                    match (rec, cid) {
                        (Some(record), Some(cid)) => {
                            cache.insert(dst, CachedRef { cid, record });
                        }
                        _ => {
                            cache.remove(&dst);
                        }
                    }
                    status[i] = Some(Ok(()));
                }
                return Ok(());
            }
            Err(e) if invalid_swap(&e).is_some() => continue,
            Err(e) if with_pack && e.to_string().contains("already exists") => {
                // The same pack was pushed before: its record stands.
                with_pack = false;
                continue;
            }
            Err(e) => {
                if let Some(l) = is_rate_limit(&e) {
                    let msg = format!("rate limited; push again {}", l.when());
                    out.rate_limited = Some(l);
                    for (i, _) in plans {
                        if status[*i].is_none() {
                            status[*i] = Some(Err(msg.clone()));
                        }
                    }
                    return Ok(());
                }
                return Err(e);
            }
        }
    }
    for (i, _) in plans {
        status[*i] = Some(Err("the repository kept moving; try again".into()));
    }
    Ok(())
}
