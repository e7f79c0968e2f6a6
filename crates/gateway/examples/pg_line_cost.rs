//! What a PostgreSQL point select costs the client through `PgExecutor`
//! over `tokio-postgres` alone, for a profiler:
//!
//! ```text
//! cargo build --release -p gateway --example pg_line_cost
//! valgrind --tool=callgrind --toggle-collect='pg_line_cost::ours_lines' \
//!     target/release/examples/pg_line_cost
//! valgrind --tool=callgrind --toggle-collect='pg_line_cost::raw_lines' \
//!     target/release/examples/pg_line_cost [json-only]
//! ```
//!
//! Both loops run the same select on the same 100 rows, in a schema of the
//! run's own (created and dropped); the collected instructions are the
//! calling thread's (line parse, checkout, statement, decode, record set),
//! not the connection task's. `--bench live_backends`'
//! `live.pg_point_select` is the timed comparison.

use std::hint::black_box;

use convert::{Cell, RecordSetMode};
use gateway::{Executor, PgExecutor, SqlConfig};
use serde_json::json;
use tokio::runtime::Runtime;
use tokio_postgres::{Client, NoTls, Statement};

const LINES: usize = 2000;

fn line(sql: &str, params: serde_json::Value) -> String {
    json!({"sql": sql, "params": params}).to_string()
}

#[inline(never)]
fn ours_lines(rt: &Runtime, e: &PgExecutor, lines: &[String]) {
    for l in lines {
        black_box(rt.block_on(e.run_line(l)).expect("ours line"));
    }
}

#[inline(never)]
fn raw_lines(rt: &Runtime, client: &Client, select: &Statement, ids: &[String]) {
    for id in ids {
        let rows = rt
            .block_on(client.query(select, &[id]))
            .expect("raw select");
        let cells: Vec<Vec<Cell>> = rows
            .iter()
            .map(|r| {
                vec![
                    Cell::Text(r.get::<_, String>(0)),
                    Cell::Json(r.get::<_, serde_json::Value>(1)),
                ]
            })
            .collect();
        black_box(cells);
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let config = SqlConfig::postgres_from_env();
    // `json-only` as the first argument builds the JSON records alone.
    let mode = match std::env::args().nth(1).as_deref() {
        Some("json-only") => RecordSetMode::JsonOnly,
        _ => RecordSetMode::JsonAndRows,
    };
    let e = PgExecutor::new(&config, mode).expect("config");
    let schema = format!("atbench_line_cost_{}", std::process::id());
    let table = format!("{schema}.t");
    let run = |sql: String| {
        rt.block_on(e.run_line(&line(&sql, json!([]))))
            .expect("setup line");
    };
    run(format!("CREATE SCHEMA {schema}"));
    run(format!(
        "CREATE TABLE {table} (id text PRIMARY KEY, payload jsonb NOT NULL)"
    ));
    let ids: Vec<String> = (0..100)
        .map(|i| format!("app.bsky.feed.post/{i:013}"))
        .collect();
    for id in &ids {
        let payload = json!({"$type": "app.bsky.feed.post", "text": format!("post {id}"), "createdAt": "2024-06-03T05:49:27.015Z", "langs": ["en"]});
        rt.block_on(e.run_line(&line(
            &format!("INSERT INTO {table} VALUES ($1, $2)"),
            json!([id, payload]),
        )))
        .expect("insert");
    }
    let sql = format!("SELECT id, payload FROM {table} WHERE id = $1");
    let draws: Vec<String> = (0..LINES)
        .map(|k| ids[(k * 37) % ids.len()].clone())
        .collect();
    let lines: Vec<String> = draws.iter().map(|id| line(&sql, json!([id]))).collect();
    let (client, select) = rt.block_on(async {
        let (client, conn) = tokio_postgres::connect(&config.url, NoTls)
            .await
            .expect("raw connect");
        tokio::spawn(conn);
        let select = client.prepare(&sql).await.expect("prepare");
        (client, select)
    });
    // Warm both paths (statement caches, connections) before the profiled loops.
    ours_lines(&rt, &e, &lines[..100]);
    raw_lines(&rt, &client, &select, &draws[..100]);
    let start = std::time::Instant::now();
    ours_lines(&rt, &e, &lines);
    let ours = start.elapsed();
    let start = std::time::Instant::now();
    raw_lines(&rt, &client, &select, &draws);
    let raw = start.elapsed();
    run(format!("DROP SCHEMA {schema} CASCADE"));
    println!(
        "{LINES} point selects: ours {:?}/line, raw {:?}/line",
        ours / LINES as u32,
        raw / LINES as u32
    );
}
