//! [`RunFilter`] and [`RunSort`]: the general flow-run read behind
//! Prefect's `POST /flow_runs/filter` and `/flow_runs/count` (the REST
//! server's; the seven patterns are special cases of it), answered from
//! the index's sets.
//!
//! How a page is read: the population is the union of the per-state sets
//! the filter names (or every run); the ordered set of the sort's field is
//! walked in the sort's direction (several state populations merged), a
//! bound on that same field is a rank range rather than a scan, and every
//! other condition is checked per run. With one population and no other
//! condition an offset is a rank, so a page costs O(log n + limit);
//! otherwise skipping `offset` matching runs costs what it scans. The
//! name sorts and `NEXT_SCHEDULED_START_TIME_ASC` have no ordered set:
//! they sort the matching runs (O(m log m)), which no read pattern uses.
//!
//! Null ordering (Prefect leaves it to the database, so its SQLite and
//! PostgreSQL servers differ): runs without an end come after every ended
//! run in `END_TIME_DESC`, and runs without a next scheduled start come
//! last in `NEXT_SCHEDULED_START_TIME_ASC`; equal keys are ordered by id
//! (ascending sorts ascending, descending sorts descending).

use std::sync::Arc;

use crate::error::{AppviewError, Result};
use crate::index::{Index, Sets, TimeKey};
use crate::model::{Flow, FlowRun, FlowRunState, StateType};
use crate::ordset::OrdSet;
use crate::query::RunWithState;
use crate::rows::Slot;
use crate::run_page::{RunPage, RunView};
use crate::uuid::Uuid;

/// An inclusive time range (µs); an unset side is open. Prefect's
/// `after_`/`before_` are inclusive.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bounds {
    /// At or after.
    pub after: Option<i64>,
    /// At or before.
    pub before: Option<i64>,
}

impl Bounds {
    /// Whether either side is set.
    pub fn is_set(&self) -> bool {
        self.after.is_some() || self.before.is_some()
    }

    /// Whether `value` passes (a missing value passes only when unset, as
    /// SQL's comparison with NULL).
    pub fn holds(&self, value: Option<i64>) -> bool {
        if !self.is_set() {
            return true;
        }
        value.is_some_and(|v| {
            self.after.is_none_or(|a| v >= a) && self.before.is_none_or(|b| v <= b)
        })
    }

    /// The keys of `set` inside the range, as ranks `lo..hi`.
    fn ranks(&self, set: &OrdSet<TimeKey>) -> (usize, usize) {
        let lo = self.after.map_or(0, |a| set.rank(&(a, Uuid(0), 0)));
        let hi = match self.before {
            Some(b) => match b.checked_add(1) {
                Some(past) => set.rank(&(past, Uuid(0), 0)),
                None => set.len(),
            },
            None => set.len(),
        };
        (lo, hi.max(lo))
    }
}

/// Which runs a read takes (every condition must hold).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunFilter {
    /// State type is one of these (`None`: any; empty: none).
    pub states: Option<Vec<StateType>>,
    /// Flow is one of these.
    pub flows: Option<Vec<Uuid>>,
    /// `start_time` (a run that never ran has none).
    pub start: Bounds,
    /// `expected_start_time`.
    pub expected: Bounds,
    /// `end_time` (a run that has not ended has none).
    pub end: Bounds,
}

impl RunFilter {
    /// Whether `run` passes.
    pub fn holds(&self, run: &FlowRun) -> bool {
        self.holds_fields(
            run.state_type,
            run.flow_id,
            run.start,
            run.expected_start,
            run.end,
        )
    }

    /// Whether the index's row `run` passes.
    fn holds_row(&self, run: &RunView<'_>) -> bool {
        self.holds_fields(
            run.state_type(),
            run.flow_id(),
            run.start(),
            run.expected_start(),
            run.end(),
        )
    }

    fn holds_fields(
        &self,
        state: StateType,
        flow: Uuid,
        start: Option<i64>,
        expected: i64,
        end: Option<i64>,
    ) -> bool {
        self.states.as_ref().is_none_or(|s| s.contains(&state))
            && self.flows.as_ref().is_none_or(|f| f.contains(&flow))
            && self.start.holds(start)
            && self.expected.holds(Some(expected))
            && self.end.holds(end)
    }
}

/// Prefect's flow-run sorts (`FlowRunSort`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RunSort {
    /// Id descending (Prefect's default).
    #[default]
    IdDesc,
    /// `coalesce(start_time, expected_start_time)` ascending.
    StartTimeAsc,
    /// `coalesce(start_time, expected_start_time)` descending.
    StartTimeDesc,
    /// Expected start ascending.
    ExpectedStartTimeAsc,
    /// Expected start descending.
    ExpectedStartTimeDesc,
    /// Name ascending.
    NameAsc,
    /// Name descending.
    NameDesc,
    /// Next scheduled start ascending.
    NextScheduledStartTimeAsc,
    /// End descending.
    EndTimeDesc,
}

impl RunSort {
    /// Every sort, in Prefect's order.
    pub const ALL: [RunSort; 9] = [
        RunSort::IdDesc,
        RunSort::StartTimeAsc,
        RunSort::StartTimeDesc,
        RunSort::ExpectedStartTimeAsc,
        RunSort::ExpectedStartTimeDesc,
        RunSort::NameAsc,
        RunSort::NameDesc,
        RunSort::NextScheduledStartTimeAsc,
        RunSort::EndTimeDesc,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            RunSort::IdDesc => "ID_DESC",
            RunSort::StartTimeAsc => "START_TIME_ASC",
            RunSort::StartTimeDesc => "START_TIME_DESC",
            RunSort::ExpectedStartTimeAsc => "EXPECTED_START_TIME_ASC",
            RunSort::ExpectedStartTimeDesc => "EXPECTED_START_TIME_DESC",
            RunSort::NameAsc => "NAME_ASC",
            RunSort::NameDesc => "NAME_DESC",
            RunSort::NextScheduledStartTimeAsc => "NEXT_SCHEDULED_START_TIME_ASC",
            RunSort::EndTimeDesc => "END_TIME_DESC",
        }
    }

    /// Parses a wire name.
    pub fn parse(s: &str) -> Result<RunSort> {
        RunSort::ALL
            .into_iter()
            .find(|v| v.as_str() == s)
            .ok_or_else(|| AppviewError::UnknownSort(s.chars().take(64).collect()))
    }
}

/// Prefect's flow sorts (`FlowSort`; `NAME_ASC` its default).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FlowSort {
    /// Created, newest first.
    CreatedDesc,
    /// Updated, newest first.
    UpdatedDesc,
    /// Name ascending (bytewise).
    #[default]
    NameAsc,
    /// Name descending.
    NameDesc,
}

impl FlowSort {
    /// Every sort, in Prefect's order.
    pub const ALL: [FlowSort; 4] = [
        FlowSort::CreatedDesc,
        FlowSort::UpdatedDesc,
        FlowSort::NameAsc,
        FlowSort::NameDesc,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            FlowSort::CreatedDesc => "CREATED_DESC",
            FlowSort::UpdatedDesc => "UPDATED_DESC",
            FlowSort::NameAsc => "NAME_ASC",
            FlowSort::NameDesc => "NAME_DESC",
        }
    }
}

/// The ordered set a sort walks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Ids,
    Started,
    Expected,
    Ended,
}

type Keys<'a> = Box<dyn Iterator<Item = TimeKey> + 'a>;

/// Walks `sets` merged: the largest key first when `desc`; yields the
/// runs' slots.
fn merge<'a>(
    mut its: Vec<std::iter::Peekable<Keys<'a>>>,
    desc: bool,
) -> impl Iterator<Item = Slot> + 'a {
    std::iter::from_fn(move || {
        let mut best: Option<(usize, TimeKey)> = None;
        for (i, it) in its.iter_mut().enumerate() {
            if let Some(&k) = it.peek() {
                let better = match best {
                    None => true,
                    Some((_, b)) => (k > b) == desc && k != b,
                };
                if better {
                    best = Some((i, k));
                }
            }
        }
        let (i, _) = best?;
        its[i].next().map(|k| k.2)
    })
}

impl Index {
    /// The populations `filter` reads: its state types' sets, or all runs.
    fn populations(&self, filter: &RunFilter) -> Vec<&Sets> {
        match &filter.states {
            None => vec![&self.all],
            Some(types) => {
                let mut seen = [false; 9];
                types
                    .iter()
                    .filter(|t| !std::mem::replace(&mut seen[t.index()], true))
                    .map(|t| &self.by_state[t.index()])
                    .collect()
            }
        }
    }

    /// The keys of one population in `field`'s order and `filter`'s range
    /// on it, as ranks `lo..hi` of its set.
    fn keys<'a>(
        sets: &'a Sets,
        field: Field,
        filter: &RunFilter,
        desc: bool,
        skip: usize,
    ) -> Keys<'a> {
        let (set, bounds) = match field {
            Field::Ids => {
                let ids = &sets.ids;
                return if desc {
                    Box::new(
                        ids.rev_from(ids.len().saturating_sub(skip))
                            .map(|&(id, slot)| (0, id, slot)),
                    )
                } else {
                    Box::new(ids.iter_from(skip).map(|&(id, slot)| (0, id, slot)))
                };
            }
            Field::Started => (&sets.started, Bounds::default()),
            Field::Expected => (&sets.expected, filter.expected),
            Field::Ended => (&sets.ended, filter.end),
        };
        let (lo, hi) = bounds.ranks(set);
        let n = hi - lo;
        if desc {
            Box::new(
                set.rev_from(hi.saturating_sub(skip))
                    .take(n.saturating_sub(skip))
                    .copied(),
            )
        } else {
            Box::new(
                set.iter_from(lo + skip)
                    .take(n.saturating_sub(skip))
                    .copied(),
            )
        }
    }

    /// The page of runs `filter` takes in `sort`'s order, `offset` runs
    /// skipped, at most `limit`.
    pub fn filter_runs(
        &self,
        filter: &RunFilter,
        sort: RunSort,
        offset: usize,
        limit: usize,
    ) -> RunPage {
        let (field, desc) = match sort {
            RunSort::IdDesc => (Field::Ids, true),
            RunSort::StartTimeAsc => (Field::Started, false),
            RunSort::StartTimeDesc => (Field::Started, true),
            RunSort::ExpectedStartTimeAsc => (Field::Expected, false),
            RunSort::ExpectedStartTimeDesc => (Field::Expected, true),
            RunSort::EndTimeDesc => (Field::Ended, true),
            RunSort::NameAsc | RunSort::NameDesc | RunSort::NextScheduledStartTimeAsc => {
                return self.sorted_scan(filter, sort, offset, limit);
            }
        };
        let pops = self.populations(filter);
        // Conditions the walk itself does not ensure.
        let residual = filter.flows.is_some()
            || filter.start.is_set()
            || (filter.expected.is_set() && field != Field::Expected)
            || (filter.end.is_set() && field != Field::Ended);
        // Runs without an end follow the ended ones (END_TIME_DESC with no
        // bound on the end: SQLite's NULL order).
        let unended = field == Field::Ended && !filter.end.is_set();
        let skip = if pops.len() == 1 && !residual && !unended {
            offset
        } else {
            0
        };
        let its = pops
            .iter()
            .map(|s| Index::keys(s, field, filter, desc, skip).peekable())
            .collect();
        let runs = merge(its, desc);
        let runs: Box<dyn Iterator<Item = Slot>> = if unended {
            let rest = pops
                .iter()
                .map(|s| Index::keys(s, Field::Ids, filter, true, 0).peekable())
                .collect();
            let rows = &self.runs;
            Box::new(runs.chain(
                merge(rest, true).filter(move |&s| rows.view(s).is_some_and(|r| r.end().is_none())),
            ))
        } else {
            Box::new(runs)
        };
        let mut page = RunPage::with_capacity(limit.min(256));
        for r in runs
            .filter_map(|s| self.runs.view(s))
            .filter(|r| !residual || filter.holds_row(r))
            .skip(offset - skip)
            .take(limit)
        {
            page.push_view(r);
        }
        page
    }

    /// The sorts without an ordered set: every matching run, sorted.
    fn sorted_scan(
        &self,
        filter: &RunFilter,
        sort: RunSort,
        offset: usize,
        limit: usize,
    ) -> RunPage {
        let mut runs: Vec<RunView<'_>> = self
            .populations(filter)
            .into_iter()
            .flat_map(|s| s.ids.iter())
            .filter_map(|&(_, slot)| self.runs.view(slot))
            .filter(|r| filter.holds_row(r))
            .collect();
        match sort {
            RunSort::NameAsc => runs.sort_by(|a, b| (a.name(), a.id()).cmp(&(b.name(), b.id()))),
            RunSort::NameDesc => runs.sort_by(|a, b| (b.name(), b.id()).cmp(&(a.name(), a.id()))),
            _ => runs.sort_by_key(|r| {
                (
                    r.next_scheduled_start().is_none(),
                    r.next_scheduled_start(),
                    r.id(),
                )
            }),
        }
        let mut page = RunPage::with_capacity(limit.min(256));
        for r in runs.into_iter().skip(offset).take(limit) {
            page.push_view(r);
        }
        page
    }

    /// How many runs `filter` takes: O(1) per state population without
    /// other conditions, a rank range for one bound on the expected start
    /// or the end alone, a scan otherwise.
    pub fn count_runs(&self, filter: &RunFilter) -> usize {
        let pops = self.populations(filter);
        let others = filter.flows.is_some() || filter.start.is_set();
        match (others, filter.expected.is_set(), filter.end.is_set()) {
            (false, false, false) => pops.iter().map(|s| s.ids.len()).sum(),
            (false, true, false) => pops
                .iter()
                .map(|s| {
                    let (lo, hi) = filter.expected.ranks(&s.expected);
                    hi - lo
                })
                .sum(),
            (false, false, true) => pops
                .iter()
                .map(|s| {
                    let (lo, hi) = filter.end.ranks(&s.ended);
                    hi - lo
                })
                .sum(),
            _ => pops
                .iter()
                .flat_map(|s| s.ids.iter())
                .filter_map(|&(_, slot)| self.runs.view(slot))
                .filter(|r| filter.holds_row(r))
                .count(),
        }
    }

    /// The flow named `name`.
    pub fn flow_by_name(&self, name: &str) -> Option<&Arc<Flow>> {
        self.flow_names.get(name)
    }

    /// A flow by id.
    pub fn flow(&self, id: Uuid) -> Option<&Arc<Flow>> {
        self.flows.get(&id)
    }

    /// Flows in `sort`'s order (those of `ids` when given), `offset`
    /// skipped, at most `limit`. The name orders walk the name map; the
    /// time orders sort per read (flows are few: one per flow a workspace
    /// defines), ties by name ascending.
    pub fn flow_page(
        &self,
        ids: Option<&[Uuid]>,
        sort: FlowSort,
        offset: usize,
        limit: usize,
    ) -> Vec<Arc<Flow>> {
        let pick = |f: &&Arc<Flow>| ids.is_none_or(|ids| ids.contains(&f.id));
        let names = self.flow_names.values();
        let page = |it: &mut dyn Iterator<Item = &Arc<Flow>>| {
            it.skip(offset).take(limit).cloned().collect()
        };
        match sort {
            FlowSort::NameAsc => page(&mut names.filter(pick)),
            FlowSort::NameDesc => page(&mut names.rev().filter(pick)),
            FlowSort::CreatedDesc | FlowSort::UpdatedDesc => {
                let mut all: Vec<&Arc<Flow>> = names.filter(pick).collect();
                // Stable: equal times stay in name order.
                all.sort_by_key(|f| {
                    std::cmp::Reverse(if sort == FlowSort::CreatedDesc {
                        f.created
                    } else {
                        f.updated
                    })
                });
                page(&mut all.into_iter())
            }
        }
    }

    /// A state of the history.
    pub fn state(&self, id: Uuid) -> Option<&FlowRunState> {
        self.states.get(&id).map(|s| &**s)
    }

    /// The run `id`'s dense row.
    pub fn run_view(&self, id: Uuid) -> Option<RunView<'_>> {
        let (slot, _) = self.runs.get(&id)?;
        self.runs.view(slot)
    }

    /// A run with its current state.
    pub fn run_with_state(&self, id: Uuid) -> Option<RunWithState> {
        self.run_by_id(&id).map(|run| RunWithState {
            state: self.states.get(&run.state_id).cloned(),
            run: run.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::model::Record;

    fn run(
        i: u128,
        state: StateType,
        expected: i64,
        start: Option<i64>,
        end: Option<i64>,
        flow: u128,
    ) -> FlowRun {
        FlowRun {
            id: Uuid(i),
            flow_id: Uuid(flow),
            name: format!("r{}", i % 7),
            state_id: Uuid(i + 1_000_000),
            state_type: state,
            state_name: state.as_str().into(),
            state_timestamp: 0,
            expected_start: expected,
            next_scheduled_start: if i.is_multiple_of(3) {
                None
            } else {
                Some(expected)
            },
            start,
            end,
            total_run_time: 0,
            run_count: 0,
            created: 0,
            updated: 0,
            tags: vec![],
            parameters: vec![],
        }
    }

    /// What a SQL server would answer: every run checked, then sorted.
    fn model(idx: &Index, f: &RunFilter, sort: RunSort, offset: usize, limit: usize) -> Vec<Uuid> {
        let mut runs: Vec<&FlowRun> = idx
            .runs
            .values()
            .map(|r| &**r)
            .filter(|r| f.holds(r))
            .collect();
        let key = |r: &FlowRun| -> (i64, i64) {
            match sort {
                RunSort::StartTimeAsc | RunSort::StartTimeDesc => (0, r.start_or_expected()),
                RunSort::ExpectedStartTimeAsc | RunSort::ExpectedStartTimeDesc => {
                    (0, r.expected_start)
                }
                RunSort::EndTimeDesc => (i64::from(r.end.is_some()), r.end.unwrap_or(0)),
                _ => (0, 0),
            }
        };
        match sort {
            RunSort::IdDesc => runs.sort_by_key(|r| std::cmp::Reverse(r.id)),
            RunSort::StartTimeAsc | RunSort::ExpectedStartTimeAsc => {
                runs.sort_by_key(|r| (key(r), r.id))
            }
            RunSort::StartTimeDesc | RunSort::ExpectedStartTimeDesc | RunSort::EndTimeDesc => {
                runs.sort_by_key(|r| std::cmp::Reverse((key(r), r.id)))
            }
            RunSort::NameAsc => runs.sort_by(|a, b| (&a.name, a.id).cmp(&(&b.name, b.id))),
            RunSort::NameDesc => runs.sort_by(|a, b| (&b.name, b.id).cmp(&(&a.name, a.id))),
            RunSort::NextScheduledStartTimeAsc => runs.sort_by_key(|r| {
                (
                    r.next_scheduled_start.is_none(),
                    r.next_scheduled_start,
                    r.id,
                )
            }),
        }
        runs.into_iter()
            .skip(offset)
            .take(limit)
            .map(|r| r.id)
            .collect()
    }

    fn bounds() -> impl Strategy<Value = Bounds> {
        (
            proptest::option::of(0i64..60),
            proptest::option::of(0i64..60),
        )
            .prop_map(|(after, before)| Bounds { after, before })
    }

    proptest! {
        #[test]
        fn pages_and_counts_equal_a_full_scan(
            rows in proptest::collection::vec((0usize..9, 0i64..50, proptest::option::of(0i64..20), proptest::option::of(0i64..30), 0u128..3), 0..60),
            states in proptest::option::of(proptest::collection::vec(0usize..9, 0..4)),
            flows in proptest::option::of(proptest::collection::vec(0u128..3, 0..3)),
            start in bounds(), expected in bounds(), end in bounds(),
            sort in 0usize..9, offset in 0usize..20, limit in 0usize..30,
        ) {
            let mut idx = Index::new();
            for (i, (st, exp, start, dur, flow)) in rows.into_iter().enumerate() {
                let st = StateType::ALL[st];
                let s = start.map(|s| exp + s);
                let e = if st.is_terminal() { Some(s.unwrap_or(exp) + dur.unwrap_or(0)) } else { None };
                idx.apply_record(Record::Run(run(i as u128 * 7919 % 1000 + 1, st, exp, s, e, flow)));
            }
            let f = RunFilter {
                states: states.map(|v| v.into_iter().map(|i| StateType::ALL[i]).collect()),
                flows: flows.map(|v| v.into_iter().map(Uuid).collect()),
                start, expected, end,
            };
            let sort = RunSort::ALL[sort];
            let got: Vec<Uuid> = idx.filter_runs(&f, sort, offset, limit).iter().map(|r| r.id()).collect();
            prop_assert_eq!(got, model(&idx, &f, sort, offset, limit));
            prop_assert_eq!(idx.count_runs(&f), model(&idx, &f, sort, 0, usize::MAX).len());
        }
    }
}
