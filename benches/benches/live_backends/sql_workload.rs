//! The live SQL workload, one for every SQL backend (`postgres.rs`,
//! `mysql.rs` are its adapters): `live.<backend>_point_select`,
//! `live.<backend>_update` and `live.<backend>_scan`, each `ours` (a
//! gateway executor: line parse, pooled checkout, cached prepared
//! statement, rows -> cells -> record set) beside `raw` (the client alone,
//! through [`RawSql`]: the same statements prepared and cached, as many
//! connections as the gateway's pool, rows decoded to the same cells).
//!
//! Both sides have the same harness shape: every operation is a future
//! driven to completion on the live runtime by the caller thread
//! (`Runtime::block_on`), whose two workers run both clients' connection
//! tasks; ids are drawn from the same seeded stream, callers start at the
//! same offsets. The seeded rows are checked on both sides before
//! anything is timed; updates are read back after.
//!
//! Each group also has a floor probe row ([`Floor`]: `pgbench`,
//! `mysqlslap`): the backend's own mainstream client running the raw
//! statements, with their values written in, from a file of
//! [`PROBE_STATEMENTS`] of them, at the same callers tiers; each of its
//! statements is run through `ours` outside the timing and checked.

use std::future::Future;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use benches::callers::bench_callers;
use benches::target::BenchTarget;
use convert::Cell;
use criterion::Throughput;
use gateway::{Executor, Outcome};
use serde_json::{Value, json};
use tokio::runtime::Runtime;

use crate::live::{Dataset, sql_line};
use crate::ours;

/// The workload's three groups.
#[derive(Debug, Clone, Copy)]
pub enum Op {
    PointSelect,
    Update,
    Scan,
}

/// What a SQL backend's workload differs in: its statements' dialect and
/// its group names.
pub struct Dialect {
    /// `live.<backend>_point_select`, `_update`, `_scan`.
    pub groups: [&'static str; 3],
    /// Opens the group of an operation (literal names: the registry test
    /// reads them).
    pub open: for<'t> fn(&'t mut BenchTarget, Op) -> benches::Group<'t>,
    /// The seeded table (`id`, `payload`), created before the seed.
    pub create: &'static str,
    /// One id's row: `id`, `payload`.
    pub select: &'static str,
    /// One id's payload replaced.
    pub update: &'static str,
    /// `limit` rows from `id` on, in id order.
    pub scan: &'static str,
    /// The placeholder of the `n`-th parameter (1-based) in a generated
    /// statement.
    pub placeholder: fn(usize) -> String,
    /// The update line's parameters for `id` and `payload`, in the
    /// statement's order.
    pub update_params: fn(&str, &Value) -> Value,
    /// A payload as the insert line binds it.
    pub payload_param: fn(&Value) -> Value,
    /// Run once the seed is in (the planner's statistics), if any.
    pub after_seed: Option<&'static str>,
}

/// Statements in a floor probe's file (the probe cycles through them).
pub const PROBE_STATEMENTS: usize = 64;

/// The payload a probe's updates write.
const PROBE_PAYLOAD: &str = r#"{"$type": "app.atbench.update", "probe": true}"#;

/// [`PROBE_PAYLOAD`] as `serde_json` writes it (MariaDB's update binds it
/// as text).
const PROBE_PAYLOAD_JSON: &str = r#"{"$type":"app.atbench.update","probe":true}"#;

/// Runs a probe's statement file from a number of connections, a number
/// of statements in all; their wall time by the tool's clock.
pub type ProbeRun = dyn Fn(&Path, usize, u64) -> Result<Duration, String> + Sync;

/// A backend's floor probe: its mainstream client running a file of
/// literal statements.
pub struct Floor {
    /// The implementation of its rows.
    pub implementation: &'static str,
    /// The tool it needs on `PATH`.
    pub tool: &'static str,
    /// Where its statement files go.
    pub dir: PathBuf,
    /// Connections at most: the gateway pool's size, as ours and raw have
    /// (a tier with more callers shares them).
    pub connections: usize,
    /// Runs the file's statements (`PROBE_STATEMENTS`, one per line, each
    /// ending in `;`) from `clients` connections, `iters` in all; returns
    /// their wall time by the tool's clock.
    pub run: Box<ProbeRun>,
    /// Whether a row of the probe ran since it was last cleared (a
    /// filtered run may skip them).
    pub ran: AtomicBool,
}

impl Floor {
    /// `statements` written to `<dir>/<name>.sql`, one per line.
    fn file(&self, name: &str, statements: &[String]) -> PathBuf {
        let path = self.dir.join(format!("{name}.sql"));
        std::fs::create_dir_all(&self.dir)
            .and_then(|()| std::fs::write(&path, statements.join("\n") + "\n"))
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        path
    }

    /// The probe's row at `tier` over `file`, or its skip (a missing tool).
    fn bench(&self, g: &mut benches::Group<'_>, tier: &str, file: &Path, clients: usize) {
        let id = g.id(self.implementation, tier);
        if let Err(e) = benches::floor::find(self.tool) {
            return benches::floor::skip(&id, &e);
        }
        let clients = clients.clamp(1, self.connections.max(1));
        g.bench(self.implementation, tier, |b| {
            self.ran.store(true, Ordering::Relaxed);
            b.iter_custom(|iters| {
                (self.run)(file, clients, iters).unwrap_or_else(|e| panic!("{id}: {e}"))
            })
        });
    }
}

/// `text` as an SQL string literal.
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// `statement` with its `?` / `$n` placeholders replaced by `values`
/// (literals), in order of appearance.
fn with_values(statement: &str, values: &[String]) -> String {
    let mut out = String::new();
    let mut rest = statement;
    let mut next = values.iter();
    while let Some(at) = rest.find(['?', '$']) {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let digits = after
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(after.len());
        let value = if rest[at..].starts_with('$') {
            let n: usize = after[..digits].parse().unwrap_or(1);
            values.get(n - 1)
        } else {
            next.next()
        };
        out.push_str(value.map_or("NULL", String::as_str));
        rest = if rest[at..].starts_with('$') {
            &after[digits..]
        } else {
            after
        };
    }
    out.push_str(rest);
    out + ";"
}

/// Outside the timing: each of a probe's statements returns `rows` rows
/// through `ours`.
fn check_probe<E: Executor>(rt: &Runtime, e: &E, statements: &[String], rows: usize) {
    for statement in statements {
        let sql = statement.trim_end_matches(';');
        let set = ours::rows(rt, e, &sql_line(sql, json!([])));
        assert_eq!(set.records.len(), rows, "floor probe statement {sql}");
    }
}

/// A backend's client alone, for the `raw` rows: the same statements,
/// prepared once per connection and cached, on as many connections as the
/// gateway's pool has (caller `c` uses connection `c mod size`, or checks
/// one out of a pool of that size).
pub trait RawSql: Sync {
    /// An update's payload as this client binds it (built outside the timing).
    type Payload: Sync;

    /// `payload` as [`Self::Payload`].
    fn payload(payload: &Value) -> Self::Payload;

    /// `id`'s row as cells (`Text` id, then the payload's cell).
    fn select(
        &self,
        caller: usize,
        id: &str,
    ) -> impl Future<Output = Result<Vec<Vec<Cell>>, String>> + Send;

    /// Sets `id`'s payload; returns the rows affected.
    fn update(
        &self,
        caller: usize,
        id: &str,
        payload: &Self::Payload,
    ) -> impl Future<Output = Result<u64, String>> + Send;

    /// `limit` rows from `start` on, as cells.
    fn scan(
        &self,
        start: &str,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<Vec<Cell>>, String>> + Send;
}

/// A payload cell or record value as JSON: a JSON cell or value as it is,
/// JSON text (MariaDB's JSON type is text) parsed.
fn payload_json(v: &Value) -> Value {
    match v {
        Value::String(text) => serde_json::from_str(text).unwrap_or_else(|_| v.clone()),
        other => other.clone(),
    }
}

fn cell_json(cell: &Cell) -> Value {
    match cell {
        Cell::Json(v) => v.clone(),
        Cell::Text(t) => payload_json(&Value::String(t.clone())),
        other => panic!("payload cell of an unexpected kind: {other:?}"),
    }
}

/// Creates and seeds the table through `ours` (500 rows a statement).
pub fn seed<E: Executor>(rt: &Runtime, e: &E, d: &Dialect, data: &Dataset) {
    ours::run(rt, e, &sql_line(d.create, json!([])));
    for chunk in data.rows.chunks(500) {
        let placeholders: Vec<String> = (0..chunk.len())
            .map(|i| {
                format!(
                    "({}, {})",
                    (d.placeholder)(2 * i + 1),
                    (d.placeholder)(2 * i + 2)
                )
            })
            .collect();
        let params: Vec<Value> = chunk
            .iter()
            .flat_map(|(id, p)| [json!(id), (d.payload_param)(p)])
            .collect();
        let line = sql_line(
            &format!(
                "INSERT INTO gateway_bench VALUES {}",
                placeholders.join(",")
            ),
            json!(params),
        );
        assert_eq!(
            ours::run(rt, e, &line),
            Outcome::Affected(chunk.len() as u64)
        );
    }
    if let Some(statement) = d.after_seed {
        ours::run(rt, e, &sql_line(statement, json!([])));
    }
}

/// Runs the three groups on a seeded table: checked first, timed, updates
/// read back.
/// One backend's side of the workload: the runtime, its statements, `ours`
/// (a gateway executor), `raw`, its floor probe and the seeded rows.
pub struct Sql<'a, E, R> {
    pub rt: &'a Runtime,
    pub dialect: &'a Dialect,
    pub ours: &'a E,
    pub raw: &'a R,
    pub floor: &'a Floor,
    pub data: &'a Dataset,
}

impl<E, R> Clone for Sql<'_, E, R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<E, R> Copy for Sql<'_, E, R> {}

/// A workload's parts: runtime, dialect, ours, raw, floor probe, data.
type Parts<'a, E, R> = (
    &'a Runtime,
    &'a Dialect,
    &'a E,
    &'a R,
    &'a Floor,
    &'a Dataset,
);

impl<'a, E, R> Sql<'a, E, R> {
    fn parts(self) -> Parts<'a, E, R> {
        (
            self.rt,
            self.dialect,
            self.ours,
            self.raw,
            self.floor,
            self.data,
        )
    }
}

pub fn run<E: Executor + Sync, R: RawSql>(target: &mut BenchTarget, w: Sql<'_, E, R>) {
    verify(w);
    point_select(target, w);
    update(target, w);
    scan(target, w);
}

/// Outside the timing: ours and raw return the seeded row for a sample of
/// ids, and a scan returns its rows in id order on both.
fn verify<E: Executor, R: RawSql>(w: Sql<'_, E, R>) {
    let (rt, d, e, raw, _, data) = w.parts();
    for &i in data.draws(1).iter().take(64) {
        let (id, payload) = &data.rows[i];
        let set = ours::rows(rt, e, &sql_line(d.select, json!([id])));
        let record: Value = serde_json::from_str(&set.records[0]).expect("json record");
        assert_eq!(record["id"], json!(id));
        assert_eq!(&payload_json(&record["payload"]), payload);
        let rows = rt.block_on(raw.select(0, id)).expect("raw select");
        assert_eq!(rows.len(), 1, "raw select of {id}");
        assert_eq!(rows[0][0], Cell::Text(id.clone()));
        assert_eq!(&cell_json(&rows[0][1]), payload);
    }
    let start = &data.sorted_ids[100];
    let set = ours::rows(rt, e, &sql_line(d.scan, json!([start, 1000])));
    assert_eq!(set.records.len(), 1000);
    let rows = rt.block_on(raw.scan(start, 1000)).expect("raw scan");
    let ids: Vec<&Cell> = rows.iter().map(|r| &r[0]).collect();
    let want: Vec<Cell> = data.sorted_ids[100..1100]
        .iter()
        .map(|id| Cell::Text(id.clone()))
        .collect();
    assert!(ids.into_iter().eq(want.iter()), "raw scan order");
}

fn point_select<E: Executor + Sync, R: RawSql>(target: &mut BenchTarget, w: Sql<'_, E, R>) {
    let (rt, d, e, raw, floor, data) = w.parts();
    let draws = data.draws(2);
    let draws = &draws;
    let lines: Vec<String> = draws
        .iter()
        .map(|&i| sql_line(d.select, json!([data.rows[i].0])))
        .collect();
    let probe: Vec<String> = draws[..PROBE_STATEMENTS]
        .iter()
        .map(|&i| with_values(d.select, &[literal(&data.rows[i].0)]))
        .collect();
    check_probe(rt, e, &probe, 1);
    let file = floor.file(d.groups[0], &probe);
    let mut g = (d.open)(target, Op::PointSelect);
    for callers in [1usize, 10, 100] {
        let tier = format!("callers-{callers}");
        ours::bench_lines(&mut g, &tier, callers, rt, e, &lines);
        bench_callers(&mut g, "raw", &tier, callers, |caller| {
            let mut k = caller * 997;
            move |_| {
                let id = &data.rows[draws[k % draws.len()]].0;
                k += 1;
                let rows = rt.block_on(raw.select(caller, id)).expect("select");
                black_box(rows);
            }
        });
        floor.bench(&mut g, &tier, &file, callers);
    }
    g.finish();
}

fn update<E: Executor + Sync, R: RawSql>(target: &mut BenchTarget, w: Sql<'_, E, R>) {
    let (rt, d, e, raw, floor, data) = w.parts();
    let draws = data.draws(3);
    let draws = &draws;
    let lines: Vec<String> = draws
        .iter()
        .enumerate()
        .map(|(k, &i)| {
            let params = (d.update_params)(&data.rows[i].0, &Dataset::update_payload(k));
            sql_line(d.update, params)
        })
        .collect();
    let payloads: Vec<R::Payload> = (0..draws.len())
        .map(|k| R::payload(&Dataset::update_payload(k)))
        .collect();
    let payloads = &payloads;
    // The probe's updates set a payload of their own on rows no other
    // update row draws, read back after.
    let probe_payload: Value = serde_json::from_str(PROBE_PAYLOAD).expect("probe payload");
    let drawn: std::collections::HashSet<usize> = draws.iter().copied().collect();
    let probe_rows: Vec<usize> = (0..data.rows.len())
        .filter(|i| !drawn.contains(i))
        .take(PROBE_STATEMENTS)
        .collect();
    let probe: Vec<String> = probe_rows
        .iter()
        .map(|&i| {
            let params = (d.update_params)(&data.rows[i].0, &probe_payload);
            let values: Vec<String> = params
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|v| match v {
                            Value::String(text) if *text != PROBE_PAYLOAD_JSON => literal(text),
                            // The payload as JSON text with a space after
                            // each colon: pgbench reads `:name` as a variable.
                            _ => literal(PROBE_PAYLOAD),
                        })
                        .collect()
                })
                .unwrap_or_default();
            with_values(d.update, &values)
        })
        .collect();
    let file = floor.file(d.groups[1], &probe);
    floor.ran.store(false, Ordering::Relaxed);
    let mut g = (d.open)(target, Op::Update);
    // Whether the raw rows ran: a filtered run (`-- appview`, say) that
    // skipped them has no update to read back.
    let updated = AtomicBool::new(false);
    for callers in [1usize, 10] {
        let tier = format!("callers-{callers}");
        ours::bench_lines(&mut g, &tier, callers, rt, e, &lines);
        bench_callers(&mut g, "raw", &tier, callers, |caller| {
            updated.store(true, Ordering::Relaxed);
            let mut k = caller * 997;
            move |_| {
                let j = k % draws.len();
                k += 1;
                let n = rt
                    .block_on(raw.update(caller, &data.rows[draws[j]].0, &payloads[j]))
                    .expect("update");
                debug_assert_eq!(n, 1);
                black_box(n);
            }
        });
        floor.bench(&mut g, &tier, &file, callers);
    }
    g.finish();
    // The probe's statements updated their rows (when its rows ran).
    if floor.ran.load(Ordering::Relaxed) {
        let id = &data.rows[probe_rows[0]].0;
        let set = ours::rows(rt, e, &sql_line(d.select, json!([id])));
        let record: Value = serde_json::from_str(&set.records[0]).expect("json record");
        assert_eq!(payload_json(&record["payload"]), probe_payload);
    }
    // Every update landed on a row: one drawn id reads back an update payload.
    if !updated.load(Ordering::Relaxed) {
        return;
    }
    let set = ours::rows(rt, e, &sql_line(d.select, json!([data.rows[draws[0]].0])));
    assert!(
        set.records[0].contains("app.atbench.update"),
        "{}",
        set.records[0]
    );
}

fn scan<E: Executor + Sync, R: RawSql>(target: &mut BenchTarget, w: Sql<'_, E, R>) {
    let (rt, d, e, raw, floor, data) = w.parts();
    let mut g = (d.open)(target, Op::Scan);
    for rows in [100usize, 1000] {
        let starts = data.scan_starts(rows, 4 + rows as u64);
        let lines: Vec<String> = starts
            .iter()
            .map(|&s| sql_line(d.scan, json!([data.sorted_ids[s], rows])))
            .collect();
        let tier = format!("rows-{rows}");
        let probe: Vec<String> = starts[..PROBE_STATEMENTS]
            .iter()
            .map(|&s| with_values(d.scan, &[literal(&data.sorted_ids[s]), rows.to_string()]))
            .collect();
        check_probe(rt, e, &probe, rows);
        let file = floor.file(&format!("{}-{rows}", d.groups[2]), &probe);
        g.throughput(Throughput::Elements(rows as u64));
        let mut k = 0usize;
        g.bench("ours", &tier, |b| {
            b.iter(|| {
                let out = rt
                    .block_on(e.run_line(&lines[k % lines.len()]))
                    .expect("scan");
                k += 1;
                black_box(out)
            })
        });
        let mut k = 0usize;
        g.bench("raw", &tier, |b| {
            b.iter(|| {
                let start = &data.sorted_ids[starts[k % starts.len()]];
                k += 1;
                black_box(rt.block_on(raw.scan(start, rows)).expect("scan"))
            })
        });
        assert_eq!(ours::rows(rt, e, &lines[0]).records.len(), rows);
        let got = rt
            .block_on(raw.scan(&data.sorted_ids[starts[0]], rows))
            .expect("scan");
        assert_eq!(got.len(), rows);
        floor.bench(&mut g, &tier, &file, 1);
    }
    g.finish();
}
