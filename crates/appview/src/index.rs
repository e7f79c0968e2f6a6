//! [`Index`]: the in-process read model, fed by the repository's commits.
//!
//! What it holds:
//! - a record map per kind (run id -> decoded run, for point reads; flows;
//!   the state history, for a run's current state);
//! - per state type and globally, four [`OrdSet`]s: by (expected start,
//!   id), by (coalesce(start, expected start), id), by (end, id) (runs
//!   that ended) and by id; the per-state id set is also the membership
//!   set, so a count is its length (O(1));
//! - a set of runs per flow, and flows by name.
//!
//! How it is fed: [`Index::apply_commit`] takes a `#commit` frame as the
//! store sequences it, decodes the records of its ops from the commit's
//! CAR blocks (the CAR parsed without hashing its blocks; each record
//! block an op names hashed against its CID, the commit and MST proof
//! blocks neither hashed nor read) and applies each through
//! [`Index::apply_record`]: a run is taken out of the sets its previous
//! version was in and put into those of the new one (rescored). Bulk
//! loads (the 10^5-run tier) call `apply_record` directly with the same
//! decoded records, and [`crate::rebuild`] does the same from an exported
//! repository. Every page costs O(log n + limit): an offset is a rank.

use std::collections::BTreeMap;
use std::sync::Arc;

use repo::car::CarSlice;
use repo::firehose::{Action, Frame};

use crate::error::{AppviewError, Result};
use crate::model::{
    FLOW_NSID, Flow, FlowRun, FlowRunState, RUN_NSID, Record, STATE_NSID, StateType,
    is_appview_collection,
};
use crate::ordset::OrdSet;
use crate::plan::Lookup;
use crate::query::{
    ACTIVE_LIMIT, COMPLETED_LIMIT, FLOW_LIMIT, PAGE_LIMIT, PAGE_OFFSET, Page, Query, ReadBackend,
    RunWithState, WINDOW_LIMIT, window,
};
use crate::record;
use crate::rows::{Rows, Slot};
use crate::run_page::RunPage;
use crate::uuid::{Uuid, UuidMap, UuidSet};

/// A key of a time-ordered set: (time, id), then the run's slot in
/// [`Rows`] (ids are unique, so the slot never decides the order; it is
/// carried so a page reads its rows without a lookup by id).
pub(crate) type TimeKey = (i64, Uuid, Slot);
/// A key of an id-ordered set: the id, then the run's slot.
pub(crate) type IdKey = (Uuid, Slot);

/// The ordered sets of one population (all runs, or one state type's).
#[derive(Debug, Clone, Default)]
pub(crate) struct Sets {
    pub(crate) expected: OrdSet<TimeKey>,
    pub(crate) started: OrdSet<TimeKey>,
    pub(crate) ended: OrdSet<TimeKey>,
    pub(crate) ids: OrdSet<IdKey>,
}

impl PartialEq for Sets {
    /// The same keys in the same orders (slots aside, as [`Rows`]'s).
    fn eq(&self, other: &Self) -> bool {
        fn same<K: Ord + Copy, P: PartialEq>(a: &OrdSet<K>, b: &OrdSet<K>, f: fn(&K) -> P) -> bool {
            a.len() == b.len() && a.iter().map(f).eq(b.iter().map(f))
        }
        let t = |k: &TimeKey| (k.0, k.1);
        same(&self.expected, &other.expected, t)
            && same(&self.started, &other.started, t)
            && same(&self.ended, &other.ended, t)
            && same(&self.ids, &other.ids, |k| k.0)
    }
}

impl Eq for Sets {}

impl Sets {
    fn add(&mut self, r: &FlowRun, slot: Slot) {
        self.expected.insert((r.expected_start, r.id, slot));
        self.started.insert((r.start_or_expected(), r.id, slot));
        if let Some(end) = r.end {
            self.ended.insert((end, r.id, slot));
        }
        self.ids.insert((r.id, slot));
    }

    fn remove(&mut self, r: &FlowRun, slot: Slot) {
        self.expected.remove(&(r.expected_start, r.id, slot));
        self.started.remove(&(r.start_or_expected(), r.id, slot));
        if let Some(end) = r.end {
            self.ended.remove(&(end, r.id, slot));
        }
        self.ids.remove(&(r.id, slot));
    }
}

/// The read model. Two indexes are equal when they hold the same records
/// and the same ordered sets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Index {
    pub(crate) flows: UuidMap<Arc<Flow>>,
    pub(crate) flow_names: BTreeMap<String, Arc<Flow>>,
    pub(crate) runs: Rows,
    pub(crate) states: UuidMap<Arc<FlowRunState>>,
    pub(crate) by_flow: UuidMap<UuidSet>,
    pub(crate) all: Sets,
    pub(crate) by_state: [Sets; 9],
    /// Task runs (`crate::task_run`).
    pub(crate) tasks: crate::task_run::TaskIndex,
}

impl Index {
    /// An empty index.
    pub fn new() -> Index {
        Index::default()
    }

    /// The task runs.
    pub fn tasks(&self) -> &crate::task_run::TaskIndex {
        &self.tasks
    }

    /// Runs held.
    pub fn run_count(&self) -> usize {
        self.runs.len()
    }

    /// Flows held.
    pub fn flow_count(&self) -> usize {
        self.flows.len()
    }

    /// States held (the whole history).
    pub fn state_count(&self) -> usize {
        self.states.len()
    }

    /// Runs in state `t` (O(1)).
    pub fn count_in(&self, t: StateType) -> usize {
        self.by_state[t.index()].ids.len()
    }

    /// Runs of flow `flow`.
    pub fn runs_of_flow(&self, flow: Uuid) -> usize {
        self.by_flow.get(&flow).map_or(0, UuidSet::len)
    }

    /// Every run, in no order (for loading the baselines).
    pub fn runs(&self) -> impl Iterator<Item = &Arc<FlowRun>> + '_ {
        self.runs.values()
    }

    /// The run `id`.
    pub(crate) fn run_by_id(&self, id: &Uuid) -> Option<&Arc<FlowRun>> {
        self.runs.get(id).map(|(_, r)| r)
    }

    /// Every flow, by name.
    pub fn flows(&self) -> impl Iterator<Item = &Arc<Flow>> + '_ {
        self.flow_names.values()
    }

    /// Every state of the history, in no order.
    pub fn states(&self) -> impl Iterator<Item = &Arc<FlowRunState>> + '_ {
        self.states.values()
    }

    /// The run with the latest expected start, and the latest end (the
    /// CLI's defaults for `point_lookup` and `completed_1h`).
    pub fn defaults(&self) -> (Option<Uuid>, Option<i64>) {
        let set = &self.all.expected;
        let run = set.get(set.len().wrapping_sub(1)).map(|k| k.1);
        let ended = &self.all.ended;
        (run, ended.get(ended.len().wrapping_sub(1)).map(|k| k.0))
    }

    /// Applies one decoded record (its current version).
    pub fn apply_record(&mut self, record: Record) {
        match record {
            Record::Flow(f) => {
                let f = Arc::new(f);
                if let Some(old) = self.flows.insert(f.id, f.clone()) {
                    self.flow_names.remove(&old.name);
                }
                self.flow_names.insert(f.name.clone(), f);
            }
            Record::Run(r) => {
                let r = Arc::new(r);
                let (slot, old) = self.runs.put(r.clone());
                if let Some(old) = old {
                    self.unlink_run(&old, slot);
                }
                self.all.add(&r, slot);
                self.by_state[r.state_type.index()].add(&r, slot);
                self.by_flow.entry(r.flow_id).or_default().insert(r.id);
            }
            Record::State(s) => {
                self.states.insert(s.id, Arc::new(s));
            }
        }
    }

    fn unlink_run(&mut self, old: &FlowRun, slot: Slot) {
        self.all.remove(old, slot);
        self.by_state[old.state_type.index()].remove(old, slot);
        if let Some(set) = self.by_flow.get_mut(&old.flow_id) {
            set.remove(&old.id);
            if set.is_empty() {
                self.by_flow.remove(&old.flow_id);
            }
        }
    }

    /// Removes the record `collection/rkey` (a delete op).
    pub fn delete_record(&mut self, collection: &str, id: Uuid) {
        match collection {
            FLOW_NSID => {
                if let Some(old) = self.flows.remove(&id) {
                    self.flow_names.remove(&old.name);
                }
            }
            RUN_NSID => {
                if let Some((slot, old)) = self.runs.remove(&id) {
                    self.unlink_run(&old, slot);
                }
            }
            STATE_NSID => {
                self.states.remove(&id);
            }
            _ => {}
        }
    }

    /// Applies a `#commit` frame of the appview's repository: every op on
    /// its collections, decoded from the commit's blocks. All the commit's
    /// records are decoded before any is applied, so a bad commit changes
    /// nothing. Other frames and other collections are ignored. Returns
    /// the records applied.
    pub fn apply_commit(&mut self, frame: &[u8]) -> Result<usize> {
        let frame = Frame::decode(frame).map_err(|e| AppviewError::BadCommit(e.to_string()))?;
        let Frame::Commit(commit) = frame else {
            return Ok(0);
        };
        // Only the record blocks the index decodes are hashed (below): the
        // proof nodes and the commit block are the store's own, and the
        // index does not read them.
        let car = CarSlice::parse(commit.blocks, false)
            .map_err(|e| AppviewError::BadCommit(e.to_string()))?;
        let mut changes: Vec<(&str, Uuid, Option<Record>)> = Vec::with_capacity(commit.ops.len());
        let mut tasks = Vec::new();
        for op in &commit.ops {
            let (collection, rkey) = op.path.split_once('/').ok_or_else(|| {
                AppviewError::BadCommit(format!("op path {:?} has no '/'", op.path))
            })?;
            let task = crate::task_run::is_task_collection(collection);
            if !task && !is_appview_collection(collection) {
                continue;
            }
            let id = Uuid::parse(rkey)?;
            match op.action {
                Action::Delete if task => tasks.push((collection, id, None)),
                Action::Delete => changes.push((collection, id, None)),
                Action::Create | Action::Update => {
                    let cid = op.cid.ok_or_else(|| {
                        AppviewError::BadCommit(format!(
                            "{} op on {} without a cid",
                            op.action.as_str(),
                            op.path
                        ))
                    })?;
                    let block = car.get(&cid).ok_or_else(|| {
                        AppviewError::BadCommit(format!(
                            "record block {cid} of {} not in the commit",
                            op.path
                        ))
                    })?;
                    if !cid.matches(block) {
                        return Err(AppviewError::BadCommit(format!(
                            "record block of {} does not hash to {cid}",
                            op.path
                        )));
                    }
                    if task {
                        let r = crate::task_run::decode(collection, rkey, block)?;
                        tasks.push((collection, id, r));
                    } else {
                        changes.push((collection, id, record::decode(collection, rkey, block)?));
                    }
                }
            }
        }
        let n = changes.len() + tasks.len();
        for (collection, id, record) in tasks {
            match record {
                Some(r) => self.tasks.apply(r),
                None => self.tasks.delete(collection, id),
            }
        }
        for (collection, id, record) in changes {
            match record {
                Some(r) => self.apply_record(r),
                None => self.delete_record(collection, id),
            }
        }
        Ok(n)
    }

    /// The rows of `slots`, in order (each set's slot holds its run),
    /// copied out of the dense slab.
    fn page(&self, limit: usize, slots: impl Iterator<Item = Slot>) -> Page {
        let mut page = RunPage::with_capacity(limit);
        for view in slots.filter_map(|s| self.runs.view(s)) {
            page.push_view(view);
        }
        Page::Runs(page)
    }

    /// Answers a read pattern (see [`Query`]).
    pub fn read(&self, query: &Query) -> Page {
        match *query {
            Query::PointLookup(id) => Page::Run(self.run_by_id(&id).map(|run| RunWithState {
                state: self.states.get(&run.state_id).cloned(),
                run: run.clone(),
            })),
            Query::ActiveByState => {
                let running = &self.by_state[StateType::Running.index()].ids;
                let pending = &self.by_state[StateType::Pending.index()].ids;
                let mut a = running.rev_from(running.len()).copied().peekable();
                let mut b = pending.rev_from(pending.len()).copied().peekable();
                let merged = std::iter::from_fn(move || match (a.peek(), b.peek()) {
                    (Some(x), Some(y)) if x >= y => a.next(),
                    (Some(_), Some(_)) | (None, Some(_)) => b.next(),
                    (Some(_), None) => a.next(),
                    (None, None) => None,
                });
                self.page(ACTIVE_LIMIT, merged.take(ACTIVE_LIMIT).map(|k| k.1))
            }
            Query::Completed50 => {
                let set = &self.by_state[StateType::Completed.index()].started;
                self.page(
                    COMPLETED_LIMIT,
                    set.rev_from(set.len()).take(COMPLETED_LIMIT).map(|k| k.2),
                )
            }
            Query::Paginated => {
                let set = &self.all.expected;
                let end = set.len().saturating_sub(PAGE_OFFSET);
                self.page(PAGE_LIMIT, set.rev_from(end).take(PAGE_LIMIT).map(|k| k.2))
            }
            Query::CountCompleted => Page::Count(self.count_in(StateType::Completed) as u64),
            Query::FlowList => {
                Page::Flows(self.flow_names.values().take(FLOW_LIMIT).cloned().collect())
            }
            Query::Completed1h { now } => {
                let set = &self.all.ended;
                let end = match now.checked_add(1) {
                    Some(after) => set.rank(&(after, Uuid(0), 0)),
                    None => set.len(),
                };
                let (from, _) = window(now);
                self.page(
                    WINDOW_LIMIT,
                    set.rev_from(end)
                        .take_while(|k| k.0 >= from)
                        .take(WINDOW_LIMIT)
                        .map(|k| k.2),
                )
            }
        }
    }
}

impl ReadBackend for Index {
    fn query(&self, query: &Query) -> Result<Page> {
        Ok(self.read(query))
    }
}

impl Lookup for Index {
    fn flow(&self, id: Uuid) -> Option<&Flow> {
        self.flows.get(&id).map(|f| &**f)
    }

    fn flow_name_taken(&self, name: &str) -> bool {
        self.flow_names.contains_key(name)
    }

    fn run(&self, id: Uuid) -> Option<&FlowRun> {
        self.run_by_id(&id).map(|r| &**r)
    }

    fn id_taken(&self, id: Uuid) -> bool {
        self.runs.get(&id).is_some()
            || self.flows.contains_key(&id)
            || self.states.contains_key(&id)
    }
}
