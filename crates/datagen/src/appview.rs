//! The seeded orchestration workload of the appview (`docs/design/appview.md`):
//! flows, flow runs and their state changes, as the operations a client
//! sends, in the order they happen.
//!
//! Seed [`APPVIEW_SEED`] = 1337 (the spec's), ChaCha stream
//! [`APPVIEW_STREAM`]. [`workload`]`(300)` is the reference's scale: 5
//! flows, 300 runs, about 870 writes. Each run is created PENDING; about
//! 90 % then walk PENDING -> RUNNING -> a terminal state (of those 75 %
//! COMPLETED, 15 % FAILED, 5 % CANCELLED, 5 % CRASHED), about 8 % stop at
//! RUNNING and about 2 % stay PENDING. Larger tiers keep the proportions:
//! one flow per [`RUNS_PER_FLOW`] runs (at least 5).
//!
//! Times are integer microseconds since the Unix epoch. Expected starts are
//! [`SPACING_US`] apart from [`EPOCH_US`] with a seeded jitter below
//! [`JITTER_US`]; a run is created 1-10 s before it, starts 0-30 s after
//! it and ends 1-300 s after its start, so the timestamps of one run are
//! strictly increasing (the SQL baselines' unique (run, timestamp) index
//! holds). The operations are sorted by their timestamp (ties keep
//! generation order), as a live system would see them.
//!
//! Ids are version-4 UUIDs drawn from the stream, in their lowercase
//! hyphenated form (valid atproto record keys). Draws happen per run in a
//! fixed order, so the values never depend on anything but the seed and
//! the run count.

use rand::{Rng, RngCore};

use crate::stream_rng;

/// The spec's seed.
pub const APPVIEW_SEED: u64 = 1337;
/// The ChaCha stream of the workload (ASCII "APPVIEW\0").
pub const APPVIEW_STREAM: u64 = 0x4150_5056_4945_5700;
/// The first expected start: 2024-06-01T00:00:00Z.
pub const EPOCH_US: i64 = 1_717_200_000_000_000;
/// Distance between two runs' nominal expected starts (60 s).
pub const SPACING_US: i64 = 60_000_000;
/// Jitter added to a nominal expected start (below 45 s).
pub const JITTER_US: i64 = 45_000_000;
/// Runs per flow in the larger tiers (300 runs have 5 flows).
pub const RUNS_PER_FLOW: usize = 60;
/// The most runs a workload is meant for (100x the 10^5 tier; the CLI
/// refuses more). Larger counts still generate, but their memory is the
/// caller's problem: the up-front reservation stops at this size.
pub const MAX_RUNS: usize = 10_000_000;

/// Creates a flow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowOp {
    /// UUID.
    pub id: String,
    /// Unique name.
    pub name: String,
    /// Tags.
    pub tags: Vec<String>,
    /// Creation time (µs).
    pub created_us: i64,
}

/// Creates a flow run (in PENDING).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOp {
    /// UUID of the run.
    pub id: String,
    /// UUID of its flow.
    pub flow_id: String,
    /// Its name.
    pub name: String,
    /// UUID of its first (PENDING) state.
    pub state_id: String,
    /// Expected start (µs).
    pub expected_start_us: i64,
    /// Creation time (µs): the PENDING state's timestamp.
    pub created_us: i64,
    /// Tags.
    pub tags: Vec<String>,
    /// Parameters, keys ascending.
    pub parameters: Vec<(String, String)>,
}

/// Moves a run to a new state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateOp {
    /// UUID of the state row.
    pub id: String,
    /// UUID of the run.
    pub run_id: String,
    /// State type name (`RUNNING`, `COMPLETED`, ...).
    pub state_type: &'static str,
    /// State name (`Running`, `Completed`, ...).
    pub name: &'static str,
    /// When (µs).
    pub timestamp_us: i64,
    /// A message.
    pub message: String,
}

/// One client operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// A new flow.
    Flow(FlowOp),
    /// A new run.
    Run(RunOp),
    /// A state change.
    State(StateOp),
}

impl Op {
    /// When the operation happens (µs).
    pub fn timestamp_us(&self) -> i64 {
        match self {
            Op::Flow(f) => f.created_us,
            Op::Run(r) => r.created_us,
            Op::State(s) => s.timestamp_us,
        }
    }
}

/// The generated workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workload {
    /// Flows.
    pub flows: usize,
    /// Runs.
    pub runs: usize,
    /// Every operation, in timestamp order.
    pub ops: Vec<Op>,
    /// The workload's "now": one second after its last operation (the
    /// reference instant of the time-window read).
    pub now_us: i64,
}

const FLOW_WORDS: &[&str] = &[
    "etl", "orders", "train", "report", "sync", "backup", "ingest", "score", "billing", "crm",
    "events", "nightly", "export", "audit", "metrics", "users",
];
const TAGS: &[&str] = &[
    "prod", "staging", "etl", "ml", "finance", "ops", "hourly", "daily",
];
const REGIONS: &[&str] = &["eu-west", "us-east", "ap-south"];

/// A version-4 UUID from the stream, lowercase and hyphenated.
fn uuid(rng: &mut impl RngCore) -> String {
    let mut b = [0u8; 16];
    rng.fill_bytes(&mut b);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let mut s = String::with_capacity(36);
    for (i, byte) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        s.push(char::from(b"0123456789abcdef"[usize::from(byte >> 4)]));
        s.push(char::from(b"0123456789abcdef"[usize::from(byte & 15)]));
    }
    s
}

/// Flows for `runs` runs.
pub fn flow_count(runs: usize) -> usize {
    (runs / RUNS_PER_FLOW).max(5)
}

/// The workload of `runs` runs (seed [`APPVIEW_SEED`]).
pub fn workload(runs: usize) -> Workload {
    let mut rng = stream_rng(APPVIEW_SEED, APPVIEW_STREAM);
    let flows = flow_count(runs);
    // About three ops a run; the reservation is capped (and cannot
    // overflow) for absurd counts.
    let mut ops = Vec::with_capacity(flows.saturating_add(runs.min(MAX_RUNS) * 3));
    let mut flow_ids = Vec::with_capacity(flows);
    let mut flow_tags = Vec::with_capacity(flows);
    for i in 0..flows {
        let a = FLOW_WORDS[rng.random_range(0..FLOW_WORDS.len())];
        let b = FLOW_WORDS[rng.random_range(0..FLOW_WORDS.len())];
        let tags = vec![TAGS[rng.random_range(0..TAGS.len())].to_owned()];
        let id = uuid(&mut rng);
        let created_us = EPOCH_US - 86_400_000_000 + i as i64 * 1_000;
        flow_ids.push(id.clone());
        flow_tags.push(tags.clone());
        ops.push(Op::Flow(FlowOp {
            id,
            name: format!("{a}-{b}-{i}"),
            tags,
            created_us,
        }));
    }
    for i in 0..runs {
        let flow = rng.random_range(0..flows);
        let id = uuid(&mut rng);
        let state_id = uuid(&mut rng);
        let expected = EPOCH_US + i as i64 * SPACING_US + rng.random_range(0..JITTER_US);
        let created = expected - rng.random_range(1_000_000..10_000_000i64);
        let mut tags = flow_tags[flow].clone();
        tags.push(if rng.random_range(0..4u32) == 0 {
            "manual".to_owned()
        } else {
            "scheduled".to_owned()
        });
        let parameters = vec![
            ("batch".to_owned(), rng.random_range(1..1000u32).to_string()),
            (
                "region".to_owned(),
                REGIONS[rng.random_range(0..REGIONS.len())].to_owned(),
            ),
        ];
        ops.push(Op::Run(RunOp {
            id: id.clone(),
            flow_id: flow_ids[flow].clone(),
            name: format!("run-{i}"),
            state_id,
            expected_start_us: expected,
            created_us: created,
            tags,
            parameters,
        }));
        // The run's fate: 90 % finish, 8 % stay RUNNING, 2 % PENDING.
        let fate = rng.random_range(0..100u32);
        let start = expected + rng.random_range(0..30_000_000i64);
        let end = start + rng.random_range(1_000_000..300_000_000i64);
        let running_id = uuid(&mut rng);
        let terminal_id = uuid(&mut rng);
        let terminal = rng.random_range(0..100u32);
        if fate >= 2 {
            ops.push(Op::State(StateOp {
                id: running_id,
                run_id: id.clone(),
                state_type: "RUNNING",
                name: "Running",
                timestamp_us: start,
                message: String::new(),
            }));
        }
        if fate >= 10 {
            let (state_type, name, message) = match terminal {
                0..75 => ("COMPLETED", "Completed", "All states completed."),
                75..90 => ("FAILED", "Failed", "Flow run encountered an exception."),
                90..95 => (
                    "CANCELLED",
                    "Cancelled",
                    "The parent flow run was cancelled.",
                ),
                _ => (
                    "CRASHED",
                    "Crashed",
                    "Execution was interrupted by the infrastructure.",
                ),
            };
            ops.push(Op::State(StateOp {
                id: terminal_id,
                run_id: id,
                state_type,
                name,
                timestamp_us: end,
                message: message.to_owned(),
            }));
        }
    }
    ops.sort_by_key(Op::timestamp_us);
    let now_us = ops.last().map_or(EPOCH_US, |o| o.timestamp_us()) + 1_000_000;
    Workload {
        flows,
        runs,
        ops,
        now_us,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{HashMap, HashSet};

    use super::*;

    fn final_states(w: &Workload) -> HashMap<&str, &str> {
        let mut last = HashMap::new();
        for op in &w.ops {
            match op {
                Op::Run(r) => {
                    last.insert(r.id.as_str(), "PENDING");
                }
                Op::State(s) => {
                    last.insert(s.run_id.as_str(), s.state_type);
                }
                Op::Flow(_) => {}
            }
        }
        last
    }

    #[test]
    fn reference_scale_has_the_spec_proportions() {
        let w = workload(300);
        assert_eq!((w.flows, w.runs), (5, 300));
        let writes = w.ops.len();
        assert!((840..=900).contains(&writes), "{writes} writes");
        let states = final_states(&w);
        let count = |t: &str| states.values().filter(|s| **s == t).count();
        let completed = count("COMPLETED");
        let active = count("RUNNING") + count("PENDING");
        assert!((180..=230).contains(&completed), "{completed} completed");
        assert!((15..=50).contains(&active), "{active} active");
    }

    #[test]
    fn deterministic_ordered_and_well_formed() {
        let a = workload(300);
        assert_eq!(a, workload(300));
        assert!(
            a.ops
                .windows(2)
                .all(|w| w[0].timestamp_us() <= w[1].timestamp_us())
        );
        let mut ids = HashSet::new();
        let mut names = HashSet::new();
        let mut seen_runs = HashSet::new();
        let mut last_ts: HashMap<&str, i64> = HashMap::new();
        for op in &a.ops {
            match op {
                Op::Flow(f) => {
                    assert!(ids.insert(f.id.clone()));
                    assert!(names.insert(f.name.clone()));
                }
                Op::Run(r) => {
                    assert!(ids.insert(r.id.clone()) && ids.insert(r.state_id.clone()));
                    assert!(seen_runs.insert(r.id.as_str()));
                    last_ts.insert(&r.id, r.created_us);
                    assert!(r.created_us < r.expected_start_us);
                }
                Op::State(s) => {
                    assert!(ids.insert(s.id.clone()));
                    assert!(seen_runs.contains(s.run_id.as_str()), "state before run");
                    let prev = last_ts.insert(&s.run_id, s.timestamp_us);
                    assert!(prev.is_some_and(|p| p < s.timestamp_us));
                }
            }
        }
        for id in &ids {
            assert_eq!(id.len(), 36);
            assert_eq!(&id[14..15], "4");
        }
        assert!(a.now_us > a.ops.last().map_or(0, Op::timestamp_us));
    }

    #[test]
    fn larger_tier_keeps_proportions() {
        let w = workload(6_000);
        assert_eq!(w.flows, 100);
        let states = final_states(&w);
        let completed = states.values().filter(|s| **s == "COMPLETED").count();
        let share = completed as f64 / 6_000.0;
        assert!((0.63..0.72).contains(&share), "{share}");
    }
}
