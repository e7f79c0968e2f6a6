//! What `--bench appview` and `--bench live_backends` share of the read
//! patterns, so both targets' rows of one pattern land in the same group,
//! sample the same queries and are checked the same way:
//!
//! - [`group`]: the Criterion group of each pattern;
//! - [`Lookups`]: a tier's read parameters (the seeded run ids point
//!   lookups cycle through, the window's end) and the cross-backend page
//!   check, outside the timing;
//! - [`Tier`]: a seeded workload bulk loaded into an index, with its
//!   mutations and lookups (the reference the live backends are loaded
//!   from and checked against).

use appview::{Index, Mutation, Page, Pattern, Query, Uuid, bulk};

use crate::inputs::Sampler;
use crate::target::{BenchTarget, Group};

/// The group of `pattern`: `appview.<name>`, the name from
/// `Pattern::name`, its one spelling (the registry test derives the same
/// ids from `Pattern::ALL`).
pub fn group(target: &mut BenchTarget, pattern: Pattern) -> Group<'_> {
    target.group(&format!("appview.{}", pattern.name()))
}

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

/// One tier of seeded runs, bulk loaded into an index.
pub struct Tier {
    /// `300` or `100k`.
    pub name: &'static str,
    /// The reference every backend's pages are checked against.
    pub index: Index,
    /// The planned mutations, in order (what a backend is loaded from).
    pub mutations: Vec<Mutation>,
    /// The queries the rows send.
    pub lookups: Lookups,
}

impl Tier {
    /// The workload of `runs` seeded runs, bulk loaded.
    ///
    /// # Panics
    /// When the generated workload does not plan: a generator bug.
    pub fn new(name: &'static str, runs: usize) -> Tier {
        let workload = datagen::appview::workload(runs);
        let (index, mutations) = bulk::load(&workload).expect("plan the workload");
        let lookups = Lookups::new(&index, workload.now_us);
        Tier {
            name,
            index,
            mutations,
            lookups,
        }
    }

    /// The query of `pattern` for iteration `i`.
    pub fn query(&self, pattern: Pattern, i: usize) -> Query {
        self.lookups.query(pattern, i)
    }

    /// Outside the timing: `backend`'s page of every query the rows send
    /// equals the index's.
    pub fn check(&self, backend: &str, read: impl FnMut(&Query) -> Page) {
        self.lookups.check(
            &format!("{backend} tier {}", self.name),
            |q| self.index.read(q),
            read,
        );
    }
}

/// An appview baseline on a live server (`--bench live_backends`): set up
/// with every tier loaded, read one query at a time from a bench thread
/// (on the live target's runtime), dropped at teardown. A new backend is
/// one file implementing this; the live target loops over them.
pub trait LiveAppview {
    /// Connects, creates this run's databases or key prefixes and loads
    /// `tiers` into them, recording server facts in `context`.
    ///
    /// # Errors
    /// Why the backend cannot be used (unreachable, refused): its rows are
    /// then skipped with that reason.
    fn setup(
        rt: &tokio::runtime::Runtime,
        tiers: &[Tier],
        context: &mut serde_json::Value,
    ) -> Result<Self, String>
    where
        Self: Sized;

    /// The implementation name of its rows (`appview.<pattern>/<name>/<tier>`).
    fn name(&self) -> &'static str;

    /// The page of `q` on the `tier`-th tier given to `setup`.
    fn read(&self, rt: &tokio::runtime::Runtime, tier: usize, q: &Query) -> Page;

    /// Benchmarks `appview.seed_write/<name>/<tier>` in `g` when the
    /// backend has a write row (the default has none); returns whether it did.
    fn seed_write(&self, _g: &mut Group<'_>, _rt: &tokio::runtime::Runtime, _tier: &Tier) -> bool {
        false
    }

    /// Drops what `setup` created.
    fn teardown(self: Box<Self>, rt: &tokio::runtime::Runtime);
}
