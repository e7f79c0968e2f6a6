//! [`BenchTarget`] and [`Group`]: thin wrappers over Criterion that hold
//! every benchmark to the registry and the id grammar.
//!
//! A target is a `harness = false` bench binary:
//!
//! ```ignore
//! fn main() {
//!     let mut target = BenchTarget::new("hotpath", Budget { full_min: 4.0, quick_min: 1.0 });
//!     codec_groups(&mut target);
//!     target.finish(); // runs the calibrate.* kernels, checks nothing registered is stale
//! }
//! ```

use std::collections::BTreeSet;
use std::hint::black_box;

use criterion::measurement::WallTime;
use criterion::{Bencher, BenchmarkGroup, BenchmarkId, Criterion, Throughput};

use crate::calibrate;
use crate::config::{self, Preset};
use crate::paired::Driver;
use crate::registry::{self, GroupSpec, Registry, ThroughputKind};

/// The wall-clock time a target expects to need, build excluded, on the
/// project's 2-core machine; printed when the target starts.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Minutes under the full preset.
    pub full_min: f64,
    /// Minutes under `BENCH_QUICK=1`.
    pub quick_min: f64,
}

/// One bench target's run.
pub struct BenchTarget {
    criterion: Criterion,
    name: &'static str,
    preset: Preset,
    registry: Registry,
    seen: BTreeSet<String>,
    /// Groups not run, each with its printed reason (a live backend that
    /// could not be reached).
    skipped: BTreeSet<String>,
    /// `ATBENCH_PAIRED=1`: benchmarks wait for the paired driver (paired.rs).
    paired: Option<Driver>,
}

/// Criterion options that take a value, so the word after them is not a
/// benchmark filter.
const VALUED_OPTIONS: &[&str] = &[
    "--save-baseline",
    "-s",
    "--baseline",
    "-b",
    "--baseline-lenient",
    "--load-baseline",
    "--sample-size",
    "--warm-up-time",
    "--measurement-time",
    "--nresamples",
    "--noise-threshold",
    "--confidence-level",
    "--significance-level",
    "--profile-time",
    "--plotting-backend",
    "--output-format",
    "--color",
    "-c",
    "--format",
    "--logfile",
    "--skip",
];

/// The benchmark filters on a command line (`args` without the program
/// name): every word that is neither an option nor an option's value.
pub fn filters(args: &[String]) -> Vec<&str> {
    let mut found = Vec::new();
    let mut previous_takes_value = false;
    for arg in args {
        if previous_takes_value {
            previous_takes_value = false;
        } else if arg.starts_with('-') {
            previous_takes_value = VALUED_OPTIONS.contains(&arg.as_str());
        } else {
            found.push(arg.as_str());
        }
    }
    found
}

/// Whether the command line narrows the run to some benchmarks.
fn is_filtered(args: &[String]) -> bool {
    !filters(args).is_empty() || args.iter().any(|a| a == "--skip" || a == "--exact")
}

/// Whether Criterion filter `filter` (a regex searched anywhere in an id,
/// or the whole id under `--exact`) can select an id of `group`, whose
/// implementations are `implementations`; `registry` names every group of
/// every target. Conservative: `false` only when no id of the group can
/// match, so a target may skip building the group's fixtures.
///
/// Each `|` alternative is read on its own: one whose text has a `/`
/// selects the group when its part before the first `/` matches the group
/// name; one without matches the group or `<group>/<implementation>`, and
/// one that matches neither, nor any other group or implementation of the
/// registry, may be a tier (`callers-10`), so every group keeps it (and so
/// does a probe group, whose implementations the registry does not list,
/// unless the alternative names another group).
fn may_select(
    filter: &str,
    exact: bool,
    group: &str,
    implementations: &[String],
    registry: &Registry,
) -> bool {
    if exact {
        return filter == group || filter.starts_with(&format!("{group}/"));
    }
    filter.split('|').any(|alternative| {
        let compiled = |text: &str| regex::Regex::new(text).ok();
        if let Some((head, _)) = alternative.split_once('/') {
            return compiled(head).is_none_or(|re| re.is_match(group));
        }
        let Some(re) = compiled(alternative) else {
            return true;
        };
        let names = |g: &str, impls: &[String]| {
            re.is_match(g) || impls.iter().any(|i| re.is_match(&format!("{g}/{i}")))
        };
        if names(group, implementations) {
            return true;
        }
        // A probe group lists no implementations: only a filter naming
        // another group (a `.` in it) rules it out.
        if implementations.is_empty() {
            return !(alternative.contains('.') && registry.groups.keys().any(|g| re.is_match(g)));
        }
        !registry
            .groups
            .iter()
            .any(|(g, spec)| names(g, &spec.compare))
    })
}

impl BenchTarget {
    /// Starts target `name`: loads the registry, configures Criterion from
    /// the preset and the command line, prints the budget.
    ///
    /// # Panics
    /// When `units.toml` is invalid: a benchmark run without its units of
    /// work is not worth starting.
    pub fn new(name: &'static str, budget: Budget) -> Self {
        let registry = Registry::load().unwrap_or_else(|e| panic!("{e}"));
        let preset = Preset::from_env();
        let minutes = match preset {
            Preset::Full => budget.full_min,
            Preset::Quick => budget.quick_min,
        };
        eprintln!(
            "atbench: target `{name}`, preset {}: expect about {minutes} min on a 2-core machine (build excluded)",
            preset.name()
        );
        BenchTarget {
            criterion: config::config_for(preset),
            name,
            preset,
            registry,
            seen: BTreeSet::new(),
            skipped: BTreeSet::new(),
            paired: Driver::from_env(),
        }
    }

    /// The preset this run uses (for sizing fixtures).
    pub fn preset(&self) -> Preset {
        self.preset
    }

    /// Whether this is Criterion's smoke run (`--test`): each benchmark
    /// runs once, so fixtures may be sized down.
    pub fn is_smoke(&self) -> bool {
        config::is_smoke()
    }

    /// Whether the command line's filters can select a benchmark of
    /// registered group `name`: a target skips building the fixtures of a
    /// group that cannot run (Criterion still applies the filters itself).
    pub fn may_run(&self, name: &str) -> bool {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let found = filters(&args);
        if found.is_empty() {
            return true;
        }
        let exact = args.iter().any(|a| a == "--exact");
        let implementations = self
            .registry
            .groups
            .get(name)
            .map(|spec| spec.compare.as_slice())
            .unwrap_or_default();
        found
            .iter()
            .any(|f| may_select(f, exact, name, implementations, &self.registry))
    }

    /// The groups this run has opened so far, in name order (what a peer
    /// run after ours is narrowed to).
    pub fn seen_groups(&self) -> Vec<String> {
        self.seen.iter().cloned().collect()
    }

    /// Opens group `name`.
    ///
    /// # Panics
    /// When the group is not registered in `units.toml` for this target.
    pub fn group(&mut self, name: &str) -> Group<'_> {
        let spec = match self.registry.groups.get(name) {
            Some(spec) if spec.runs_in(self.name) => spec.clone(),
            Some(spec) => panic!(
                "group {name} is registered in benches/units.toml for target {:?}, not {:?}",
                spec.target, self.name
            ),
            None => panic!(
                "group {name} is not registered in benches/units.toml: add its unit of work there"
            ),
        };
        self.seen.insert(name.to_owned());
        Group {
            inner: self.criterion.benchmark_group(name),
            name: name.to_owned(),
            spec,
            throughput: None,
            paired: self.paired.as_mut(),
        }
    }

    /// Records that registered group `name` does not run this time and why
    /// (printed): `finish` then does not call it stale.
    ///
    /// # Panics
    /// When the group is not registered for this target.
    pub fn skip_group(&mut self, name: &str, reason: &str) {
        match self.registry.groups.get(name) {
            Some(spec) if spec.runs_in(self.name) => {}
            _ => panic!(
                "group {name} is not registered in benches/units.toml for target {}",
                self.name
            ),
        }
        eprintln!("atbench: {name}: skipped: {reason}");
        self.skipped.insert(name.to_owned());
    }

    /// Records that `implementation`'s rows of group `name` do not run
    /// (its backend cannot be reached) while the group's other rows do:
    /// the per-backend counterpart of [`skip_group`](Self::skip_group) for
    /// a group several backends share.
    ///
    /// # Panics
    /// When the group is not registered for this target, or does not
    /// compare `implementation`.
    pub fn skip_rows(&mut self, name: &str, implementation: &str, reason: &str) {
        match self.registry.groups.get(name) {
            Some(spec)
                if spec.runs_in(self.name) && spec.compare.iter().any(|c| c == implementation) => {}
            _ => panic!(
                "group {name} is not registered in benches/units.toml for target {} with implementation {implementation}",
                self.name
            ),
        }
        eprintln!("atbench: {name}/{implementation}: skipped: {reason}");
    }

    /// Runs the calibration group, checks that every group registered for
    /// this target ran (when the run is unfiltered), prints Criterion's
    /// summary.
    ///
    /// # Panics
    /// When a registered group of this target never ran: its entry is stale.
    pub fn finish(mut self) {
        self.calibrate();
        if let Some(driver) = self.paired.as_mut() {
            // Driven: the driver chose the ids; no staleness check, no summary.
            driver.finish();
            return;
        }
        let args: Vec<String> = std::env::args().skip(1).collect();
        if !is_filtered(&args) {
            let stale: Vec<&str> = self
                .registry
                .groups_of(self.name)
                .filter(|g| !self.seen.contains(*g) && !self.skipped.contains(*g))
                .collect();
            assert!(
                stale.is_empty(),
                "benches/units.toml lists groups that target {} did not run: {stale:?}",
                self.name
            );
        }
        self.criterion.final_summary();
    }

    /// Opens the `calibrate.*` groups and runs their kernels
    /// ([`calibrate`]), each result checked outside the timing.
    fn calibrate(&mut self) {
        let (warm_up, measurement) = calibrate::times(self.preset);
        let data = calibrate::input();
        let expected = calibrate::mix(&data);
        assert_eq!(
            calibrate::mix(&data),
            expected,
            "calibration loop is not deterministic"
        );
        let mut group = self.group("calibrate.cpu");
        group.throughput(Throughput::Bytes(calibrate::LEN as u64));
        group.bench("fixed", "1MiB", |b| {
            b.iter(|| {
                let h = calibrate::mix(black_box(&data));
                debug_assert_eq!(h, expected);
                h
            })
        });
        group.finish();

        let next = calibrate::table();
        let end = calibrate::walk(next, 0, calibrate::HOPS);
        // A cycle through every slot: the walk never lands back on 0 early.
        assert_ne!(end, 0, "the walk table is not one cycle");
        let mut group = self.group("calibrate.memory_latency");
        group.timed(warm_up, measurement);
        group.throughput(Throughput::Elements(calibrate::HOPS as u64));
        group.bench("walk", "256MiB", |b| {
            b.iter(|| {
                let at = calibrate::walk(black_box(next), black_box(0), calibrate::HOPS);
                debug_assert_eq!(at, end);
                at
            })
        });
        group.finish();

        let source = calibrate::copy_source(&data);
        let mut destination = vec![0u8; calibrate::COPY_BYTES];
        // Verified here, outside the timing: a filtered run may skip the bench.
        destination.copy_from_slice(&source);
        assert!(destination == source, "the streaming copy lost bytes");
        let mut group = self.group("calibrate.copy");
        group.timed(warm_up, measurement);
        group.throughput(Throughput::Bytes(calibrate::COPY_BYTES as u64));
        group.criterion().sample_size(10);
        group.bench("stream", "64MiB", |b| {
            b.iter(|| {
                destination.copy_from_slice(black_box(&source));
                black_box(destination.as_ptr());
            })
        });
        group.finish();
        drop(source);
        drop(destination);

        let digest = calibrate::sha256(&data);
        // Checked outside the timing against the same bytes fed in pieces.
        assert_eq!(
            calibrate::sha256_in_pieces(&data),
            digest,
            "sha2 disagrees with itself"
        );
        let mut group = self.group("calibrate.sha256");
        group.timed(warm_up, measurement);
        group.throughput(Throughput::Bytes(calibrate::LEN as u64));
        group.bench("sha2", "1MiB", |b| {
            b.iter(|| {
                let got = calibrate::sha256(black_box(&data));
                debug_assert_eq!(got, digest);
                got
            })
        });
        group.finish();
        self.calibrate_waits(warm_up, measurement);
    }

    /// The kernels of the kinds that wait: fsync, loopback, threads.
    fn calibrate_waits(&mut self, warm_up: std::time::Duration, measurement: std::time::Duration) {
        let scratch = crate::sidecar::scratch_dir(&format!("{}-calibrate", self.name));
        let path = scratch.path().join("fsync");
        let file = std::fs::File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("calibrate.fsync: cannot open {}: {e}", path.display()));
        let block = vec![0x5au8; calibrate::FSYNC_BYTES];
        calibrate::write_and_sync(&file, &block).expect("calibrate.fsync: write");
        assert_eq!(
            std::fs::read(&path).expect("calibrate.fsync: read back"),
            block,
            "calibrate.fsync: the block did not land"
        );
        let mut group = self.group("calibrate.fsync");
        group.timed(warm_up, measurement);
        group.throughput(Throughput::Bytes(calibrate::FSYNC_BYTES as u64));
        group.criterion().sample_size(10);
        group.bench("file", "4KiB", |b| {
            b.iter(|| calibrate::write_and_sync(&file, black_box(&block)).expect("fsync"))
        });
        group.finish();
        drop(file);
        drop(scratch);

        let mut echo = calibrate::Echo::start().expect("calibrate.loopback: connect");
        let message = [0xa5u8; calibrate::ECHO_BYTES];
        let mut reply = [0u8; calibrate::ECHO_BYTES];
        echo.round_trip(&message, &mut reply)
            .expect("calibrate.loopback: round trip");
        assert_eq!(reply, message, "calibrate.loopback: the echo differs");
        let mut group = self.group("calibrate.loopback");
        group.timed(warm_up, measurement);
        group.throughput(Throughput::Bytes(calibrate::ECHO_BYTES as u64));
        group.bench("tcp", "64B", |b| {
            b.iter(|| {
                echo.round_trip(black_box(&message), &mut reply)
                    .expect("round trip")
            })
        });
        group.finish();
        drop(echo);

        let handoff = calibrate::Handoff::start();
        assert_eq!(
            handoff.rounds(1, calibrate::HANDOFFS),
            Some(1 + calibrate::HANDOFFS as u64),
            "calibrate.threads: the partner lost a token"
        );
        let mut group = self.group("calibrate.threads");
        group.timed(warm_up, measurement);
        group.throughput(Throughput::Elements(calibrate::HANDOFFS as u64));
        group.criterion().sample_size(10);
        group.bench("handoff", "1k", |b| {
            b.iter(|| handoff.rounds(black_box(1), calibrate::HANDOFFS))
        });
        group.finish();
    }
}

/// A Criterion group that knows its registry entry.
pub struct Group<'a> {
    inner: BenchmarkGroup<'a, WallTime>,
    name: String,
    spec: GroupSpec,
    throughput: Option<Throughput>,
    paired: Option<&'a mut Driver>,
}

impl<'a> Group<'a> {
    /// Declares the work of the next benchmarks.
    ///
    /// # Panics
    /// When its kind is not the one `units.toml` gives for the group.
    pub fn throughput(&mut self, throughput: Throughput) -> &mut Self {
        let kind = match throughput {
            Throughput::Bytes(_) | Throughput::BytesDecimal(_) => ThroughputKind::Bytes,
            Throughput::Elements(_) => ThroughputKind::Elements,
            _ => ThroughputKind::None,
        };
        assert_eq!(
            kind, self.spec.throughput,
            "group {}: throughput kind differs from units.toml",
            self.name
        );
        self.inner.throughput(throughput.clone());
        self.throughput = Some(throughput);
        self
    }

    /// The Criterion group, for per-group tuning (sample size, times).
    pub fn criterion(&mut self) -> &mut BenchmarkGroup<'a, WallTime> {
        &mut self.inner
    }

    /// Sets the group's warm-up and measurement times.
    pub fn timed(
        &mut self,
        warm_up: std::time::Duration,
        measurement: std::time::Duration,
    ) -> &mut Self {
        self.inner
            .warm_up_time(warm_up)
            .measurement_time(measurement);
        self
    }

    /// The full id of `implementation` at `tier` (tier may be empty).
    pub fn id(&self, implementation: &str, tier: &str) -> String {
        if tier.is_empty() {
            format!("{}/{implementation}", self.name)
        } else {
            format!("{}/{implementation}/{tier}", self.name)
        }
    }

    /// Benchmarks `implementation` at `tier` (empty for none).
    ///
    /// # Panics
    /// When a part breaks the id grammar, or the group's work has a size and
    /// no throughput was declared.
    pub fn bench<F>(&mut self, implementation: &str, tier: &str, routine: F) -> &mut Self
    where
        F: FnMut(&mut Bencher<'_, WallTime>),
    {
        let id = self.id(implementation, tier);
        if let Err(e) = registry::check_implementation(implementation) {
            panic!("{id}: {e}");
        }
        if !tier.is_empty()
            && let Err(e) = registry::check_tier(tier)
        {
            panic!("{id}: {e}");
        }
        assert!(
            self.spec.throughput == ThroughputKind::None || self.throughput.is_some(),
            "{id}: units.toml gives a throughput; declare it before benchmarking"
        );
        if let Some(driver) = self.paired.as_deref_mut() {
            driver.offer(&self.name, implementation, tier, &id, routine);
        } else if tier.is_empty() {
            self.inner.bench_function(implementation, routine);
        } else {
            self.inner
                .bench_function(BenchmarkId::new(implementation, tier), routine);
        }
        self
    }

    /// Closes the group.
    pub fn finish(self) {
        self.inner.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::{Registry, is_filtered, may_select};

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn filters_are_told_from_options() {
        assert!(!is_filtered(&args(&["--bench"])));
        assert!(!is_filtered(&args(&["--bench", "--test"])));
        assert!(!is_filtered(&args(&["--save-baseline", "main", "--bench"])));
        assert!(is_filtered(&args(&["--bench", "codec.crc32"])));
        assert!(is_filtered(&args(&["--bench", "--skip", "x"])));
    }

    #[test]
    fn filters_select_the_groups_they_can_match() {
        let registry = Registry::load().expect("units.toml");
        let impls = |g: &str| registry.groups[g].compare.clone();
        let route = impls("xrpc.route");
        let sel = |f: &str, g: &str, i: &[String]| may_select(f, false, g, i, &registry);
        // A group, an implementation, a whole id, a regex over groups.
        assert!(sel("xrpc.route", "xrpc.route", &route));
        assert!(sel("xrpc.route/ours/c50", "xrpc.route", &route));
        assert!(!sel(
            "xrpc.route/ours/c50",
            "xrpc.write",
            &impls("xrpc.write")
        ));
        assert!(sel(
            "xrpc\\.(route|write)",
            "xrpc.write",
            &impls("xrpc.write")
        ));
        assert!(sel("xrpc", "xrpc.firehose", &impls("xrpc.firehose")));
        assert!(sel(".*", "xrpc.firehose", &impls("xrpc.firehose")));
        // Another target's group selects none of this one's.
        assert!(!sel("appview.point_lookup", "xrpc.route", &route));
        assert!(!sel("calibrate", "xrpc.write", &impls("xrpc.write")));
        // A probe group's implementations are not listed: a bare name keeps it.
        assert!(sel("get_record", "xrpc.route", &route));
        // A tier alone may be in any group.
        assert!(sel("callers-10", "xrpc.route", &route));
        // Alternatives are read one by one.
        assert!(sel("appview|xrpc.route", "xrpc.route", &route));
        // Exact ids.
        assert!(may_select(
            "xrpc.route/ours/c50",
            true,
            "xrpc.route",
            &route,
            &registry
        ));
        assert!(!may_select(
            "xrpc.route/ours/c50",
            true,
            "xrpc.write",
            &route,
            &registry
        ));
    }
}
