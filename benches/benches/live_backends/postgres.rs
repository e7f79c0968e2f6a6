//! `live.pg_*`: the SQL workload (`sql_workload.rs`) on PostgreSQL, `ours`
//! the gateway's PgExecutor (line parse, pooled checkout, cached prepared
//! statement, rows -> cells -> record set in both encodings), `raw`
//! tokio-postgres alone: one client per pool slot, the same prepared
//! statements, rows decoded to the same cells (jsonb read as serde_json);
//! floor probe `pgbench` (`-M prepared`, its own connections and threads).

use benches::target::BenchTarget;
use convert::{Cell, RecordSetMode};
use gateway::{Executor, Outcome, PgExecutor, SqlConfig};
use serde_json::{Value, json};
use tokio::runtime::Runtime;
use tokio_postgres::{Client, NoTls, Statement};

use crate::live::{Dataset, run_name, sql_line, unavailable};
use crate::ours;
use crate::sql_workload::{self, Dialect, Floor, Op, PROBE_STATEMENTS, RawSql, Sql};

pub const GROUPS: [&str; 3] = ["live.pg_point_select", "live.pg_update", "live.pg_scan"];
const SELECT: &str = "SELECT id, payload FROM gateway_bench WHERE id = $1";
const UPDATE: &str = "UPDATE gateway_bench SET payload = $2 WHERE id = $1";
const SCAN: &str = "SELECT id, payload FROM gateway_bench WHERE id >= $1 ORDER BY id LIMIT $2";

/// The group of `op`.
fn group(target: &mut BenchTarget, op: Op) -> benches::Group<'_> {
    match op {
        Op::PointSelect => target.group("live.pg_point_select"),
        Op::Update => target.group("live.pg_update"),
        Op::Scan => target.group("live.pg_scan"),
    }
}

/// PostgreSQL's statements of the workload.
pub const DIALECT: Dialect = Dialect {
    groups: GROUPS,
    open: group,
    create: "CREATE TABLE gateway_bench (id text PRIMARY KEY, payload jsonb NOT NULL)",
    select: SELECT,
    update: UPDATE,
    scan: SCAN,
    placeholder: |n| format!("${n}"),
    update_params: |id, payload| json!([id, payload]),
    payload_param: Value::clone,
    after_seed: Some("ANALYZE gateway_bench"),
};

/// One connection of the raw client and its prepared statements.
struct Conn {
    client: Client,
    select: Statement,
    update: Statement,
    scan: Statement,
}

/// tokio-postgres alone: one client per pool slot.
struct Raw(Vec<Conn>);

impl Raw {
    fn conn(&self, caller: usize) -> &Conn {
        &self.0[caller % self.0.len()]
    }
}

impl RawSql for Raw {
    type Payload = Value;

    fn payload(payload: &Value) -> Value {
        payload.clone()
    }

    async fn select(&self, caller: usize, id: &str) -> Result<Vec<Vec<Cell>>, String> {
        let c = self.conn(caller);
        let rows = c
            .client
            .query(&c.select, &[&id])
            .await
            .map_err(|e| e.to_string())?;
        Ok(cells(&rows))
    }

    async fn update(&self, caller: usize, id: &str, payload: &Value) -> Result<u64, String> {
        let c = self.conn(caller);
        c.client
            .execute(&c.update, &[&id, payload])
            .await
            .map_err(|e| e.to_string())
    }

    async fn scan(&self, start: &str, limit: usize) -> Result<Vec<Vec<Cell>>, String> {
        let c = self.conn(0);
        let limit = i64::try_from(limit).map_err(|e| e.to_string())?;
        let rows = c
            .client
            .query(&c.scan, &[&start, &limit])
            .await
            .map_err(|e| e.to_string())?;
        Ok(cells(&rows))
    }
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
    sql_workload::seed(rt, &e, &DIALECT, data);
    let conns: Vec<Conn> = (0..pool.size)
        .map(|_| {
            rt.block_on(async {
                let (client, conn) = tokio_postgres::connect(&url, NoTls)
                    .await
                    .expect("raw connect");
                tokio::spawn(conn);
                let select = client.prepare(SELECT).await.expect("prepare");
                let update = client.prepare(UPDATE).await.expect("prepare");
                let scan = client.prepare(SCAN).await.expect("prepare");
                Conn {
                    client,
                    select,
                    update,
                    scan,
                }
            })
        })
        .collect();
    let raw = Raw(conns);
    let probe_url = url.clone();
    let floor = Floor {
        implementation: "pgbench",
        tool: "pgbench",
        dir: benches::sidecar::atbench_dir().join("live-floor"),
        connections: pool.size,
        run: Box::new(move |file, clients, iters| {
            benches::floor::pgbench(&probe_url, file, PROBE_STATEMENTS as u64, clients, iters)
        }),
        ran: Default::default(),
    };
    let w = Sql {
        rt,
        dialect: &DIALECT,
        ours: &e,
        raw: &raw,
        floor: &floor,
        data,
    };
    sql_workload::run(target, w);
    drop(raw);
    drop(e);
    ours::run(
        rt,
        &admin,
        &sql_line(&format!("DROP DATABASE {db} WITH (FORCE)"), json!([])),
    );
}
