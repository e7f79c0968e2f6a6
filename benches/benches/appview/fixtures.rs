//! The two tiers, built once and checked before anything is timed.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, RwLock};

use appview::{AppView, Index, Mutation, Pattern, Query, ReadBackend, SqliteBaseline, bulk};
use datagen::appview::Workload;

use benches::appview::Lookups;

/// The index behind a read lock, as the live appview holds it.
pub struct Locked(pub RwLock<Index>);

impl ReadBackend for Locked {
    fn query(&self, q: &Query) -> appview::Result<appview::Page> {
        Ok(self.0.read().unwrap_or_else(|p| p.into_inner()).read(q))
    }
}

/// One tier.
pub struct Tier {
    /// `300` or `100k`.
    pub name: &'static str,
    pub workload: Workload,
    pub index: Locked,
    /// One connection per caller (10; opened like the writer's, WAL, so
    /// the shared-memory index exists: a read-only open of a WAL database
    /// whose writer closed rebuilds it per transaction), the first for
    /// the single-caller rows.
    pub sqlite: Vec<Mutex<SqliteBaseline>>,
    /// The queries (point lookups cycle through a seeded sample).
    pub lookups: Lookups,
    /// The baseline's database file (its floor probe opens it too).
    pub path: PathBuf,
}

impl Tier {
    /// The query of `pattern` for iteration `i`.
    pub fn query(&self, pattern: Pattern, i: usize) -> Query {
        self.lookups.query(pattern, i)
    }
}

pub struct Fixtures {
    pub small: Tier,
    pub large: Tier,
    /// The 300-run tier's appview (its store and live index).
    pub app: AppView,
    /// The 300-run tier's planned mutations, in order (the SQL streams'
    /// transactions and the breakdown's records: planned once, here).
    pub mutations: Vec<Mutation>,
}

pub const CALLERS: usize = 10;

fn connections(path: &Path) -> Vec<Mutex<SqliteBaseline>> {
    (0..CALLERS)
        .map(|_| Mutex::new(SqliteBaseline::open(path).expect("open baseline")))
        .collect()
}

/// Every query the benchmarks send gives the same page on both backends.
fn check(tier: &Tier) {
    let sql = tier.sqlite[0].lock().expect("lock");
    tier.lookups.check(
        &format!("tier {}: index vs sqlite", tier.name),
        |q| tier.index.query(q).expect("index"),
        |q| sql.query(q).expect("sqlite"),
    );
}

pub fn build(dir: &Path) -> Fixtures {
    let t = std::time::Instant::now();
    // 300: the real write path.
    let workload = datagen::appview::workload(300);
    let app =
        AppView::open(&dir.join("atproto-300"), store::Config::default()).expect("open appview");
    for op in &workload.ops {
        app.apply_op(op).expect("seed write");
    }
    let (bulk_index, mutations) = bulk::load(&workload).expect("plan");
    assert_eq!(
        *app.index(),
        bulk_index,
        "bulk and commit-fed indexes differ"
    );
    assert_eq!(
        app.rebuild_index().expect("rebuild"),
        bulk_index,
        "rebuilt index differs"
    );
    let path = dir.join("sqlite-300.sqlite");
    let mut sql = SqliteBaseline::open(&path).expect("open sqlite");
    for m in &mutations {
        sql.apply(m).expect("sql write");
    }
    sql.analyze().expect("analyze");
    drop(sql);
    let small = Tier {
        name: "300",
        lookups: Lookups::new(&bulk_index, workload.now_us),
        index: Locked(RwLock::new(app.index().clone())),
        sqlite: connections(&path),
        path,
        workload,
    };
    check(&small);
    let small_s = t.elapsed().as_secs_f64();

    // 10^5: the same records, bulk loaded.
    let workload = datagen::appview::workload(100_000);
    let (index, _) = bulk::load(&workload).expect("plan 100k");
    let index_s = t.elapsed().as_secs_f64() - small_s;
    let path = dir.join("sqlite-100k.sqlite");
    let mut sql = SqliteBaseline::open(&path).expect("open sqlite");
    sql.load_index(&index).expect("load 100k");
    sql.analyze().expect("analyze");
    drop(sql);
    let sql_s = t.elapsed().as_secs_f64() - small_s - index_s;
    let large = Tier {
        name: "100k",
        lookups: Lookups::new(&index, workload.now_us),
        index: Locked(RwLock::new(index)),
        sqlite: connections(&path),
        path,
        workload,
    };
    check(&large);
    eprintln!(
        "atbench: appview fixtures built and checked in {:.1} s (300: {} writes as signed commits, {small_s:.1} s; 100k: {} writes bulk loaded, index {index_s:.1} s, sqlite {sql_s:.1} s)",
        t.elapsed().as_secs_f64(),
        small.workload.ops.len(),
        large.workload.ops.len()
    );
    Fixtures {
        small,
        large,
        app,
        mutations,
    }
}
