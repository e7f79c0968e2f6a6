//! The orchestration rules: what a client operation writes. Each
//! operation is checked against the current state (an [`Lookup`], which
//! the index is) and planned into a [`Mutation`]: the records of one
//! commit, or of one SQL transaction in the baselines. A refused operation
//! plans nothing, so nothing is written.
//!
//! Rules (Prefect's, reduced to what the read patterns see): a run needs
//! an existing flow; a flow name is unique; ids are unique across flows,
//! runs and states; a run is created PENDING with its first state; a state
//! change must be later than the run's current state and cannot leave a
//! terminal state; entering RUNNING counts a run and sets its start (once)
//! and clears its next scheduled start; entering a terminal state sets its
//! end and its total run time (end - start).

use datagen::appview::Op;

use crate::error::{AppviewError, Result};
use crate::model::{Flow, FlowRun, FlowRunState, Mutation, StateType};
use crate::uuid::Uuid;

/// What planning needs to know of the current state.
pub trait Lookup {
    /// A flow by id.
    fn flow(&self, id: Uuid) -> Option<&Flow>;
    /// Whether a flow has this name.
    fn flow_name_taken(&self, name: &str) -> bool;
    /// A run by id.
    fn run(&self, id: Uuid) -> Option<&FlowRun>;
    /// Whether a flow, run or state has this id.
    fn id_taken(&self, id: Uuid) -> bool;
}

/// Creates a flow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewFlow {
    /// Id.
    pub id: Uuid,
    /// Unique name.
    pub name: String,
    /// Tags.
    pub tags: Vec<String>,
    /// When (µs).
    pub created: i64,
}

/// Creates a run (PENDING).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRun {
    /// Id.
    pub id: Uuid,
    /// Its flow.
    pub flow_id: Uuid,
    /// Name.
    pub name: String,
    /// Id of its first state.
    pub state_id: Uuid,
    /// Expected start (µs).
    pub expected_start: i64,
    /// When (µs).
    pub created: i64,
    /// Tags.
    pub tags: Vec<String>,
    /// Parameters.
    pub parameters: Vec<(String, String)>,
}

/// Moves a run to a new state: the state record it writes, as it is
/// written (so the two cannot drift apart).
pub type NewState = FlowRunState;

/// A parsed client operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A flow.
    Flow(NewFlow),
    /// A run.
    Run(NewRun),
    /// A state change.
    State(NewState),
}

impl Input {
    /// Parses a workload operation (its ids and state type name).
    pub fn from_op(op: &Op) -> Result<Input> {
        Ok(match op {
            Op::Flow(f) => Input::Flow(NewFlow {
                id: Uuid::parse(&f.id)?,
                name: f.name.clone(),
                tags: f.tags.clone(),
                created: f.created_us,
            }),
            Op::Run(r) => Input::Run(NewRun {
                id: Uuid::parse(&r.id)?,
                flow_id: Uuid::parse(&r.flow_id)?,
                name: r.name.clone(),
                state_id: Uuid::parse(&r.state_id)?,
                expected_start: r.expected_start_us,
                created: r.created_us,
                tags: r.tags.clone(),
                parameters: r.parameters.clone(),
            }),
            Op::State(s) => Input::State(NewState {
                id: Uuid::parse(&s.id)?,
                run_id: Uuid::parse(&s.run_id)?,
                state_type: StateType::parse(s.state_type)?,
                name: s.name.to_owned(),
                timestamp: s.timestamp_us,
                message: s.message.clone(),
            }),
        })
    }
}

/// Plans `input` against `at`.
pub fn plan(at: &impl Lookup, input: &Input) -> Result<Mutation> {
    match input {
        Input::Flow(f) => plan_flow(at, f),
        Input::Run(r) => plan_run(at, r),
        Input::State(s) => plan_state(at, s),
    }
}

fn fresh(at: &impl Lookup, id: Uuid) -> Result<()> {
    if at.id_taken(id) {
        return Err(AppviewError::DuplicateId(id.to_string()));
    }
    Ok(())
}

/// Plans a new flow.
pub fn plan_flow(at: &impl Lookup, f: &NewFlow) -> Result<Mutation> {
    fresh(at, f.id)?;
    if at.flow_name_taken(&f.name) {
        return Err(AppviewError::DuplicateFlowName(f.name.clone()));
    }
    Ok(Mutation::CreateFlow(Flow {
        id: f.id,
        name: f.name.clone(),
        tags: f.tags.clone(),
        created: f.created,
        updated: f.created,
    }))
}

/// Plans a new run, PENDING.
pub fn plan_run(at: &impl Lookup, r: &NewRun) -> Result<Mutation> {
    fresh(at, r.id)?;
    fresh(at, r.state_id)?;
    if r.id == r.state_id {
        return Err(AppviewError::DuplicateId(r.id.to_string()));
    }
    if at.flow(r.flow_id).is_none() {
        return Err(AppviewError::UnknownFlow(r.flow_id.to_string()));
    }
    let mut parameters = r.parameters.clone();
    parameters.sort();
    let run = FlowRun {
        id: r.id,
        flow_id: r.flow_id,
        name: r.name.clone(),
        state_id: r.state_id,
        state_type: StateType::Pending,
        state_name: "Pending".to_owned(),
        state_timestamp: r.created,
        expected_start: r.expected_start,
        next_scheduled_start: Some(r.expected_start),
        start: None,
        end: None,
        total_run_time: 0,
        run_count: 0,
        created: r.created,
        updated: r.created,
        tags: r.tags.clone(),
        parameters,
    };
    let state = FlowRunState {
        id: r.state_id,
        run_id: r.id,
        state_type: StateType::Pending,
        name: "Pending".to_owned(),
        timestamp: r.created,
        message: String::new(),
    };
    Ok(Mutation::CreateRun(run, state))
}

/// Plans a state change.
pub fn plan_state(at: &impl Lookup, s: &NewState) -> Result<Mutation> {
    fresh(at, s.id)?;
    let current = at
        .run(s.run_id)
        .ok_or_else(|| AppviewError::UnknownRun(s.run_id.to_string()))?;
    if current.state_type.is_terminal() {
        return Err(AppviewError::InvalidTransition {
            run: s.run_id.to_string(),
            from: current.state_type.as_str(),
            to: s.state_type.as_str(),
        });
    }
    if s.timestamp <= current.state_timestamp {
        return Err(AppviewError::StaleTimestamp {
            run: s.run_id.to_string(),
            timestamp: s.timestamp,
            current: current.state_timestamp,
        });
    }
    let mut run = current.clone();
    run.state_id = s.id;
    run.state_type = s.state_type;
    run.state_name = s.name.clone();
    run.state_timestamp = s.timestamp;
    run.updated = s.timestamp;
    if s.state_type == StateType::Running {
        run.run_count += 1;
        run.start = run.start.or(Some(s.timestamp));
        run.next_scheduled_start = None;
    }
    if s.state_type.is_terminal() {
        run.end = Some(s.timestamp);
        run.total_run_time = run.start.map_or(0, |start| s.timestamp - start);
        run.next_scheduled_start = None;
    }
    Ok(Mutation::SetState(run, s.clone()))
}
