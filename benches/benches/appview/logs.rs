//! `appview.logs_write/{sqlite,repo}/batch-100` and
//! `appview.logs_read/sqlite/run-1000`: how the appview keeps Prefect's
//! log lines (the choice is `appview::LogStore`'s doc).
//!
//! logs_write: one `POST /logs/` batch of 100 lines of one flow run (a
//! task run for every other line), stored. sqlite: `LogStore::insert`,
//! one transaction into the table beside the store (WAL, NORMAL: the
//! appview's default durability), as the server does. repo: the same
//! lines as 100 DAG-CBOR records in one signed commit of the appview's
//! repository through `crates/store` (nosync default), the alternative
//! the store would pay: MST, signing, the record index and the event
//! log. Both grow their database over the iterations. Checked outside
//! the timing: the table holds every line written, the repository every
//! record (MST checked).
//!
//! logs_read: one flow run's 1,000 lines among 10,000 (ten runs, their
//! lines interleaved in time, as concurrent flows write them), read as
//! `prefect flow-run logs` pages them: `TIMESTAMP_ASC`, five pages of 200
//! by offset. Checked outside the timing: 1,000 lines, of that run, in
//! order.

use std::hint::black_box;
use std::path::Path;

use appview::{LogFilter, LogRow, LogSort, LogStore, Uuid};
use benches::target::BenchTarget;
use criterion::Throughput;
use repo::cbor::Encoder;
use store::RecordWrite;

const BATCH: usize = 100;
const RUN_LINES: usize = 1000;
const RUNS: usize = 10;
const LOG_NSID: &str = "dev.atbench.appview.log";

fn line(i: u64, run: Uuid, ts: i64) -> LogRow {
    LogRow {
        id: Uuid(0x0190_0000_0000_7000_8000_0000_0000_0000 | u128::from(i)),
        created: ts,
        name: "prefect.task_runs".into(),
        level: 20,
        message: format!("Finished in state Completed() after step {i} of the flow"),
        timestamp: ts,
        flow_run_id: Some(run),
        task_run_id: i.is_multiple_of(2).then_some(Uuid(run.0 ^ 0xffff)),
    }
}

/// A line as a record (keys in DAG-CBOR's canonical order).
fn record(r: &LogRow) -> Vec<u8> {
    let mut out = Vec::with_capacity(160 + r.message.len());
    let mut e = Encoder::new(&mut out);
    let mut id = [0u8; 36];
    e.map(7);
    e.text("name");
    e.text(&r.name);
    e.text("$type");
    e.text(LOG_NSID);
    e.text("level");
    e.int(r.level);
    e.text("flowRun");
    match r.flow_run_id {
        Some(f) => e.text(f.write_to(&mut id)),
        None => e.null(),
    }
    e.text("message");
    e.text(&r.message);
    e.text("taskRun");
    match r.task_run_id {
        Some(t) => e.text(t.write_to(&mut id)),
        None => e.null(),
    }
    e.text("timestamp");
    e.int(r.timestamp);
    out
}

fn write(target: &mut BenchTarget, dir: &Path) {
    let mut g = target.group("appview.logs_write");
    g.throughput(Throughput::Elements(BATCH as u64));
    let run = Uuid(0x5ee0_0000_0000_4000_8000_0000_0000_0001);
    let path = dir.join(format!("logs-bench-{}.sqlite", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let logs = LogStore::open(&path, false).expect("open the log table");
    let mut n = 0u64;
    g.bench("sqlite", "batch-100", |b| {
        b.iter(|| {
            let rows: Vec<LogRow> = (0..BATCH as u64)
                .map(|k| line(n * BATCH as u64 + k, run, n as i64))
                .collect();
            logs.insert(&rows).expect("insert");
            n += 1;
        })
    });
    assert_eq!(
        logs.count().expect("count"),
        n * BATCH as u64,
        "the table holds every line written"
    );

    let sdir = dir.join(format!("logs-bench-repo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&sdir);
    std::fs::create_dir_all(&sdir).expect("dir");
    let s = store::Store::open(sdir.join("s.sqlite"), store::Config::default()).expect("open");
    s.create_account(appview::APPVIEW_DID, &appview::signing_key().expect("key"))
        .expect("account");
    let mut m = 0u64;
    g.bench("repo", "batch-100", |b| {
        b.iter(|| {
            let writes: Vec<RecordWrite> = (0..BATCH as u64)
                .map(|k| {
                    let r = line(m * BATCH as u64 + k, run, m as i64);
                    RecordWrite::create(LOG_NSID, Some(&r.id.to_string()), record(&r))
                })
                .collect();
            s.apply_writes(appview::APPVIEW_DID, writes, None)
                .expect("commit");
            m += 1;
        })
    });
    g.finish();
    assert_eq!(
        s.check_repo(appview::APPVIEW_DID).expect("check repo") as u64,
        m * BATCH as u64,
        "the repository holds every line's record"
    );
    drop(logs);
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_dir_all(&sdir);
}

fn read(target: &mut BenchTarget, dir: &Path) {
    let path = dir.join(format!("logs-bench-read-{}.sqlite", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let logs = LogStore::open(&path, false).expect("open the log table");
    let runs: Vec<Uuid> = (0..RUNS as u128)
        .map(|r| Uuid(0x5ee0_0000_0000_4000_8000_0000_0000_0100 | r))
        .collect();
    // Ten runs' lines interleaved in time, written in batches of 100.
    let all: Vec<LogRow> = (0..(RUNS * RUN_LINES) as u64)
        .map(|i| line(i, runs[i as usize % RUNS], i as i64))
        .collect();
    for chunk in all.chunks(BATCH) {
        logs.insert(chunk).expect("insert");
    }
    let target_run = runs[3];
    let filter = LogFilter {
        flow_runs: Some(vec![target_run]),
        ..LogFilter::default()
    };
    let pages = |logs: &LogStore| -> Vec<LogRow> {
        let mut out = Vec::with_capacity(RUN_LINES);
        for p in 0..RUN_LINES / 200 {
            out.extend(
                logs.read(&filter, LogSort::TimestampAsc, p * 200, 200)
                    .expect("read"),
            );
        }
        out
    };
    let got = pages(&logs);
    assert_eq!(got.len(), RUN_LINES, "the run's every line");
    assert!(got.iter().all(|r| r.flow_run_id == Some(target_run)));
    assert!(got.windows(2).all(|w| w[0].timestamp <= w[1].timestamp));
    let mut g = target.group("appview.logs_read");
    g.throughput(Throughput::Elements(RUN_LINES as u64));
    g.bench("sqlite", "run-1000", |b| {
        b.iter(|| black_box(pages(&logs).len()))
    });
    g.finish();
    drop(logs);
    let _ = std::fs::remove_file(&path);
}

/// The log rows.
pub fn run(target: &mut BenchTarget, dir: &Path) {
    write(target, dir);
    read(target, dir);
}
