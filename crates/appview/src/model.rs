//! The model (Prefect's API semantics): flows, flow runs with their state
//! fields, and the state history, plus the collections (our own NSIDs)
//! they are stored under. Times are integer microseconds since the Unix
//! epoch; durations are microseconds.

use crate::error::AppviewError;
use crate::uuid::Uuid;

/// Collection of flow records (rkey = the flow's id).
pub const FLOW_NSID: &str = "dev.atbench.appview.flow";
/// Collection of flow run records (rkey = the run's id).
pub const RUN_NSID: &str = "dev.atbench.appview.flowRun";
/// Collection of state history records (rkey = the state's id).
pub const STATE_NSID: &str = "dev.atbench.appview.flowRunState";

/// Whether `collection` is one of the appview's three (records of other
/// collections in the repository or a commit are not the index's).
pub fn is_appview_collection(collection: &str) -> bool {
    matches!(collection, FLOW_NSID | RUN_NSID | STATE_NSID)
}

/// A run's state type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StateType {
    /// Scheduled.
    Scheduled,
    /// Pending.
    Pending,
    /// Running.
    Running,
    /// Completed (terminal).
    Completed,
    /// Failed (terminal).
    Failed,
    /// Cancelled (terminal).
    Cancelled,
    /// Crashed (terminal).
    Crashed,
    /// Paused.
    Paused,
    /// Cancelling.
    Cancelling,
}

impl StateType {
    /// Every state type, in index order.
    pub const ALL: [StateType; 9] = [
        StateType::Scheduled,
        StateType::Pending,
        StateType::Running,
        StateType::Completed,
        StateType::Failed,
        StateType::Cancelled,
        StateType::Crashed,
        StateType::Paused,
        StateType::Cancelling,
    ];

    /// The wire name (`COMPLETED`).
    pub fn as_str(self) -> &'static str {
        match self {
            StateType::Scheduled => "SCHEDULED",
            StateType::Pending => "PENDING",
            StateType::Running => "RUNNING",
            StateType::Completed => "COMPLETED",
            StateType::Failed => "FAILED",
            StateType::Cancelled => "CANCELLED",
            StateType::Crashed => "CRASHED",
            StateType::Paused => "PAUSED",
            StateType::Cancelling => "CANCELLING",
        }
    }

    /// Parses a wire name.
    pub fn parse(s: &str) -> Result<StateType, AppviewError> {
        StateType::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| AppviewError::UnknownStateType(s.chars().take(64).collect()))
    }

    /// Its position in [`ALL`](Self::ALL).
    pub fn index(self) -> usize {
        self as usize
    }

    /// COMPLETED, FAILED, CANCELLED or CRASHED.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            StateType::Completed | StateType::Failed | StateType::Cancelled | StateType::Crashed
        )
    }
}

/// A flow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flow {
    /// Id (record key).
    pub id: Uuid,
    /// Unique name.
    pub name: String,
    /// Tags.
    pub tags: Vec<String>,
    /// Created (µs).
    pub created: i64,
    /// Updated (µs).
    pub updated: i64,
}

/// A flow run, every field the spec lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowRun {
    /// Id (record key).
    pub id: Uuid,
    /// Its flow.
    pub flow_id: Uuid,
    /// Name.
    pub name: String,
    /// The current state's row.
    pub state_id: Uuid,
    /// Current state type.
    pub state_type: StateType,
    /// Current state name.
    pub state_name: String,
    /// When the current state began (µs).
    pub state_timestamp: i64,
    /// Expected start (µs).
    pub expected_start: i64,
    /// Next scheduled start (µs), while not yet running.
    pub next_scheduled_start: Option<i64>,
    /// Start (µs): when it first ran.
    pub start: Option<i64>,
    /// End (µs): when it reached a terminal state.
    pub end: Option<i64>,
    /// Total run time (µs).
    pub total_run_time: i64,
    /// Times it entered RUNNING.
    pub run_count: i64,
    /// Created (µs).
    pub created: i64,
    /// Updated (µs).
    pub updated: i64,
    /// Tags.
    pub tags: Vec<String>,
    /// Parameters: each key and its value's JSON text, in the order given
    /// (module `params`).
    pub parameters: Vec<(String, String)>,
}

impl FlowRun {
    /// `coalesce(start, expected_start)`.
    pub fn start_or_expected(&self) -> i64 {
        self.start.unwrap_or(self.expected_start)
    }
}

/// One state of a run's history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowRunState {
    /// Id (record key).
    pub id: Uuid,
    /// The run.
    pub run_id: Uuid,
    /// Type.
    pub state_type: StateType,
    /// Name.
    pub name: String,
    /// When (µs).
    pub timestamp: i64,
    /// Message (may be empty).
    pub message: String,
}

/// One record of the appview's repository, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// A flow.
    Flow(Flow),
    /// A run (its current version).
    Run(FlowRun),
    /// A state of the history.
    State(FlowRunState),
}

impl Record {
    /// Its collection.
    pub fn collection(&self) -> &'static str {
        match self {
            Record::Flow(_) => FLOW_NSID,
            Record::Run(_) => RUN_NSID,
            Record::State(_) => STATE_NSID,
        }
    }

    /// Its id (the record key).
    pub fn id(&self) -> Uuid {
        match self {
            Record::Flow(f) => f.id,
            Record::Run(r) => r.id,
            Record::State(s) => s.id,
        }
    }
}

/// One record, borrowed (what [`Mutation::records`] yields and
/// [`crate::encode_record`] takes, so a write encodes without cloning).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordRef<'a> {
    /// A flow.
    Flow(&'a Flow),
    /// A run.
    Run(&'a FlowRun),
    /// A state.
    State(&'a FlowRunState),
}

impl RecordRef<'_> {
    /// Its collection.
    pub fn collection(self) -> &'static str {
        match self {
            RecordRef::Flow(_) => FLOW_NSID,
            RecordRef::Run(_) => RUN_NSID,
            RecordRef::State(_) => STATE_NSID,
        }
    }

    /// Its id (the record key).
    pub fn id(self) -> Uuid {
        match self {
            RecordRef::Flow(f) => f.id,
            RecordRef::Run(r) => r.id,
            RecordRef::State(s) => s.id,
        }
    }

    /// An owned copy.
    pub fn to_record(self) -> Record {
        match self {
            RecordRef::Flow(f) => Record::Flow(f.clone()),
            RecordRef::Run(r) => Record::Run(r.clone()),
            RecordRef::State(s) => Record::State(s.clone()),
        }
    }
}

impl<'a> From<&'a Record> for RecordRef<'a> {
    fn from(r: &'a Record) -> Self {
        match r {
            Record::Flow(f) => RecordRef::Flow(f),
            Record::Run(r) => RecordRef::Run(r),
            Record::State(s) => RecordRef::State(s),
        }
    }
}

/// What one client operation changes: the records of one commit (and of
/// one SQL transaction in the baselines).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mutation {
    /// A new flow.
    CreateFlow(Flow),
    /// A new run and its first state.
    CreateRun(FlowRun, FlowRunState),
    /// A new state and the run it moved.
    SetState(FlowRun, FlowRunState),
}

impl Mutation {
    /// The records it writes, in the order they are written, borrowed.
    pub fn records(&self) -> impl Iterator<Item = RecordRef<'_>> {
        let (first, second) = match self {
            Mutation::CreateFlow(f) => (RecordRef::Flow(f), None),
            Mutation::CreateRun(r, s) | Mutation::SetState(r, s) => {
                (RecordRef::Run(r), Some(RecordRef::State(s)))
            }
        };
        std::iter::once(first).chain(second)
    }
}
