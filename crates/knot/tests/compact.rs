//! `knot compact` with real git against an in-process atpds: N packs
//! folded into one (clone after it equal, `git fsck`, old pack records
//! deleted), a push racing the compaction (not lost), a run stopped by
//! its uploads budget and resumed without uploading a part twice, and a
//! points budget too small for the switch (refused, nothing written).

mod support;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use knot::compact::cost::Budget;
use knot::compact::{CompactOptions, Compactor, prepare_dir};
use knot::records::{PACK_NSID, REF_NSID};
use knot::remote::Remote;
use knot::session::Credentials;
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

/// `knot compact origin <flags> --dir <dir>` in `a`.
fn compact(sb: &Sandbox, a: &Path, dir: &Path, flags: &[&str]) -> Output {
    let mut args = vec!["compact", "origin"];
    args.extend_from_slice(flags);
    args.extend(["--dir", dir.to_str().unwrap()]);
    knot(sb, a, &args)
}

fn ref_packs(pds: &Pds, did: &str, repo: &str, name: &str) -> Vec<String> {
    let rkey = format!("{repo}:{}", name.replace('/', ":"));
    let rec = pds.record(did, REF_NSID, &rkey).expect("ref record");
    rec["packs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["pack"].as_str().unwrap().to_owned())
        .collect()
}

fn pack_exists(pds: &Pds, did: &str, repo: &str, id: &str) -> bool {
    pds.record(did, PACK_NSID, &format!("{repo}:{id}"))
        .is_some()
}

/// A writer with `n` one-commit pushes on main (n packs) and a branch.
fn history(sb: &Sandbox, u: &str, n: usize) -> std::path::PathBuf {
    let a = sb.init("a");
    sb.git(&a, &["remote", "add", "origin", u]);
    for i in 0..n {
        sb.commit(&a, "log.txt", &format!("line {i}\n").repeat(i + 1));
        sb.git(&a, &["push", "-q", "origin", "main"]);
    }
    sb.git(&a, &["push", "-q", "origin", "main:refs/heads/topic"]);
    a
}

fn check_clone(sb: &Sandbox, u: &str, a: &Path, name: &str) {
    sb.git(sb.home.path(), &["clone", "-q", u, name]);
    let b = sb.path(name);
    sb.git(&b, &["fsck", "--strict"]);
    let remote = sb.git(&b, &["ls-remote", "origin"]);
    let local = sb.git(a, &["ls-remote", "origin"]);
    assert_eq!(remote, local);
    assert_eq!(sb.rev(&b, "origin/main"), sb.rev(a, "main"));
}

#[test]
fn folds_n_packs_into_one() {
    let (pds, did, sb) = signed_in("fold.test");
    let u = url(&pds.url, &did, "proj");
    let a = history(&sb, &u, 6);
    let old = ref_packs(&pds, &did, "proj", "refs/heads/main");
    assert_eq!(old.len(), 6);
    // A clone whose warm state predates the compaction.
    sb.git(sb.home.path(), &["clone", "-q", &u, "stale"]);
    let stale = sb.path("stale");
    let dir = sb.path("compact-state");
    let o = compact(&sb, &a, &dir, &["--grace", "0"]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("6 packs fold into 1 pack"), "{err}");
    // Pack record 2 + two ref updates x 2, then six deletions x 1.
    assert!(err.contains("write points: 6 now"), "{err}");
    assert!(err.contains("spent 12 write points and 1 uploads"), "{err}");
    let main = ref_packs(&pds, &did, "proj", "refs/heads/main");
    let topic = ref_packs(&pds, &did, "proj", "refs/heads/topic");
    assert_eq!(main.len(), 1);
    assert_eq!(main, topic);
    for p in &old {
        assert!(
            !pack_exists(&pds, &did, "proj", p),
            "old pack {p} still there"
        );
    }
    assert!(pack_exists(&pds, &did, "proj", &main[0]));
    check_clone(&sb, &u, &a, "after");
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
        let packs = ref_packs(&pds, &did, "proj", r);
        assert!(
            packs.iter().all(|p| pack_exists(&pds, &did, "proj", p)),
            "{r}: {packs:?}"
        );
    }
    check_clone(&sb, &u, &a, "after-push");
    // One ref alone: topic's two packs fold; once folded, nothing to do.
    let args = ["--ref", "refs/heads/topic", "--grace", "0"];
    let o = compact(&sb, &a, &dir, &args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("2 packs fold into 1"), "{}", stderr(&o));
    assert_eq!(ref_packs(&pds, &did, "proj", "refs/heads/topic").len(), 1);
    let o = compact(&sb, &a, &dir, &args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("nothing to compact"), "{}", stderr(&o));
    check_clone(&sb, &u, &a, "last");
}

#[test]
fn points_budget_too_small_is_refused() {
    let (pds, did, sb) = signed_in("budget.test");
    let u = url(&pds.url, &did, "proj");
    let a = history(&sb, &u, 3);
    let before = ref_packs(&pds, &did, "proj", "refs/heads/main");
    let dir = sb.path("st");
    // The switch needs 2 (pack record) + 2 x 2 (refs) = 6.
    let o = compact(&sb, &a, &dir, &["--max-points", "5"]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(stderr(&o).contains("refused"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("spent 0 write points and 0 uploads"),
        "{}",
        stderr(&o)
    );
    assert_eq!(ref_packs(&pds, &did, "proj", "refs/heads/main"), before);
    // Enough for the switch: it lands; the deletions wait for a later run.
    let o = compact(&sb, &a, &dir, &["--max-points", "6", "--grace", "0"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(ref_packs(&pds, &did, "proj", "refs/heads/main").len(), 1);
    for p in &before {
        assert!(pack_exists(&pds, &did, "proj", p));
    }
    let o = compact(&sb, &a, &dir, &["--grace", "0"]);
    assert!(o.status.success(), "{}", stderr(&o));
    for p in &before {
        assert!(!pack_exists(&pds, &did, "proj", p));
    }
    check_clone(&sb, &u, &a, "after");
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
    let (pds, did, sb) = signed_in("resume.test");
    let u = url(&pds.url, &did, "proj");
    let a = sb.init("a");
    sb.git(&a, &["remote", "add", "origin", &u]);
    for i in 0..3u64 {
        std::fs::write(a.join(format!("blob{i}.bin")), noise(i + 1, 2 << 20)).unwrap();
        sb.git(&a, &["add", "."]);
        sb.git(&a, &["commit", "-q", "-m", &format!("blob {i}")]);
        sb.git(&a, &["push", "-q", "origin", "main"]);
    }
    let dir = sb.path("st");
    let o = compact(&sb, &a, &dir, &["--max-uploads", "1", "--grace", "0"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(
        err.contains("2 uploads of 4 MiB parts (0 of 2 already uploaded)"),
        "{err}"
    );
    assert!(err.contains("spent 0 write points and 1 uploads"), "{err}");
    assert_eq!(ref_packs(&pds, &did, "proj", "refs/heads/main").len(), 3);
    let o = compact(&sb, &a, &dir, &["--grace", "0"]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("1 upload of 4 MiB parts (1 of 2 already uploaded)"),
        "{err}"
    );
    assert!(err.contains("and 1 uploads"), "{err}");
    assert_eq!(ref_packs(&pds, &did, "proj", "refs/heads/main").len(), 1);
    check_clone(&sb, &u, &a, "after");
}

#[test]
fn a_push_racing_the_compaction_is_not_lost() {
    let (pds, did, sb) = signed_in("race.test");
    let u = url(&pds.url, &did, "proj");
    let a = history(&sb, &u, 4);
    let old = ref_packs(&pds, &did, "proj", "refs/heads/main");
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
    let main = ref_packs(&pds, &did, "proj", "refs/heads/main");
    assert!(main.len() > 1, "{main:?}");
    assert_eq!(ref_packs(&pds, &did, "proj", "refs/heads/topic").len(), 1);
    assert_eq!(
        sb.git(&a, &["ls-remote", "origin", "refs/heads/main"])[..40],
        pushed
    );
    // The packs main still names were not deleted.
    for p in &main {
        assert!(
            pack_exists(&pds, &did, "proj", p),
            "{p} named by main was deleted"
        );
    }
    check_clone(&sb, &u, &a, "after");
    // A later run folds what the push left.
    let o = compact(&sb, &a, &dir, &["--grace", "0"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(ref_packs(&pds, &did, "proj", "refs/heads/main").len(), 1);
    for p in &old {
        assert!(!pack_exists(&pds, &did, "proj", p));
    }
    check_clone(&sb, &u, &a, "after2");
}
