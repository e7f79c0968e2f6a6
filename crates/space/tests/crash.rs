//! kill -9 loses nothing acknowledged: a child process (this test binary,
//! re-run as `child_writer`) writes batches and prints each acknowledged
//! rev; the parent kills it with SIGKILL mid-stream, reopens the file and
//! finds every acknowledged record, with the oplog replaying to the state.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use common::*;
use space::Write;

const ENV: &str = "SPACE_CRASH_CHILD_DIR";

#[test]
fn child_writer() {
    let Ok(dir) = std::env::var(ENV) else { return };
    let s = space::SpaceStore::open(
        std::path::Path::new(&dir).join("store.sqlite"),
        space::Config::default(),
    )
    .unwrap();
    let sp = space::SpaceRef::new(OWNER, "app.example.group", "self").unwrap();
    for i in 0u32.. {
        let r = s
            .apply_writes(
                &sp,
                WRITER,
                vec![Write::Update {
                    collection: COLL.into(),
                    rkey: format!("k{i}"),
                    value: record(&i.to_string()),
                }],
            )
            .unwrap();
        println!("ack {i} {}", r.rev);
    }
}

#[test]
fn kill_9_loses_nothing_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = open(&dir);
        space(&s);
    }
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["child_writer", "--exact", "--nocapture", "--test-threads=1"])
        .env(ENV, dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let mut acked = Vec::new();
    for line in BufReader::new(out).lines() {
        let line = line.unwrap();
        if let Some(rest) = line.strip_prefix("ack ") {
            let (i, rev) = rest.split_once(' ').unwrap();
            acked.push((i.parse::<u32>().unwrap(), rev.to_owned()));
            if acked.len() == 200 {
                // SIGKILL (std's kill on unix), mid-write of the next batch.
                child.kill().unwrap();
                break;
            }
        }
    }
    child.wait().unwrap();
    assert_eq!(
        acked.len(),
        200,
        "the child acknowledged 200 batches before the kill"
    );
    let s = open(&dir);
    let sp = space::SpaceRef::new(OWNER, "app.example.group", "self").unwrap();
    for (i, _) in &acked {
        let (_, v) = s.get_record(&sp, WRITER, COLL, &format!("k{i}")).unwrap();
        assert_eq!(v, record(&i.to_string()));
    }
    let st = s.repo_state(&sp, WRITER).unwrap();
    assert!(st.rev >= acked.last().unwrap().1);
    let (h, st2) = replay(&s, &sp, WRITER, 1000);
    assert_eq!(h, st2.hash);
    assert_eq!(h, from_records(&s, &sp, WRITER));
}
