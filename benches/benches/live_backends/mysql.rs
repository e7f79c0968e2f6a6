//! `live.mysql_*`: MariaDB point select, update and range scan, `ours`
//! (the gateway's MysqlExecutor) beside `raw` (mysql_async alone: its own
//! pool of the same size and statement cache, the same statements, rows
//! decoded to the same cells; both pools keep idle connections and skip the
//! reset on check-in, which would empty the statement cache).

use std::hint::black_box;

use benches::callers::bench_callers;
use benches::target::BenchTarget;
use convert::{Cell, RecordSetMode};
use criterion::Throughput;
use gateway::{MysqlExecutor, Outcome, SqlConfig};
use mysql_async::prelude::Queryable;
use mysql_async::{Opts, OptsBuilder, Pool, PoolConstraints, PoolOpts};
use serde_json::json;
use tokio::runtime::Runtime;

use crate::live::{Dataset, run_name, sql_line, unavailable};
use crate::ours;

pub const GROUPS: [&str; 3] = [
    "live.mysql_point_select",
    "live.mysql_update",
    "live.mysql_scan",
];
const SELECT: &str = "SELECT id, payload FROM gateway_bench WHERE id = ?";
const UPDATE: &str = "UPDATE gateway_bench SET payload = ? WHERE id = ?";
const SCAN: &str = "SELECT id, payload FROM gateway_bench WHERE id >= ? ORDER BY id LIMIT ?";

fn cells(rows: Vec<(String, String)>) -> Vec<Vec<Cell>> {
    rows.into_iter()
        .map(|(id, p)| vec![Cell::Text(id), Cell::Text(p)])
        .collect()
}

fn raw_pool(url: &str, size: usize) -> Pool {
    let opts = Opts::from_url(url).expect("mysql url");
    let constraints = PoolConstraints::new(0, size).expect("pool size");
    Pool::new(
        OptsBuilder::from_opts(opts)
            .pool_opts(
                PoolOpts::default()
                    .with_constraints(constraints)
                    .with_inactive_connection_ttl(std::time::Duration::from_secs(300))
                    .with_reset_connection(false),
            )
            .stmt_cache_size(256)
            .prefer_socket(false),
    )
}

pub fn run(
    target: &mut BenchTarget,
    rt: &Runtime,
    data: &Dataset,
    context: &mut serde_json::Value,
) {
    let base = SqlConfig::mysql_from_env();
    let admin = raw_pool(&base.url, 1);
    let version: Result<Option<String>, _> = rt.block_on(async {
        let mut c = admin.get_conn().await?;
        c.query_first("SELECT VERSION()").await
    });
    let version = match version {
        Ok(v) => v,
        Err(e) => {
            unavailable(target, "mariadb", &GROUPS, &e.to_string());
            return;
        }
    };
    context["mariadb"] = json!(version);
    let db = run_name();
    rt.block_on(async {
        let mut c = admin.get_conn().await?;
        c.query_drop(format!("DROP DATABASE IF EXISTS {db}"))
            .await?;
        c.query_drop(format!("CREATE DATABASE {db}")).await
    })
    .expect("create database");
    let config = base.with_database(&db);
    let (url, pool) = (config.url.clone(), config.pool);
    let e = MysqlExecutor::new(&config, RecordSetMode::JsonAndRows).expect("config");
    seed(rt, &e, data);
    let raw = raw_pool(&url, pool.size);
    verify(rt, &e, &raw, data);
    point_select(target, rt, &e, &raw, data);
    update(target, rt, &e, &raw, data);
    scan(target, rt, &e, &raw, data);
    rt.block_on(async {
        let _ = raw.disconnect().await;
        let _ = e.close().await;
        let mut c = admin.get_conn().await?;
        c.query_drop(format!("DROP DATABASE {db}")).await?;
        drop(c);
        admin.disconnect().await
    })
    .expect("drop database");
}

fn seed(rt: &Runtime, e: &MysqlExecutor, data: &Dataset) {
    ours::run(
        rt,
        e,
        &sql_line(
            "CREATE TABLE gateway_bench (id VARCHAR(128) PRIMARY KEY, payload JSON NOT NULL)",
            json!([]),
        ),
    );
    for chunk in data.rows.chunks(500) {
        let placeholders = vec!["(?, ?)"; chunk.len()].join(",");
        let params: Vec<serde_json::Value> = chunk
            .iter()
            .flat_map(|(id, p)| [json!(id), json!(p.to_string())])
            .collect();
        let line = sql_line(
            &format!("INSERT INTO gateway_bench VALUES {placeholders}"),
            json!(params),
        );
        assert_eq!(
            ours::run(rt, e, &line),
            Outcome::Affected(chunk.len() as u64)
        );
    }
}

fn verify(rt: &Runtime, e: &MysqlExecutor, raw: &Pool, data: &Dataset) {
    for &i in data.draws(1).iter().take(64) {
        let (id, payload) = &data.rows[i];
        let set = ours::rows(rt, e, &sql_line(SELECT, json!([id])));
        let record: serde_json::Value = serde_json::from_str(&set.records[0]).expect("json");
        assert_eq!(record["id"], json!(id));
        // MariaDB's JSON is text: the stored text parses to the seeded value.
        let text = record["payload"].as_str().expect("text cell");
        assert_eq!(
            &serde_json::from_str::<serde_json::Value>(text).expect("json text"),
            payload
        );
        let rows: Vec<(String, String)> = rt
            .block_on(async { raw.get_conn().await?.exec(SELECT, (id,)).await })
            .expect("raw select");
        assert_eq!(
            cells(rows),
            [vec![Cell::Text(id.clone()), Cell::Text(text.to_string())]]
        );
    }
    let start = &data.sorted_ids[100];
    let set = ours::rows(rt, e, &sql_line(SCAN, json!([start, 1000])));
    assert_eq!(set.records.len(), 1000);
    let rows: Vec<(String, String)> = rt
        .block_on(async { raw.get_conn().await?.exec(SCAN, (start, 1000)).await })
        .expect("raw scan");
    let ids: Vec<String> = rows.into_iter().map(|(id, _)| id).collect();
    assert_eq!(ids, data.sorted_ids[100..1100]);
}

fn point_select(
    target: &mut BenchTarget,
    rt: &Runtime,
    e: &MysqlExecutor,
    raw: &Pool,
    data: &Dataset,
) {
    let draws = data.draws(2);
    let draws = &draws;
    let lines: Vec<String> = draws
        .iter()
        .map(|&i| sql_line(SELECT, json!([data.rows[i].0])))
        .collect();
    let mut g = target.group("live.mysql_point_select");
    for callers in [1usize, 10, 100] {
        let tier = format!("callers-{callers}");
        ours::bench_lines(&mut g, &tier, callers, rt, e, &lines);
        bench_callers(&mut g, "raw", &tier, callers, |caller| {
            let mut k = caller * 997;
            move |_| {
                let id = &data.rows[draws[k % draws.len()]].0;
                k += 1;
                let rows: Vec<(String, String)> = rt
                    .block_on(async { raw.get_conn().await?.exec(SELECT, (id,)).await })
                    .expect("select");
                black_box(cells(rows));
            }
        });
    }
    g.finish();
}

fn update(target: &mut BenchTarget, rt: &Runtime, e: &MysqlExecutor, raw: &Pool, data: &Dataset) {
    let draws = data.draws(3);
    let draws = &draws;
    let payloads: Vec<String> = (0..draws.len())
        .map(|k| Dataset::update_payload(k).to_string())
        .collect();
    let lines: Vec<String> = draws
        .iter()
        .enumerate()
        .map(|(k, &i)| sql_line(UPDATE, json!([payloads[k], data.rows[i].0])))
        .collect();
    let payloads = &payloads;
    let mut g = target.group("live.mysql_update");
    // Whether the raw rows ran: a filtered run (`-- appview`, say) that
    // skipped them has no update to read back.
    let updated = std::sync::atomic::AtomicBool::new(false);
    for callers in [1usize, 10] {
        let tier = format!("callers-{callers}");
        ours::bench_lines(&mut g, &tier, callers, rt, e, &lines);
        bench_callers(&mut g, "raw", &tier, callers, |caller| {
            updated.store(true, std::sync::atomic::Ordering::Relaxed);
            let mut k = caller * 997;
            move |_| {
                let j = k % draws.len();
                k += 1;
                let affected = rt
                    .block_on(async {
                        let mut c = raw.get_conn().await?;
                        c.exec_drop(UPDATE, (&payloads[j], &data.rows[draws[j]].0))
                            .await?;
                        Ok::<_, mysql_async::Error>(c.affected_rows())
                    })
                    .expect("update");
                black_box(affected);
            }
        });
    }
    g.finish();
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

fn scan(target: &mut BenchTarget, rt: &Runtime, e: &MysqlExecutor, raw: &Pool, data: &Dataset) {
    let mut g = target.group("live.mysql_scan");
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
                    .block_on(gateway::Executor::run_line(e, &lines[k % lines.len()]))
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
                let got: Vec<(String, String)> = rt
                    .block_on(async {
                        raw.get_conn().await?.exec(SCAN, (start, rows as u64)).await
                    })
                    .expect("scan");
                black_box(cells(got))
            })
        });
        assert_eq!(ours::rows(rt, e, &lines[0]).records.len(), rows);
    }
    g.finish();
}
