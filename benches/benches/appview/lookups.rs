//! A tier's read parameters (the seeded run ids point lookups cycle
//! through, the window's end) and the cross-backend page check, shared by
//! `--bench appview` and `--bench live_backends` (which includes this file
//! by path), so both targets sample and check the same queries.

use appview::{Index, Page, Pattern, Query, Uuid};
use benches::inputs::Sampler;

/// Run ids a point lookup cycles through.
pub const LOOKUPS: usize = 1024;

/// The queries of one tier.
pub struct Lookups {
    /// [`LOOKUPS`] run ids, drawn (seeded) from the tier's runs.
    ids: Vec<Uuid>,
    /// `completed_1h`'s end: the workload's now.
    now: i64,
}

impl Lookups {
    /// The sample of `index`'s runs, and `now`.
    pub fn new(index: &Index, now: i64) -> Lookups {
        let mut all: Vec<Uuid> = index.runs().map(|r| r.id).collect();
        all.sort();
        let mut s = Sampler(0x6170_7076);
        let ids = (0..LOOKUPS).map(|_| all[s.next(all.len())]).collect();
        Lookups { ids, now }
    }

    /// The query of `pattern` for iteration `i`.
    pub fn query(&self, pattern: Pattern, i: usize) -> Query {
        Query::new(pattern, self.ids[i % self.ids.len()], self.now)
    }

    /// Outside the timing: `other`'s page equals `reference`'s for every
    /// query the benchmarks send (`point_lookup` of every sampled id, each
    /// other pattern once: their query does not depend on the iteration),
    /// and no page is empty. `what` names the tier and backend.
    pub fn check(
        &self,
        what: &str,
        mut reference: impl FnMut(&Query) -> Page,
        mut other: impl FnMut(&Query) -> Page,
    ) {
        let points = (0..self.ids.len()).map(|i| self.query(Pattern::PointLookup, i));
        let rest = Pattern::ALL
            .into_iter()
            .filter(|p| *p != Pattern::PointLookup)
            .map(|p| self.query(p, 0));
        for q in points.chain(rest) {
            let want = reference(&q);
            assert!(want.rows() > 0, "{what}: {q:?} is empty");
            assert_eq!(other(&q), want, "{what}: {q:?} differs");
        }
    }
}
