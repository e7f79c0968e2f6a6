//! Criterion presets. The full preset is what `cargo bench` uses; the quick
//! one (`BENCH_QUICK=1`) trades precision for a run of a few minutes. Both
//! cut Criterion's bootstrap resamples from 100 000, which on two cores costs
//! more than many of the measurements themselves.

use std::sync::OnceLock;
use std::time::Duration;

use criterion::Criterion;

/// What kind of invocation this is, read once from the command line: the
/// one place that knows how Criterion spells a smoke run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Invocation {
    /// `--test`: every benchmark runs once, nothing is recorded (CI's
    /// smoke run of every target).
    smoke: bool,
    /// `--list`: benchmarks are named, none runs.
    list: bool,
}

fn invocation() -> Invocation {
    static ONCE: OnceLock<Invocation> = OnceLock::new();
    *ONCE.get_or_init(|| {
        let args: Vec<String> = std::env::args().skip(1).collect();
        Invocation {
            smoke: args.iter().any(|a| a == "--test"),
            list: args.iter().any(|a| a == "--list"),
        }
    })
}

/// Whether this is Criterion's smoke run (`--test`): each benchmark runs
/// once and records nothing, so fixtures may be sized down and sidecar
/// files are not written.
pub fn is_smoke() -> bool {
    invocation().smoke
}

/// Whether this run only lists the benchmarks (`--list`).
pub fn is_listing() -> bool {
    invocation().list
}

/// Which preset this run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    /// Default: tight confidence intervals, the figures we commit.
    Full,
    /// `BENCH_QUICK=1`: short warm-up and measurement, for iterating.
    Quick,
}

impl Preset {
    /// The preset chosen by the environment.
    pub fn from_env() -> Self {
        match std::env::var("BENCH_QUICK") {
            Ok(v) if !v.is_empty() && v != "0" => Preset::Quick,
            _ => Preset::Full,
        }
    }

    /// Warm-up time per benchmark.
    pub fn warm_up(self) -> Duration {
        match self {
            Preset::Full => Duration::from_millis(800),
            Preset::Quick => Duration::from_millis(150),
        }
    }

    /// Measurement time per benchmark.
    pub fn measurement(self) -> Duration {
        match self {
            Preset::Full => Duration::from_secs(2),
            Preset::Quick => Duration::from_millis(400),
        }
    }

    /// Samples per benchmark.
    pub fn sample_size(self) -> usize {
        match self {
            Preset::Full => 30,
            Preset::Quick => 10,
        }
    }

    /// Bootstrap resamples per benchmark.
    pub fn resamples(self) -> usize {
        match self {
            Preset::Full => 20_000,
            Preset::Quick => 2_000,
        }
    }

    /// Name printed in the budget line.
    pub fn name(self) -> &'static str {
        match self {
            Preset::Full => "full",
            Preset::Quick => "quick (BENCH_QUICK=1)",
        }
    }
}

/// A Criterion configured from the preset, then from the command line (so
/// `--sample-size`, `--save-baseline`, `--test`, filters… still apply).
pub fn config() -> Criterion {
    config_for(Preset::from_env())
}

/// A Criterion configured from `preset`, then from the command line.
pub fn config_for(preset: Preset) -> Criterion {
    Criterion::default()
        .warm_up_time(preset.warm_up())
        .measurement_time(preset.measurement())
        .sample_size(preset.sample_size())
        .nresamples(preset.resamples())
        .configure_from_args()
}
