//! `live.redis_get` / `live.redis_set`: one key-value line, `ours` (the
//! gateway's RedisExecutor: line parse, key prefix, pooled connection)
//! beside `raw` (the redis crate alone: its multiplexed connection, cloned
//! per caller, the same command on the same key); floor probe
//! `redis-benchmark` (its own connections, no pipelining) on a copy of
//! the seeded values under keys it can name (`<prefix>p:<12 digits>`).

use std::hint::black_box;

use benches::callers::bench_callers;
use benches::target::BenchTarget;
use gateway::{KvOutcome, Outcome, PoolConfig, RedisConfig, RedisExecutor};
use redis::aio::MultiplexedConnection;
use serde_json::json;
use tokio::runtime::Runtime;

use crate::live::{Dataset, run_name, unavailable};
use crate::ours;

/// `host` and `port` of a `redis://host:port/…` URL.
fn host_port(url: &str) -> (String, u16) {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or(rest);
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    match authority.rsplit_once(':') {
        Some((host, port)) => (host.to_owned(), port.parse().unwrap_or(6379)),
        None => (authority.to_owned(), 6379),
    }
}

/// `live.redis_<command>/redis-benchmark/<tier>`: `command` (its key
/// `<prefix>p:__rand_int__`) from `callers` connections over the probe's
/// keys, or its skip when the tool is missing.
fn probe(g: &mut benches::Group<'_>, url: &str, tier: &str, callers: usize, command: &[&str]) {
    let id = g.id("redis-benchmark", tier);
    if let Err(e) = benches::floor::find("redis-benchmark") {
        return benches::floor::skip(&id, &e);
    }
    let (host, port) = host_port(url);
    g.bench("redis-benchmark", tier, |b| {
        b.iter_custom(|iters| {
            benches::floor::redis_benchmark(&host, port, callers, crate::live::ROWS, iters, command)
                .unwrap_or_else(|e| panic!("{id}: {e}"))
        })
    });
}

pub const GROUPS: [&str; 2] = ["live.redis_get", "live.redis_set"];

pub fn run(
    target: &mut BenchTarget,
    rt: &Runtime,
    data: &Dataset,
    context: &mut serde_json::Value,
) {
    let base = RedisConfig::from_env();
    let connect = rt.block_on(async {
        let client = redis::Client::open(base.url.as_str())?;
        let mut conn = client.get_multiplexed_async_connection().await?;
        let info: String = redis::cmd("INFO")
            .arg("server")
            .query_async(&mut conn)
            .await?;
        Ok::<_, redis::RedisError>((conn, info))
    });
    let (raw, info) = match connect {
        Ok(c) => c,
        Err(e) => {
            unavailable(target, "redis", &GROUPS, &e.to_string());
            return;
        }
    };
    let version = info
        .lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .map(str::trim);
    context["redis"] = json!(version);
    let prefix = format!("{}:", run_name());
    let e = RedisExecutor::new(&RedisConfig {
        url: base.url.clone(),
        key_prefix: prefix.clone(),
        pool: PoolConfig::default(),
    })
    .expect("redis config");
    let keys: Vec<String> = (0..data.rows.len()).map(|i| format!("k{i}")).collect();
    let values: Vec<String> = data.rows.iter().map(|(_, p)| p.to_string()).collect();
    for (k, v) in keys.iter().zip(&values) {
        let line = json!({"op": "set", "key": k, "value": v}).to_string();
        assert_eq!(ours::run(rt, &e, &line), Outcome::Kv(KvOutcome::Stored));
    }
    // Outside the timing: ours and raw read the seeded values.
    for &i in data.draws(1).iter().take(64) {
        let line = json!({"op": "get", "key": keys[i]}).to_string();
        assert_eq!(
            ours::run(rt, &e, &line),
            Outcome::Kv(KvOutcome::Value(Some(values[i].clone().into_bytes())))
        );
        let mut c = raw.clone();
        let got: Option<String> = rt
            .block_on(
                redis::cmd("GET")
                    .arg(format!("{prefix}{}", keys[i]))
                    .query_async(&mut c),
            )
            .expect("raw get");
        assert_eq!(got.as_deref(), Some(values[i].as_str()));
    }
    // The probe's copy of the values, under the names redis-benchmark's
    // `__rand_int__` gives (12 digits), checked read back.
    let probe_keys: Vec<String> = (0..keys.len())
        .map(|i| format!("{prefix}p:{i:012}"))
        .collect();
    let mut c = raw.clone();
    for (chunk_keys, chunk_values) in probe_keys.chunks(500).zip(values.chunks(500)) {
        let mut mset = redis::cmd("MSET");
        for (k, v) in chunk_keys.iter().zip(chunk_values) {
            mset.arg(k).arg(v);
        }
        let () = rt.block_on(mset.query_async(&mut c)).expect("mset");
    }
    let got: Vec<String> = rt
        .block_on(
            redis::cmd("MGET")
                .arg(&probe_keys[..64])
                .query_async(&mut c),
        )
        .expect("mget");
    assert_eq!(got, values[..64]);
    let get_probe = format!("{prefix}p:__rand_int__");
    let draws = data.draws(5);
    let full_keys: Vec<String> = keys.iter().map(|k| format!("{prefix}{k}")).collect();
    let get_lines: Vec<String> = draws
        .iter()
        .map(|&i| json!({"op": "get", "key": keys[i]}).to_string())
        .collect();
    let mut g = target.group("live.redis_get");
    for callers in [1usize, 10] {
        let tier = format!("callers-{callers}");
        ours::bench_lines(&mut g, &tier, callers, rt, &e, &get_lines);
        bench_callers(&mut g, "raw", &tier, callers, |caller| {
            let mut c: MultiplexedConnection = raw.clone();
            let mut k = caller * 997;
            let (draws, full_keys) = (&draws, &full_keys);
            move |_| {
                let key = &full_keys[draws[k % draws.len()]];
                k += 1;
                let v: Option<Vec<u8>> = rt
                    .block_on(redis::cmd("GET").arg(key).query_async(&mut c))
                    .expect("get");
                black_box(v);
            }
        });
        probe(&mut g, &base.url, &tier, callers, &["GET", &get_probe]);
    }
    g.finish();
    let set_draws = data.draws(6);
    let new_values: Vec<String> = (0..set_draws.len())
        .map(|k| Dataset::update_payload(k).to_string())
        .collect();
    let set_lines: Vec<String> = set_draws
        .iter()
        .enumerate()
        .map(|(k, &i)| json!({"op": "set", "key": keys[i], "value": new_values[k]}).to_string())
        .collect();
    let mut g = target.group("live.redis_set");
    // Whether the raw rows ran: a filtered run (`-- appview`, say) that
    // skipped them has no set to read back.
    let set = std::sync::atomic::AtomicBool::new(false);
    for callers in [1usize, 10] {
        let tier = format!("callers-{callers}");
        ours::bench_lines(&mut g, &tier, callers, rt, &e, &set_lines);
        bench_callers(&mut g, "raw", &tier, callers, |caller| {
            set.store(true, std::sync::atomic::Ordering::Relaxed);
            let mut c: MultiplexedConnection = raw.clone();
            let mut k = caller * 997;
            let (set_draws, full_keys, new_values) = (&set_draws, &full_keys, &new_values);
            move |_| {
                let j = k % set_draws.len();
                k += 1;
                let () = rt
                    .block_on(
                        redis::cmd("SET")
                            .arg(&full_keys[set_draws[j]])
                            .arg(&new_values[j])
                            .query_async(&mut c),
                    )
                    .expect("set");
            }
        });
        probe(
            &mut g,
            &base.url,
            &tier,
            callers,
            &["SET", &get_probe, &new_values[0]],
        );
    }
    g.finish();
    // Every probe key holds its seeded value or the probe's.
    let got: Vec<String> = rt
        .block_on(redis::cmd("MGET").arg(&probe_keys).query_async(&mut c))
        .expect("mget");
    assert!(
        got.iter()
            .zip(&values)
            .all(|(g, v)| g == v || *g == new_values[0]),
        "a redis-benchmark SET wrote something else"
    );
    let mut c = raw.clone();
    let v: Option<String> = rt
        .block_on(
            redis::cmd("GET")
                .arg(&full_keys[set_draws[0]])
                .query_async(&mut c),
        )
        .expect("get");
    if set.load(std::sync::atomic::Ordering::Relaxed) {
        assert!(v.is_some_and(|v| v.contains("app.atbench.update")));
    }
    // Remove this run's keys.
    for chunk in full_keys.chunks(1000).chain(probe_keys.chunks(1000)) {
        let _: u64 = rt
            .block_on(redis::cmd("DEL").arg(chunk).query_async(&mut c))
            .expect("del");
    }
}
