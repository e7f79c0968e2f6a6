//! The Redis baseline of the appview: records as values (the run's and
//! the state's DAG-CBOR record, decoded with the appview's decoder; a flow
//! value is its id then its record), a set per state type (SCARD for the
//! count) and sorted sets: expected start (all runs), coalesce(start,
//! expected start) per state type, end (runs that ended), and id per
//! state type (score 0, so members order by id). Scores are µs, exact in
//! a double. Pages: ZREVRANGE / ZREVRANGEBYSCORE then MGET of the
//! records (ties of a score order by member, i.e. by id, like the other
//! backends). Each tier under its own key prefix
//! (`atbench_live_<pid>:appview:<tier>:`), deleted at the end.

use std::sync::Arc;

use appview::{
    FLOW_NSID, Flow, FlowRun, FlowRunState, Page, Query, RUN_NSID, Record, RecordRef, RunWithState,
    STATE_NSID, decode_record, encode_record,
};
use redis::aio::MultiplexedConnection;
use tokio::runtime::Runtime;

use benches::appview::{LiveAppview, Tier};

use crate::live::run_name;

/// The Redis side.
pub struct Redis {
    conn: MultiplexedConnection,
    prefixes: Vec<String>,
}

fn run_of(bytes: &[u8], id: &str) -> FlowRun {
    match decode_record(RUN_NSID, id, bytes).expect("run record") {
        Some(Record::Run(r)) => r,
        other => panic!("not a run: {other:?}"),
    }
}

fn state_of(bytes: &[u8], id: &str) -> FlowRunState {
    match decode_record(STATE_NSID, id, bytes).expect("state record") {
        Some(Record::State(s)) => s,
        other => panic!("not a state: {other:?}"),
    }
}

fn flow_of(bytes: &[u8]) -> Flow {
    let (id, record) = bytes.split_at(36.min(bytes.len()));
    let id = std::str::from_utf8(id).expect("flow id");
    match decode_record(FLOW_NSID, id, record).expect("flow record") {
        Some(Record::Flow(f)) => f,
        other => panic!("not a flow: {other:?}"),
    }
}

async fn load(c: &mut MultiplexedConnection, p: &str, tier: &Tier) -> redis::RedisResult<()> {
    let mut pipe = redis::pipe();
    let mut n = 0;
    for r in tier.index.runs() {
        let id = r.id.to_string();
        let t = r.state_type.as_str();
        pipe.cmd("SET")
            .arg(format!("{p}run:{id}"))
            .arg(encode_record(RecordRef::Run(r)))
            .ignore();
        pipe.cmd("SADD")
            .arg(format!("{p}type:{t}"))
            .arg(&id)
            .ignore();
        pipe.cmd("ZADD")
            .arg(format!("{p}z:expected"))
            .arg(r.expected_start)
            .arg(&id)
            .ignore();
        pipe.cmd("ZADD")
            .arg(format!("{p}z:started:{t}"))
            .arg(r.start_or_expected())
            .arg(&id)
            .ignore();
        pipe.cmd("ZADD")
            .arg(format!("{p}z:id:{t}"))
            .arg(0)
            .arg(&id)
            .ignore();
        if let Some(end) = r.end {
            pipe.cmd("ZADD")
                .arg(format!("{p}z:end"))
                .arg(end)
                .arg(&id)
                .ignore();
        }
        n += 1;
        if n % 2000 == 0 {
            let () = pipe.query_async(c).await?;
            pipe = redis::pipe();
        }
    }
    for s in tier.index.states() {
        pipe.cmd("SET")
            .arg(format!("{p}state:{}", s.id))
            .arg(encode_record(RecordRef::State(s)))
            .ignore();
        n += 1;
        if n % 2000 == 0 {
            let () = pipe.query_async(c).await?;
            pipe = redis::pipe();
        }
    }
    for f in tier.index.flows() {
        let mut value = f.id.to_string().into_bytes();
        value.extend(encode_record(RecordRef::Flow(f)));
        pipe.cmd("SET")
            .arg(format!("{p}flow:{}", f.name))
            .arg(value)
            .ignore();
        pipe.cmd("ZADD")
            .arg(format!("{p}z:flows"))
            .arg(0)
            .arg(&f.name)
            .ignore();
    }
    let () = pipe.query_async(c).await?;
    Ok(())
}

async fn runs(c: &mut MultiplexedConnection, p: &str, ids: Vec<String>) -> Page {
    if ids.is_empty() {
        return Page::Runs(appview::RunPage::default());
    }
    let keys: Vec<String> = ids.iter().map(|id| format!("{p}run:{id}")).collect();
    let values: Vec<Vec<u8>> = redis::cmd("MGET")
        .arg(&keys)
        .query_async(c)
        .await
        .expect("mget");
    Page::Runs(
        values
            .iter()
            .zip(&ids)
            .map(|(v, id)| run_of(v, id))
            .collect(),
    )
}

/// Answers `q` under prefix `p`.
async fn read(c: &mut MultiplexedConnection, p: &str, q: &Query) -> Page {
    match q {
        Query::PointLookup(id) => {
            let id = id.to_string();
            let v: Option<Vec<u8>> = redis::cmd("GET")
                .arg(format!("{p}run:{id}"))
                .query_async(c)
                .await
                .expect("get");
            let Some(v) = v else { return Page::Run(None) };
            let run = Arc::new(run_of(&v, &id));
            let sid = run.state_id.to_string();
            let s: Option<Vec<u8>> = redis::cmd("GET")
                .arg(format!("{p}state:{sid}"))
                .query_async(c)
                .await
                .expect("get");
            Page::Run(Some(RunWithState {
                state: s.map(|s| Arc::new(state_of(&s, &sid))),
                run,
            }))
        }
        Query::ActiveByState => {
            let limit = appview::ACTIVE_LIMIT as isize;
            let (running, pending): (Vec<String>, Vec<String>) = redis::pipe()
                .cmd("ZREVRANGE")
                .arg(format!("{p}z:id:RUNNING"))
                .arg(0)
                .arg(limit - 1)
                .cmd("ZREVRANGE")
                .arg(format!("{p}z:id:PENDING"))
                .arg(0)
                .arg(limit - 1)
                .query_async(c)
                .await
                .expect("zrevrange");
            let mut ids: Vec<String> = running.into_iter().chain(pending).collect();
            ids.sort_unstable_by(|a, b| b.cmp(a));
            ids.truncate(appview::ACTIVE_LIMIT);
            runs(c, p, ids).await
        }
        Query::Completed50 => {
            let ids: Vec<String> = redis::cmd("ZREVRANGE")
                .arg(format!("{p}z:started:COMPLETED"))
                .arg(0)
                .arg(appview::COMPLETED_LIMIT as isize - 1)
                .query_async(c)
                .await
                .expect("zrevrange");
            runs(c, p, ids).await
        }
        Query::Paginated => {
            let from = appview::PAGE_OFFSET as isize;
            let ids: Vec<String> = redis::cmd("ZREVRANGE")
                .arg(format!("{p}z:expected"))
                .arg(from)
                .arg(from + appview::PAGE_LIMIT as isize - 1)
                .query_async(c)
                .await
                .expect("zrevrange");
            runs(c, p, ids).await
        }
        Query::CountCompleted => {
            let n: u64 = redis::cmd("SCARD")
                .arg(format!("{p}type:COMPLETED"))
                .query_async(c)
                .await
                .expect("scard");
            Page::Count(n)
        }
        Query::FlowList => {
            let names: Vec<String> = redis::cmd("ZRANGE")
                .arg(format!("{p}z:flows"))
                .arg(0)
                .arg(appview::FLOW_LIMIT as isize - 1)
                .query_async(c)
                .await
                .expect("zrange");
            if names.is_empty() {
                return Page::Flows(Vec::new());
            }
            let keys: Vec<String> = names.iter().map(|n| format!("{p}flow:{n}")).collect();
            let values: Vec<Vec<u8>> = redis::cmd("MGET")
                .arg(&keys)
                .query_async(c)
                .await
                .expect("mget");
            Page::Flows(values.iter().map(|v| Arc::new(flow_of(v))).collect())
        }
        Query::Completed1h { now } => {
            let (from, to) = appview::window(*now);
            let ids: Vec<String> = redis::cmd("ZREVRANGEBYSCORE")
                .arg(format!("{p}z:end"))
                .arg(to)
                .arg(from)
                .arg("LIMIT")
                .arg(0)
                .arg(appview::WINDOW_LIMIT)
                .query_async(c)
                .await
                .expect("zrevrangebyscore");
            runs(c, p, ids).await
        }
    }
}

/// Connects and loads every tier under its prefix.
fn setup(rt: &Runtime, tiers: &[Tier], context: &mut serde_json::Value) -> Result<Redis, String> {
    let url = gateway::RedisConfig::from_env().url;
    let mut conn = rt
        .block_on(async {
            let client = redis::Client::open(url.as_str())?;
            client.get_multiplexed_async_connection().await
        })
        .map_err(|e| e.to_string())?;
    context["appview_redis_url"] = serde_json::json!(url);
    let mut prefixes = Vec::new();
    for tier in tiers {
        let p = format!("{}:appview:{}:", run_name(), tier.name);
        rt.block_on(load(&mut conn, &p, tier))
            .map_err(|e| e.to_string())?;
        prefixes.push(p);
    }
    Ok(Redis { conn, prefixes })
}

/// Deletes every key of both prefixes.
fn teardown(rt: &Runtime, r: Redis) {
    let Redis { mut conn, prefixes } = r;
    rt.block_on(async {
        for p in prefixes {
            let mut cursor: u64 = 0;
            loop {
                let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                    .arg(cursor)
                    .arg("MATCH")
                    .arg(format!("{p}*"))
                    .arg("COUNT")
                    .arg(1000)
                    .query_async(&mut conn)
                    .await
                    .expect("scan");
                if !keys.is_empty() {
                    let _: u64 = redis::cmd("DEL")
                        .arg(&keys)
                        .query_async(&mut conn)
                        .await
                        .expect("del");
                }
                if next == 0 {
                    break;
                }
                cursor = next;
            }
        }
    });
}

impl LiveAppview for Redis {
    fn setup(
        rt: &Runtime,
        tiers: &[Tier],
        context: &mut serde_json::Value,
    ) -> Result<Redis, String> {
        setup(rt, tiers, context)
    }

    fn name(&self) -> &'static str {
        "redis"
    }

    /// A clone of the multiplexed connection per read (an `Arc` clone:
    /// the connection's pipeline task is shared).
    fn read(&self, rt: &Runtime, tier: usize, q: &Query) -> Page {
        let mut c = self.conn.clone();
        rt.block_on(read(&mut c, &self.prefixes[tier], q))
    }

    fn teardown(self: Box<Self>, rt: &Runtime) {
        teardown(rt, *self);
    }
}
