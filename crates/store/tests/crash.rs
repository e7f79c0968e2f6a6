//! Crash safety: a child process (this test binary, re-invoked) runs a
//! write loop over several accounts from several threads and prints every
//! acknowledged write; the parent SIGKILLs it at a pseudo-random moment,
//! reopens the store and checks that every acknowledged write is there,
//! that each root's MST holds exactly the indexed records, that every
//! commit verifies, and that sequence numbers have no gaps. Three rounds
//! on the same database (each reopen also exercises recovery).

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use repo::Cid;
use store::{Config, Store};

const CHILD_ENV: &str = "ATSTORE_CRASH_CHILD_DB";
const ACCOUNTS: u64 = 4;

/// The child's write loop; a no-op unless the parent set [`CHILD_ENV`].
#[test]
fn crash_child_entry() {
    let Ok(path) = std::env::var(CHILD_ENV) else {
        return;
    };
    let round: u64 = std::env::var("ATSTORE_CRASH_ROUND")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(0);
    let store = Store::open(&path, Config::default()).unwrap();
    let dids: Vec<String> = (0..ACCOUNTS)
        .map(|i| {
            let did = datagen::store::did(i);
            if store.repo_root(&did).unwrap().is_none() {
                store.create_account(&did, &keypair(i)).unwrap();
            }
            did
        })
        .collect();
    std::thread::scope(|s| {
        for (i, did) in dids.iter().enumerate() {
            let store = &store;
            s.spawn(move || {
                for n in 0.. {
                    let rec = datagen::store::post(i as u64, round * 1_000_000 + n);
                    let c = store
                        .create_record(did, rec.collection, None, cbor(&rec.value), None)
                        .unwrap();
                    let w = &c.results[0];
                    let cid = w.cid.map(|c| c.to_string()).unwrap_or_default();
                    // One line per acknowledged write, flushed at once.
                    println!("ACK {} {cid}", w.uri);
                }
            });
        }
    });
}

fn lcg(seed: &mut u64) -> u64 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *seed >> 33
}

#[test]
fn killed_writer_loses_no_acknowledged_write() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("crash.sqlite");
    let exe = std::env::current_exe().unwrap();
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(7);
    let mut acked: Vec<(String, String)> = Vec::new();
    for round in 0..3u64 {
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "crash_child_entry",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, &db)
            .env("ATSTORE_CRASH_ROUND", round.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut lines = Vec::new();
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(rest) = line.strip_prefix("ACK ") {
                    lines.push(rest.to_owned());
                }
            }
            lines
        });
        // Kill after the first acknowledgements plus a random delay.
        let start = Instant::now();
        while !db.exists() && start.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(400 + lcg(&mut seed) % 900));
        child.kill().unwrap(); // SIGKILL on Unix
        let _ = child.wait();
        let lines = reader.join().unwrap();
        assert!(
            !lines.is_empty(),
            "round {round}: the child acknowledged nothing"
        );
        for l in lines {
            let (uri, cid) = l.split_once(' ').unwrap();
            acked.push((uri.to_owned(), cid.to_owned()));
        }

        let store = Store::open(&db, Config::default()).unwrap();
        for (uri, cid) in &acked {
            let u = repo::syntax::AtUri::parse(uri).unwrap();
            let got = store
                .current_cid(u.authority, u.collection.unwrap(), u.rkey.unwrap())
                .unwrap();
            assert_eq!(
                got,
                Some(Cid::parse_str(cid).unwrap()),
                "round {round}: lost {uri}"
            );
        }
        let mut total = 0;
        for i in 0..ACCOUNTS {
            total += store.check_repo(&datagen::store::did(i)).unwrap();
        }
        assert!(total >= acked.len());
        let (events, commits) = verify_all_events(&store);
        assert_eq!(commits, total, "every record came from one commit");
        // Per account: #identity, #account, #sync at creation.
        assert_eq!(events, total + 3 * ACCOUNTS as usize);
    }
}
