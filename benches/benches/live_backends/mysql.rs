//! `live.mysql_*`: the SQL workload (`sql_workload.rs`) on MariaDB, `ours`
//! the gateway's MysqlExecutor, `raw` mysql_async alone: its own pool of
//! the same size and statement cache, the same statements, rows decoded to
//! the same cells; both pools keep idle connections and skip the reset on
//! check-in, which would empty the statement cache; floor probe
//! `mysqlslap` (MariaDB's load client: text protocol, its own connections).

use benches::target::BenchTarget;
use convert::{Cell, RecordSetMode};
use gateway::{MysqlExecutor, SqlConfig};
use mysql_async::prelude::Queryable;
use mysql_async::{Opts, OptsBuilder, Pool, PoolConstraints, PoolOpts};
use serde_json::{Value, json};
use tokio::runtime::Runtime;

use crate::live::{Dataset, run_name, unavailable};
use crate::sql_workload::{self, Dialect, Floor, Op, RawSql, Sql};

pub const GROUPS: [&str; 3] = [
    "live.mysql_point_select",
    "live.mysql_update",
    "live.mysql_scan",
];
const SELECT: &str = "SELECT id, payload FROM gateway_bench WHERE id = ?";
const UPDATE: &str = "UPDATE gateway_bench SET payload = ? WHERE id = ?";
const SCAN: &str = "SELECT id, payload FROM gateway_bench WHERE id >= ? ORDER BY id LIMIT ?";

/// The group of `op`.
fn group(target: &mut BenchTarget, op: Op) -> benches::Group<'_> {
    match op {
        Op::PointSelect => target.group("live.mysql_point_select"),
        Op::Update => target.group("live.mysql_update"),
        Op::Scan => target.group("live.mysql_scan"),
    }
}

/// MariaDB's statements of the workload (its JSON type is text: payloads
/// are bound as their JSON text).
pub const DIALECT: Dialect = Dialect {
    groups: GROUPS,
    open: group,
    create: "CREATE TABLE gateway_bench (id VARCHAR(128) PRIMARY KEY, payload JSON NOT NULL)",
    select: SELECT,
    update: UPDATE,
    scan: SCAN,
    placeholder: |_| "?".to_owned(),
    update_params: |id, payload| json!([payload.to_string(), id]),
    payload_param: |payload| json!(payload.to_string()),
    after_seed: None,
};

/// mysql_async alone: a pool of the gateway pool's size, each operation a
/// checkout, the statement from the connection's cache.
struct Raw(Pool);

impl RawSql for Raw {
    type Payload = String;

    fn payload(payload: &Value) -> String {
        payload.to_string()
    }

    async fn select(&self, _caller: usize, id: &str) -> Result<Vec<Vec<Cell>>, String> {
        let mut c = self.0.get_conn().await.map_err(|e| e.to_string())?;
        let rows: Vec<(String, String)> = c.exec(SELECT, (id,)).await.map_err(|e| e.to_string())?;
        Ok(cells(rows))
    }

    async fn update(&self, _caller: usize, id: &str, payload: &String) -> Result<u64, String> {
        let mut c = self.0.get_conn().await.map_err(|e| e.to_string())?;
        c.exec_drop(UPDATE, (payload, id))
            .await
            .map_err(|e| e.to_string())?;
        Ok(c.affected_rows())
    }

    async fn scan(&self, start: &str, limit: usize) -> Result<Vec<Vec<Cell>>, String> {
        let mut c = self.0.get_conn().await.map_err(|e| e.to_string())?;
        let rows: Vec<(String, String)> = c
            .exec(SCAN, (start, limit as u64))
            .await
            .map_err(|e| e.to_string())?;
        Ok(cells(rows))
    }
}

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
    sql_workload::seed(rt, &e, &DIALECT, data);
    let raw = Raw(raw_pool(&url, pool.size));
    let opts = Opts::from_url(&url).expect("mysql url");
    let (host, port) = (opts.ip_or_hostname().to_string(), opts.tcp_port());
    let user = opts.user().unwrap_or("root").to_owned();
    let probe_db = db.clone();
    let floor = Floor {
        implementation: "mysqlslap",
        tool: "mysqlslap",
        dir: benches::sidecar::atbench_dir().join("live-floor"),
        connections: pool.size,
        run: Box::new(move |file, clients, iters| {
            benches::floor::mysqlslap(&host, port, &user, &probe_db, file, clients, iters)
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
    rt.block_on(async {
        let _ = raw.0.disconnect().await;
        let _ = e.close().await;
        let mut c = admin.get_conn().await?;
        c.query_drop(format!("DROP DATABASE {db}")).await?;
        drop(c);
        admin.disconnect().await
    })
    .expect("drop database");
}
