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

use crate::error::{AppviewError, Result};
use crate::model::{Flow, FlowRun, FlowRunState, Mutation, StateType};
use crate::uuid::Uuid;

/// What planning needs to know of the current state.
pub(crate) trait Lookup {
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
    /// Parameters: key and value JSON text, in order (`crate::params`).
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
    #[cfg(feature = "workload")]
    pub fn from_op(op: &datagen::appview::Op) -> Result<Input> {
        Ok(match op {
            datagen::appview::Op::Flow(f) => Input::Flow(NewFlow {
                id: Uuid::parse(&f.id)?,
                name: f.name.clone(),
                tags: f.tags.clone(),
                created: f.created_us,
            }),
            datagen::appview::Op::Run(r) => Input::Run(NewRun {
                id: Uuid::parse(&r.id)?,
                flow_id: Uuid::parse(&r.flow_id)?,
                name: r.name.clone(),
                state_id: Uuid::parse(&r.state_id)?,
                expected_start: r.expected_start_us,
                created: r.created_us,
                tags: r.tags.clone(),
                // The workload's values are text.
                parameters: r
                    .parameters
                    .iter()
                    .map(|(k, v)| (k.clone(), crate::params::string_value(v)))
                    .collect(),
            }),
            datagen::appview::Op::State(s) => Input::State(NewState {
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
pub(crate) fn plan(at: &impl Lookup, input: &Input) -> Result<Mutation> {
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
pub(crate) fn plan_flow(at: &impl Lookup, f: &NewFlow) -> Result<Mutation> {
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
pub(crate) fn plan_run(at: &impl Lookup, r: &NewRun) -> Result<Mutation> {
    fresh(at, r.id)?;
    fresh(at, r.state_id)?;
    if r.id == r.state_id {
        return Err(AppviewError::DuplicateId(r.id.to_string()));
    }
    if at.flow(r.flow_id).is_none() {
        return Err(AppviewError::UnknownFlow(r.flow_id.to_string()));
    }
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
        parameters: r.parameters.clone(),
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
pub(crate) fn plan_state(at: &impl Lookup, s: &NewState) -> Result<Mutation> {
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
    // The run's fields come from decoded records and client timestamps:
    // any i64, so the arithmetic is checked.
    let overflow = |field| AppviewError::Overflow {
        run: s.run_id.to_string(),
        field,
    };
    if s.state_type == StateType::Running {
        run.run_count = run
            .run_count
            .checked_add(1)
            .ok_or_else(|| overflow("runCount"))?;
        run.start = run.start.or(Some(s.timestamp));
        run.next_scheduled_start = None;
    }
    if s.state_type.is_terminal() {
        run.end = Some(s.timestamp);
        run.total_run_time = match run.start {
            Some(start) => s
                .timestamp
                .checked_sub(start)
                .ok_or_else(|| overflow("totalRunTime"))?,
            None => 0,
        };
        run.next_scheduled_start = None;
    }
    Ok(Mutation::SetState(run, s.clone()))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::*;

    /// A lookup holding one run.
    struct One(HashMap<Uuid, FlowRun>);

    impl Lookup for One {
        fn flow(&self, _: Uuid) -> Option<&Flow> {
            None
        }
        fn flow_name_taken(&self, _: &str) -> bool {
            false
        }
        fn run(&self, id: Uuid) -> Option<&FlowRun> {
            self.0.get(&id)
        }
        fn id_taken(&self, id: Uuid) -> bool {
            self.0.contains_key(&id)
        }
    }

    fn run(state_type: StateType, state_timestamp: i64, start: Option<i64>, run_count: i64) -> One {
        One(HashMap::from([(
            Uuid(1),
            FlowRun {
                id: Uuid(1),
                flow_id: Uuid(2),
                name: "r".into(),
                state_id: Uuid(3),
                state_type,
                state_name: "s".into(),
                state_timestamp,
                expected_start: 0,
                next_scheduled_start: None,
                start,
                end: None,
                total_run_time: 0,
                run_count,
                created: 0,
                updated: 0,
                tags: vec![],
                parameters: vec![],
            },
        )]))
    }

    fn to(state_type: StateType, timestamp: i64) -> NewState {
        NewState {
            id: Uuid(4),
            run_id: Uuid(1),
            state_type,
            name: "n".into(),
            timestamp,
            message: String::new(),
        }
    }

    #[test]
    fn run_count_at_the_maximum_is_refused() {
        let at = run(StateType::Pending, 0, None, i64::MAX);
        let e = plan_state(&at, &to(StateType::Running, 1)).unwrap_err();
        assert!(
            matches!(
                e,
                AppviewError::Overflow {
                    field: "runCount",
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn run_time_between_extreme_timestamps_is_refused() {
        let at = run(StateType::Running, i64::MIN, Some(i64::MIN), 1);
        let e = plan_state(&at, &to(StateType::Completed, i64::MAX)).unwrap_err();
        assert!(
            matches!(
                e,
                AppviewError::Overflow {
                    field: "totalRunTime",
                    ..
                }
            ),
            "{e}"
        );
    }

    proptest! {
        #[test]
        fn any_state_change_plans_or_refuses_without_panicking(
            current in crate::record::tests::arb_state_type(),
            next in crate::record::tests::arb_state_type(),
            state_ts in any::<i64>(),
            start in any::<Option<i64>>(),
            run_count in any::<i64>(),
            ts in any::<i64>(),
        ) {
            let at = run(current, state_ts, start, run_count);
            if let Ok(Mutation::SetState(r, _)) = plan_state(&at, &to(next, ts)) {
                prop_assert_eq!(r.state_timestamp, ts);
            }
        }
    }
}
