//! `knot compact <remote>`: folds the packs the refs name into one
//! deltified pack, as `git repack -adf` would, within a budget of write
//! points and uploads, resumable (issue 39, `docs/design/knot.md`: every pushed
//! pack is self-contained, so later pushes cannot delta against what the
//! PDS holds; compaction folds them back into one).
//!
//! Steps, each recorded in the state on disk (`state`) before the next:
//! 1. **Plan**: read the refs; the packs they name are downloaded into a
//!    scratch bare repository under the state directory (the fetch path's
//!    streaming and checks), and `git pack-objects --revs --no-reuse-delta
//!    --delta-base-offset` of every target writes the new pack to a file
//!    there (deltas computed afresh across all objects; the file, not a
//!    pipe, so a resumed run uploads the very same bytes).
//! 2. **Account** (`cost`): uploads and write points, printed before
//!    anything is written. A points budget smaller than the pack record
//!    plus one update per ref is refused before any upload (parts no
//!    record names would be wasted).
//! 3. **Upload** the missing parts from the file, a few in flight, up to
//!    the uploads budget; each part is recorded as it lands. A run out of
//!    budget stops here and the next run goes on from the first missing
//!    part.
//! 4. **Pack record** (`putRecord`), then **switch** each ref under
//!    `swapRecord` to `[{pack: new, tip: target}]`: the new pack holds
//!    every object reachable from the target it was made from. A failed
//!    swap re-reads the ref: at the same target (another writer rewrote
//!    the record, not the branch) it retries on the new CID; at another
//!    target (a push landed during the compaction) the ref is left as
//!    that push wrote it, so nothing is lost, and reported: its packs
//!    stay named and a later run folds them.
//! 5. **Retire**: folded packs no ref names any more are noted with the
//!    time; a run at least the grace period later (`--grace`, default
//!    600 s) re-reads the refs and deletes each pack record that still no
//!    ref names (its blobs are then unreferenced, for the PDS to drop).
//!    Readers that listed the refs before the switch finish their fetch
//!    within the grace period from the old packs, which still exist; and
//!    a push copies pack lists only from a listing younger than
//!    `crate::state::REFS_TTL_SECS` (below the default grace), so it
//!    never names a deleted pack.
//!
//! Limits: parts uploaded by an earlier run stay temporary blobs until the
//! pack record names them; a PDS that drops temporary blobs before the
//! resume refuses the pack record, and the plan starts again.

mod cost;
mod state;

pub use cost::Budget;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream;
use sha2::{Digest, Sha256};

use crate::error::{KnotError, Result};
use crate::names::{pack_rkey, ref_rkey};
use crate::push::invalid_swap;
use crate::records::{
    PACK_NSID, PART_MIME, PART_SIZE, PackEntry, PackRecord, Part, REF_NSID, RefRecord,
};
use crate::remote::{Remote, Swap};
use crate::state::{REFS_TTL_SECS, unix_now};
use cost::{Account, DELETE_POINTS, PUT_POINTS, Spent};
use state::{CompactState, DonePart, PlanState, Retired};

/// Options of one run.
#[derive(Debug, Clone)]
pub struct CompactOptions {
    /// Refs to fold (full names); empty: every ref.
    pub refs: Vec<String>,
    /// What the run may spend.
    pub budget: Budget,
    /// How long a retired pack stays before it is deleted.
    pub grace: Duration,
    /// Say what it would cost and write nothing.
    pub dry_run: bool,
    /// Uploads and downloads in flight.
    pub concurrency: usize,
}

impl Default for CompactOptions {
    fn default() -> Self {
        CompactOptions {
            refs: Vec::new(),
            budget: Budget::default(),
            grace: Duration::from_secs(600),
            dry_run: false,
            concurrency: crate::helper::CONCURRENCY,
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// Every ref already names one pack (retired packs may have been deleted).
    Nothing,
    /// The refs were switched (those a concurrent push moved are in `moved`).
    Done,
    /// `--dry-run`: the account was printed.
    DryRun,
    /// The uploads budget ran out: run again to go on.
    Stopped,
    /// The points budget cannot pay for the switch: nothing was written.
    Refused(String),
}

/// What a run did.
#[derive(Debug, Clone)]
pub struct Report {
    /// How it ended.
    pub ended: Ended,
    /// The plan's account (when there was a plan).
    pub account: Option<Account>,
    /// What it spent.
    pub spent: Spent,
    /// Refs switched to the new pack.
    pub switched: Vec<String>,
    /// Refs a concurrent push moved (left as the push wrote them).
    pub moved: Vec<String>,
    /// Pack records deleted.
    pub deleted: Vec<String>,
    /// Packs retired, waiting for the grace period.
    pub retired: Vec<String>,
}

fn gerr(cmd: &str, why: impl Into<String>) -> KnotError {
    KnotError::Git {
        cmd: cmd.to_owned(),
        why: why.into(),
    }
}

/// The scratch repository under `dir`.
pub fn scratch(dir: &Path) -> PathBuf {
    dir.join("scratch.git")
}

/// Creates `dir` and its scratch bare repository (the remote's warm
/// state, tokens included, lives in it, as in any clone).
pub fn prepare_dir(dir: &Path) -> Result<PathBuf> {
    let s = scratch(dir);
    if !s.join("HEAD").exists() {
        std::fs::create_dir_all(&s).map_err(|e| KnotError::io("compaction dir", e))?;
        git_in(&s, &["init", "-q", "--bare"])?;
    }
    Ok(s)
}

fn git_in(git_dir: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new("git")
        .env("GIT_DIR", git_dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| gerr(args.first().copied().unwrap_or("git"), e.to_string()))?;
    if !out.status.success() {
        return Err(gerr(
            &args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// One compaction of one remote, its state under `dir`.
pub struct Compactor {
    dir: PathBuf,
    opts: CompactOptions,
    st: CompactState,
    report: Report,
}

impl Compactor {
    /// Loads the state of `remote` under `dir` (made by [`prepare_dir`]).
    pub fn new(remote: &Remote, dir: &Path, opts: CompactOptions) -> Result<Compactor> {
        Ok(Compactor {
            dir: dir.to_owned(),
            opts,
            st: CompactState::load(dir, &remote.url)?,
            report: Report {
                ended: Ended::Nothing,
                account: None,
                spent: Spent::default(),
                switched: Vec::new(),
                moved: Vec::new(),
                deleted: Vec::new(),
                retired: Vec::new(),
            },
        })
    }

    /// The whole run: old retired packs, plan, account, uploads, switch,
    /// retire.
    pub async fn run(mut self, remote: &mut Remote) -> Result<Report> {
        if self.opts.grace.as_secs() <= REFS_TTL_SECS {
            eprintln!(
                "knot: warning: a grace period of {} s is not above the {REFS_TTL_SECS} s a helper trusts its listing of the refs: a push from an older listing may name a deleted pack",
                self.opts.grace.as_secs()
            );
        }
        self.delete_retired(remote).await?;
        if !self.plan(remote).await? {
            self.report.ended = Ended::Nothing;
            return Ok(self.report);
        }
        let account = self.account();
        eprintln!("{}", account.describe());
        if self.opts.dry_run {
            self.report.ended = Ended::DryRun;
            return Ok(self.report);
        }
        let left = self.opts.budget.points_left(&self.report.spent);
        if left < account.switch_points() {
            let why = format!(
                "the budget allows {left} write points and the switch needs {}: nothing written",
                account.switch_points()
            );
            eprintln!("knot: compaction refused: {why}");
            self.report.ended = Ended::Refused(why);
            return Ok(self.report);
        }
        if !self.upload(remote).await? {
            self.report.ended = Ended::Stopped;
            return Ok(self.report);
        }
        self.switch(remote).await?;
        self.delete_retired(remote).await?;
        self.report.ended = Ended::Done;
        Ok(self.report)
    }

    /// The account of the current plan.
    pub fn account(&self) -> Account {
        let Some(p) = &self.st.plan else {
            return Account::default();
        };
        Account {
            packs: p.folded.len(),
            size: p.size,
            objects: p.objects,
            parts: u32::try_from(p.parts.len()).unwrap_or(u32::MAX),
            parts_done: u32::try_from(p.parts.iter().flatten().count()).unwrap_or(u32::MAX),
            refs: u32::try_from(p.refs.len()).unwrap_or(u32::MAX),
            pack_written: p.pack_written,
        }
    }

    /// Makes (or keeps, when its refs have not moved) the plan; `false`
    /// when there is nothing to fold.
    pub async fn plan(&mut self, remote: &mut Remote) -> Result<bool> {
        let refs = remote.read_refs().await?;
        let chosen: Vec<(&String, &crate::state::CachedRef)> = if self.opts.refs.is_empty() {
            refs.iter().collect()
        } else {
            let mut v = Vec::new();
            for name in &self.opts.refs {
                let r = refs
                    .get_key_value(name)
                    .ok_or_else(|| KnotError::Protocol(format!("the remote has no ref {name}")))?;
                v.push(r);
            }
            v
        };
        let targets: BTreeMap<String, String> = chosen
            .iter()
            .map(|(n, r)| ((*n).clone(), r.record.target.clone()))
            .collect();
        if let Some(p) = &self.st.plan {
            if p.refs == targets {
                self.report.account = Some(self.account());
                return Ok(true);
            }
            // The refs moved since the plan was made: a new one.
            let _ = std::fs::remove_file(self.dir.join(&p.file));
            self.st.plan = None;
            self.st.save(&self.dir)?;
        }
        let mut folded: Vec<String> = Vec::new();
        let mut seen = HashSet::new();
        for (_, r) in &chosen {
            for e in &r.record.packs {
                if seen.insert(e.pack.clone()) {
                    folded.push(e.pack.clone());
                }
            }
        }
        let already_one = chosen
            .iter()
            .all(|(_, r)| r.record.packs.len() == 1 && folded.len() == 1);
        if chosen.is_empty() || folded.is_empty() || already_one {
            return Ok(false);
        }
        let scratch = prepare_dir(&self.dir)?;
        // Oldest first, as a fetch would.
        let ids: Vec<String> = folded.iter().rev().cloned().collect();
        crate::fetch::download(remote, &ids, self.opts.concurrency, false, Some(&scratch)).await?;
        let mut input = String::new();
        for t in targets.values() {
            input.push_str(t);
            input.push('\n');
        }
        let prefix = self.dir.join("pack");
        let hash = pack_objects(&scratch, &prefix, &input)?;
        let file = format!("pack-{hash}.pack");
        let _ = std::fs::remove_file(self.dir.join(format!("pack-{hash}.idx")));
        let (sha256, size, objects) = digest_file(&self.dir.join(&file))?;
        let n = usize::try_from(size.div_ceil(PART_SIZE as u64)).unwrap_or(usize::MAX);
        self.st.plan = Some(PlanState {
            refs: targets,
            folded,
            file,
            sha256,
            size,
            objects,
            parts: vec![None; n],
            pack_written: false,
        });
        self.st.save(&self.dir)?;
        self.report.account = Some(self.account());
        Ok(true)
    }

    /// Uploads the missing parts within the budget; `true` when none is
    /// missing any more.
    pub async fn upload(&mut self, remote: &Remote) -> Result<bool> {
        let Some(plan) = self.st.plan.clone() else {
            return Ok(false);
        };
        let allowed = self.opts.budget.uploads_left(&self.report.spent) as usize;
        let missing: Vec<usize> = plan
            .parts
            .iter()
            .enumerate()
            .filter(|(_, p)| p.is_none())
            .map(|(i, _)| i)
            .take(allowed)
            .collect();
        let path = self.dir.join(&plan.file);
        let mut results = stream::iter(missing.into_iter().map(|i| {
            let path = path.clone();
            async move {
                let bytes = read_part(&path, i)?;
                let size = bytes.len() as u64;
                let cid = remote
                    .auth
                    .with(|t| {
                        let b = bytes.clone();
                        async move { remote.pds.upload_blob(b, PART_MIME, &t).await }
                    })
                    .await?;
                Ok::<_, KnotError>((i, DonePart { cid, size }))
            }
        }))
        .buffer_unordered(self.opts.concurrency.max(1));
        while let Some(r) = results.next().await {
            let (i, part) = r?;
            self.report.spent.uploads += 1;
            if let Some(p) = self.st.plan.as_mut()
                && let Some(slot) = p.parts.get_mut(i)
            {
                *slot = Some(part);
            }
            self.st.save(&self.dir)?;
        }
        let left = self
            .st
            .plan
            .as_ref()
            .map_or(0, |p| p.parts.iter().filter(|x| x.is_none()).count());
        if left > 0 {
            eprintln!(
                "knot: compaction stopped: the uploads budget is spent, {left} part{} left; run it again to go on",
                if left == 1 { "" } else { "s" }
            );
        }
        Ok(left == 0)
    }

    /// Writes the pack record (unless written) and switches each ref.
    pub async fn switch(&mut self, remote: &mut Remote) -> Result<()> {
        let Some(plan) = self.st.plan.clone() else {
            return Ok(());
        };
        let parts: Vec<Part> = plan
            .parts
            .iter()
            .map(|p| {
                p.as_ref().map(|d| Part {
                    cid: d.cid.clone(),
                    size: d.size,
                })
            })
            .collect::<Option<_>>()
            .ok_or_else(|| KnotError::Protocol("a part is not uploaded yet".into()))?;
        let now = crate::now_iso();
        if !plan.pack_written {
            let rec = PackRecord {
                repo: remote.repo.clone(),
                sha256: plan.sha256.clone(),
                size: plan.size,
                objects: plan.objects,
                parts,
                prerequisites: Vec::new(),
                tips: plan
                    .refs
                    .values()
                    .cloned()
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect(),
            };
            remote
                .put_record(
                    PACK_NSID,
                    &pack_rkey(&remote.repo, &plan.sha256),
                    &rec.to_value(&now),
                    &Swap::Any,
                )
                .await?;
            self.report.spent.points += PUT_POINTS;
            if let Some(p) = self.st.plan.as_mut() {
                p.pack_written = true;
            }
            self.st.save(&self.dir)?;
        }
        for (name, target) in &plan.refs {
            if self.switch_ref(remote, &plan.sha256, name, target).await? {
                self.report.switched.push(name.clone());
            } else {
                self.report.moved.push(name.clone());
                eprintln!(
                    "knot: {name} moved during the compaction: left as the push wrote it (its packs stay; run compact again to fold them)"
                );
            }
        }
        // Folded packs no ref names now are retired.
        let refs = remote.read_refs().await?;
        let named: HashSet<&str> = refs
            .values()
            .flat_map(|r| r.record.packs.iter().map(|e| e.pack.as_str()))
            .collect();
        let at = unix_now();
        for id in &plan.folded {
            if !named.contains(id.as_str()) && !self.st.retired.iter().any(|r| &r.pack == id) {
                self.st.retired.push(Retired {
                    pack: id.clone(),
                    at,
                });
                self.report.retired.push(id.clone());
            }
        }
        let _ = std::fs::remove_file(self.dir.join(&plan.file));
        self.st.plan = None;
        self.st.save(&self.dir)
    }

    /// One ref's switch under compare-and-swap; `false` when a push moved it.
    async fn switch_ref(
        &mut self,
        remote: &mut Remote,
        pack: &str,
        name: &str,
        target: &str,
    ) -> Result<bool> {
        let rkey = ref_rkey(&remote.repo, name);
        for _ in 0..8 {
            let Some(cur) = remote.read_ref(name).await? else {
                return Ok(false);
            };
            if cur.record.target != target {
                return Ok(false);
            }
            if cur.record.packs.len() == 1 && cur.record.packs[0].pack == pack {
                return Ok(true);
            }
            let rec = RefRecord {
                packs: vec![PackEntry {
                    pack: pack.to_owned(),
                    tip: target.to_owned(),
                }],
                ..cur.record.clone()
            };
            match remote
                .put_record(REF_NSID, &rkey, &rec.to_value(), &Swap::At(cur.cid.clone()))
                .await
            {
                Ok(cid) => {
                    self.report.spent.points += PUT_POINTS;
                    if let Some(c) = remote.state.refs.as_mut() {
                        c.insert(
                            name.to_owned(),
                            crate::state::CachedRef { cid, record: rec },
                        );
                    }
                    return Ok(true);
                }
                // Moved between the read and the write: read again.
                Err(e) if invalid_swap(&e).is_some() => {}
                Err(e) => return Err(e),
            }
        }
        Ok(false)
    }

    /// Deletes retired packs past the grace period that no ref names,
    /// within the points budget.
    pub async fn delete_retired(&mut self, remote: &mut Remote) -> Result<()> {
        let now = unix_now();
        let due: Vec<Retired> = self
            .st
            .retired
            .iter()
            .filter(|r| r.at + self.opts.grace.as_secs() <= now)
            .cloned()
            .collect();
        if due.is_empty() || self.opts.dry_run {
            return Ok(());
        }
        let refs = remote.read_refs().await?;
        let named: HashSet<&str> = refs
            .values()
            .flat_map(|r| r.record.packs.iter().map(|e| e.pack.as_str()))
            .collect();
        for r in due {
            if named.contains(r.pack.as_str()) {
                // Named again (a push that built on it): not garbage.
                self.st.retired.retain(|x| x.pack != r.pack);
                self.st.save(&self.dir)?;
                continue;
            }
            if self.opts.budget.points_left(&self.report.spent) < DELETE_POINTS {
                eprintln!("knot: the points budget is spent: old packs are deleted by a later run");
                break;
            }
            match remote
                .delete_record(PACK_NSID, &pack_rkey(&remote.repo, &r.pack), None)
                .await
            {
                Ok(()) => {
                    self.report.spent.points += DELETE_POINTS;
                    self.report.deleted.push(r.pack.clone());
                }
                Err(e) if e.xrpc_name() == Some("RecordNotFound") => {}
                Err(e) => return Err(e),
            }
            self.st.retired.retain(|x| x.pack != r.pack);
            self.st.save(&self.dir)?;
        }
        Ok(())
    }
}

/// `git pack-objects` of `targets` (one per line) in `scratch`, written to
/// `<prefix>-<hash>.pack`; returns the hash git printed.
fn pack_objects(scratch: &Path, prefix: &Path, targets: &str) -> Result<String> {
    use std::io::Write;
    let mut child = Command::new("git")
        .env("GIT_DIR", scratch)
        .args([
            "pack-objects",
            "--revs",
            "--no-reuse-delta",
            "--delta-base-offset",
            "-q",
        ])
        .arg(prefix)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| gerr("pack-objects", e.to_string()))?;
    let mut stdin = child
        .stdin
        .take()
        .ok_or_else(|| gerr("pack-objects", "no stdin"))?;
    let input = targets.to_owned();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child
        .wait_with_output()
        .map_err(|e| gerr("pack-objects", e.to_string()))?;
    let _ = writer.join();
    if !out.status.success() {
        return Err(gerr(
            "pack-objects",
            String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        ));
    }
    let hash = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if hash.len() != 40 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(gerr(
            "pack-objects",
            format!("printed {hash:?}, not a pack name"),
        ));
    }
    Ok(hash)
}

/// sha-256 (hex), size and object count of the pack file at `path`, read
/// in 1 MiB blocks.
fn digest_file(path: &Path) -> Result<(String, u64, u64)> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| KnotError::io("new pack", e))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut size = 0u64;
    let mut header = [0u8; 12];
    loop {
        let n = f.read(&mut buf).map_err(|e| KnotError::io("new pack", e))?;
        if n == 0 {
            break;
        }
        if size == 0 {
            if n < 12 || &buf[..4] != b"PACK" {
                return Err(gerr("pack-objects", "the file is not a pack"));
            }
            header.copy_from_slice(&buf[..12]);
        }
        h.update(&buf[..n]);
        size += n as u64;
    }
    let objects = u64::from(u32::from_be_bytes([
        header[8], header[9], header[10], header[11],
    ]));
    Ok((data_encoding::HEXLOWER.encode(&h.finalize()), size, objects))
}

/// Part `i` (4 MiB, the last shorter) of the file at `path`.
fn read_part(path: &Path, i: usize) -> Result<Bytes> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path).map_err(|e| KnotError::io("new pack", e))?;
    f.seek(SeekFrom::Start((i * PART_SIZE) as u64))
        .map_err(|e| KnotError::io("new pack", e))?;
    let mut buf = Vec::with_capacity(PART_SIZE);
    f.take(PART_SIZE as u64)
        .read_to_end(&mut buf)
        .map_err(|e| KnotError::io("new pack", e))?;
    if buf.is_empty() {
        return Err(KnotError::Protocol(format!(
            "part {i} is past the pack's end"
        )));
    }
    Ok(Bytes::from(buf))
}
