//! [`Rows`]: the index's runs in one slab. Each run has a slot (its
//! position in the slab) for as long as it lives: a new version takes
//! its predecessor's slot, a deleted run's slot is reused by the next new
//! run. The ordered sets carry a run's slot beside its key, so a list
//! page goes from its keys straight to the rows instead of hashing every
//! id of the page into the id map; the map is only for reads by id
//! (point lookups, writes).
//!
//! A slot holds the run twice, in two forms: the decoded record (an
//! `Arc<FlowRun>`, for reads by id and for planning writes) and its
//! dense row ([`RunRow`], every fixed-size field inline in one `Vec`, its
//! text in one arena). List pages, filters and scans read only the dense
//! rows: a page copies its rows out of the slab (no per-row allocation or
//! reference count), and a new version is written over its old row in
//! place, so how close a page's rows lie depends on their slots, not on
//! the write history (`appview.<pattern>/index/*`, and the cache-miss
//! probe `examples/page_probe.rs`). The arena is compacted, in slot
//! order, once more than half of it is text of replaced or deleted runs.

use std::sync::Arc;

use crate::model::FlowRun;
use crate::run_page::{RunRow, RunView, push_text};
use crate::uuid::{Uuid, UuidMap};

/// The arena is not compacted below this many bytes of dead text.
const COMPACT_MIN: usize = 64 * 1024;

/// A run's position in [`Rows`].
pub(crate) type Slot = usize;

/// The runs: a slab of rows and the map from id to slot.
#[derive(Debug, Clone, Default)]
pub(crate) struct Rows {
    slots: Vec<Option<Arc<FlowRun>>>,
    /// The dense rows, by slot (an empty slot's row is stale and
    /// unreachable: no set holds its slot).
    dense: Vec<RunRow>,
    /// The rows' text.
    text: Vec<u8>,
    /// Bytes of `text` no live row points at.
    dead: usize,
    /// Slots emptied by deletes, taken again first.
    free: Vec<Slot>,
    by_id: UuidMap<Slot>,
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

    /// The dense row in `slot` (a slot taken from a set always holds its
    /// run; `None` only for a slot past the slab).
    pub(crate) fn view(&self, slot: Slot) -> Option<RunView<'_>> {
        self.dense.get(slot).map(|r| RunView::new(r, &self.text))
    }

    /// Puts `run` in its id's slot (a new slot for a new id); returns the
    /// slot and the version it replaced.
    pub(crate) fn put(&mut self, run: Arc<FlowRun>) -> (Slot, Option<Arc<FlowRun>>) {
        if let Some(&slot) = self.by_id.get(&run.id)
            && let Some(cell) = self.slots.get_mut(slot)
        {
            let old = cell.replace(run.clone());
            self.write_row(slot, &run);
            return (slot, old);
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
        self.write_row(slot, &run);
        self.by_id.insert(run.id, slot);
        (slot, None)
    }

    /// Writes `run`'s dense row into `slot`: its text over the old text
    /// when it fits there, else at the arena's end.
    fn write_row(&mut self, slot: Slot, run: &FlowRun) {
        let end = self.text.len();
        push_text(&mut self.text, run);
        let len = self.text.len() - end;
        let mut at = end;
        if let Some(old) = self.dense.get(slot).filter(|o| o.text_len > 0) {
            if len <= old.text_len {
                self.text.copy_within(end.., old.text_at);
                self.text.truncate(end);
                at = old.text_at;
                self.dead += old.text_len - len;
            } else {
                self.dead += old.text_len;
            }
        }
        let row = RunRow::new(run, at, len);
        match self.dense.get_mut(slot) {
            Some(r) => *r = row,
            None => self.dense.push(row),
        }
        self.maybe_compact();
    }

    /// Rewrites the arena in slot order once most of it is dead.
    fn maybe_compact(&mut self) {
        if self.dead < COMPACT_MIN || self.dead * 2 < self.text.len() {
            return;
        }
        let mut text = Vec::with_capacity(self.text.len() - self.dead);
        for (row, cell) in self.dense.iter_mut().zip(&self.slots) {
            if cell.is_none() {
                continue;
            }
            let at = text.len();
            if let Some(bytes) = self.text.get(row.text_at..row.text_at + row.text_len) {
                text.extend_from_slice(bytes);
            }
            row.text_at = at;
        }
        self.text = text;
        self.dead = 0;
    }

    /// Takes the run `id` out; returns its slot and the run.
    pub(crate) fn remove(&mut self, id: &Uuid) -> Option<(Slot, Arc<FlowRun>)> {
        let slot = self.by_id.remove(id)?;
        let run = self.slots.get_mut(slot)?.take()?;
        if let Some(row) = self.dense.get_mut(slot) {
            self.dead += row.text_len;
            row.text_len = 0;
        }
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
        assert_eq!(rows.view(0).map(|r| r.name()), Some("a2"));
        assert_eq!(rows.remove(&Uuid(1)).map(|(s, _)| s), Some(0));
        assert!(rows.get(&Uuid(1)).is_none());
        assert_eq!(rows.put(run(3, "c")).0, 0);
        assert_eq!(rows.len(), 2);
        assert!(rows.remove(&Uuid(9)).is_none());
    }

    /// Every live slot's dense row reads back as its run, through
    /// versions that shrink and grow their text, deletes, reuse and the
    /// arena's compaction.
    #[test]
    fn dense_rows_follow_every_version() {
        let mut rows = Rows::default();
        let mut live: std::collections::HashMap<u128, String> = Default::default();
        for round in 0..40u128 {
            for i in 0..500u128 {
                let name = "n".repeat(((i * 7 + round * 13) % 90) as usize);
                if (i + round) % 11 == 0 {
                    rows.remove(&Uuid(i));
                    live.remove(&i);
                } else {
                    rows.put(run(i, &name));
                    live.insert(i, name);
                }
            }
            assert!(rows.dead <= COMPACT_MIN.max(rows.text.len() / 2));
            for (&i, name) in &live {
                let (slot, r) = rows.get(&Uuid(i)).unwrap();
                let view = rows.view(slot).unwrap();
                assert_eq!(view.name(), name);
                assert_eq!(view.to_run(), **r);
            }
        }
        assert!(rows.text.len() < 4 * COMPACT_MIN, "{}", rows.text.len());
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
