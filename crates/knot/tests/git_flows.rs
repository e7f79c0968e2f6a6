//! The helper driven by real `git` against an in-process atpds: clone of
//! an empty repository, push, clone, incremental fetch, force push,
//! delete, tags, `--atomic`, `--force-with-lease`, `--dry-run`, and two
//! clones racing one branch.

mod support;

use support::{plc_directory, signed_in, stderr, url};

#[test]
fn push_clone_fetch_force_delete_tags() {
    let (pds, did, sb) = signed_in("alice.test");
    let u = url(&pds.url, &did, "proj");

    // Clone of an empty repository.
    let o = sb.try_git(sb.home.path(), &["clone", &u, "empty"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("empty repository"), "{}", stderr(&o));

    // Push.
    let a = sb.init("a");
    let c1 = sb.commit(&a, "one.txt", "one\n");
    sb.git(&a, &["remote", "add", "origin", &u]);
    let o = sb.try_git(&a, &["push", "origin", "main"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("write points"), "{}", stderr(&o));

    // Clone.
    sb.git(sb.home.path(), &["clone", "-q", &u, "b"]);
    let b = sb.path("b");
    assert_eq!(sb.rev(&b, "HEAD"), c1);
    assert_eq!(sb.git(&b, &["symbolic-ref", "HEAD"]), "refs/heads/main");
    sb.git(&b, &["fsck", "--strict"]);

    // Incremental fetch.
    let c2 = sb.commit(&a, "two.txt", "two\n");
    sb.git(&a, &["push", "-q", "origin", "main"]);
    sb.git(&b, &["fetch", "-q", "origin"]);
    assert_eq!(sb.rev(&b, "origin/main"), c2);
    let packs = std::fs::read_dir(b.join(".git/objects/pack"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "pack")
        })
        .count();
    assert_eq!(packs, 2, "the second fetch downloads only the new pack");
    // A no-op fetch moves nothing.
    sb.git(&b, &["fetch", "-q", "origin"]);

    // Non-fast-forward is refused; force lands.
    sb.git(&b, &["reset", "-q", "--hard", &c1]);
    let c3 = sb.commit(&b, "three.txt", "three\n");
    let o = sb.try_git(&b, &["push", "origin", "main"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("rejected"), "{}", stderr(&o));
    sb.git(&b, &["push", "-q", "--force", "origin", "main"]);
    sb.git(&a, &["fetch", "-q", "origin"]);
    assert_eq!(sb.rev(&a, "origin/main"), c3);

    // A branch and tags (lightweight and annotated).
    sb.git(&b, &["push", "-q", "origin", "main:refs/heads/topic"]);
    sb.git(&b, &["tag", "v1"]);
    sb.git(&b, &["tag", "-a", "-m", "release", "v2"]);
    sb.git(&b, &["push", "-q", "origin", "--tags"]);
    sb.git(&a, &["fetch", "-q", "--tags", "origin"]);
    assert_eq!(sb.rev(&a, "v1"), c3);
    assert_eq!(sb.rev(&a, "v2^{commit}"), c3);
    assert_eq!(sb.git(&a, &["cat-file", "-t", "v2"]), "tag");
    // An existing tag is not moved without force.
    sb.git(&b, &["tag", "-f", "v1", &c1]);
    let o = sb.try_git(&b, &["push", "origin", "v1"]);
    assert!(!o.status.success(), "{}", stderr(&o));

    // Delete.
    sb.git(&b, &["push", "-q", "origin", ":refs/heads/topic"]);
    let o = sb.git(&a, &["ls-remote", "origin"]);
    assert!(!o.contains("refs/heads/topic"), "{o}");
    assert!(o.contains("refs/heads/main"), "{o}");

    // Dry run writes nothing.
    let c4 = sb.commit(&b, "four.txt", "four\n");
    let o = sb.try_git(&b, &["push", "--dry-run", "origin", "main"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("would cost"), "{}", stderr(&o));
    assert!(
        sb.git(&a, &["ls-remote", "origin", "refs/heads/main"])
            .starts_with(&c3)
    );
    sb.git(&b, &["push", "-q", "origin", "main"]);
    assert!(
        sb.git(&a, &["ls-remote", "origin", "refs/heads/main"])
            .starts_with(&c4)
    );
}

/// A forced push whose cached CID is stale learns the current CID from
/// `InvalidSwap`; the record it then writes must name as `previous` the
/// target it really replaced, not the one the stale cache remembered.
#[test]
fn forced_push_over_a_stale_cache_records_the_true_previous() {
    let (pds, did, sb) = signed_in("prev.test");
    let u = url(&pds.url, &did, "proj");
    let a = sb.init("a");
    let c1 = sb.commit(&a, "one.txt", "one\n");
    sb.git(&a, &["remote", "add", "origin", &u]);
    sb.git(&a, &["push", "-q", "origin", "main"]);
    sb.git(sb.home.path(), &["clone", "-q", &u, "b"]);
    let b = sb.path("b");
    // a moves main; b's warm state still says c1.
    let c2 = sb.commit(&a, "two.txt", "two\n");
    sb.git(&a, &["push", "-q", "origin", "main"]);
    let c3 = sb.commit(&b, "three.txt", "three\n");
    sb.git(&b, &["push", "-q", "--force", "origin", "main"]);
    let rec = pds
        .record(&did, knot::records::REF_NSID, "proj:refs:heads:main")
        .expect("the ref record");
    assert_eq!(rec["target"].as_str(), Some(c3.as_str()));
    assert_eq!(
        rec["previous"].as_str(),
        Some(c2.as_str()),
        "previous must be the replaced target, not the stale cache's {c1}"
    );
}

#[test]
fn atomic_and_lease() {
    let (pds, did, sb) = signed_in("bob.test");
    let u = url(&pds.url, &did, "r");
    let a = sb.init("a");
    let c1 = sb.commit(&a, "f", "1\n");
    sb.git(&a, &["remote", "add", "origin", &u]);
    sb.git(
        &a,
        &["push", "-q", "origin", "main", "main:refs/heads/side"],
    );

    // --atomic: both refs or neither.
    let b_dir = sb.path("b");
    sb.git(sb.home.path(), &["clone", "-q", &u, "b"]);
    let c2 = sb.commit(&b_dir, "g", "2\n");
    sb.git(&b_dir, &["push", "-q", "origin", "main"]);
    // `a` is behind on main: an atomic push of main (rejected) and side (fine) lands nothing.
    let c3 = sb.commit(&a, "h", "3\n");
    let o = sb.try_git(
        &a,
        &["push", "--atomic", "origin", "main", "main:refs/heads/side"],
    );
    assert!(!o.status.success());
    let ls = sb.git(&a, &["ls-remote", "origin"]);
    assert!(ls.contains(&format!("{c1}\trefs/heads/side")), "{ls}");
    assert!(ls.contains(&format!("{c2}\trefs/heads/main")), "{ls}");
    // After a fetch and rebase the atomic push lands both.
    sb.git(&a, &["fetch", "-q", "origin"]);
    sb.git(&a, &["rebase", "-q", "origin/main"]);
    let c3b = sb.rev(&a, "HEAD");
    assert_ne!(c3, c3b);
    let o = sb.try_git(
        &a,
        &["push", "--atomic", "origin", "main", "main:refs/heads/side"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let ls = sb.git(&a, &["ls-remote", "origin"]);
    assert!(
        ls.contains(&format!("{c3b}\trefs/heads/side"))
            && ls.contains(&format!("{c3b}\trefs/heads/main")),
        "{ls}"
    );

    // --force-with-lease: refused when the remote moved since we looked.
    sb.git(&b_dir, &["fetch", "-q", "origin"]);
    sb.git(&b_dir, &["reset", "-q", "--hard", "origin/main"]);
    let c4 = sb.commit(&b_dir, "i", "4\n");
    let lease = format!("--force-with-lease=main:{c2}");
    let o = sb.try_git(&b_dir, &["push", &lease, "origin", "main"]);
    assert!(!o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("stale info"), "{}", stderr(&o));
    let lease = format!("--force-with-lease=main:{c3b}");
    let o = sb.try_git(&b_dir, &["push", &lease, "origin", "main"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        sb.git(&a, &["ls-remote", "origin", "refs/heads/main"])
            .starts_with(&c4)
    );
}

#[test]
fn two_clones_race_one_branch() {
    let (pds, did, sb) = signed_in("carol.test");
    let u = url(&pds.url, &did, "race");
    let a = sb.init("a");
    sb.commit(&a, "base", "base\n");
    sb.git(&a, &["remote", "add", "origin", &u]);
    sb.git(&a, &["push", "-q", "origin", "main"]);
    sb.git(sb.home.path(), &["clone", "-q", &u, "b"]);
    let b = sb.path("b");
    // Both warm, both behind nobody; each commits.
    let ca = sb.commit(&a, "a.txt", "from a\n");
    let cb = sb.commit(&b, "b.txt", "from b\n");
    let (oa, ob) = std::thread::scope(|s| {
        let ha = s.spawn(|| sb.try_git(&a, &["push", "origin", "main"]));
        let hb = s.spawn(|| sb.try_git(&b, &["push", "origin", "main"]));
        (ha.join().unwrap(), hb.join().unwrap())
    });
    assert!(
        oa.status.success() != ob.status.success(),
        "exactly one lands:\n{}\n{}",
        stderr(&oa),
        stderr(&ob)
    );
    let (loser, lost) = if oa.status.success() {
        (&b, &ob)
    } else {
        (&a, &oa)
    };
    assert!(stderr(lost).contains("fetch first"), "{}", stderr(lost));
    sb.git(loser, &["fetch", "-q", "origin"]);
    sb.git(loser, &["rebase", "-q", "origin/main"]);
    sb.git(loser, &["push", "-q", "origin", "main"]);
    // No commit lost: both files are on the branch.
    sb.git(sb.home.path(), &["clone", "-q", &u, "check"]);
    let check = sb.path("check");
    assert!(check.join("a.txt").exists() && check.join("b.txt").exists());
    let log = sb.git(&check, &["log", "--format=%s"]);
    assert_eq!(log.lines().count(), 3, "{log}");
    let _ = (ca, cb);
}

#[test]
fn at_url_resolves_handle_and_did_document() {
    let (pds, did, sb) = signed_in("ident.test");
    let plc = plc_directory(&did, &pds.url);
    let a = sb.init("a");
    let c1 = sb.commit(&a, "f", "1\n");
    // git with the PDS as handle resolver and the stub PLC directory.
    let run = |dir: &std::path::Path, args: &[&str]| {
        sb.cmd(dir, args)
            .env("KNOT_HANDLE_RESOLVER", &pds.url)
            .env("KNOT_PLC_URL", &plc.url)
            .output()
            .unwrap()
    };
    let o = run(&a, &["push", "at://ident.test/r", "main"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(
        sb.home.path(),
        &["clone", "-q", &format!("at://{did}/r"), "b"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(sb.rev(&sb.path("b"), "HEAD"), c1);
    // An unknown DID is a clear error.
    let o = run(
        sb.home.path(),
        &["clone", "at://did:plc:unknownunknownunknown/r", "c"],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("cannot resolve did:plc:unknownunknownunknown"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_pack_of_several_parts_round_trips() {
    let (pds, did, sb) = signed_in("parts.test");
    let u = url(&pds.url, &did, "big");
    let a = sb.init("a");
    // 9 MiB of incompressible bytes: a pack of three 4 MiB parts.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let bytes: Vec<u8> = (0..9 << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(a.join("blob.bin"), &bytes).unwrap();
    sb.git(&a, &["add", "blob.bin"]);
    sb.git(&a, &["commit", "-q", "-m", "big"]);
    sb.git(&a, &["remote", "add", "origin", &u]);
    let o = sb.try_git(&a, &["push", "--progress", "origin", "main"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Three parts in the pack record (git's own progress may split the
    // helper's lines on stderr, so the record is what is checked).
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let parts = rt.block_on(async {
        let mut r = knot::Remote::open(&format!("at+{}/{did}/big", pds.url), None)
            .await
            .unwrap();
        let refs = r.read_refs().await.unwrap();
        let entry = &refs["refs/heads/main"].record.packs[0];
        r.read_pack(&entry.pack).await.unwrap().parts.len()
    });
    assert_eq!(parts, 3, "{}", stderr(&o));
    sb.git(sb.home.path(), &["clone", "-q", &u, "b"]);
    let b = sb.path("b");
    assert_eq!(std::fs::read(b.join("blob.bin")).unwrap(), bytes);
    sb.git(&b, &["fsck", "--no-progress"]);
}

/// `git push --mirror` to a new remote and to an existing one (a branch
/// added, one deleted, a tag moved by force), then `git clone --mirror`
/// back: every ref equal. The remote's `HEAD` is never a push target.
#[test]
fn push_mirror_new_and_existing_then_clone_mirror() {
    let (pds, did, sb) = signed_in("mirror.test");
    let u = url(&pds.url, &did, "m");
    let a = sb.init("a");
    let c1 = sb.commit(&a, "one.txt", "one\n");
    sb.git(&a, &["branch", "topic"]);
    sb.git(&a, &["branch", "gone"]);
    sb.git(&a, &["tag", "v1"]);
    sb.git(&a, &["tag", "-a", "-m", "release", "v2"]);
    let refs =
        |dir: &std::path::Path| sb.git(dir, &["for-each-ref", "--format=%(objectname) %(refname)"]);

    // To a new remote.
    let o = sb.try_git(&a, &["push", "--mirror", &u]);
    assert!(o.status.success(), "{}", stderr(&o));
    sb.git(sb.home.path(), &["clone", "-q", "--mirror", &u, "m1.git"]);
    assert_eq!(refs(&sb.path("m1.git")), refs(&a));
    assert_eq!(
        sb.git(&sb.path("m1.git"), &["symbolic-ref", "HEAD"]),
        "refs/heads/main"
    );

    // To the existing remote: one branch more, one less, a tag moved.
    let c2 = sb.commit(&a, "two.txt", "two\n");
    sb.git(&a, &["branch", "-D", "gone"]);
    sb.git(&a, &["branch", "added", &c1]);
    sb.git(&a, &["tag", "-f", "v1", &c2]);
    let o = sb.try_git(&a, &["push", "--mirror", &u]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Nothing left to do: a second mirror push is a no-op that succeeds.
    let o = sb.try_git(&a, &["push", "--mirror", &u]);
    assert!(o.status.success(), "{}", stderr(&o));
    sb.git(sb.home.path(), &["clone", "-q", "--mirror", &u, "m2.git"]);
    let m2 = sb.path("m2.git");
    assert_eq!(refs(&m2), refs(&a));
    assert!(!refs(&m2).contains("refs/heads/gone"));
    sb.git(&m2, &["fsck", "--no-progress"]);
    let _ = c2;
}

/// More refs than the writes in flight: `applyWrites` batches of up to
/// 200 under `swapCommit` (two batches here), every ref landed and equal
/// in a mirror clone; a second push of the same refs is a no-op.
#[test]
fn many_refs_land_in_apply_writes_batches() {
    let (pds, did, sb) = signed_in("many.test");
    let u = url(&pds.url, &did, "many");
    let a = sb.init("a");
    let mut lines = String::new();
    for i in 0..5 {
        let c = sb.commit(&a, "f.txt", &format!("{i}\n"));
        for j in 0..50 {
            lines.push_str(&format!("create refs/tags/t{i}-{j} {c}\n"));
        }
    }
    let mut up = sb.cmd(&a, &["update-ref", "--stdin"]);
    up.stdin(std::process::Stdio::piped());
    let mut child = up.spawn().unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), lines.as_bytes()).unwrap();
    assert!(child.wait().unwrap().success());
    let o = sb.try_git(&a, &["push", &u, "main", "--tags"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    // 251 creates at 3 (applyWrites), the pack and repository records at 2.
    assert!(err.contains("757 write points"), "{err}");
    assert!(err.contains("251 ref creates x 3"), "{err}");
    let o = sb.try_git(&a, &["push", &u, "--tags"]);
    assert!(o.status.success(), "{}", stderr(&o));
    sb.git(sb.home.path(), &["clone", "-q", "--mirror", &u, "m.git"]);
    let refs =
        |dir: &std::path::Path| sb.git(dir, &["for-each-ref", "--format=%(objectname) %(refname)"]);
    assert_eq!(refs(&sb.path("m.git")), refs(&a));
    assert_eq!(refs(&a).lines().count(), 251);
}

/// A batched push whose commit moves under it: another writer lands a
/// branch just before the first `applyWrites`; the swap fails, the batch
/// is rebuilt from the commit and listing read again, and both writers'
/// refs stand.
#[test]
fn a_batch_whose_commit_moved_is_rebuilt() {
    use std::sync::{Arc, Mutex};
    use support::fault::{Action, FaultProxy, method};

    let (pds, did, sb) = signed_in("moved.test");
    let u = url(&pds.url, &did, "mv");
    let a = sb.init("a");
    let c1 = sb.commit(&a, "f.txt", "1\n");
    sb.git(&a, &["push", "-q", &u, "main"]);
    sb.git(sb.home.path(), &["clone", "-q", &u, "o"]);
    let other = sb.path("o");
    let c2 = sb.commit(&other, "g.txt", "2\n");
    let second: Arc<Mutex<Option<std::process::Command>>> = Default::default();
    *second.lock().unwrap() =
        Some(sb.cmd(&other, &["push", "-q", "origin", "HEAD:refs/heads/other"]));
    let run = second.clone();
    let proxy = FaultProxy::start(
        Some(pds.url.clone()),
        Arc::new(move |p, _| {
            if method(p) == "com.atproto.repo.applyWrites"
                && let Some(mut k) = run.lock().unwrap().take()
            {
                let o = k.output().unwrap();
                assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            }
            Action::Forward
        }),
    );
    let pu = url(&proxy.url, &did, "mv");
    for i in 0..20 {
        sb.git(&a, &["tag", &format!("t{i}")]);
    }
    let o = sb.try_git(&a, &["push", &pu, "--tags"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(second.lock().unwrap().is_none(), "the other writer ran");
    let ls = sb.git(&a, &["ls-remote", &u]);
    assert_eq!(
        ls.lines().filter(|l| l.contains("refs/tags/")).count(),
        20,
        "{ls}"
    );
    assert!(ls.contains(&format!("{c2}\trefs/heads/other")), "{ls}");
    assert!(ls.contains(&format!("{c1}\trefs/tags/t0")), "{ls}");
}
