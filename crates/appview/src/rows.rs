//! [`Rows`]: the index's run rows in one slab. Each run has a slot (its
//! position in one `Vec`) for as long as it lives: a new version takes
//! its predecessor's slot, a deleted run's slot is reused by the next new
//! run. The ordered sets carry a run's slot beside its key, so a list
//! page goes from its keys straight to the rows (one array read each)
//! instead of hashing every id of the page into the id map; the map is
//! only for reads by id (point lookups, writes). Rows are thus found the
//! same way whatever order they were written in
//! (`appview.<pattern>/index/*`, and the cache-miss probe
//! `examples/page_probe.rs`).

use std::collections::HashMap;
use std::sync::Arc;

use crate::model::FlowRun;
use crate::uuid::Uuid;

/// A run's position in [`Rows`].
pub(crate) type Slot = usize;

/// The runs: a slab of rows and the map from id to slot.
#[derive(Debug, Clone, Default)]
pub(crate) struct Rows {
    slots: Vec<Option<Arc<FlowRun>>>,
    /// Slots emptied by deletes, taken again first.
    free: Vec<Slot>,
    by_id: HashMap<Uuid, Slot>,
}

impl Rows {
    /// Runs held.
    pub(crate) fn len(&self) -> usize {
        self.by_id.len()
    }

    /// The run `id` and its slot.
    pub(crate) fn get(&self, id: &Uuid) -> Option<(Slot, &Arc<FlowRun>)> {
        let slot = *self.by_id.get(id)?;
        self.slots.get(slot)?.as_ref().map(|r| (slot, r))
    }

    /// The run in `slot` (`None` for an empty or unknown slot: a slot
    /// taken from a set always holds its run, so no caller sees one).
    pub(crate) fn at(&self, slot: Slot) -> Option<&Arc<FlowRun>> {
        self.slots.get(slot)?.as_ref()
    }

    /// Puts `run` in its id's slot (a new slot for a new id); returns the
    /// slot and the version it replaced.
    pub(crate) fn put(&mut self, run: Arc<FlowRun>) -> (Slot, Option<Arc<FlowRun>>) {
        if let Some(&slot) = self.by_id.get(&run.id)
            && let Some(cell) = self.slots.get_mut(slot)
        {
            return (slot, cell.replace(run));
        }
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot] = Some(run.clone());
                slot
            }
            None => {
                self.slots.push(Some(run.clone()));
                self.slots.len() - 1
            }
        };
        self.by_id.insert(run.id, slot);
        (slot, None)
    }

    /// Takes the run `id` out; returns its slot and the run.
    pub(crate) fn remove(&mut self, id: &Uuid) -> Option<(Slot, Arc<FlowRun>)> {
        let slot = self.by_id.remove(id)?;
        let run = self.slots.get_mut(slot)?.take()?;
        self.free.push(slot);
        Some((slot, run))
    }

    /// Every run, in slot order.
    pub(crate) fn values(&self) -> impl Iterator<Item = &Arc<FlowRun>> + '_ {
        self.slots.iter().flatten()
    }
}

impl PartialEq for Rows {
    /// The same runs by id (slots aside: a rebuilt index numbers them in
    /// its own order).
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len()
            && self
                .values()
                .all(|r| other.get(&r.id).is_some_and(|(_, o)| o == r))
    }
}

impl Eq for Rows {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::StateType;

    fn run(i: u128, name: &str) -> Arc<FlowRun> {
        Arc::new(FlowRun {
            id: Uuid(i),
            flow_id: Uuid(0),
            name: name.into(),
            state_id: Uuid(0),
            state_type: StateType::Scheduled,
            state_name: "Scheduled".into(),
            state_timestamp: 0,
            expected_start: 0,
            next_scheduled_start: None,
            start: None,
            end: None,
            total_run_time: 0,
            run_count: 0,
            created: 0,
            updated: 0,
            tags: vec![],
            parameters: vec![],
        })
    }

    #[test]
    fn a_version_keeps_its_slot_and_a_freed_slot_is_reused() {
        let mut rows = Rows::default();
        assert_eq!(rows.put(run(1, "a")).0, 0);
        assert_eq!(rows.put(run(2, "b")).0, 1);
        let (slot, old) = rows.put(run(1, "a2"));
        assert_eq!((slot, old.map(|r| r.name.clone())), (0, Some("a".into())));
        assert_eq!(rows.at(0).map(|r| r.name.as_str()), Some("a2"));
        assert_eq!(rows.remove(&Uuid(1)).map(|(s, _)| s), Some(0));
        assert!(rows.at(0).is_none() && rows.get(&Uuid(1)).is_none());
        assert_eq!(rows.put(run(3, "c")).0, 0);
        assert_eq!(rows.len(), 2);
        assert!(rows.remove(&Uuid(9)).is_none());
    }

    #[test]
    fn equality_ignores_slots() {
        let mut a = Rows::default();
        let mut b = Rows::default();
        a.put(run(1, "a"));
        a.put(run(2, "b"));
        b.put(run(2, "b"));
        b.put(run(1, "a"));
        assert_eq!(a, b);
        b.put(run(1, "x"));
        assert_ne!(a, b);
    }
}
