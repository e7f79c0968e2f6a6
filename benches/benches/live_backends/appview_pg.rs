//! The PostgreSQL baseline of the appview: Prefect's tables and indexes
//! (PostgreSQL dialect: ids and flow names `text COLLATE "C"` so "id
//! descending" and "name ascending" are the byte order every backend uses
//! and `uq_flow__name` serves `flow_list`, times `bigint` µs, tags and parameters
//! `jsonb`), one database per tier (`atbench_appview_<pid>_<tier>`,
//! created and dropped), read through tokio-postgres with prepared
//! statements; the same index DDL and read SQL as the SQLite baseline
//! (`appview::baseline_sql`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use appview::{
    Flow, FlowRun, FlowRunState, Mutation, Page, Pattern, Query, RunWithState, StateType, Uuid,
};
use benches::appview::{LiveAppview, Tier};
use benches::target::Group;
use criterion::Throughput;
use serde_json::Value;
use tokio::runtime::Runtime;
use tokio_postgres::{Client, NoTls, Row, Statement};

const TABLES: &str = r#"
CREATE TABLE flow (
    id text COLLATE "C" PRIMARY KEY,
    created bigint NOT NULL,
    updated bigint NOT NULL,
    name text COLLATE "C" NOT NULL,
    tags jsonb NOT NULL DEFAULT '[]'
);
CREATE TABLE flow_run (
    id text COLLATE "C" PRIMARY KEY,
    created bigint NOT NULL,
    updated bigint NOT NULL,
    name text NOT NULL,
    state_type text,
    state_name text,
    state_timestamp bigint,
    run_count bigint NOT NULL DEFAULT 0,
    expected_start_time bigint NOT NULL,
    next_scheduled_start_time bigint,
    start_time bigint,
    end_time bigint,
    total_run_time bigint NOT NULL DEFAULT 0,
    flow_id text COLLATE "C" NOT NULL REFERENCES flow (id) ON DELETE CASCADE,
    state_id text COLLATE "C",
    tags jsonb NOT NULL DEFAULT '[]',
    parameters jsonb NOT NULL DEFAULT '{}'
);
CREATE TABLE flow_run_state (
    id text COLLATE "C" PRIMARY KEY,
    created bigint NOT NULL,
    updated bigint NOT NULL,
    type text NOT NULL,
    timestamp bigint NOT NULL,
    name text NOT NULL,
    message text,
    flow_run_id text COLLATE "C" NOT NULL REFERENCES flow_run (id) ON DELETE CASCADE
);
"#;

const INSERT_FLOW: &str =
    "INSERT INTO flow (id, created, updated, name, tags) VALUES ($1, $2, $3, $4, $5)";
const UPDATE_RUN: &str = "UPDATE flow_run SET state_id = $2, state_type = $3, state_name = $4, \
     state_timestamp = $5, next_scheduled_start_time = $6, start_time = $7, end_time = $8, \
     total_run_time = $9, run_count = $10, updated = $11 WHERE id = $1";
const INSERT_STATE: &str = "INSERT INTO flow_run_state (id, created, updated, type, timestamp, name, message, flow_run_id) \
     VALUES ($1, $2, $2, $3, $2, $4, $5, $6)";

/// A statement of the SQLite baseline in PostgreSQL's placeholders
/// (`?N` -> `$N`; none of the shared statements holds another `?`),
/// converted once, when it is prepared.
fn pg(sqlite: &str) -> String {
    sqlite.replace('?', "$")
}

/// One tier's database and statements.
struct TierDb {
    db: String,
    client: Client,
    reads: Vec<Statement>,
}

/// The PostgreSQL side.
pub struct Pg {
    admin: Client,
    tiers: Vec<TierDb>,
}

async fn connect(url: &str) -> Result<Client, tokio_postgres::Error> {
    let (client, conn) = tokio_postgres::connect(url, NoTls).await?;
    tokio::spawn(conn);
    Ok(client)
}

fn tags_of(v: Value) -> Vec<String> {
    match v {
        Value::Array(items) => items
            .into_iter()
            .map(|i| i.as_str().expect("tag is text").to_owned())
            .collect(),
        other => panic!("tags column is not an array: {other}"),
    }
}

fn params_of(v: Value) -> Vec<(String, String)> {
    appview::baseline_sql::params_of_value(&v).expect("parameters column is an object")
}

fn uuid(row: &Row, i: usize) -> Uuid {
    Uuid::parse(row.get::<_, &str>(i)).expect("uuid column")
}

fn run_of(row: &Row) -> FlowRun {
    FlowRun {
        id: uuid(row, 0),
        flow_id: uuid(row, 1),
        name: row.get(2),
        state_id: uuid(row, 3),
        state_type: StateType::parse(row.get::<_, &str>(4)).expect("state type"),
        state_name: row.get(5),
        state_timestamp: row.get(6),
        expected_start: row.get(7),
        next_scheduled_start: row.get(8),
        start: row.get(9),
        end: row.get(10),
        total_run_time: row.get(11),
        run_count: row.get(12),
        created: row.get(13),
        updated: row.get(14),
        tags: tags_of(row.get(15)),
        parameters: params_of(row.get(16)),
    }
}

fn read_sql(pattern: Pattern) -> String {
    let q = Query::new(pattern, Uuid(0), 0);
    match pattern {
        Pattern::PointLookup => pg(appview::baseline_sql::point_lookup_sql()),
        Pattern::CountCompleted => {
            "SELECT count(*) FROM flow_run WHERE state_type = 'COMPLETED'".to_owned()
        }
        Pattern::FlowList => appview::baseline_sql::flow_list_sql().to_owned(),
        _ => pg(appview::baseline_sql::list_sql(&q).expect("list pattern")),
    }
}

/// Answers `q` on one tier's database.
async fn read(t: &TierDb, q: &Query) -> Page {
    let pattern = match q {
        Query::PointLookup(_) => Pattern::PointLookup,
        Query::ActiveByState => Pattern::ActiveByState,
        Query::Completed50 => Pattern::Completed50,
        Query::Paginated => Pattern::Paginated,
        Query::CountCompleted => Pattern::CountCompleted,
        Query::FlowList => Pattern::FlowList,
        Query::Completed1h { .. } => Pattern::Completed1h,
    };
    let st = &t.reads[pattern as usize];
    match q {
        Query::PointLookup(id) => {
            let rows = t
                .client
                .query(st, &[&id.to_string()])
                .await
                .expect("point lookup");
            Page::Run(rows.first().map(|row| {
                let run = Arc::new(run_of(row));
                let state = row.get::<_, Option<&str>>(17).map(|sid| {
                    Arc::new(FlowRunState {
                        id: Uuid::parse(sid).expect("state id"),
                        run_id: uuid(row, 22),
                        state_type: StateType::parse(row.get::<_, &str>(18)).expect("type"),
                        name: row.get(19),
                        timestamp: row.get(20),
                        message: row.get::<_, Option<String>>(21).unwrap_or_default(),
                    })
                });
                RunWithState { run, state }
            }))
        }
        Query::CountCompleted => {
            let row = t.client.query_one(st, &[]).await.expect("count");
            Page::Count(row.get::<_, i64>(0) as u64)
        }
        Query::FlowList => {
            let rows = t.client.query(st, &[]).await.expect("flows");
            Page::Flows(
                rows.iter()
                    .map(|r| {
                        Arc::new(Flow {
                            id: uuid(r, 0),
                            name: r.get(1),
                            tags: tags_of(r.get(2)),
                            created: r.get(3),
                            updated: r.get(4),
                        })
                    })
                    .collect(),
            )
        }
        Query::Completed1h { now } => {
            let (a, b) = appview::window(*now);
            let rows = t.client.query(st, &[&a, &b]).await.expect("window");
            Page::Runs(rows.iter().map(run_of).collect())
        }
        _ => {
            let rows = t.client.query(st, &[]).await.expect("list");
            Page::Runs(rows.iter().map(run_of).collect())
        }
    }
}

/// The write statements, prepared on one connection (and schema).
struct Writes {
    flow: Statement,
    run: Statement,
    state: Statement,
    update: Statement,
}

async fn prepare_writes(c: &Client) -> Result<Writes, tokio_postgres::Error> {
    Ok(Writes {
        flow: c.prepare(INSERT_FLOW).await?,
        run: c
            .prepare(&pg(appview::baseline_sql::insert_run_sql()))
            .await?,
        state: c.prepare(INSERT_STATE).await?,
        update: c.prepare(UPDATE_RUN).await?,
    })
}

/// Writes one mutation as one transaction.
async fn write(c: &Client, w: &Writes, m: &Mutation) -> Result<(), tokio_postgres::Error> {
    c.batch_execute("BEGIN").await?;
    match m {
        Mutation::CreateFlow(f) => {
            insert_flow(c, &w.flow, f).await?;
        }
        Mutation::CreateRun(r, s) => {
            insert_run(c, &w.run, r).await?;
            insert_state(c, &w.state, s).await?;
        }
        Mutation::SetState(r, s) => {
            insert_state(c, &w.state, s).await?;
            c.execute(
                &w.update,
                &[
                    &r.id.to_string(),
                    &r.state_id.to_string(),
                    &r.state_type.as_str(),
                    &r.state_name,
                    &r.state_timestamp,
                    &r.next_scheduled_start,
                    &r.start,
                    &r.end,
                    &r.total_run_time,
                    &r.run_count,
                    &r.updated,
                ],
            )
            .await?;
        }
    }
    c.batch_execute("COMMIT").await
}

async fn insert_flow(c: &Client, st: &Statement, f: &Flow) -> Result<u64, tokio_postgres::Error> {
    c.execute(
        st,
        &[
            &f.id.to_string(),
            &f.created,
            &f.updated,
            &f.name,
            &appview::baseline_sql::tags_value(&f.tags),
        ],
    )
    .await
}

async fn insert_run(c: &Client, st: &Statement, r: &FlowRun) -> Result<u64, tokio_postgres::Error> {
    c.execute(
        st,
        &[
            &r.id.to_string(),
            &r.flow_id.to_string(),
            &r.name,
            &r.state_id.to_string(),
            &r.state_type.as_str(),
            &r.state_name,
            &r.state_timestamp,
            &r.expected_start,
            &r.next_scheduled_start,
            &r.start,
            &r.end,
            &r.total_run_time,
            &r.run_count,
            &r.created,
            &r.updated,
            &appview::baseline_sql::tags_value(&r.tags),
            &appview::baseline_sql::params_value(&r.parameters),
        ],
    )
    .await
}

async fn insert_state(
    c: &Client,
    st: &Statement,
    s: &FlowRunState,
) -> Result<u64, tokio_postgres::Error> {
    c.execute(
        st,
        &[
            &s.id.to_string(),
            &s.timestamp,
            &s.state_type.as_str(),
            &s.name,
            &s.message,
            &s.run_id.to_string(),
        ],
    )
    .await
}

/// Bulk load: every flow, final run and state of the tier's index in one
/// transaction (prepared single-row inserts, pipelined in chunks, in
/// primary-key order), the secondary indexes dropped first and built once
/// at the end.
async fn load(c: &Client, tier: &Tier) -> Result<(), tokio_postgres::Error> {
    let w = prepare_writes(c).await?;
    c.batch_execute("BEGIN").await?;
    for index in appview::baseline_sql::INDEXES {
        c.batch_execute(&format!("DROP INDEX IF EXISTS {}", index.name))
            .await?;
    }
    let mut flows: Vec<_> = tier.index.flows().cloned().collect();
    flows.sort_by_key(|f| f.id);
    for f in &flows {
        insert_flow(c, &w.flow, f).await?;
    }
    let mut runs: Vec<_> = tier.index.runs().cloned().collect();
    runs.sort_by_key(|r| r.id);
    for chunk in runs.chunks(256) {
        futures_join(chunk.iter().map(|r| insert_run(c, &w.run, r))).await?;
    }
    let mut states: Vec<_> = tier.index.states().cloned().collect();
    states.sort_by_key(|s| s.id);
    for chunk in states.chunks(256) {
        futures_join(chunk.iter().map(|s| insert_state(c, &w.state, s))).await?;
    }
    c.batch_execute(appview::baseline_sql::create_indexes())
        .await?;
    c.batch_execute("COMMIT").await?;
    c.batch_execute("ANALYZE").await
}

/// Awaits every future (tokio-postgres pipelines them on one connection).
async fn futures_join<F>(futures: impl Iterator<Item = F>) -> Result<(), tokio_postgres::Error>
where
    F: std::future::Future<Output = Result<u64, tokio_postgres::Error>>,
{
    for r in futures::future::join_all(futures).await {
        r?;
    }
    Ok(())
}

/// A PostgreSQL error with the server's message (the client's Display
/// says only "db error").
fn pg_error(e: tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{e}: {} ({})", db.message(), db.code().code()),
        None => e.to_string(),
    }
}

/// Creates the tiers' databases and loads them.
fn setup(rt: &Runtime, tiers: &[Tier], context: &mut serde_json::Value) -> Result<Pg, String> {
    let base = gateway::SqlConfig::postgres_from_env();
    rt.block_on(async {
        let admin = connect(&base.url).await.map_err(pg_error)?;
        let version: String = admin
            .query_one("SHOW server_version", &[])
            .await
            .map_err(pg_error)?
            .get(0);
        context["appview_postgres"] = serde_json::json!(version);
        let mut out = Vec::new();
        for tier in tiers {
            let db = format!("atbench_appview_{}_{}", std::process::id(), tier.name);
            // Two queries: CREATE DATABASE cannot run inside the implicit
            // transaction of a multi-statement query.
            admin
                .batch_execute(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"))
                .await
                .map_err(pg_error)?;
            admin
                .batch_execute(&format!("CREATE DATABASE {db}"))
                .await
                .map_err(pg_error)?;
            let client = connect(&base.with_database(&db).url)
                .await
                .map_err(pg_error)?;
            client
                .batch_execute(&format!(
                    "{TABLES}{}",
                    appview::baseline_sql::create_indexes()
                ))
                .await
                .map_err(pg_error)?;
            if tier.name == "300" {
                // The 300 tier through the write path: one transaction per write.
                let w = prepare_writes(&client).await.map_err(pg_error)?;
                for m in &tier.mutations {
                    write(&client, &w, m).await.map_err(pg_error)?;
                }
                client.batch_execute("ANALYZE").await.map_err(pg_error)?;
            } else {
                load(&client, tier).await.map_err(pg_error)?;
            }
            let mut reads = Vec::new();
            for p in Pattern::ALL {
                reads.push(client.prepare(&read_sql(p)).await.map_err(pg_error)?);
            }
            out.push(TierDb { db, client, reads });
        }
        Ok::<_, String>(Pg { admin, tiers: out })
    })
}

/// `appview.seed_write/postgres/300`: the 300-run stream, one transaction
/// per write (BEGIN, the prepared inserts / update, COMMIT), into fresh
/// tables (a schema created and the statements prepared per iteration,
/// outside the timing).
fn seed_write(g: &mut Group<'_>, rt: &Runtime, pg: &Pg, tier: &Tier) {
    let c = &pg.tiers[0].client;
    g.throughput(Throughput::Elements(tier.mutations.len() as u64));
    g.criterion().sample_size(10);
    g.bench("postgres", "300", |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                rt.block_on(async {
                    c.batch_execute(&format!(
                        "DROP SCHEMA IF EXISTS seed CASCADE; CREATE SCHEMA seed; SET search_path TO seed; {TABLES}{}",
                        appview::baseline_sql::create_indexes()
                    ))
                    .await
                    .expect("fresh schema");
                    let w = prepare_writes(c).await.expect("prepare");
                    let t = Instant::now();
                    for m in &tier.mutations {
                        write(c, &w, m).await.expect("write");
                    }
                    timed += t.elapsed();
                    let n: i64 = c
                        .query_one("SELECT count(*) FROM flow_run", &[])
                        .await
                        .expect("count")
                        .get(0);
                    assert_eq!(n, 300);
                    c.batch_execute("SET search_path TO public; DROP SCHEMA seed CASCADE")
                        .await
                        .expect("drop schema");
                });
            }
            timed
        })
    });
}

/// Drops the tiers' databases.
fn teardown(rt: &Runtime, pg: Pg) {
    let Pg { admin, tiers } = pg;
    let names: Vec<String> = tiers.iter().map(|t| t.db.clone()).collect();
    drop(tiers);
    rt.block_on(async {
        for db in names {
            admin
                .batch_execute(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"))
                .await
                .expect("drop database");
        }
    });
}

impl LiveAppview for Pg {
    fn setup(rt: &Runtime, tiers: &[Tier], context: &mut serde_json::Value) -> Result<Pg, String> {
        setup(rt, tiers, context)
    }

    fn name(&self) -> &'static str {
        "postgres"
    }

    fn read(&self, rt: &Runtime, tier: usize, q: &Query) -> Page {
        rt.block_on(read(&self.tiers[tier], q))
    }

    fn seed_write(&self, g: &mut Group<'_>, rt: &Runtime, tier: &Tier) -> bool {
        seed_write(g, rt, self, tier);
        true
    }

    fn teardown(self: Box<Self>, rt: &Runtime) {
        teardown(rt, *self);
    }
}
