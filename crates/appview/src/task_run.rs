//! Task runs: their two collections, their records, and their part of the
//! index ([`TaskIndex`], a field of [`crate::Index`], fed by the same
//! commits and rebuilt from the same repository).
//!
//! How a task run is kept: Prefect 3's client orchestrates task runs
//! itself and reports each state change as a `prefect.task-run.{state}`
//! event (`rest::events`); the server's task run recorder turns the
//! event's `payload.task_run` and `payload.validated_state` into the run
//! and its state. Here each such event (or a `POST /task_runs/` or
//! `/task_runs/{id}/set_state`) is one signed commit of two records:
//!
//! - `dev.atbench.appview.taskRun/{task run id}`: `{"$type", "body"}`,
//!   `body` the task run as Prefect's API answers it (its JSON text,
//!   without the nested `state`): whatever fields the client sent are
//!   kept as it sent them, and the few the index needs (flow run, state,
//!   times, name) are read back out of it;
//! - `dev.atbench.appview.taskRunState/{state id}`: `{"$type", "taskRun",
//!   "body"}`, `body` the state's JSON (the event's id is the state's id,
//!   as Prefect's recorder has it).
//!
//! Prefect's JSON is kept as text because the client's payload carries
//! fields this server does not interpret (`empirical_policy`,
//! `task_inputs`, `cache_key`, floats) and must give back unchanged;
//! DAG-CBOR has no floats in the atproto data model.
//!
//! The index keeps, per task run, the parsed fields and the body, the
//! state history, the runs by (expected start, id) globally and per flow
//! run (a flow run's task runs in O(log n + page)), and the runs per
//! state type (a count is a set's length).

use std::collections::BTreeSet;
use std::sync::Arc;

use repo::cbor::{Encoder, ValueRef};
use serde_json::{Map, Value};

use crate::error::{AppviewError, Result};
use crate::model::StateType;
use crate::uuid::{Uuid, UuidMap};

/// Collection of task run records (rkey = the task run's id).
pub const TASK_RUN_NSID: &str = "dev.atbench.appview.taskRun";
/// Collection of task run state records (rkey = the state's id).
pub const TASK_STATE_NSID: &str = "dev.atbench.appview.taskRunState";

/// Whether `collection` is one of the task runs' two.
pub fn is_task_collection(collection: &str) -> bool {
    matches!(collection, TASK_RUN_NSID | TASK_STATE_NSID)
}

/// A task run, as the index holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRun {
    /// Id (record key).
    pub id: Uuid,
    /// Its flow run, if any.
    pub flow_run_id: Option<Uuid>,
    /// Name.
    pub name: String,
    /// The current state's id.
    pub state_id: Option<Uuid>,
    /// The current state's type.
    pub state_type: Option<StateType>,
    /// When the current state began (µs), 0 when unknown.
    pub state_timestamp: i64,
    /// Expected start (µs), `i64::MIN` when none (first in ascending order).
    pub expected_start: i64,
    /// Start (µs).
    pub start: Option<i64>,
    /// End (µs).
    pub end: Option<i64>,
    /// The task run's JSON (Prefect's shape, without `state`).
    pub body: Map<String, Value>,
    /// The flow runs created with this one as `parent_task_run_id` (a
    /// subflow's), ascending: what `flow_runs.parent_task_run_id` reads.
    pub children: Vec<Uuid>,
}

/// One state of a task run's history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRunState {
    /// Id (record key).
    pub id: Uuid,
    /// The task run.
    pub task_run_id: Uuid,
    /// The state's JSON (Prefect's shape).
    pub body: Map<String, Value>,
}

/// A decoded record of the two collections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskRecord {
    /// A task run (its current version).
    Run(TaskRun),
    /// A state.
    State(TaskRunState),
}

fn time_of(body: &Map<String, Value>, key: &str) -> Option<i64> {
    body.get(key)
        .and_then(Value::as_str)
        .and_then(crate::rest_time::parse)
}

fn uuid_of(body: &Map<String, Value>, key: &str) -> Option<Uuid> {
    body.get(key)
        .and_then(Value::as_str)
        .and_then(|s| Uuid::parse(&s.to_ascii_lowercase()).ok())
}

impl TaskRun {
    /// The task run of `body` (its `id` field is the record key `id`).
    pub fn from_body(id: Uuid, body: Map<String, Value>) -> TaskRun {
        TaskRun {
            id,
            flow_run_id: uuid_of(&body, "flow_run_id"),
            name: body
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            state_id: uuid_of(&body, "state_id"),
            state_type: body
                .get("state_type")
                .and_then(Value::as_str)
                .and_then(|s| StateType::parse(s).ok()),
            state_timestamp: time_of(&body, "state_timestamp").unwrap_or(0),
            expected_start: time_of(&body, "expected_start_time").unwrap_or(i64::MIN),
            start: time_of(&body, "start_time"),
            end: time_of(&body, "end_time"),
            body,
            children: Vec::new(),
        }
    }

    /// The record's DAG-CBOR bytes.
    pub fn encode(&self) -> Vec<u8> {
        let text = Value::Object(self.body.clone()).to_string();
        let mut out = Vec::with_capacity(text.len() + 48);
        let mut e = Encoder::new(&mut out);
        let mut id = [0u8; 36];
        e.map(3);
        e.text("body");
        e.text(&text);
        e.text("$type");
        e.text(TASK_RUN_NSID);
        e.text("children");
        e.list(self.children.len());
        for c in &self.children {
            e.text(c.write_to(&mut id));
        }
        out
    }
}

impl TaskRunState {
    /// The state's type, if its body names a known one.
    pub fn state_type(&self) -> Option<StateType> {
        self.body
            .get("type")
            .and_then(Value::as_str)
            .and_then(|s| StateType::parse(s).ok())
    }

    /// When (µs), 0 when the body has no valid timestamp.
    pub fn timestamp(&self) -> i64 {
        time_of(&self.body, "timestamp").unwrap_or(0)
    }

    /// The record's DAG-CBOR bytes.
    pub fn encode(&self) -> Vec<u8> {
        let text = Value::Object(self.body.clone()).to_string();
        let mut out = Vec::with_capacity(text.len() + 96);
        let mut e = Encoder::new(&mut out);
        let mut id = [0u8; 36];
        e.map(3);
        e.text("body");
        e.text(&text);
        e.text("$type");
        e.text(TASK_STATE_NSID);
        e.text("taskRun");
        e.text(self.task_run_id.write_to(&mut id));
        out
    }
}

/// Decodes a record of the two collections (`None` for another
/// collection). Strict: a map with `$type` equal to the collection and a
/// `body` that is a JSON object's text.
pub fn decode(collection: &str, rkey: &str, bytes: &[u8]) -> Result<Option<TaskRecord>> {
    if !is_task_collection(collection) {
        return Ok(None);
    }
    let bad = |reason: String| AppviewError::BadRecord {
        collection: collection.to_owned(),
        rkey: rkey.chars().take(64).collect(),
        reason,
    };
    let id = Uuid::parse(rkey)?;
    let v = repo::cbor::decode(bytes).map_err(|e| bad(e.to_string()))?;
    let ValueRef::Map(m) = v else {
        return Err(bad("not a map".into()));
    };
    let text = |key: &str| match m.get(key) {
        Some(ValueRef::Text(t)) => Ok(*t),
        _ => Err(bad(format!("{key} missing or not text"))),
    };
    if text("$type")? != collection {
        return Err(bad("$type is not the collection".into()));
    }
    let body = match serde_json::from_str::<Value>(text("body")?) {
        Ok(Value::Object(o)) => o,
        Ok(_) => return Err(bad("body is not a JSON object".into())),
        Err(e) => return Err(bad(format!("body: {e}"))),
    };
    Ok(Some(if collection == TASK_RUN_NSID {
        let mut run = TaskRun::from_body(id, body);
        if let Some(ValueRef::List(children)) = m.get("children") {
            for c in children {
                let Some(t) = c.as_text() else {
                    return Err(bad("children: not text".into()));
                };
                run.children.push(Uuid::parse(t)?);
            }
        }
        TaskRecord::Run(run)
    } else {
        let run = Uuid::parse(&text("taskRun")?.to_ascii_lowercase())?;
        TaskRecord::State(TaskRunState {
            id,
            task_run_id: run,
            body,
        })
    }))
}

/// A key of the ordered sets: (expected start, id).
type Key = (i64, Uuid);

/// The task runs' part of the index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskIndex {
    runs: UuidMap<Arc<TaskRun>>,
    states: UuidMap<Arc<TaskRunState>>,
    /// Every run by (expected start, id).
    all: BTreeSet<Key>,
    /// Per flow run.
    by_flow_run: UuidMap<BTreeSet<Key>>,
    /// Per state type (`StateType::index`), and a tenth for none.
    by_state: [BTreeSet<Key>; 10],
    /// A subflow's flow run -> the task run that tracks it in its parent.
    parent_of: UuidMap<Uuid>,
}

fn state_slot(t: Option<StateType>) -> usize {
    t.map_or(9, StateType::index)
}

impl TaskIndex {
    /// Task runs held.
    pub fn len(&self) -> usize {
        self.runs.len()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// States held.
    pub fn state_count(&self) -> usize {
        self.states.len()
    }

    /// The task run `id`.
    pub fn get(&self, id: Uuid) -> Option<&Arc<TaskRun>> {
        self.runs.get(&id)
    }

    /// The state `id`.
    pub fn state(&self, id: Uuid) -> Option<&Arc<TaskRunState>> {
        self.states.get(&id)
    }

    /// Every state, in no order.
    pub fn states(&self) -> impl Iterator<Item = &Arc<TaskRunState>> + '_ {
        self.states.values()
    }

    /// Task runs in state `t` (O(1)).
    pub fn count_in(&self, t: StateType) -> usize {
        self.by_state[t.index()].len()
    }

    /// The task runs of flow run `flow_run`, by (expected start, id)
    /// ascending.
    pub fn of_flow_run(&self, flow_run: Uuid) -> impl DoubleEndedIterator<Item = &Arc<TaskRun>> {
        self.by_flow_run
            .get(&flow_run)
            .into_iter()
            .flat_map(|s| s.iter())
            .filter_map(|k| self.runs.get(&k.1))
    }

    /// The flow runs created under task runs `parents` (subflows).
    pub fn children_of(&self, parents: &[Uuid]) -> Vec<Uuid> {
        parents
            .iter()
            .filter_map(|p| self.runs.get(p))
            .flat_map(|r| r.children.iter().copied())
            .collect()
    }

    /// The task run tracking subflow run `flow_run` in its parent.
    pub fn parent_of(&self, flow_run: Uuid) -> Option<Uuid> {
        self.parent_of.get(&flow_run).copied()
    }

    /// Every task run by (expected start, id) ascending.
    pub fn by_expected(&self) -> impl DoubleEndedIterator<Item = &Arc<TaskRun>> {
        self.all.iter().filter_map(|k| self.runs.get(&k.1))
    }

    /// The runs in one of the state types `types`, by (expected start,
    /// id) ascending, merged.
    pub fn in_states(&self, types: &[StateType]) -> Vec<&Arc<TaskRun>> {
        let mut keys: Vec<&Key> = types
            .iter()
            .flat_map(|t| self.by_state[t.index()].iter())
            .collect();
        keys.sort_unstable();
        keys.dedup();
        keys.into_iter()
            .filter_map(|k| self.runs.get(&k.1))
            .collect()
    }

    /// Applies one decoded record (its current version).
    pub fn apply(&mut self, record: TaskRecord) {
        match record {
            TaskRecord::Run(r) => {
                self.delete_run(r.id);
                let key = (r.expected_start, r.id);
                self.all.insert(key);
                if let Some(f) = r.flow_run_id {
                    self.by_flow_run.entry(f).or_default().insert(key);
                }
                self.by_state[state_slot(r.state_type)].insert(key);
                for c in &r.children {
                    self.parent_of.insert(*c, r.id);
                }
                self.runs.insert(r.id, Arc::new(r));
            }
            TaskRecord::State(s) => {
                self.states.insert(s.id, Arc::new(s));
            }
        }
    }

    fn delete_run(&mut self, id: Uuid) {
        let Some(old) = self.runs.remove(&id) else {
            return;
        };
        let key = (old.expected_start, old.id);
        self.all.remove(&key);
        if let Some(f) = old.flow_run_id
            && let Some(set) = self.by_flow_run.get_mut(&f)
        {
            set.remove(&key);
            if set.is_empty() {
                self.by_flow_run.remove(&f);
            }
        }
        self.by_state[state_slot(old.state_type)].remove(&key);
        for c in &old.children {
            self.parent_of.remove(c);
        }
    }

    /// Removes the record `collection/id` (a delete op).
    pub fn delete(&mut self, collection: &str, id: Uuid) {
        match collection {
            TASK_RUN_NSID => self.delete_run(id),
            TASK_STATE_NSID => {
                self.states.remove(&id);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    proptest! {
        #[test]
        fn any_bytes_decode_to_a_record_or_a_typed_error(
            bytes in proptest::collection::vec(any::<u8>(), 0..256),
            text in "\\PC{0,64}",
        ) {
            let rkey = "0f3a9e2c-1b4d-4e5f-8a6b-7c8d9e0f1a2b";
            let _ = decode(TASK_RUN_NSID, rkey, &bytes);
            let _ = decode(TASK_STATE_NSID, rkey, &bytes);
            // A well-formed map whose body is any text.
            let mut out = Vec::new();
            let mut e = Encoder::new(&mut out);
            e.map(3);
            e.text("body");
            e.text(&text);
            e.text("$type");
            e.text(TASK_STATE_NSID);
            e.text("taskRun");
            e.text(&text);
            let _ = decode(TASK_STATE_NSID, rkey, &out);
        }
    }

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(o) => o,
            _ => unreachable!(),
        }
    }

    #[test]
    fn records_round_trip_and_bad_ones_are_typed_errors() {
        let id = Uuid(0x0f3a_9e2c_1b4d_4e5f_8a6b_7c8d_9e0f_1a2b);
        let run = TaskRun::from_body(
            id,
            obj(
                json!({"name": "t-0", "flow_run_id": "b8932a69-6bc4-460d-9f8d-38c4a202fec1",
                "state_type": "RUNNING", "expected_start_time": "2026-12-07T10:00:00.000000Z",
                "empirical_policy": {"retry_jitter_factor": 0.5}}),
            ),
        );
        assert_eq!(run.state_type, Some(StateType::Running));
        assert!(run.flow_run_id.is_some());
        let rkey = id.to_string();
        let back = decode(TASK_RUN_NSID, &rkey, &run.encode()).unwrap();
        assert_eq!(back, Some(TaskRecord::Run(run)));
        let st = TaskRunState {
            id,
            task_run_id: Uuid(7),
            body: obj(json!({"type": "COMPLETED", "timestamp": "2026-12-07T10:00:01Z"})),
        };
        let back = decode(TASK_STATE_NSID, &rkey, &st.encode()).unwrap();
        assert_eq!(back, Some(TaskRecord::State(st)));
        assert!(decode(TASK_RUN_NSID, &rkey, b"\xa0").is_err());
        assert!(decode(TASK_RUN_NSID, &rkey, b"\xff\x00").is_err());
        assert_eq!(decode("other", &rkey, b"").unwrap(), None);
    }
}
