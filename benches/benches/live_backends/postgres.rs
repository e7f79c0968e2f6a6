//! `live.pg_*`: PostgreSQL point select, update and range scan, `ours`
//! (the gateway's PgExecutor: line parse, pooled checkout, cached prepared
//! statement, rows -> cells -> record set in both encodings) beside `raw`
//! (tokio-postgres alone: one client per pool slot, the same prepared
//! statements, rows decoded to the same cells).

use std::hint::black_box;

use benches::callers::bench_callers;
use benches::target::BenchTarget;
use convert::{Cell, RecordSetMode};
use criterion::Throughput;
use gateway::{Executor, Outcome, PgExecutor, SqlConfig};
use serde_json::json;
use tokio::runtime::Runtime;
use tokio_postgres::{Client, NoTls, Statement};

use crate::live::{Dataset, run_name, sql_line, unavailable};
use crate::ours;

pub const GROUPS: [&str; 3] = ["live.pg_point_select", "live.pg_update", "live.pg_scan"];
const SELECT: &str = "SELECT id, payload FROM gateway_bench WHERE id = $1";
const UPDATE: &str = "UPDATE gateway_bench SET payload = $2 WHERE id = $1";
const SCAN: &str = "SELECT id, payload FROM gateway_bench WHERE id >= $1 ORDER BY id LIMIT $2";

struct Raw {
    client: Client,
    select: Statement,
    update: Statement,
    scan: Statement,
}

fn cells(rows: &[tokio_postgres::Row]) -> Vec<Vec<Cell>> {
    rows.iter()
        .map(|r| {
            vec![
                Cell::Text(r.get::<_, String>(0)),
                Cell::Json(r.get::<_, serde_json::Value>(1)),
            ]
        })
        .collect()
}

/// The server's version, for the run context.
pub fn version(rt: &Runtime, e: &PgExecutor) -> Option<String> {
    let set = rt
        .block_on(e.run_line(&sql_line("SHOW server_version", json!([]))))
        .ok()?;
    match set {
        Outcome::Rows(s) => {
            let record: serde_json::Value = serde_json::from_str(s.records.first()?).ok()?;
            record["server_version"].as_str().map(str::to_owned)
        }
        _ => None,
    }
}

pub fn run(
    target: &mut BenchTarget,
    rt: &Runtime,
    data: &Dataset,
    context: &mut serde_json::Value,
) {
    let base = SqlConfig::postgres_from_env();
    let admin = PgExecutor::new(&base, RecordSetMode::JsonOnly).expect("postgres config");
    if let Err(e) = rt.block_on(admin.run_line(&sql_line("SELECT 1", json!([])))) {
        unavailable(target, "postgres", &GROUPS, &e.to_string());
        return;
    }
    context["postgres"] = json!(version(rt, &admin));
    let db = run_name();
    ours::run(
        rt,
        &admin,
        &sql_line(
            &format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"),
            json!([]),
        ),
    );
    ours::run(
        rt,
        &admin,
        &sql_line(&format!("CREATE DATABASE {db}"), json!([])),
    );
    let config = base.with_database(&db);
    let (url, pool) = (config.url.clone(), config.pool);
    let e = PgExecutor::new(&config, RecordSetMode::JsonAndRows).expect("config");
    seed(rt, &e, data);
    let raw: Vec<Raw> = (0..pool.size)
        .map(|_| {
            rt.block_on(async {
                let (client, conn) = tokio_postgres::connect(&url, NoTls)
                    .await
                    .expect("raw connect");
                tokio::spawn(conn);
                let select = client.prepare(SELECT).await.expect("prepare");
                let update = client.prepare(UPDATE).await.expect("prepare");
                let scan = client.prepare(SCAN).await.expect("prepare");
                Raw {
                    client,
                    select,
                    update,
                    scan,
                }
            })
        })
        .collect();
    verify(rt, &e, &raw[0], data);
    point_select(target, rt, &e, &raw, data);
    update(target, rt, &e, &raw, data);
    scan(target, rt, &e, &raw, data);
    drop(raw);
    drop(e);
    ours::run(
        rt,
        &admin,
        &sql_line(&format!("DROP DATABASE {db} WITH (FORCE)"), json!([])),
    );
}

fn seed(rt: &Runtime, e: &PgExecutor, data: &Dataset) {
    ours::run(
        rt,
        e,
        &sql_line(
            "CREATE TABLE gateway_bench (id text PRIMARY KEY, payload jsonb NOT NULL)",
            json!([]),
        ),
    );
    for chunk in data.rows.chunks(500) {
        let placeholders: Vec<String> = (0..chunk.len())
            .map(|i| format!("(${}, ${})", 2 * i + 1, 2 * i + 2))
            .collect();
        let params: Vec<serde_json::Value> = chunk
            .iter()
            .flat_map(|(id, p)| [json!(id), p.clone()])
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
    ours::run(rt, e, &sql_line("ANALYZE gateway_bench", json!([])));
}

/// Outside the timing: ours and raw return the seeded row, cell for cell,
/// for a sample of ids, and scans return their row counts in order.
fn verify(rt: &Runtime, e: &PgExecutor, raw: &Raw, data: &Dataset) {
    for &i in data.draws(1).iter().take(64) {
        let (id, payload) = &data.rows[i];
        let set = ours::rows(rt, e, &sql_line(SELECT, json!([id])));
        let expect = json!({"id": id, "payload": payload});
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&set.records[0]).expect("json"),
            expect
        );
        let rows = rt
            .block_on(raw.client.query(&raw.select, &[id]))
            .expect("raw select");
        assert_eq!(
            cells(&rows),
            [vec![Cell::Text(id.clone()), Cell::Json(payload.clone())]]
        );
    }
    let start = &data.sorted_ids[100];
    let set = ours::rows(rt, e, &sql_line(SCAN, json!([start, 1000])));
    assert_eq!(set.records.len(), 1000);
    let rows = rt
        .block_on(raw.client.query(&raw.scan, &[start, &1000i64]))
        .expect("raw scan");
    let raw_ids: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
    assert_eq!(raw_ids, data.sorted_ids[100..1100]);
}

fn point_select(
    target: &mut BenchTarget,
    rt: &Runtime,
    e: &PgExecutor,
    raw: &[Raw],
    data: &Dataset,
) {
    let draws = data.draws(2);
    let draws = &draws;
    let lines: Vec<String> = draws
        .iter()
        .map(|&i| sql_line(SELECT, json!([data.rows[i].0])))
        .collect();
    let mut g = target.group("live.pg_point_select");
    for callers in [1usize, 10, 100] {
        let tier = format!("callers-{callers}");
        ours::bench_lines(&mut g, &tier, callers, rt, e, &lines);
        bench_callers(&mut g, "raw", &tier, callers, |caller| {
            let r = &raw[caller % raw.len()];
            let mut k = caller * 997;
            move |_| {
                let id = &data.rows[draws[k % draws.len()]].0;
                k += 1;
                let rows = rt
                    .block_on(r.client.query(&r.select, &[id]))
                    .expect("select");
                black_box(cells(&rows));
            }
        });
    }
    g.finish();
}

fn update(target: &mut BenchTarget, rt: &Runtime, e: &PgExecutor, raw: &[Raw], data: &Dataset) {
    let draws = data.draws(3);
    let draws = &draws;
    let lines: Vec<String> = draws
        .iter()
        .enumerate()
        .map(|(k, &i)| sql_line(UPDATE, json!([data.rows[i].0, Dataset::update_payload(k)])))
        .collect();
    let payloads: Vec<serde_json::Value> = (0..draws.len()).map(Dataset::update_payload).collect();
    let payloads = &payloads;
    let mut g = target.group("live.pg_update");
    // Whether the raw rows ran: a filtered run (`-- appview`, say) that
    // skipped them has no update to read back.
    let updated = std::sync::atomic::AtomicBool::new(false);
    for callers in [1usize, 10] {
        let tier = format!("callers-{callers}");
        ours::bench_lines(&mut g, &tier, callers, rt, e, &lines);
        bench_callers(&mut g, "raw", &tier, callers, |caller| {
            updated.store(true, std::sync::atomic::Ordering::Relaxed);
            let r = &raw[caller % raw.len()];
            let mut k = caller * 997;
            move |_| {
                let j = k % draws.len();
                k += 1;
                let n = rt
                    .block_on(
                        r.client
                            .execute(&r.update, &[&data.rows[draws[j]].0, &payloads[j]]),
                    )
                    .expect("update");
                debug_assert_eq!(n, 1);
                black_box(n);
            }
        });
    }
    g.finish();
    // Every update landed on a row: one drawn id reads back an update payload.
    if !updated.load(std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    let set = ours::rows(rt, e, &sql_line(SELECT, json!([data.rows[draws[0]].0])));
    assert!(
        set.records[0].contains("app.atbench.update"),
        "{}",
        set.records[0]
    );
}

fn scan(target: &mut BenchTarget, rt: &Runtime, e: &PgExecutor, raw: &[Raw], data: &Dataset) {
    let mut g = target.group("live.pg_scan");
    for rows in [100usize, 1000] {
        let starts = data.scan_starts(rows, 4 + rows as u64);
        let lines: Vec<String> = starts
            .iter()
            .map(|&s| sql_line(SCAN, json!([data.sorted_ids[s], rows])))
            .collect();
        let tier = format!("rows-{rows}");
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
        let r = &raw[0];
        let limit = rows as i64;
        let mut k = 0usize;
        g.bench("raw", &tier, |b| {
            b.iter(|| {
                let start = &data.sorted_ids[starts[k % starts.len()]];
                k += 1;
                let got = rt
                    .block_on(r.client.query(&r.scan, &[start, &limit]))
                    .expect("scan");
                black_box(cells(&got))
            })
        });
        let set = ours::rows(rt, e, &lines[0]);
        assert_eq!(set.records.len(), rows);
    }
    g.finish();
}
