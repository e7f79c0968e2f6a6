//! The mirror follows the ref records: an in-process atpds holds a
//! repository published as knot's records (packs as blob parts, refs
//! with their pack lists), `Syncer` fetches it through knot's fetch path,
//! a no-op check is one request, and a new push shows on the pages
//! without reopening anything.

// knot's in-process atpds for tests: a file, not a crate, so the dev-only
// helper needs no crate of its own (a support crate on knot would be a
// dependency circle for knot's own tests) and nothing is published.
#[path = "../../knot/tests/support/pds.rs"]
mod pds;
mod support;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use knot::Xrpc;
use knot::names::{pack_rkey, ref_rkey};
use knot::proxy::LatencyProxy;
use knot::records::{
    PACK_NSID, PART_MIME, PackEntry, PackRecord, Part, REF_NSID, REPO_NSID, RefRecord, RepoRecord,
};
use knot_serve::sync::{Syncer, init_mirror};
use knot_serve::{App, Limits};
use pds::Pds;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use support::*;

/// `git pack-objects` of `revs` (e.g. `["<tip>", "^<old>"]`) in `work`.
fn pack(work: &Path, revs: &[&str]) -> Vec<u8> {
    let mut c = Command::new("git")
        .current_dir(work)
        .args([
            "pack-objects",
            "--revs",
            "--stdout",
            "--delta-base-offset",
            "-q",
        ])
        .env_remove("GIT_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = revs.join("\n");
    input.push('\n');
    c.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let o = c.wait_with_output().unwrap();
    assert!(o.status.success());
    o.stdout
}

struct Publisher {
    x: Xrpc,
    did: String,
    token: String,
    repo: String,
}

impl Publisher {
    async fn put(&self, collection: &str, rkey: &str, record: Value) {
        self.x
            .procedure(
                "com.atproto.repo.putRecord",
                &json!({"repo": self.did, "collection": collection, "rkey": rkey, "record": record}),
                Some(&self.token),
            )
            .await
            .unwrap();
    }

    /// Uploads `bytes` as one part and writes its pack record; returns its id.
    async fn pack(&self, bytes: Vec<u8>, tips: &[&str], prerequisites: &[&str]) -> String {
        let sha = data_hex(&Sha256::digest(&bytes));
        let objects = u32::from_be_bytes(bytes[8..12].try_into().unwrap()) as u64;
        let size = bytes.len() as u64;
        let cid = self
            .x
            .upload_blob(bytes.into(), PART_MIME, &self.token)
            .await
            .unwrap();
        let rec = PackRecord {
            repo: self.repo.clone(),
            sha256: sha.clone(),
            size,
            objects,
            parts: vec![Part { cid, size }],
            prerequisites: prerequisites.iter().map(|s| s.to_string()).collect(),
            tips: tips.iter().map(|s| s.to_string()).collect(),
        };
        self.put(
            PACK_NSID,
            &pack_rkey(&self.repo, &sha),
            rec.to_value("2026-12-05T00:00:00.000Z"),
        )
        .await;
        sha
    }

    async fn set_ref(
        &self,
        name: &str,
        target: &str,
        previous: Option<&str>,
        packs: &[(&str, &str)],
    ) {
        let rec = RefRecord {
            repo: self.repo.clone(),
            name: name.into(),
            target: target.into(),
            previous: previous.map(str::to_owned),
            packs: packs
                .iter()
                .map(|(p, t)| PackEntry {
                    pack: p.to_string(),
                    tip: t.to_string(),
                })
                .collect(),
        };
        self.put(REF_NSID, &ref_rkey(&self.repo, name), rec.to_value())
            .await;
    }
}

fn data_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn mirror_follows_the_ref_records() {
    let pds = Pds::start();
    let f = work_repo();
    let account = pds.create_account("alice.test");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let p = Publisher {
            did: account.did,
            token: account.token,
            x: Xrpc::new(&pds.url, Duration::from_secs(30)),
            repo: "demo".into(),
        };
        let (c2, c3) = (f.commits[1].as_str(), f.commits[2].as_str());
        let first = p.pack(pack(&f.work, &[c3]), &[c3], &[]).await;
        let repo_rec = RepoRecord {
            name: "demo".into(),
            head: "refs/heads/main".into(),
            object_format: "sha1".into(),
        };
        p.put(
            REPO_NSID,
            "demo",
            repo_rec.to_value("2026-12-05T00:00:00.000Z"),
        )
        .await;
        p.set_ref("refs/heads/main", c3, None, &[(&first, c3)])
            .await;
        p.set_ref("refs/heads/feature/x", c2, None, &[(&first, c2)])
            .await;
        // 150 tags in one applyWrites: the listing is two pages, the
        // idle check still one request (issue 55).
        let writes: Vec<Value> = (0..150)
            .map(|i| {
                let name = format!("refs/tags/v{i:03}");
                let rec = RefRecord {
                    repo: "demo".into(),
                    name: name.clone(),
                    target: c2.into(),
                    previous: None,
                    packs: vec![PackEntry {
                        pack: first.clone(),
                        tip: c2.into(),
                    }],
                };
                json!({"$type": "com.atproto.repo.applyWrites#create", "collection": REF_NSID,
                       "rkey": ref_rkey("demo", &name), "value": rec.to_value()})
            })
            .collect();
        p.x.procedure(
            "com.atproto.repo.applyWrites",
            &json!({"repo": p.did, "writes": writes}),
            Some(&p.token),
        )
        .await
        .unwrap();

        let proxy = LatencyProxy::start(pds.addr(), Duration::ZERO).unwrap();
        let mirror = f.dir.path().join("served.git");
        init_mirror(&mirror).unwrap();
        let url = format!("at+{}/alice.test/demo", proxy.url());
        let helper = Path::new(env!("CARGO_BIN_EXE_knot-serve"));
        let mut s = Syncer::open(&url, &mirror, helper).await.unwrap();
        let o = s.check().await.unwrap();
        assert!(o.changed);
        assert_eq!(o.refs, 152);

        let app = App::open("demo", &mirror, Limits::default()).unwrap();
        let home = text(&app.handle("/").unwrap().body);
        assert!(home.contains("third: binary"), "{home}");
        assert!(home.contains("<h1>Demo repo</h1>"), "{home}");
        let refs = text(&app.handle("/refs").unwrap().body);
        assert!(refs.contains("refs/heads/feature/x"), "{refs}");

        // Nothing changed: one getLatestCommit and nothing else.
        proxy.take();
        let o = s.check().await.unwrap();
        assert!(!o.changed);
        let st = proxy.take();
        assert_eq!((st.requests, st.round_trips), (1, 1), "{st:?}");
        // Another record of the account moves its commit: the refs are
        // listed (two pages), found unchanged, and the next idle check
        // is one request again.
        p.put(
            REPO_NSID,
            "demo",
            repo_rec.to_value("2026-12-05T00:00:01.000Z"),
        )
        .await;
        let o = s.check().await.unwrap();
        assert!(!o.changed);
        assert_eq!(o.refs, 152);
        assert_eq!(proxy.take().requests, 3);
        s.check().await.unwrap();
        assert_eq!(proxy.take().requests, 1);

        // A push: a new commit, its pack against the old tip, the ref
        // record moved. The same App sees it.
        write(&f.work, "src/new.rs", b"pub const NEW: u8 = 1;\n");
        f.git(&["add", "-A"]);
        f.git(&["commit", "-q", "-m", "fourth: pushed later"]);
        let c4 = f.git(&["rev-parse", "HEAD"]);
        let second = p
            .pack(pack(&f.work, &[&c4, &format!("^{c3}")]), &[&c4], &[c3])
            .await;
        p.set_ref(
            "refs/heads/main",
            &c4,
            Some(c3),
            &[(&second, &c4), (&first, c3)],
        )
        .await;
        let o = s.check().await.unwrap();
        assert!(o.changed);
        let log = text(&app.handle("/log/main").unwrap().body);
        assert!(log.contains("fourth: pushed later"), "{log}");
        assert!(log.contains(&format!("/commit/{c4}")), "{log}");
        let tree = text(&app.handle("/tree/main/src").unwrap().body);
        assert!(tree.contains("new.rs"), "{tree}");
        // Only the new pack was fetched: the mirror holds two packs.
        let packs = std::fs::read_dir(mirror.join("objects/pack"))
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "pack")
            })
            .count();
        assert_eq!(packs, 2);
    });
}
