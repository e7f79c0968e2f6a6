//! `appview.seed_write/{atproto,atproto.store_only,sqlite}/300`: the
//! whole seeded write stream of the 300-run tier (about 870 writes) into a
//! fresh database per iteration (opened outside the timing). atproto:
//! each write checked and planned against the index, its records encoded,
//! committed as one signed commit through `crates/store` (nosync default),
//! and the `#commit` frame the store's writer queues for it (the
//! appview's event feed) decoded and applied to the index.
//! atproto.store_only: the store's own floor for the same stream, the
//! same writes (planned and encoded outside the timing) committed one
//! `applyWrites` each, sequentially, to the same account, with no plan,
//! encode or index. sqlite: the same planned mutations, each one SQL
//! transaction (Prefect's schema). Checked outside the timing: the
//! atproto index equals the bulk-built one, the store-only repository
//! holds every record, the SQL database holds every run.
//!
//! The tax's breakdown is a printed per-stage profile (also in the run
//! context), computed outside Criterion over the same writes, each stage
//! alone, best of three rounds: CBOR (encode every record of the
//! mutations planned with the fixtures, its strict decode as the store
//! checks it, CIDs; no planning or indexing), MST (an in-memory tree
//! taking each commit's keys and hashing its nodes), signing (one k256
//! commit signature per write), SQL (the store's index-only writer job
//! per write: one index and ownership row per record of the commit, the
//! event, group commit, no CBOR/MST/signing) and index
//! update (decode each commit's frame and CAR, apply; the frames are read
//! back outside the timing). Beside them: the atproto stream's process
//! CPU time per write (every thread: the caller, the store's writer and
//! its checkpointer) and its off-CPU share (wall minus CPU: the caller
//! waiting on the writer thread's hand-off, and the machine's other
//! work), and the store-only floor. What the stages do not cover is the
//! rest: planning each write against the index, the lane, each event's
//! proof and CAR, the queue hand-off to the
//! writer and back (off-CPU waiting included), and the stages' own
//! overlap (each stage alone runs without the others' cache misses).

use std::path::Path;
use std::time::{Duration, Instant};

use appview::{AppView, Index, Mutation, SqliteBaseline, encode_record};
use benches::target::BenchTarget;
use criterion::Throughput;
use repo::Cid;
use repo::commit::UnsignedCommit;
use repo::firehose::Frame;
use repo::mst::{MemoryBlockStore, Mst};
use repo::syntax::TidGenerator;
use std::sync::Arc;
use store::bench_internals::{self, IndexOnly, IndexOnlyRecord, SeqlessEvent};

use crate::fixtures::Fixtures;

fn fresh(dir: &Path, name: &str, i: u64) -> std::path::PathBuf {
    let p = dir.join(format!("seed-{name}-{}-{i}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    p
}

/// CPU time consumed so far by every thread of this process.
fn process_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a
    // constant the platform defines.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(
        u64::try_from(ts.tv_sec).unwrap_or(0),
        u32::try_from(ts.tv_nsec).unwrap_or(0),
    )
}

/// A fresh store with the appview's account, in `dir` (created).
fn store_only_open(dir: &Path) -> store::Store {
    std::fs::create_dir_all(dir).expect("dir");
    let s = store::Store::open(dir.join("s.sqlite"), store::Config::default()).expect("open");
    s.create_account(appview::APPVIEW_DID, &appview::signing_key().expect("key"))
        .expect("account");
    s
}

/// Checks a store-only repository holds every record of `mutations`.
fn check_store_only(s: &store::Store, mutations: &[Mutation]) {
    // A run's record is replaced by each state change: distinct keys.
    let keys: std::collections::HashSet<(&str, String)> = mutations
        .iter()
        .flat_map(|m| m.records())
        .map(|r| (r.collection(), r.id().to_string()))
        .collect();
    assert_eq!(
        s.check_repo(appview::APPVIEW_DID).expect("check repo"),
        keys.len(),
        "the store-only repository holds every record (MST checked)"
    );
}

fn per_write(d: Duration, n: usize) -> f64 {
    d.as_secs_f64() * 1e6 / n as f64
}

/// One round of the stages: (cbor, mst, signing, sql, index update).
fn stages_once(fx: &Fixtures, dir: &Path, round: u64) -> [Duration; 5] {
    let ops = &fx.small.workload.ops;
    let n = ops.len();
    // CBOR: encode + strict decode + CID of every record (the mutations
    // were planned once, with the fixtures: planning and indexing are not
    // this stage's).
    let t = Instant::now();
    let mut blocks: Vec<Vec<(String, Vec<u8>)>> = Vec::with_capacity(n);
    for m in &fx.mutations {
        let mut commit = Vec::new();
        for r in m.records() {
            let bytes = encode_record(r);
            repo::cbor::decode(&bytes).expect("strict");
            let _ = Cid::for_dag_cbor(&bytes);
            commit.push((format!("{}/{}", r.collection(), r.id()), bytes));
        }
        blocks.push(commit);
    }
    let cbor = t.elapsed();
    // MST: each commit's keys into an in-memory tree, nodes hashed.
    let t = Instant::now();
    let mut mst = Mst::empty(MemoryBlockStore::new());
    let mut roots = Vec::with_capacity(n);
    for commit in &blocks {
        for (key, bytes) in commit {
            mst.insert(key, Cid::for_dag_cbor(bytes))
                .expect("mst insert");
        }
        let c = mst.commit().expect("mst commit");
        for (cid, b) in c.new_blocks {
            mst.source_mut().put(cid, b);
        }
        roots.push(c.root);
    }
    let mst_time = t.elapsed();
    // Signing: one commit signature per write.
    let key = appview::signing_key().expect("key");
    let tids = TidGenerator::new(7);
    let t = Instant::now();
    for root in &roots {
        std::hint::black_box(
            UnsignedCommit::new(appview::APPVIEW_DID, *root, tids.next_tid()).sign(&key),
        );
    }
    let signing = t.elapsed();
    // SQL: the store's writer job alone, one per write, appending the
    // live stream's own `#commit` event bodies (prepared outside the
    // timing from the fixture's repository, seq cut out).
    let mut frames: Vec<Vec<u8>> = fx
        .app
        .store()
        .events_after(0, usize::MAX)
        .expect("events")
        .into_iter()
        .map(|e| e.frame)
        .collect();
    frames.retain(|f| matches!(Frame::decode(f), Ok(Frame::Commit(_))));
    assert_eq!(frames.len(), n, "one #commit event per write");
    let jobs: Vec<Arc<IndexOnly>> = frames
        .iter()
        .map(|f| {
            let Ok(Frame::Commit(c)) = Frame::decode(f) else {
                panic!("not a #commit frame");
            };
            // One index row per op: a run with its first state, or a state
            // with the run it moves, is two records in one commit.
            let records = c
                .ops
                .iter()
                .map(|op| {
                    let (coll, rkey) = op.path.split_once('/').expect("path");
                    IndexOnlyRecord {
                        collection: coll.to_owned(),
                        rkey: rkey.to_owned(),
                        cid: op.cid.expect("record cid"),
                    }
                })
                .collect();
            let event = SeqlessEvent::new("#commit", |seq| {
                let Ok(Frame::Commit(mut c)) = Frame::decode(f) else {
                    panic!("not a #commit frame");
                };
                c.seq = seq;
                Frame::Commit(c).to_vec()
            })
            .expect("seqless event");
            Arc::new(IndexOnly {
                records,
                rev: c.rev.to_owned(),
                event,
            })
        })
        .collect();
    let sql_dir = fresh(dir, "index-only", round);
    std::fs::create_dir_all(&sql_dir).expect("dir");
    let idx = store::Store::open(sql_dir.join("s.sqlite"), store::Config::default()).expect("open");
    let t = Instant::now();
    for (i, job) in jobs.iter().enumerate() {
        bench_internals::index_only_write(&idx, appview::APPVIEW_DID, job.clone())
            .unwrap_or_else(|e| panic!("index-only write {i}: {e}"));
    }
    let sql = t.elapsed();
    drop(idx);
    let _ = std::fs::remove_dir_all(&sql_dir);
    // Index update: decode each commit's frame and apply it (the frames
    // read back outside the timing; the live path gets them from the
    // store's event feed).
    let t = Instant::now();
    let mut fed = Index::new();
    for f in &frames {
        fed.apply_commit(f).expect("apply");
    }
    let index_update = t.elapsed();
    assert_eq!(
        fed,
        *fx.app.index(),
        "the replayed events rebuild the live index"
    );
    [cbor, mst_time, signing, sql, index_update]
}

/// The fastest iteration of each timed stream: wall time and the
/// process CPU time it consumed (every thread).
#[derive(Clone, Copy)]
struct Best {
    wall: Duration,
    cpu: Duration,
}

impl Best {
    const NONE: Best = Best {
        wall: Duration::MAX,
        cpu: Duration::ZERO,
    };

    fn note(&mut self, wall: Duration, cpu: Duration) {
        if wall < self.wall {
            *self = Best { wall, cpu };
        }
    }

    fn seen(&self) -> bool {
        self.wall != Duration::MAX
    }
}

/// The per-stage profile (µs per write), printed and recorded: each
/// stage's best of three rounds (the machine's other work only adds),
/// beside the streams' fastest iterations (wall and process CPU).
fn breakdown(fx: &Fixtures, dir: &Path, atproto: Best, store_only: Best, sqlite: Best) {
    let n = fx.small.workload.ops.len();
    let mut best = [Duration::MAX; 5];
    for round in 0..3 {
        for (b, d) in best.iter_mut().zip(stages_once(fx, dir, round)) {
            *b = (*b).min(d);
        }
    }
    let [cbor, mst_time, signing, sql, index_update] = best;
    let stages = [
        ("cbor", cbor),
        ("mst", mst_time),
        ("signing", signing),
        ("sql", sql),
        ("index_update", index_update),
    ];
    let covered: Duration = stages.iter().map(|s| s.1).sum();
    let rest = atproto.wall.saturating_sub(covered);
    let off_cpu = atproto.wall.saturating_sub(atproto.cpu);
    let us = |d: Duration| per_write(d, n);
    let mut line = format!(
        "atbench: appview.seed_write breakdown (µs per write, {n} writes; fastest iteration of each stream; each stage alone, outside the timing): atproto {:.1} (process CPU {:.1}, off-CPU {:.1}) vs sqlite {:.1} = tax {:.1} ({:.2}x); store floor (atproto.store_only: the same signed commits through the store alone) {:.1} (process CPU {:.1}), appview over it {:.1};",
        us(atproto.wall),
        us(atproto.cpu),
        us(off_cpu),
        us(sqlite.wall),
        us(atproto.wall.saturating_sub(sqlite.wall)),
        atproto.wall.as_secs_f64() / sqlite.wall.as_secs_f64(),
        us(store_only.wall),
        us(store_only.cpu),
        us(atproto.wall.saturating_sub(store_only.wall)),
    );
    let mut json = serde_json::json!({
        "writes": n,
        "atproto_us_per_write": us(atproto.wall),
        "atproto_cpu_us_per_write": us(atproto.cpu),
        "atproto_off_cpu_us_per_write": us(off_cpu),
        "store_only_us_per_write": us(store_only.wall),
        "store_only_cpu_us_per_write": us(store_only.cpu),
        "sqlite_us_per_write": us(sqlite.wall),
        "rest_us_per_write": us(rest),
        "rest_is": "atproto wall minus the five stages: planning each write against the index, lane, proof and CAR of each event, the hand-off to the writer thread and back (off-CPU waiting included), the stages' overlap",
    });
    for (name, d) in stages {
        line.push_str(&format!(" {name} {:.1}", us(d)));
        json[format!("{name}_us_per_write")] = serde_json::json!(us(d));
    }
    line.push_str(&format!(
        "; rest {:.1} (planning, lane, proof and CAR, writer hand-off incl. off-CPU waiting)",
        us(rest)
    ));
    eprintln!("{line}");
    benches::sidecar::context("appview_seed_write_breakdown", json);
}

pub fn run(target: &mut BenchTarget, fx: &Fixtures, dir: &Path) {
    let ops = &fx.small.workload.ops;
    let mutations = &fx.mutations;
    let reference = fx.app.index().clone();
    let mut g = target.group("appview.seed_write");
    g.throughput(Throughput::Elements(ops.len() as u64));
    g.criterion().sample_size(10);
    let mut atproto = Best::NONE;
    g.bench("atproto", "300", |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for i in 0..iters {
                let d = fresh(dir, "atproto", i);
                let app = AppView::open(&d, store::Config::default()).expect("open");
                let (t, cpu) = (Instant::now(), process_cpu());
                for op in ops {
                    app.apply_op(op).expect("write");
                }
                let (e, cpu) = (t.elapsed(), process_cpu().saturating_sub(cpu));
                timed += e;
                atproto.note(e, cpu);
                assert_eq!(*app.index(), reference, "the stream's index");
                drop(app);
                let _ = std::fs::remove_dir_all(&d);
            }
            timed
        })
    });
    // The store's own floor, adjacent: the same writes, no appview.
    let mut store_only = Best::NONE;
    g.bench("atproto.store_only", "300", |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for i in 0..iters {
                let d = fresh(dir, "store-only", i);
                let s = store_only_open(&d);
                let writes: Vec<_> = mutations.iter().map(appview::store_writes).collect();
                let (t, cpu) = (Instant::now(), process_cpu());
                for w in writes {
                    s.apply_writes(appview::APPVIEW_DID, w, None)
                        .expect("write");
                }
                let (e, cpu) = (t.elapsed(), process_cpu().saturating_sub(cpu));
                timed += e;
                store_only.note(e, cpu);
                check_store_only(&s, mutations);
                drop(s);
                let _ = std::fs::remove_dir_all(&d);
            }
            timed
        })
    });
    let mut sqlite = Best::NONE;
    g.bench("sqlite", "300", |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for i in 0..iters {
                let d = fresh(dir, "sqlite", i);
                std::fs::create_dir_all(&d).expect("dir");
                let mut sql = SqliteBaseline::open(&d.join("b.sqlite")).expect("open");
                let (t, cpu) = (Instant::now(), process_cpu());
                for m in mutations {
                    sql.apply(m).expect("write");
                }
                let (e, cpu) = (t.elapsed(), process_cpu().saturating_sub(cpu));
                timed += e;
                sqlite.note(e, cpu);
                let runs: i64 = sql
                    .connection()
                    .query_row("SELECT count(*) FROM flow_run", [], |r| r.get(0))
                    .expect("count");
                assert_eq!(runs, 300);
                drop(sql);
                let _ = std::fs::remove_dir_all(&d);
            }
            timed
        })
    });
    g.finish();
    if atproto.seen() && store_only.seen() && sqlite.seen() {
        breakdown(fx, dir, atproto, store_only, sqlite);
    }
}
