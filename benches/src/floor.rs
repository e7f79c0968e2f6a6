//! Floor probes (`docs/design/history.md` section 5): the statement a baseline
//! row runs, on the same data, through an independent mainstream client,
//! measured in the same run as a row of the same group (the group's
//! `floor_probes` in `units.toml`). A probe is adjacent, never compared: it
//! says how fast the baseline could be, so a baseline far above its probe
//! is a defect of the bench or has its reason in `units.toml`.
//!
//! Each probe times its own loop with its own clock and reports the time
//! of the operations Criterion asked for (`iter_custom`); what the tool
//! does before its loop (start, connect, prepare) is not counted:
//!
//! - [`PythonSqlite`]: a `python3` process kept alive for the row, running
//!   the statement through the `sqlite3` module (its statement cache, a
//!   connection opened as the baseline's are, only reading), told by stdin
//!   how many operations to time;
//! - [`pgbench`]: `pgbench -M prepared` over a script of the statement,
//!   its `tps` (without connection time) read back;
//! - [`redis_benchmark`]: `redis-benchmark`'s requests per second;
//! - [`mysqlslap`]: MariaDB's `mysqlslap`, its average seconds for all queries.
//!
//! Each verifies its result outside the timing (the rows or values it
//! reads, its own failure counts). A tool that is missing is skipped with
//! a printed reason, or fails the run under `BENCH_REQUIRE_LIVE=1`: every
//! tool here ships with the services CI machines run.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

/// Operations a tool's run does at the least: the tools report a rate at
/// millisecond resolution, so a run of a few operations would measure
/// their clock's grain. A row asking for fewer gets its time at the rate
/// of this many.
pub const MIN_OPS: u64 = 2_000;

/// Whether a missing tool must fail the run (`BENCH_REQUIRE_LIVE=1`).
pub fn required() -> bool {
    std::env::var("BENCH_REQUIRE_LIVE").is_ok_and(|v| v == "1")
}

/// `tool`'s path on `PATH`, or why it cannot be used.
///
/// # Errors
/// The tool is not on `PATH`.
pub fn find(tool: &str) -> Result<std::path::PathBuf, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(tool))
        .find(|p| p.is_file())
        .ok_or_else(|| format!("{tool} is not on PATH"))
}

/// A probe row that cannot run: printed, or a panic under
/// `BENCH_REQUIRE_LIVE=1`.
///
/// # Panics
/// Under `BENCH_REQUIRE_LIVE=1`.
pub fn skip(id: &str, reason: &str) {
    assert!(
        !required(),
        "floor probe {id} is required (BENCH_REQUIRE_LIVE=1) but cannot run: {reason}"
    );
    eprintln!("atbench: {id}: floor probe skipped: {reason}");
}

/// The Python side of [`PythonSqlite`]: reads the statement and its
/// parameter sets (JSON) from argv, runs each set once and prints the row
/// count of each (the check), then for each line `N` on stdin runs N
/// operations, cycling through the sets, and prints the nanoseconds they
/// took by `time.perf_counter_ns`.
const PYTHON_SQLITE: &str = r#"
import json, sqlite3, sys, time
path, sql, params = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
conn = sqlite3.connect(path, check_same_thread=False)
params = [tuple(p) for p in params]
counts = [len(conn.execute(sql, p).fetchall()) for p in params]
print(json.dumps({"sqlite": sqlite3.sqlite_version, "rows": counts}), flush=True)
k = 0
n_params = len(params)
execute = conn.execute
for line in sys.stdin:
    n = int(line)
    start = time.perf_counter_ns()
    for _ in range(n):
        execute(sql, params[k % n_params]).fetchall()
        k += 1
    print(time.perf_counter_ns() - start, flush=True)
"#;

/// A `python3` process running one statement through the `sqlite3` module.
pub struct PythonSqlite {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// The rows each parameter set returned, in order (checked by the caller).
    pub rows: Vec<u64>,
    /// The SQLite library Python links.
    pub sqlite_version: String,
}

impl PythonSqlite {
    /// Starts the probe on database `db` (opened read-write, as the
    /// baseline's connections are: a read-only open of a WAL file can
    /// rebuild its shared-memory index per transaction), statement
    /// `sql` (SQLite's `?N` placeholders) and its parameter sets.
    ///
    /// # Errors
    /// No `python3`, or the process failed before its check line.
    pub fn start(db: &Path, sql: &str, params: &serde_json::Value) -> Result<PythonSqlite, String> {
        let python = find("python3")?;
        let mut child = Command::new(python)
            .arg("-c")
            .arg(PYTHON_SQLITE)
            .arg(db)
            .arg(sql)
            .arg(params.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("python3 did not start: {e}"))?;
        let stdin = child.stdin.take().ok_or("python3 has no stdin")?;
        let mut stdout = BufReader::new(child.stdout.take().ok_or("python3 has no stdout")?);
        let mut line = String::new();
        stdout
            .read_line(&mut line)
            .map_err(|e| format!("python3: {e}"))?;
        let head: serde_json::Value = serde_json::from_str(&line)
            .map_err(|e| format!("python3's check line {line:?}: {e}"))?;
        let rows = head["rows"]
            .as_array()
            .map(|a| a.iter().filter_map(serde_json::Value::as_u64).collect())
            .unwrap_or_default();
        let sqlite_version = head["sqlite"].as_str().unwrap_or_default().to_owned();
        Ok(PythonSqlite {
            child,
            stdin,
            stdout,
            rows,
            sqlite_version,
        })
    }

    /// Runs `iters` operations; their time by Python's clock.
    ///
    /// # Panics
    /// When the process died or answered something else than a count of
    /// nanoseconds: the row cannot be measured.
    pub fn run(&mut self, iters: u64) -> Duration {
        writeln!(self.stdin, "{iters}").expect("python3 probe's stdin");
        self.stdin.flush().expect("python3 probe's stdin");
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .expect("python3 probe's answer");
        let ns: u64 = line
            .trim()
            .parse()
            .unwrap_or_else(|e| panic!("python3 probe answered {line:?}: {e}"));
        Duration::from_nanos(ns.max(1))
    }
}

impl Drop for PythonSqlite {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `command`, returning its stdout; an error names the command and
/// carries its stderr.
fn output(command: &mut Command) -> Result<String, String> {
    let out = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{command:?} did not start: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{command:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The number after `key` on the first line that holds it (`tps = 1234.5`).
fn number_after(text: &str, key: &str) -> Option<f64> {
    text.lines().find_map(|line| {
        let rest = &line[line.find(key)? + key.len()..];
        let rest = rest.trim_start_matches([' ', '=', ':', '"', ',']);
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        rest[..end].parse().ok()
    })
}

/// The wall time per operation of `ops` operations at `rate` per second.
fn at_rate(ops: u64, rate: f64) -> Duration {
    Duration::from_secs_f64(ops as f64 / rate.max(1e-9)).max(Duration::from_nanos(1))
}

/// `pgbench` on database `url` (a `postgres://` URL): `clients`
/// connections (as many threads as the machine's cores), each running
/// `script` (one statement per line, `statements` of them) in prepared
/// mode, enough transactions for `iters` statements; returns the wall time
/// of `iters` statements at the rate pgbench measured without its
/// connection time (at least [`MIN_OPS`] statements are run).
///
/// # Errors
/// No `pgbench`, or it failed, reported failed transactions or no rate.
pub fn pgbench(
    url: &str,
    script: &Path,
    statements: u64,
    clients: usize,
    iters: u64,
) -> Result<Duration, String> {
    let tool = find("pgbench")?;
    let per_client = iters
        .max(MIN_OPS)
        .div_ceil(statements * clients as u64)
        .max(1);
    let threads = clients.min(2);
    let out = output(
        Command::new(tool)
            .args(["-n", "-M", "prepared", "-f"])
            .arg(script)
            .args(["-c", &clients.to_string(), "-j", &threads.to_string()])
            .args(["-t", &per_client.to_string()])
            .arg(url),
    )?;
    let processed = number_after(&out, "number of transactions actually processed")
        .ok_or_else(|| format!("pgbench printed no transaction count: {out}"))?;
    let failed = number_after(&out, "number of failed transactions").unwrap_or(0.0);
    if failed > 0.0 || processed < (per_client * clients as u64) as f64 {
        return Err(format!("pgbench: failed transactions: {out}"));
    }
    let tps = number_after(&out, "tps").ok_or_else(|| format!("pgbench printed no tps: {out}"))?;
    Ok(at_rate(iters, tps * statements as f64))
}

/// `redis-benchmark` against `host`:`port`: `clients` connections, no
/// pipelining, `iters` (at least [`MIN_OPS`]) requests of `command` (its `__rand_int__` replaced
/// by a 12-digit number below `keyspace`); returns the wall time of the
/// requests at the rate it measured.
///
/// # Errors
/// No `redis-benchmark`, or it failed or printed no rate.
pub fn redis_benchmark(
    host: &str,
    port: u16,
    clients: usize,
    keyspace: usize,
    iters: u64,
    command: &[&str],
) -> Result<Duration, String> {
    let tool = find("redis-benchmark")?;
    let out = output(
        Command::new(tool)
            .args(["-h", host, "-p", &port.to_string()])
            .args([
                "-c",
                &clients.to_string(),
                "-n",
                &iters.max(MIN_OPS).to_string(),
            ])
            .args(["-r", &keyspace.to_string(), "-P", "1", "--csv"])
            .args(command),
    )?;
    let rps = csv_rate(&out).ok_or_else(|| format!("redis-benchmark printed no rate: {out}"))?;
    Ok(at_rate(iters.max(1), rps))
}

/// The requests per second of `redis-benchmark --csv`'s output: a header
/// line, then `"<command>","<rps>"` and six latency fields. The command is
/// not escaped (a JSON value has commas), so the rate is the seventh
/// field from the end.
fn csv_rate(out: &str) -> Option<f64> {
    out.lines()
        .nth(1)?
        .rsplit(',')
        .nth(6)?
        .trim_matches('"')
        .parse()
        .ok()
}

/// MariaDB's `mysqlslap` on schema `database`: `clients` connections,
/// `queries` (one statement per `;`, cycled) run about `iters` (at least
/// [`MIN_OPS`]) times in
/// all; returns its time for them scaled to `iters` (it counts from all
/// clients connected to the last query's end, at millisecond resolution,
/// and sends each statement as text: no prepared statements).
///
/// # Errors
/// No `mysqlslap`, or it failed or printed no time.
pub fn mysqlslap(
    host: &str,
    port: u16,
    user: &str,
    database: &str,
    queries: &Path,
    clients: usize,
    iters: u64,
) -> Result<Duration, String> {
    let tool = find("mysqlslap")?;
    // `--number-of-queries` is the total over all clients (mysqlslap divides
    // it among them: 1,000 at `--concurrency=10` runs 1,000 SELECTs, checked
    // against the server's Com_select), so it is rounded up to a multiple
    // of the clients and every client runs the same share.
    let clients = clients.max(1) as u64;
    let total = iters.max(MIN_OPS).div_ceil(clients).max(1) * clients;
    let out = output(
        Command::new(tool)
            .arg(format!("--host={host}"))
            .arg(format!("--port={port}"))
            .arg(format!("--user={user}"))
            .arg(format!("--create-schema={database}"))
            .arg("--no-drop")
            .arg(format!("--query={}", queries.display()))
            .arg("--delimiter=;")
            .arg(format!("--concurrency={clients}"))
            .arg(format!("--number-of-queries={total}"))
            .arg("--iterations=1"),
    )?;
    let seconds = number_after(&out, "Average number of seconds to run all queries")
        .ok_or_else(|| format!("mysqlslap printed no time: {out}"))?;
    Ok(
        Duration::from_secs_f64(seconds * iters.max(1) as f64 / total as f64)
            .max(Duration::from_nanos(1)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_read_after_their_key() {
        let pgbench = "number of transactions actually processed: 40/40\n\
                       number of failed transactions: 0 (0.000%)\n\
                       tps = 12345.678901 (without initial connection time)\n";
        assert_eq!(
            number_after(pgbench, "number of transactions actually processed"),
            Some(40.0)
        );
        assert_eq!(
            number_after(pgbench, "number of failed transactions"),
            Some(0.0)
        );
        assert_eq!(number_after(pgbench, "tps"), Some(12345.678901));
        let slap = "\tAverage number of seconds to run all queries: 0.123 seconds\n";
        assert_eq!(
            number_after(slap, "Average number of seconds to run all queries"),
            Some(0.123)
        );
        assert_eq!(number_after("nothing", "tps"), None);
    }

    #[test]
    fn redis_benchmark_rates_are_read_past_a_command_with_commas() {
        let out = "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"\n\
                   \"SET k:__rand_int__ {\"a\":1,\"b\":2}\",\"1000.00\",\"0.084\",\"0.080\",\"0.087\",\"0.087\",\"0.087\",\"0.087\"\n";
        assert_eq!(csv_rate(out), Some(1000.0));
        assert_eq!(csv_rate("header only\n"), None);
    }

    #[test]
    fn a_rate_is_a_time_per_operation() {
        assert_eq!(at_rate(1000, 1000.0), Duration::from_secs(1));
    }
}
