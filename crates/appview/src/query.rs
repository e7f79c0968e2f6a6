//! The read patterns (names from the reference), their parameters, and
//! the page every backend answers with: the rows decoded into the model,
//! so "the same page" means the same runs with the same fields in the
//! same order, not just the same ids.

use std::sync::Arc;

use crate::error::{AppviewError, Result};
use crate::model::{Flow, FlowRun, FlowRunState};
use crate::run_page::RunPage;
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
pub(crate) const WINDOW_US: i64 = 3_600_000_000;
/// `completed_1h`'s bounds ending at `now`: end in `[now - 1h, now]`
/// (every backend's window).
pub fn window(now: i64) -> (i64, i64) {
    (now.saturating_sub(WINDOW_US), now)
}

/// `completed_1h`'s page size (a window can hold any number of runs; a
/// page is bounded like every other list).
pub const WINDOW_LIMIT: usize = 50;

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
    /// Every pattern, in the spec's order (the benches' groups and the
    /// CLI's choices are these, named by [`name`](Self::name)).
    pub const ALL: [Pattern; 7] = [
        Pattern::PointLookup,
        Pattern::ActiveByState,
        Pattern::Completed50,
        Pattern::Paginated,
        Pattern::CountCompleted,
        Pattern::FlowList,
        Pattern::Completed1h,
    ];

    /// Its name (`completed_50`): the only spelling of the seven names.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::PointLookup => "point_lookup",
            Pattern::ActiveByState => "active_by_state",
            Pattern::Completed50 => "completed_50",
            Pattern::Paginated => "paginated",
            Pattern::CountCompleted => "count_completed",
            Pattern::FlowList => "flow_list",
            Pattern::Completed1h => "completed_1h",
        }
    }

    /// Parses a name (the error carries the name; the caller shows the
    /// choices, [`ALL`](Self::ALL)).
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
    /// A page of runs (dense rows).
    Runs(RunPage),
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
}

/// A backend that answers the read patterns.
pub trait ReadBackend {
    /// Answers `query`.
    fn query(&self, query: &Query) -> Result<Page>;
}
