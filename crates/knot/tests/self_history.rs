//! This workspace's own git history pushed to atpds with the helper and
//! cloned back: `git fsck --strict` passes and every ref is equal.
//! Skipped (with a printed reason) when the source tree is not a git
//! checkout.

mod support;

use std::path::Path;

use support::{Pds, Sandbox, url};

#[test]
fn workspace_history_round_trips() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let sb = Sandbox::new("self.test");
    let probe = sb.try_git(&root, &["rev-parse", "--git-common-dir"]);
    if !probe.status.success() {
        eprintln!("skipped: {} is not a git checkout", root.display());
        return;
    }
    let pds = Pds::start();
    let did = pds.account("self.test");
    let u = url(&pds.url, &did, "atbench");
    let root_s = root.to_string_lossy().into_owned();
    sb.git(
        sb.home.path(),
        &["clone", "-q", "--mirror", &root_s, "src.git"],
    );
    let src = sb.path("src.git");
    let t = std::time::Instant::now();
    sb.git(&src, &["push", "-q", "--mirror", &u]);
    let push = t.elapsed();
    let t = std::time::Instant::now();
    sb.git(sb.home.path(), &["clone", "-q", "--mirror", &u, "back.git"]);
    let clone = t.elapsed();
    let back = sb.path("back.git");
    sb.git(&back, &["fsck", "--strict", "--no-progress"]);
    let refs = |d: &Path| sb.git(d, &["for-each-ref", "--format=%(objectname) %(refname)"]);
    let (a, b) = (refs(&src), refs(&back));
    assert_eq!(a, b, "every ref equal");
    let objects = sb.git(&src, &["count-objects", "-v"]);
    eprintln!(
        "workspace history: {} refs, push --mirror {:.2} s, clone --mirror {:.2} s; source {}",
        a.lines().count(),
        push.as_secs_f64(),
        clone.as_secs_f64(),
        objects
            .lines()
            .filter(|l| l.starts_with("in-pack") || l.starts_with("size-pack"))
            .collect::<Vec<_>>()
            .join(", ")
    );
}
