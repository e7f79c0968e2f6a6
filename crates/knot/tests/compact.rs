//! `knot compact` with real git against an in-process atpds: N packs
//! folded into one (clone after it equal, `git fsck`, old pack records
//! deleted), a push racing the compaction (not lost), a run stopped by
//! its uploads budget and resumed without uploading a part twice, and a
//! points budget too small for the switch (refused, nothing written).

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use knot::Credentials;
use knot::Remote;
use knot::compact::Budget;
use knot::compact::{CompactOptions, Compactor, prepare_dir};
use knot::records::{PACK_NSID, REF_NSID};
use support::{PASSWORD, Pds, Sandbox, signed_in, stderr, url};

fn knot(sb: &Sandbox, dir: &Path, args: &[&str]) -> Output {
    let c = sb.cmd(dir, &[]);
    let mut k = std::process::Command::new(env!("CARGO_BIN_EXE_knot"));
    k.current_dir(dir).args(args);
    for (key, v) in c.get_envs() {
        match v {
            Some(v) => k.env(key, v),
            None => k.env_remove(key),
        };
    }
    k.output().unwrap()
}

/// One account's repository `proj` on a fresh atpds, and a sandbox
/// signed in as it.
struct Proj {
    sb: Sandbox,
    did: String,
    /// The remote URL of `proj`.
    u: String,
    pds: Pds,
}

impl Proj {
    fn new(handle: &str) -> Proj {
        let (pds, did, sb) = signed_in(handle);
        let u = url(&pds.url, &did, "proj");
        Proj { sb, did, u, pds }
    }

    /// A writer `a` with `n` one-commit pushes on main (n packs) and a
    /// branch.
    fn history(&self, n: usize) -> PathBuf {
        let sb = &self.sb;
        let a = sb.init("a");
        sb.git(&a, &["remote", "add", "origin", &self.u]);
        for i in 0..n {
            sb.commit(&a, "log.txt", &format!("line {i}\n").repeat(i + 1));
            sb.git(&a, &["push", "-q", "origin", "main"]);
        }
        sb.git(&a, &["push", "-q", "origin", "main:refs/heads/topic"]);
        a
    }

    /// `knot compact origin <flags> --dir <dir>` in `a`.
    fn compact(&self, a: &Path, dir: &Path, flags: &[&str]) -> Output {
        let mut args = vec!["compact", "origin"];
        args.extend_from_slice(flags);
        args.extend(["--dir", dir.to_str().unwrap()]);
        knot(&self.sb, a, &args)
    }

    /// The packs ref `name`'s record lists.
    fn packs(&self, name: &str) -> Vec<String> {
        let rkey = format!("proj:{}", name.replace('/', ":"));
        let rec = self
            .pds
            .record(&self.did, REF_NSID, &rkey)
            .expect("ref record");
        rec["packs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["pack"].as_str().unwrap().to_owned())
            .collect()
    }

    fn has_pack(&self, id: &str) -> bool {
        self.pds
            .record(&self.did, PACK_NSID, &format!("proj:{id}"))
            .is_some()
    }

    /// A fresh clone `name` passes `git fsck` and matches `a`'s view of
    /// the remote.
    fn check_clone(&self, a: &Path, name: &str) {
        let sb = &self.sb;
        sb.git(sb.home.path(), &["clone", "-q", &self.u, name]);
        let b = sb.path(name);
        sb.git(&b, &["fsck", "--strict"]);
        let remote = sb.git(&b, &["ls-remote", "origin"]);
        let local = sb.git(a, &["ls-remote", "origin"]);
        assert_eq!(remote, local);
        assert_eq!(sb.rev(&b, "origin/main"), sb.rev(a, "main"));
    }
}

#[test]
fn folds_n_packs_into_one() {
    let proj = Proj::new("fold.test");
    let Proj { sb, u, .. } = &proj;
    let a = proj.history(6);
    let old = proj.packs("refs/heads/main");
    assert_eq!(old.len(), 6);
    // A clone whose warm state predates the compaction.
    sb.git(sb.home.path(), &["clone", "-q", u, "stale"]);
    let stale = sb.path("stale");
    let dir = sb.path("compact-state");
    let o = proj.compact(&a, &dir, &["--grace", "0"]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("6 packs fold into 1 pack"), "{err}");
    // Pack record 2 + two ref updates x 2, then six deletions x 1.
    assert!(err.contains("write points: 6 now"), "{err}");
    assert!(err.contains("spent 12 write points and 1 uploads"), "{err}");
    let main = proj.packs("refs/heads/main");
    let topic = proj.packs("refs/heads/topic");
    assert_eq!(main.len(), 1);
    assert_eq!(main, topic);
    for p in &old {
        assert!(!proj.has_pack(p), "old pack {p} still there");
    }
    assert!(proj.has_pack(&main[0]));
    proj.check_clone(&a, "after");
    // Pushes and fetches go on after it (warm caches see new CIDs).
    sb.commit(&a, "more.txt", "more\n");
    sb.git(&a, &["push", "-q", "origin", "main"]);
    let b = sb.path("after");
    sb.git(&b, &["pull", "-q", "origin", "main"]);
    assert_eq!(sb.rev(&b, "HEAD"), sb.rev(&a, "main"));
    // The stale clone's cache holds the pre-compaction record (the deleted
    // packs): its push of a branch built on main must name the packs main
    // holds now, so a new clone works.
    // (KNOT_REFS_TTL=0 stands for a listing older than its time to live.)
    sb.commit(&stale, "side.txt", "side\n");
    for args in [
        &["push", "-q", "origin", "HEAD:refs/heads/side"][..],
        &["push", "-q", "--force", "origin", "HEAD:refs/heads/topic"],
    ] {
        let o = sb
            .cmd(&stale, args)
            .env("KNOT_REFS_TTL", "0")
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    }
    for r in ["refs/heads/side", "refs/heads/topic"] {
        let packs = proj.packs(r);
        assert!(packs.iter().all(|p| proj.has_pack(p)), "{r}: {packs:?}");
    }
    proj.check_clone(&a, "after-push");
    // One ref alone: topic's two packs fold; once folded, nothing to do.
    let args = ["--ref", "refs/heads/topic", "--grace", "0"];
    let o = proj.compact(&a, &dir, &args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("2 packs fold into 1"), "{}", stderr(&o));
    assert_eq!(proj.packs("refs/heads/topic").len(), 1);
    let o = proj.compact(&a, &dir, &args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("nothing to compact"), "{}", stderr(&o));
    proj.check_clone(&a, "last");
}

#[test]
fn points_budget_too_small_is_refused() {
    let proj = Proj::new("budget.test");
    let sb = &proj.sb;
    let a = proj.history(3);
    let before = proj.packs("refs/heads/main");
    let dir = sb.path("st");
    // The switch needs 2 (pack record) + 2 x 2 (refs) = 6.
    let o = proj.compact(&a, &dir, &["--max-points", "5"]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(stderr(&o).contains("refused"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("spent 0 write points and 0 uploads"),
        "{}",
        stderr(&o)
    );
    assert_eq!(proj.packs("refs/heads/main"), before);
    // Enough for the switch: it lands; the deletions wait for a later run.
    let o = proj.compact(&a, &dir, &["--max-points", "6", "--grace", "0"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(proj.packs("refs/heads/main").len(), 1);
    for p in &before {
        assert!(proj.has_pack(p));
    }
    let o = proj.compact(&a, &dir, &["--grace", "0"]);
    assert!(o.status.success(), "{}", stderr(&o));
    for p in &before {
        assert!(!proj.has_pack(p));
    }
    proj.check_clone(&a, "after");
}

/// Seeded incompressible bytes (xorshift), so the packs exceed one part.
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

#[test]
fn stopped_by_the_uploads_budget_then_resumed() {
    let proj = Proj::new("resume.test");
    let Proj { sb, u, .. } = &proj;
    let a = sb.init("a");
    sb.git(&a, &["remote", "add", "origin", u]);
    for i in 0..3u64 {
        std::fs::write(a.join(format!("blob{i}.bin")), noise(i + 1, 2 << 20)).unwrap();
        sb.git(&a, &["add", "."]);
        sb.git(&a, &["commit", "-q", "-m", &format!("blob {i}")]);
        sb.git(&a, &["push", "-q", "origin", "main"]);
    }
    let dir = sb.path("st");
    let o = proj.compact(&a, &dir, &["--max-uploads", "1", "--grace", "0"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(
        err.contains("2 uploads of 4 MiB parts (0 of 2 already uploaded)"),
        "{err}"
    );
    assert!(err.contains("spent 0 write points and 1 uploads"), "{err}");
    assert_eq!(proj.packs("refs/heads/main").len(), 3);
    let o = proj.compact(&a, &dir, &["--grace", "0"]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("1 upload of 4 MiB parts (1 of 2 already uploaded)"),
        "{err}"
    );
    assert!(err.contains("and 1 uploads"), "{err}");
    assert_eq!(proj.packs("refs/heads/main").len(), 1);
    proj.check_clone(&a, "after");
}

#[test]
fn a_push_racing_the_compaction_is_not_lost() {
    let proj = Proj::new("race.test");
    let Proj { sb, u, did, .. } = &proj;
    let a = proj.history(4);
    let old = proj.packs("refs/heads/main");
    let dir = sb.path("st");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let raw = u.strip_prefix("at::").unwrap();
    let scratch = prepare_dir(&dir).unwrap();
    let creds = Credentials {
        identifier: did.clone(),
        password: PASSWORD.into(),
    };
    let mut remote = rt
        .block_on(Remote::open_with(raw, Some(&scratch), Some(creds)))
        .unwrap();
    let opts = CompactOptions {
        grace: Duration::ZERO,
        budget: Budget::default(),
        ..CompactOptions::default()
    };
    let mut c = Compactor::new(&remote, &dir, opts).unwrap();
    assert!(rt.block_on(c.plan(&mut remote)).unwrap());
    assert!(rt.block_on(c.upload(&remote)).unwrap());
    // A push lands between the plan and the switch.
    let pushed = sb.commit(&a, "race.txt", "racing\n");
    sb.git(&a, &["push", "-q", "origin", "main"]);
    rt.block_on(c.switch(&mut remote)).unwrap();
    rt.block_on(c.delete_retired(&mut remote)).unwrap();
    // main moved: left as the push wrote it; topic was switched.
    let main = proj.packs("refs/heads/main");
    assert!(main.len() > 1, "{main:?}");
    assert_eq!(proj.packs("refs/heads/topic").len(), 1);
    assert_eq!(
        sb.git(&a, &["ls-remote", "origin", "refs/heads/main"])[..40],
        pushed
    );
    // The packs main still names were not deleted.
    for p in &main {
        assert!(proj.has_pack(p), "{p} named by main was deleted");
    }
    proj.check_clone(&a, "after");
    // A later run folds what the push left.
    let o = proj.compact(&a, &dir, &["--grace", "0"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(proj.packs("refs/heads/main").len(), 1);
    for p in &old {
        assert!(!proj.has_pack(p));
    }
    proj.check_clone(&a, "after2");
}

/// Push, compact, push again within `KNOT_REFS_TTL` from a clone whose
/// listing predates the compaction: the swap fails on the stale CID, and
/// the write rebuilt from the record read again names the compacted pack,
/// not the folded ones it had cached (issue 55 item 2).
#[test]
fn a_push_soon_after_compact_keeps_the_compacted_pack() {
    let proj = Proj::new("keep.test");
    let Proj { sb, u, .. } = &proj;
    let a = proj.history(3);
    sb.git(sb.home.path(), &["clone", "-q", u, "b"]);
    let b = sb.path("b");
    let o = proj.compact(&a, &sb.path("st"), &["--grace", "0"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let compacted = proj.packs("refs/heads/main");
    assert_eq!(compacted.len(), 1);
    sb.commit(&b, "b.txt", "b\n");
    sb.git(&b, &["push", "-q", "origin", "main"]);
    let after = proj.packs("refs/heads/main");
    assert_eq!(after.len(), 2, "{after:?}");
    assert_eq!(
        after[1], compacted[0],
        "the compaction was undone: {after:?}"
    );
    assert!(after.iter().all(|p| proj.has_pack(p)));
    sb.git(sb.home.path(), &["clone", "-q", u, "check"]);
    let check = sb.path("check");
    sb.git(&check, &["fsck", "--strict"]);
    assert_eq!(sb.rev(&check, "HEAD"), sb.rev(&b, "main"));
}

/// The same with a second writer between the read again and the swap: a
/// proxy in front of the PDS lands another clone's push on `main` just
/// before the forced push's second ref write. That swap fails too; the
/// third write, rebuilt again, names the pushed-over target as `previous`
/// and still the compacted pack.
#[test]
fn a_second_writer_between_the_read_and_the_swap() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use support::fault::{Action, FaultProxy, method};

    let proj = Proj::new("twice.test");
    let Proj { sb, u, did, pds } = &proj;
    let a = proj.history(3);
    let ref_writes = Arc::new(AtomicUsize::new(0));
    let seen = ref_writes.clone();
    let second: Arc<std::sync::Mutex<Option<std::process::Command>>> = Default::default();
    let run_second = second.clone();
    let proxy = FaultProxy::start(
        Some(pds.url.clone()),
        Arc::new(move |p, body| {
            let is_ref_write = method(p) == "com.atproto.repo.putRecord"
                && String::from_utf8_lossy(body).contains(REF_NSID);
            if is_ref_write
                && seen.fetch_add(1, Ordering::SeqCst) == 1
                && let Some(mut k) = run_second.lock().unwrap().take()
            {
                let o = k.output().unwrap();
                assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            }
            Action::Forward
        }),
    );
    // b: its listing (through the proxy) predates the compaction.
    let pu = url(&proxy.url, did, "proj");
    sb.git(sb.home.path(), &["clone", "-q", &pu, "b"]);
    let b = sb.path("b");
    let b_tip = sb.commit(&b, "b.txt", "b\n");
    let o = proj.compact(&a, &sb.path("st"), &["--grace", "0"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let compacted = proj.packs("refs/heads/main");
    assert_eq!(compacted.len(), 1);
    // c: the second writer, straight to the PDS, run by the proxy just
    // before b's second ref write.
    sb.git(sb.home.path(), &["clone", "-q", u, "c"]);
    let c = sb.path("c");
    let c_tip = sb.commit(&c, "c.txt", "c\n");
    *second.lock().unwrap() = Some(sb.cmd(&c, &["push", "-q", "origin", "main"]));
    let o = sb.try_git(&b, &["push", "-q", "--force", "origin", "main"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(ref_writes.load(Ordering::SeqCst) >= 3, "three ref writes");
    let rec = pds
        .record(did, REF_NSID, "proj:refs:heads:main")
        .expect("main");
    assert_eq!(rec["target"].as_str(), Some(b_tip.as_str()));
    assert_eq!(rec["previous"].as_str(), Some(c_tip.as_str()));
    let packs = proj.packs("refs/heads/main");
    assert_eq!(packs.len(), 2, "{packs:?}");
    assert_eq!(packs[1], compacted[0]);
    assert!(packs.iter().all(|p| proj.has_pack(p)));
    sb.git(sb.home.path(), &["clone", "-q", u, "check"]);
    let check = sb.path("check");
    sb.git(&check, &["fsck", "--strict"]);
    assert_eq!(sb.rev(&check, "HEAD"), b_tip);
}
