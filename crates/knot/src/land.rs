//! The pack list a ref write names, built from what was read last: at the
//! first attempt from the listing the push started from, and after a
//! failed swap (or each round of an atomic push) from the records read
//! again. A listing cached before a `knot compact` names packs that
//! compaction folded (and deletes after its grace); a write built from it
//! would undo the compaction for its ref, so a retry never reuses it.
//!
//! A new ref's objects are the new pack's plus everything its
//! prerequisites (the remote tips the pack was computed against) reach.
//! For each prerequisite the packs come from a record that reaches it: one
//! whose target is it, else one whose list has an entry with it as tip
//! (a compaction writes `{pack, target}`; a later push keeps that entry
//! after its own). Only when no record read reaches it (every ref that
//! held it moved elsewhere) do the packs of the first read stand.

use std::collections::{BTreeMap, HashSet};

use crate::records::PackEntry;
use crate::state::CachedRef;

/// The parts of a ref write that do not depend on what the remote holds
/// now: the new pack and the prerequisites with their first-read packs.
#[derive(Debug, Clone, Default)]
pub(crate) struct PackSet {
    /// The new pack's sha-256 (none when the push needs no objects).
    pub(crate) pack: Option<String>,
    /// Each prerequisite target with the packs the first read named for it.
    pub(crate) prereqs: Vec<(String, Vec<PackEntry>)>,
}

impl PackSet {
    /// The pack list for a ref moving to `new`, its prerequisites' packs
    /// taken from `records` (the freshest first) where one reaches them.
    pub(crate) fn entries<'a>(
        &self,
        new: &str,
        records: impl Iterator<Item = &'a CachedRef> + Clone,
    ) -> Vec<PackEntry> {
        let mut v = Vec::new();
        let mut seen = HashSet::new();
        if let Some(p) = &self.pack {
            seen.insert(p.clone());
            v.push(PackEntry {
                pack: p.clone(),
                tip: new.to_owned(),
            });
        }
        for (target, first) in &self.prereqs {
            let reaching = records
                .clone()
                .find(|r| &r.record.target == target)
                .or_else(|| {
                    records
                        .clone()
                        .find(|r| r.record.packs.iter().any(|e| &e.tip == target))
                });
            let packs = reaching.map_or(first.as_slice(), |r| r.record.packs.as_slice());
            v.extend(
                packs
                    .iter()
                    .filter(|e| seen.insert(e.pack.clone()))
                    .cloned(),
            );
        }
        v
    }

    /// [`PackSet::entries`] from the first read alone.
    pub(crate) fn first(&self, new: &str) -> Vec<PackEntry> {
        self.entries(new, std::iter::empty())
    }

    /// [`PackSet::entries`] from `current` (this ref, read again) and a
    /// listing of every ref.
    pub(crate) fn rebuilt(
        &self,
        new: &str,
        current: Option<&CachedRef>,
        listed: Option<&BTreeMap<String, CachedRef>>,
    ) -> Vec<PackEntry> {
        self.entries(
            new,
            current
                .into_iter()
                .chain(listed.into_iter().flat_map(|m| m.values())),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::RefRecord;

    fn e(pack: &str, tip: &str) -> PackEntry {
        PackEntry {
            pack: pack.into(),
            tip: tip.into(),
        }
    }

    fn r(target: &str, packs: Vec<PackEntry>) -> CachedRef {
        CachedRef {
            cid: format!("cid-{target}"),
            record: RefRecord {
                repo: "r".into(),
                name: "refs/heads/main".into(),
                target: target.into(),
                previous: None,
                packs,
            },
        }
    }

    #[test]
    fn a_compaction_read_again_replaces_the_cached_packs() {
        let set = PackSet {
            pack: Some("new".into()),
            prereqs: vec![("t1".into(), vec![e("p2", "t1"), e("p1", "t0")])],
        };
        assert_eq!(
            set.first("t2"),
            vec![e("new", "t2"), e("p2", "t1"), e("p1", "t0")]
        );
        let compacted = r("t1", vec![e("c", "t1")]);
        assert_eq!(
            set.rebuilt("t2", Some(&compacted), None),
            vec![e("new", "t2"), e("c", "t1")]
        );
        // Another writer moved the ref on since: its list still reaches t1.
        let moved = r("t9", vec![e("p9", "t9"), e("c", "t1")]);
        assert_eq!(
            set.rebuilt("t2", Some(&moved), None),
            vec![e("new", "t2"), e("p9", "t9"), e("c", "t1")]
        );
        // Nothing read reaches t1: the first read's packs stand.
        let elsewhere = r("t8", vec![e("p8", "t8")]);
        assert_eq!(set.rebuilt("t2", Some(&elsewhere), None), set.first("t2"));
    }
}
