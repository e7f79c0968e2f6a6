//! Kill and restart: `atpds` (the binary) is killed with SIGKILL while
//! several clients stream `createRecord` calls at it; it is started again
//! on the same database, and then
//! - every write that was answered 200 is there (`getRecord`, same CID);
//! - `getRepo` of every account is a CAR whose blocks hash to their CIDs,
//!   whose root commit is signed by the key of the account's DID document
//!   (`describeRepo`'s `didDoc`), whose MST passes the structure check and
//!   holds every acknowledged record, and whose commit is the one
//!   `getLatestCommit` names;
//! - `subscribeRepos` from cursor 0 replays every event exactly once: seqs
//!   strictly increasing without a gap, every `#commit` verifying against
//!   its account's key, every acknowledged create in exactly one of them,
//!   and each account's last `#commit` the head of its repo.
//!
//! The HTTP client is hyper's (keep-alive connections over loopback), the
//! WebSocket client tokio-tungstenite; CAR, commits, MST and frames are
//! checked with this workspace's `repo` crate.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::StreamExt;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use repo::Cid;
use repo::car::CarReader;
use repo::commit::CommitRef;
use repo::crypto::PublicKey;
use repo::firehose::{Frame, verify_commit};
use repo::mst::{MemoryBlockStore, Mst};
use serde_json::{Value, json};

/// Writer clients streaming createRecord concurrently.
const CLIENTS: usize = 4;
/// Acknowledged writes (all clients together) after which the server is killed.
const KILL_AFTER: u64 = 120;

type Http = Client<HttpConnector, Full<Bytes>>;

/// A running `atpds` child (killed with SIGKILL when dropped).
struct Pds {
    child: Child,
    url: String,
}

impl Pds {
    fn start(db: &Path) -> Pds {
        let mut child = Command::new(env!("CARGO_BIN_EXE_atpds"))
            .arg("--db")
            .arg(db)
            .args(["--listen", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start atpds");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(url) = line.strip_prefix("atpds listening on ") {
                    let _ = tx.send(url.trim().to_owned());
                }
            }
        });
        let url = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("atpds printed its address");
        Pds { child, url }
    }

    /// SIGKILL (std's `Child::kill` on Unix) and reap.
    fn kill(mut self) {
        self.child.kill().expect("SIGKILL atpds");
        self.child.wait().expect("reap atpds");
    }
}

impl Drop for Pds {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn client() -> Http {
    Client::builder(TokioExecutor::new()).build_http()
}

/// One XRPC call; the status and the body bytes, or the transport error.
async fn call(
    http: &Http,
    method: Method,
    url: &str,
    token: Option<&str>,
    body: Option<&Value>,
) -> Result<(StatusCode, Bytes), String> {
    let mut req = Request::builder().method(method).uri(url);
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    let body = match body {
        Some(v) => {
            req = req.header("content-type", "application/json");
            Full::new(Bytes::from(
                serde_json::to_vec(v).map_err(|e| e.to_string())?,
            ))
        }
        None => Full::new(Bytes::new()),
    };
    let req = req.body(body).map_err(|e| e.to_string())?;
    let resp = http.request(req).await.map_err(|e| e.to_string())?;
    let status = resp.status();
    let bytes = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok((status, bytes))
}

/// A call that must answer 200 with JSON.
async fn json_ok(
    http: &Http,
    method: Method,
    url: &str,
    token: Option<&str>,
    body: Option<&Value>,
) -> Value {
    let (status, bytes) = call(http, method, url, token, body)
        .await
        .unwrap_or_else(|e| panic!("{url}: {e}"));
    assert_eq!(
        status,
        StatusCode::OK,
        "{url}: {}",
        String::from_utf8_lossy(&bytes)
    );
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{url}: not JSON: {e}"))
}

struct Account {
    did: String,
    token: String,
}

/// An acknowledged write: the record's path and CID.
#[derive(Debug, Clone)]
struct Acked {
    did: String,
    rkey: String,
    cid: String,
}

const COLLECTION: &str = "app.bsky.feed.post";

/// Streams createRecord calls until the connection fails (the kill);
/// returns the writes answered 200.
async fn writer(
    url: String,
    acc: Arc<Account>,
    client_no: usize,
    acked_total: Arc<AtomicU64>,
) -> Vec<Acked> {
    let http = client();
    let endpoint = format!("{url}/xrpc/com.atproto.repo.createRecord");
    let mut acked = Vec::new();
    for i in 0u64.. {
        let body = json!({
            "repo": acc.did,
            "collection": COLLECTION,
            "record": {
                "$type": COLLECTION,
                "text": format!("client {client_no} write {i}"),
                "createdAt": "2026-12-04T15:00:00.000Z",
            },
        });
        match call(
            &http,
            Method::POST,
            &endpoint,
            Some(&acc.token),
            Some(&body),
        )
        .await
        {
            Ok((StatusCode::OK, bytes)) => {
                let v: Value = serde_json::from_slice(&bytes).expect("createRecord answered JSON");
                let uri = v["uri"].as_str().expect("uri").to_owned();
                acked.push(Acked {
                    did: acc.did.clone(),
                    rkey: uri.rsplit('/').next().unwrap_or_default().to_owned(),
                    cid: v["cid"].as_str().expect("cid").to_owned(),
                });
                acked_total.fetch_add(1, Ordering::Relaxed);
            }
            Ok((status, bytes)) => panic!(
                "createRecord answered {status} before the kill: {}",
                String::from_utf8_lossy(&bytes)
            ),
            // The server is gone: this write's fate is unknown, so it is
            // not counted, and the stream ends.
            Err(_) => break,
        }
    }
    acked
}

/// Every frame of subscribeRepos from cursor 0 until the `#commit` of
/// every head in `heads` has come, then whatever follows within a grace
/// period (so an extra or duplicated event would still be seen).
async fn replay(url: &str, heads: &HashMap<String, Cid>) -> Vec<Vec<u8>> {
    let ws = format!(
        "{}/xrpc/com.atproto.sync.subscribeRepos?cursor=0",
        url.replacen("http", "ws", 1)
    );
    let (mut stream, _) = tokio_tungstenite::connect_async(ws.as_str())
        .await
        .expect("subscribeRepos connects");
    let mut frames = Vec::new();
    let mut pending: HashSet<Cid> = heads.values().copied().collect();
    let mut deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        match tokio::time::timeout_at(deadline, stream.next()).await {
            Err(_) => break,
            Ok(None) => panic!("subscribeRepos closed the stream during replay"),
            Ok(Some(Err(e))) => panic!("subscribeRepos: {e}"),
            Ok(Some(Ok(tokio_tungstenite::tungstenite::Message::Binary(b)))) => {
                if let Ok(Frame::Commit(c)) = Frame::decode(&b)
                    && pending.remove(&c.commit)
                    && pending.is_empty()
                {
                    deadline = tokio::time::Instant::now() + Duration::from_millis(300);
                }
                frames.push(b.to_vec());
            }
            Ok(Some(Ok(_))) => {}
        }
    }
    assert!(
        pending.is_empty(),
        "the replay did not reach the heads {pending:?} within 20 s"
    );
    frames
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_sigkill_and_replay_exactly_once() {
    let started = Instant::now();
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("pds.sqlite");
    let http = client();

    // First life: accounts, then concurrent createRecord streams, then SIGKILL.
    let pds = Pds::start(&db);
    let server = json_ok(
        &http,
        Method::GET,
        &format!("{}/xrpc/com.atproto.server.describeServer", pds.url),
        None,
        None,
    )
    .await;
    let domain = server["availableUserDomains"][0]
        .as_str()
        .unwrap_or(".test")
        .to_owned();
    let mut accounts = Vec::new();
    for n in 0..CLIENTS {
        let v = json_ok(
            &http,
            Method::POST,
            &format!("{}/xrpc/com.atproto.server.createAccount", pds.url),
            None,
            Some(&json!({"handle": format!("writer{n}{domain}"), "password": "kill -9 proof", "email": format!("w{n}@example.com")})),
        )
        .await;
        accounts.push(Arc::new(Account {
            did: v["did"].as_str().expect("did").to_owned(),
            token: v["accessJwt"].as_str().expect("accessJwt").to_owned(),
        }));
    }
    let acked_total = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = accounts
        .iter()
        .enumerate()
        .map(|(n, acc)| tokio::spawn(writer(pds.url.clone(), acc.clone(), n, acked_total.clone())))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(20);
    while acked_total.load(Ordering::Relaxed) < KILL_AFTER {
        assert!(
            Instant::now() < deadline,
            "the writers did not reach {KILL_AFTER} writes"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    pds.kill();
    let mut acked: Vec<Acked> = Vec::new();
    for w in writers {
        acked.extend(w.await.expect("writer task"));
    }
    eprintln!(
        "kill_restart: {} writes acknowledged before SIGKILL",
        acked.len()
    );
    assert!(acked.len() as u64 >= KILL_AFTER);

    // Second life on the same file.
    let pds = Pds::start(&db);
    let url = pds.url.clone();

    // 1. Every acknowledged write is there.
    for a in &acked {
        let v = json_ok(
            &http,
            Method::GET,
            &format!(
                "{url}/xrpc/com.atproto.repo.getRecord?repo={}&collection={COLLECTION}&rkey={}",
                a.did, a.rkey
            ),
            None,
            None,
        )
        .await;
        assert_eq!(v["cid"].as_str(), Some(a.cid.as_str()), "{a:?}");
    }

    // 2. getRepo verifies against the DID document's key, holding every acknowledged record.
    let mut keys: HashMap<String, PublicKey> = HashMap::new();
    let mut heads: HashMap<String, Cid> = HashMap::new();
    for acc in &accounts {
        let described = json_ok(
            &http,
            Method::GET,
            &format!("{url}/xrpc/com.atproto.repo.describeRepo?repo={}", acc.did),
            None,
            None,
        )
        .await;
        let key = PublicKey::from_did_document(&described["didDoc"]).unwrap_or_else(|e| {
            panic!("{}: no signing key in describeRepo's didDoc: {e}", acc.did)
        });
        let (status, car) = call(
            &http,
            Method::GET,
            &format!("{url}/xrpc/com.atproto.sync.getRepo?did={}", acc.did),
            None,
            None,
        )
        .await
        .expect("getRepo");
        assert_eq!(status, StatusCode::OK);
        let mut reader = CarReader::new(&car[..]).expect("CAR header").verify(true);
        let root = *reader.roots().first().expect("a CAR root");
        let mut store = MemoryBlockStore::default();
        let mut blocks: HashMap<Cid, Vec<u8>> = HashMap::new();
        while let Some((cid, data)) = reader.next_block().expect("CAR blocks hash to their CIDs") {
            blocks.insert(cid, data);
        }
        store.extend(blocks.iter().map(|(c, d)| (*c, d.clone())));
        let commit_bytes = blocks
            .get(&root)
            .expect("the root commit block is in the CAR");
        let commit = CommitRef::decode(commit_bytes).expect("root decodes as a commit");
        assert_eq!(commit.did, acc.did);
        commit
            .verify(&key)
            .expect("the commit signature verifies with the DID document's key");
        let mut mst = Mst::load(store, commit.data);
        mst.check_structure().expect("the MST is well formed");
        let entries: BTreeMap<String, Cid> = mst.entries().expect("MST walk").into_iter().collect();
        for a in acked.iter().filter(|a| a.did == acc.did) {
            let got = entries
                .get(&format!("{COLLECTION}/{}", a.rkey))
                .map(|c| c.to_string());
            assert_eq!(
                got.as_deref(),
                Some(a.cid.as_str()),
                "{a:?} is not in the MST of getRepo"
            );
        }
        let latest = json_ok(
            &http,
            Method::GET,
            &format!(
                "{url}/xrpc/com.atproto.sync.getLatestCommit?did={}",
                acc.did
            ),
            None,
            None,
        )
        .await;
        assert_eq!(
            latest["cid"].as_str(),
            Some(root.to_string().as_str()),
            "getLatestCommit vs getRepo's root"
        );
        keys.insert(acc.did.clone(), key);
        heads.insert(acc.did.clone(), root);
    }

    // 3. subscribeRepos from cursor 0: every event once, in order, verifying.
    let frames = replay(&url, &heads).await;
    let mut last_seq = 0i64;
    let mut creates: HashSet<(String, String)> = HashSet::new();
    let mut last_commit: HashMap<String, Cid> = HashMap::new();
    for bytes in &frames {
        let frame = Frame::decode(bytes).expect("frame decodes");
        let seq = match &frame {
            Frame::Commit(c) => {
                verify_commit(c, &keys)
                    .unwrap_or_else(|e| panic!("seq {} does not verify: {e}", c.seq));
                for op in &c.ops {
                    if let Some(cid) = op.cid {
                        let fresh =
                            creates.insert((c.repo.to_owned(), format!("{} {cid}", op.path)));
                        assert!(fresh, "seq {}: {} {cid} replayed twice", c.seq, op.path);
                    }
                }
                last_commit.insert(c.repo.to_owned(), c.commit);
                c.seq
            }
            Frame::Sync(s) => s.seq,
            Frame::Identity(i) => i.seq,
            Frame::Account(a) => a.seq,
            other => panic!("unexpected frame during replay: {other:?}"),
        };
        if last_seq != 0 {
            assert_eq!(seq, last_seq + 1, "a gap or duplicate in the replay");
        }
        last_seq = seq;
    }
    for a in &acked {
        let key = (a.did.clone(), format!("{COLLECTION}/{} {}", a.rkey, a.cid));
        assert!(creates.contains(&key), "{a:?} has no #commit in the replay");
    }
    for (did, head) in &heads {
        assert_eq!(
            last_commit.get(did),
            Some(head),
            "{did}: the replay's last #commit is not the head"
        );
    }
    eprintln!(
        "kill_restart: {} acknowledged writes present, {} accounts verified, {} events replayed once, in {:.1?}",
        acked.len(),
        accounts.len(),
        frames.len(),
        started.elapsed()
    );
    drop(pds);
}
