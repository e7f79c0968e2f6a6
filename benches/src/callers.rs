//! The concurrent-callers runner: N caller threads share a fixed number of
//! operations; each operation's latency goes into an HDR histogram; the
//! wall time of the whole batch goes to Criterion through `iter_custom`, so
//! Criterion's "time per iteration" is wall time per operation (the inverse
//! of ops/s across all callers) and its throughput is ops/s.
//!
//! After the benchmark the runner writes `target/atbench/latency/<id>.json`
//! with ops/s and p50/p95/p99/max over the measurement phase, which
//! `scripts/bench_snapshot.py` merges into the snapshot.
//!
//! It also records the process's CPU time (every thread's: the callers',
//! and any a library runs for them, such as a store's writer and
//! checkpointer threads) from the callers' common start to the last
//! caller's end, per operation. That is what says how far concurrency can
//! take a rate on this machine: with `c` cores the rate cannot pass
//! `c / cpu_per_op`, so a curve that flattens with cores to spare is
//! waiting, and one whose CPU per operation grows with callers pays for
//! its hand-offs. Beside it goes the whole machine's busy CPU time per
//! operation (`/proc/stat`), which also counts the servers the callers
//! talk to: for a live database on the same machine that is the bound.
//!
//! Criterion's warm-up calls the routine with doubling iteration counts and
//! its measurement with linearly increasing ones, starting below the last
//! warm-up count; the runner therefore clears its histogram whenever the
//! count drops, so the percentiles describe the measurement phase only.

use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use criterion::Throughput;
use hdrhistogram::Histogram;

use crate::sidecar;
use crate::target::Group;

/// Latency and throughput of one concurrent benchmark.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LatencySummary {
    /// Full benchmark id.
    pub id: String,
    /// Caller threads.
    pub callers: usize,
    /// Operations measured.
    pub ops: u64,
    /// Operations per second across all callers (ops / wall time).
    pub ops_per_sec: f64,
    /// Mean latency.
    pub mean_ns: f64,
    /// Median latency.
    pub p50_ns: u64,
    /// 95th percentile.
    pub p95_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// Slowest operation.
    pub max_ns: u64,
    /// Process CPU time per operation (all threads), when the platform
    /// reports it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_ns_per_op: Option<f64>,
    /// The whole machine's busy CPU time per operation (every process,
    /// from `/proc/stat`: the servers these callers talk to included),
    /// when the platform reports it; with `c` cores the rate cannot pass
    /// `c / machine_cpu_ns_per_op`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine_cpu_ns_per_op: Option<f64>,
}

struct Accumulator {
    histogram: Histogram<u64>,
    wall: Duration,
    /// `None` once any batch could not read the process's CPU time.
    cpu: Option<Duration>,
    /// `None` once any batch could not read the machine's CPU time.
    machine_cpu: Option<Duration>,
    last_iters: u64,
}

/// What one batch measured.
struct Batch {
    histogram: Histogram<u64>,
    wall: Duration,
    cpu: Option<Duration>,
    machine_cpu: Option<Duration>,
}

/// CPU time consumed so far by every thread of this process, or `None`
/// where the platform has no process CPU clock.
#[cfg(unix)]
pub fn process_cpu_time() -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a
    // constant the platform defines.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return None;
    }
    Some(Duration::new(
        u64::try_from(ts.tv_sec).ok()?,
        u32::try_from(ts.tv_nsec).ok()?,
    ))
}

#[cfg(not(unix))]
pub fn process_cpu_time() -> Option<Duration> {
    None
}

/// The process's CPU time so far, zero where there is no such clock: for
/// a before/after difference printed beside a measurement.
pub fn process_cpu() -> Duration {
    process_cpu_time().unwrap_or_default()
}

/// Busy CPU time of the whole machine so far (user, nice, system, irq,
/// softirq and steal of `/proc/stat`'s `cpu` line), or `None` where there
/// is no such file. Its resolution is the kernel's clock tick.
fn machine_cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?.strip_prefix("cpu ")?;
    let ticks: Vec<u64> = line
        .split_whitespace()
        .filter_map(|f| f.parse().ok())
        .collect();
    let busy: u64 = [0usize, 1, 2, 5, 6, 7]
        .iter()
        .filter_map(|&i| ticks.get(i))
        .sum();
    // SAFETY: sysconf only reads a constant of the running system.
    #[cfg(unix)]
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    #[cfg(not(unix))]
    let hz = 100;
    let hz = u64::try_from(hz).ok().filter(|&h| h > 0)?;
    Some(Duration::from_nanos(busy.checked_mul(1_000_000_000 / hz)?))
}

fn new_histogram() -> Histogram<u64> {
    // 1 ns .. 60 s at 3 significant digits; `new_with_bounds` only fails on
    // bounds that these constants are not.
    Histogram::new_with_bounds(1, 60_000_000_000, 3).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs `make_op`'s operations from `callers` threads as benchmark
/// `implementation`/`tier` of `group`; one Criterion iteration is one
/// operation. `make_op(caller)` runs on the caller's thread before the
/// clock starts (per sample) and returns the operation, which receives the
/// caller's operation index.
///
/// Returns the latency summary (also written as a sidecar), or `None` when
/// Criterion did not run the routine (listing, filtered out) or ran it only
/// as a smoke test (`--test`).
pub fn bench_callers<F, Op>(
    group: &mut Group<'_>,
    implementation: &str,
    tier: &str,
    callers: usize,
    make_op: F,
) -> Option<LatencySummary>
where
    F: Fn(usize) -> Op + Sync,
    Op: FnMut(u64),
{
    bench_callers_counting(
        group,
        implementation,
        tier,
        callers,
        Throughput::Elements(1),
        make_op,
    )
}

/// [`bench_callers`] for a group whose Criterion throughput per operation
/// is `throughput` (bytes of an object, say) rather than one element; the
/// latency summary is per operation either way.
pub fn bench_callers_counting<F, Op>(
    group: &mut Group<'_>,
    implementation: &str,
    tier: &str,
    callers: usize,
    throughput: Throughput,
    make_op: F,
) -> Option<LatencySummary>
where
    F: Fn(usize) -> Op + Sync,
    Op: FnMut(u64),
{
    let callers = callers.max(1);
    let id = group.id(implementation, tier);
    let acc = Mutex::new(Accumulator {
        histogram: new_histogram(),
        wall: Duration::ZERO,
        cpu: Some(Duration::ZERO),
        machine_cpu: Some(Duration::ZERO),
        last_iters: 0,
    });
    group.throughput(throughput);
    group.bench(implementation, tier, |b| {
        b.iter_custom(|iters| {
            let batch = run_batch(iters, callers, &make_op);
            let mut acc = acc.lock().unwrap_or_else(|p| p.into_inner());
            if iters < acc.last_iters {
                acc.histogram.reset();
                acc.wall = Duration::ZERO;
                acc.cpu = Some(Duration::ZERO);
                acc.machine_cpu = Some(Duration::ZERO);
            }
            acc.last_iters = iters;
            acc.wall += batch.wall;
            acc.cpu = acc.cpu.zip(batch.cpu).map(|(a, b)| a + b);
            acc.machine_cpu = acc.machine_cpu.zip(batch.machine_cpu).map(|(a, b)| a + b);
            let _ = acc.histogram.add(&batch.histogram);
            batch.wall
        })
    });
    let acc = acc.into_inner().unwrap_or_else(|p| p.into_inner());
    if acc.histogram.is_empty() || crate::config::is_smoke() {
        return None;
    }
    let h = &acc.histogram;
    let summary = LatencySummary {
        id: id.clone(),
        callers,
        ops: h.len(),
        ops_per_sec: h.len() as f64 / acc.wall.as_secs_f64().max(1e-12),
        mean_ns: h.mean(),
        p50_ns: h.value_at_quantile(0.50),
        p95_ns: h.value_at_quantile(0.95),
        p99_ns: h.value_at_quantile(0.99),
        max_ns: h.max(),
        cpu_ns_per_op: acc.cpu.map(|c| c.as_nanos() as f64 / h.len() as f64),
        machine_cpu_ns_per_op: acc
            .machine_cpu
            .map(|c| c.as_nanos() as f64 / h.len() as f64),
    };
    let mut cpu = summary
        .cpu_ns_per_op
        .map_or(String::new(), |c| format!(", CPU {c:.0} ns/op"));
    if let Some(m) = summary.machine_cpu_ns_per_op {
        cpu.push_str(&format!(" (machine {m:.0} ns/op)"));
    }
    eprintln!(
        "atbench: {id}: {:.0} ops/s, p50 {} ns, p95 {} ns, p99 {} ns, max {} ns{cpu}",
        summary.ops_per_sec, summary.p50_ns, summary.p95_ns, summary.p99_ns, summary.max_ns
    );
    match serde_json::to_value(&summary) {
        Ok(value) => sidecar::write("latency", &sidecar::file_stem(&id), &value),
        Err(e) => eprintln!("atbench: {id}: latency summary not serialisable: {e}"),
    }
    Some(summary)
}

/// One batch of `iters` operations split across `callers` threads; returns
/// the merged latencies, the wall time from the common start to the last
/// caller's end, and the process's CPU time from the barrier that starts
/// the callers together (read by caller 0, so no caller's set-up in
/// `make_op` is counted) to the last caller's end (each caller reads the
/// clock after its last operation; the latest reading counts). No barrier
/// ends the callers, so a caller's panic still reaches the join below.
fn run_batch<F, Op>(iters: u64, callers: usize, make_op: &F) -> Batch
where
    F: Fn(usize) -> Op + Sync,
    Op: FnMut(u64),
{
    let barrier = Barrier::new(callers);
    let per_caller = iters / callers as u64;
    let extra = iters % callers as u64;
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..callers)
            .map(|caller| {
                let barrier = &barrier;
                let count = per_caller + u64::from((caller as u64) < extra);
                scope.spawn(move || {
                    let mut op = make_op(caller);
                    let mut histogram = new_histogram();
                    barrier.wait();
                    let (cpu_start, machine_start) = if caller == 0 {
                        (process_cpu_time(), machine_cpu_time())
                    } else {
                        (None, None)
                    };
                    // Each caller stamps its own start: a coordinating thread
                    // that is descheduled past the barrier could stamp after
                    // the callers had finished, giving a zero wall time.
                    let started = Instant::now();
                    for i in 0..count {
                        let start = Instant::now();
                        op(i);
                        histogram.saturating_record(start.elapsed().as_nanos() as u64);
                    }
                    let done = Instant::now();
                    let ends = (process_cpu_time(), machine_cpu_time());
                    (histogram, started, done, (cpu_start, machine_start), ends)
                })
            })
            .collect();
        let mut merged = new_histogram();
        let mut span: Option<(Instant, Instant)> = None;
        // CPU clock readings: caller 0's at the start, the latest at an end;
        // `None` as soon as any reading failed.
        let mut cpu_start = None;
        let mut cpu_end = Some(Duration::ZERO);
        let mut machine_start = None;
        let mut machine_end = Some(Duration::ZERO);
        for (caller, handle) in handles.into_iter().enumerate() {
            match handle.join() {
                Ok((histogram, started, done, starts, ends)) => {
                    if caller == 0 {
                        (cpu_start, machine_start) = starts;
                    }
                    cpu_end = cpu_end.zip(ends.0).map(|(a, b)| a.max(b));
                    machine_end = machine_end.zip(ends.1).map(|(a, b)| a.max(b));
                    let _ = merged.add(&histogram);
                    span = Some(match span {
                        None => (started, done),
                        Some((first, last)) => (first.min(started), last.max(done)),
                    });
                }
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        // The batch's wall time: first caller's start to last caller's end
        // (never zero, which Criterion rejects).
        let wall = span.map_or(Duration::ZERO, |(first, last)| last.duration_since(first));
        Batch {
            histogram: merged,
            wall: wall.max(Duration::from_nanos(1)),
            cpu: cpu_start.zip(cpu_end).map(|(a, b)| b.saturating_sub(a)),
            machine_cpu: machine_start
                .zip(machine_end)
                .map(|(a, b)| b.saturating_sub(a)),
        }
    })
}
