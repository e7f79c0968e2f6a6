//! The read patterns (names from the reference), their parameters, and
//! the page every backend answers with: the rows decoded into the model,
//! so "the same page" means the same runs with the same fields in the
//! same order, not just the same ids.

use std::fmt::Write as _;
use std::sync::Arc;

use crate::error::{AppviewError, Result};
use crate::model::{Flow, FlowRun, FlowRunState};
use crate::uuid::Uuid;

/// `active_by_state`'s page size.
pub const ACTIVE_LIMIT: usize = 200;
/// `completed_50`'s page size.
pub const COMPLETED_LIMIT: usize = 50;
/// `paginated`'s offset.
pub const PAGE_OFFSET: usize = 100;
/// `paginated`'s page size.
pub const PAGE_LIMIT: usize = 50;
/// `flow_list`'s page size.
pub const FLOW_LIMIT: usize = 200;
/// `completed_1h`'s window (µs).
pub const WINDOW_US: i64 = 3_600_000_000;
/// `completed_1h`'s bounds ending at `now`: end in `[now - 1h, now]`
/// (every backend's window).
pub fn window(now: i64) -> (i64, i64) {
    (now.saturating_sub(WINDOW_US), now)
}

/// `completed_1h`'s page size (a window can hold any number of runs; a
/// page is bounded like every other list).
pub const WINDOW_LIMIT: usize = 50;

/// The pattern names, in the spec's order.
pub const PATTERN_NAMES: [&str; 7] = [
    "point_lookup",
    "active_by_state",
    "completed_50",
    "paginated",
    "count_completed",
    "flow_list",
    "completed_1h",
];

/// A read pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// One run by id with its current state.
    PointLookup,
    /// RUNNING or PENDING, id descending, limit 200.
    ActiveByState,
    /// COMPLETED, coalesce(start, expected start) descending, limit 50.
    Completed50,
    /// All runs, expected start descending, offset 100, limit 50.
    Paginated,
    /// Count of COMPLETED.
    CountCompleted,
    /// Flows by name ascending, limit 200.
    FlowList,
    /// Runs that ended in the hour before `now`, end descending, limit 50.
    Completed1h,
}

impl Pattern {
    /// Every pattern, in the spec's order.
    pub const ALL: [Pattern; 7] = [
        Pattern::PointLookup,
        Pattern::ActiveByState,
        Pattern::Completed50,
        Pattern::Paginated,
        Pattern::CountCompleted,
        Pattern::FlowList,
        Pattern::Completed1h,
    ];

    /// Its name (`completed_50`).
    pub fn name(self) -> &'static str {
        PATTERN_NAMES[self as usize]
    }

    /// Parses a name.
    pub fn parse(s: &str) -> Result<Pattern> {
        Pattern::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| AppviewError::UnknownPattern(s.chars().take(64).collect()))
    }
}

/// A read with its parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Query {
    /// `point_lookup` of this run.
    PointLookup(Uuid),
    /// `active_by_state`.
    ActiveByState,
    /// `completed_50`.
    Completed50,
    /// `paginated`.
    Paginated,
    /// `count_completed`.
    CountCompleted,
    /// `flow_list`.
    FlowList,
    /// `completed_1h` ending at `now` (µs): end in `[now - 1h, now]`.
    Completed1h {
        /// The window's end (µs).
        now: i64,
    },
}

impl Query {
    /// `pattern` with `run` for a point lookup and `now` for the window.
    pub fn new(pattern: Pattern, run: Uuid, now: i64) -> Query {
        match pattern {
            Pattern::PointLookup => Query::PointLookup(run),
            Pattern::ActiveByState => Query::ActiveByState,
            Pattern::Completed50 => Query::Completed50,
            Pattern::Paginated => Query::Paginated,
            Pattern::CountCompleted => Query::CountCompleted,
            Pattern::FlowList => Query::FlowList,
            Pattern::Completed1h => Query::Completed1h { now },
        }
    }
}

/// A run with its current state row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunWithState {
    /// The run.
    pub run: Arc<FlowRun>,
    /// Its current state (`None` only if the history lost it).
    pub state: Option<Arc<FlowRunState>>,
}

/// A read's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Page {
    /// A point lookup (`None`: no such run).
    Run(Option<RunWithState>),
    /// A page of runs.
    Runs(Vec<Arc<FlowRun>>),
    /// A count.
    Count(u64),
    /// A page of flows.
    Flows(Vec<Arc<Flow>>),
}

impl Page {
    /// Rows in the page (1 for a count or a found run).
    pub fn rows(&self) -> usize {
        match self {
            Page::Run(r) => usize::from(r.is_some()),
            Page::Runs(r) => r.len(),
            Page::Count(_) => 1,
            Page::Flows(f) => f.len(),
        }
    }

    /// The page as a text table for a person.
    pub fn to_table(&self) -> String {
        let mut out = String::new();
        let run_header = "id                                    state      name        expected_start     start              end                run_time_s  runs";
        let run_line = |out: &mut String, r: &FlowRun| {
            let t = |v: Option<i64>| v.map_or_else(|| "-".to_owned(), |v| v.to_string());
            let _ = writeln!(
                out,
                "{}  {:<9}  {:<10}  {:<17}  {:<17}  {:<17}  {:>10}  {:>4}",
                r.id,
                r.state_type.as_str(),
                r.name,
                r.expected_start,
                t(r.start),
                t(r.end),
                format!("{:.3}", r.total_run_time as f64 / 1e6),
                r.run_count
            );
        };
        match self {
            Page::Run(None) => out.push_str("(no such run)\n"),
            Page::Run(Some(r)) => {
                let _ = writeln!(out, "{run_header}");
                run_line(&mut out, &r.run);
                if let Some(s) = &r.state {
                    let _ = writeln!(
                        out,
                        "current state: {} {} at {} ({}) {:?}",
                        s.id,
                        s.state_type.as_str(),
                        s.timestamp,
                        s.name,
                        s.message
                    );
                }
            }
            Page::Runs(runs) => {
                let _ = writeln!(out, "{run_header}");
                for r in runs {
                    run_line(&mut out, r);
                }
                let _ = writeln!(out, "({} rows)", runs.len());
            }
            Page::Count(n) => {
                let _ = writeln!(out, "count\n{n}");
            }
            Page::Flows(flows) => {
                let _ = writeln!(
                    out,
                    "id                                    name                      tags"
                );
                for f in flows {
                    let _ = writeln!(out, "{}  {:<24}  {}", f.id, f.name, f.tags.join(","));
                }
                let _ = writeln!(out, "({} rows)", flows.len());
            }
        }
        out
    }
}

/// A backend that answers the read patterns.
pub trait ReadBackend {
    /// Answers `query`.
    fn query(&self, query: &Query) -> Result<Page>;
}
