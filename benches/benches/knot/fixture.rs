//! The fixture of one store: a server (atpds in this process, or the
//! official PDS as its own node process), an account on it, latency
//! proxies in front of it, and a sandbox where `git` finds the helper on
//! its PATH with that account's credentials.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;
use std::time::Duration;

use knot::proxy::{LatencyProxy, Stats};

pub const PASSWORD: &str = "knot-bench-password";
pub const HANDLE: &str = "knot.bench.test";

pub struct Fixture {
    /// The implementation name its rows carry (`atpds`, `official-pds`).
    pub name: &'static str,
    /// The server, kept alive with the fixture (behind a lock only so the
    /// fixture is `Sync` for the writers' threads; nothing locks it).
    _server: Mutex<Box<dyn std::any::Any + Send>>,
    pds_addr: std::net::SocketAddr,
    pub did: String,
    /// The helper's credentials (`ATPROTO_IDENTIFIER`, `ATPROTO_PASSWORD`).
    identifier: String,
    password: String,
    pub root: PathBuf,
    bin: PathBuf,
    /// Requests, round trips and connects per benchmark id (the last
    /// iteration's, with the range seen).
    pub counts: Mutex<BTreeMap<String, serde_json::Value>>,
}

impl Fixture {
    pub fn start(root: &Path) -> Fixture {
        let mut c = xrpc::ServerConfig::new(root.join("pds.sqlite"));
        c.listen = "127.0.0.1:0".parse().expect("address");
        let pds = xrpc::spawn(c).expect("atpds starts");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let did = rt.block_on(async {
            let x = knot::Xrpc::new(&pds.url(), Duration::from_secs(60));
            let v = x
                .procedure(
                    "com.atproto.server.createAccount",
                    &serde_json::json!({"handle": HANDLE, "password": PASSWORD, "email": "knot@bench.test"}),
                    None,
                )
                .await
                .expect("createAccount");
            v["did"].as_str().expect("did").to_owned()
        });
        let pds_addr = pds.addr();
        Fixture::new(
            "atpds",
            root,
            Box::new(pds),
            pds_addr,
            did,
            HANDLE.into(),
            PASSWORD.into(),
        )
    }

    /// The official PDS (`benches::official_pds`), with account
    /// `knotbench.test` (its dev-mode handles are one label under `.test`),
    /// its sandbox under `root`.
    pub fn official(root: &Path, pds: benches::official_pds::OfficialPds) -> Fixture {
        let account = pds
            .create_account("knotbench")
            .expect("official-pds: createAccount");
        let pds_addr = pds.addr();
        Fixture::new(
            "official-pds",
            root,
            Box::new(pds),
            pds_addr,
            account.did,
            account.handle,
            benches::official_pds::PASSWORD.into(),
        )
    }

    fn new(
        name: &'static str,
        root: &Path,
        server: Box<dyn std::any::Any + Send>,
        pds_addr: std::net::SocketAddr,
        did: String,
        identifier: String,
        password: String,
    ) -> Fixture {
        std::fs::create_dir_all(root).expect("fixture root");
        let bin = root.join("bin");
        std::fs::create_dir_all(&bin).expect("bin dir");
        std::os::unix::fs::symlink(
            env!("CARGO_BIN_EXE_knot_bench_helper"),
            bin.join("git-remote-at"),
        )
        .expect("symlink the helper");
        std::fs::create_dir_all(root.join("home")).expect("home");
        Fixture {
            name,
            _server: Mutex::new(server),
            pds_addr,
            did,
            identifier,
            password,
            root: root.to_owned(),
            bin,
            counts: Mutex::new(BTreeMap::new()),
        }
    }

    /// The account's credentials (for in-process clients).
    pub fn credentials(&self) -> knot::Credentials {
        knot::Credentials {
            identifier: self.identifier.clone(),
            password: self.password.clone(),
        }
    }

    pub fn proxy(&self, rtt: Duration) -> LatencyProxy {
        LatencyProxy::start(self.pds_addr, rtt).expect("latency proxy")
    }

    /// The remote URL of `repo` through `proxy`.
    pub fn url(&self, proxy: &LatencyProxy, repo: &str) -> String {
        format!("at::at+{}/{}/{repo}", proxy.url(), self.did)
    }

    pub fn cmd(&self, dir: &Path, args: &[&str]) -> Command {
        let mut c = Command::new("git");
        c.current_dir(dir)
            .args(args)
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    self.bin.display(),
                    std::env::var("PATH").unwrap_or_default()
                ),
            )
            .env("HOME", self.root.join("home"))
            .env("XDG_CONFIG_HOME", self.root.join("home/.config"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "Bench")
            .env("GIT_AUTHOR_EMAIL", "bench@example.com")
            .env("GIT_COMMITTER_NAME", "Bench")
            .env("GIT_COMMITTER_EMAIL", "bench@example.com")
            .env("ATPROTO_IDENTIFIER", &self.identifier)
            .env("ATPROTO_PASSWORD", &self.password)
            .env_remove("GIT_DIR");
        c
    }

    pub fn try_git(&self, dir: &Path, args: &[&str]) -> Output {
        self.cmd(dir, args).output().expect("git runs")
    }

    /// Runs git, panics with its stderr on failure, returns stdout.
    pub fn git(&self, dir: &Path, args: &[&str]) -> String {
        let o = self.try_git(dir, args);
        assert!(
            o.status.success(),
            "git {args:?} in {}: {}",
            dir.display(),
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).trim().to_owned()
    }

    pub fn init(&self, name: &str) -> PathBuf {
        let d = self.root.join(name);
        std::fs::create_dir_all(&d).expect("dir");
        self.git(&d, &["init", "-q", "-b", "main"]);
        d
    }

    pub fn commit(&self, dir: &Path, file: &str, content: &str) -> String {
        std::fs::write(dir.join(file), content).expect("write");
        self.git(dir, &["add", file]);
        self.git(dir, &["commit", "-q", "-m", file]);
        self.git(dir, &["rev-parse", "HEAD"])
    }

    /// Forgets a clone's warm state (identity, session, cached records).
    pub fn make_cold(&self, dir: &Path) {
        let _ = std::fs::remove_dir_all(dir.join(".git/knot"));
    }

    /// The remote's value of `name` (`None` when absent), through `url`.
    pub fn remote_ref(&self, dir: &Path, url: &str, name: &str) -> Option<String> {
        let out = self.git(dir, &["ls-remote", url, name]);
        out.lines()
            .find(|l| l.ends_with(&format!("\t{name}")))
            .map(|l| l[..40].to_owned())
    }

    /// Records one iteration's counts for `id`.
    pub fn record(&self, id: &str, s: Stats) {
        let mut m = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        let e = m.entry(id.to_owned()).or_insert_with(|| {
            serde_json::json!({"requests": s.requests, "round_trips": s.round_trips, "connects": s.connects,
                               "round_trips_min": s.round_trips, "round_trips_max": s.round_trips})
        });
        e["requests"] = s.requests.into();
        e["round_trips"] = s.round_trips.into();
        e["connects"] = s.connects.into();
        let lo = e["round_trips_min"]
            .as_u64()
            .unwrap_or(u64::MAX)
            .min(s.round_trips);
        let hi = e["round_trips_max"]
            .as_u64()
            .unwrap_or(0)
            .max(s.round_trips);
        e["round_trips_min"] = lo.into();
        e["round_trips_max"] = hi.into();
    }

    /// Merges `extra` into `id`'s record.
    pub fn note(&self, id: &str, key: &str, value: serde_json::Value) {
        let mut m = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        let e = m
            .entry(id.to_owned())
            .or_insert_with(|| serde_json::json!({}));
        e[key] = value;
    }
}
