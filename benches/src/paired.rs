//! The driven mode of a bench target (`ATBENCH_PAIRED=1`), for the paired
//! re-measurement of `scripts/bench_snapshot.py` and `scripts/bench_ab.py`
//! (`scripts/atbench_snapshot/drive.py` is the other end).
//!
//! The target runs as usual up to each benchmark: its fixtures are built
//! once, by the code that builds them in a normal run. Instead of measuring,
//! [`Driver::offer`] announces the id on stdout and waits for commands on
//! stdin, so one process serves every pair of every id:
//!
//! ```text
//! stdout: atbench-paired {"event":"ready","id":"store.get_record/ours/1k"}
//! stdin:  measure 15 60      (warm-up and measurement in milliseconds)
//! stdout: atbench-paired {"event":"measured","id":"store.get_record/ours/1k"}
//! stdin:  next               (go on to the next benchmark)
//! ...
//! stdout: atbench-paired {"event":"done"}
//! ```
//!
//! Each `measure` runs the routine under a fresh Criterion (10 samples,
//! automatic sampling mode, no plots) that writes its estimates under
//! `$CRITERION_HOME`, where the driver reads the median. Criterion's own
//! console lines go to stdout too; the driver reads only the lines that
//! start with [`PREFIX`]. End of input stops the process.

use std::io::{BufRead, Write};
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{Bencher, BenchmarkId, Criterion, SamplingMode};

/// The environment variable that turns the driven mode on.
pub const ENV: &str = "ATBENCH_PAIRED";
/// The start of every line of the protocol on stdout.
pub const PREFIX: &str = "atbench-paired ";

/// Samples per driven measurement: Criterion's minimum.
const SAMPLES: usize = 10;
/// Bootstrap resamples per driven measurement (only the median is read).
const RESAMPLES: usize = 1_000;

/// One command read from stdin.
#[derive(Debug, PartialEq, Eq)]
pub enum Command {
    /// Measure the announced id once with this warm-up and measurement time.
    Measure {
        warm_up: Duration,
        measurement: Duration,
    },
    /// Move on to the next benchmark.
    Next,
}

/// Parses one command line; `Err` names what was wrong.
pub fn parse_command(line: &str) -> Result<Command, String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    match words.as_slice() {
        ["next"] => Ok(Command::Next),
        ["measure", warm, measure] => {
            let ms = |w: &str| {
                w.parse::<u64>()
                    .ok()
                    .filter(|v| *v > 0)
                    .map(Duration::from_millis)
                    .ok_or_else(|| format!("{w:?} is not a positive number of milliseconds"))
            };
            Ok(Command::Measure {
                warm_up: ms(warm)?,
                measurement: ms(measure)?,
            })
        }
        _ => Err(format!(
            "unknown command {line:?} (expected `measure WARM_MS MEASURE_MS` or `next`)"
        )),
    }
}

/// A JSON string literal (the ids follow the id grammar; quotes and
/// backslashes are escaped anyway).
fn quoted(text: &str) -> String {
    serde_json::Value::String(text.to_owned()).to_string()
}

fn say(event: &str, id: Option<&str>, message: Option<&str>) {
    let mut line = format!("{PREFIX}{{\"event\":{}", quoted(event));
    if let Some(id) = id {
        line.push_str(&format!(",\"id\":{}", quoted(id)));
    }
    if let Some(message) = message {
        line.push_str(&format!(",\"message\":{}", quoted(message)));
    }
    line.push('}');
    let mut out = std::io::stdout().lock();
    // A closed stdout means the driver is gone: nothing left to serve.
    if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
        std::process::exit(0);
    }
}

/// The driven mode's state: where commands come from.
pub struct Driver {
    input: Box<dyn BufRead>,
}

impl Driver {
    /// The driver when `ATBENCH_PAIRED=1`, else None (a normal run).
    pub fn from_env() -> Option<Self> {
        match std::env::var(ENV) {
            Ok(v) if v == "1" => Some(Driver {
                input: Box::new(std::io::BufReader::new(std::io::stdin())),
            }),
            _ => None,
        }
    }

    /// Announces benchmark `group`/`implementation`[/`tier`] (full id `id`)
    /// and serves commands for it until `next`.
    pub fn offer<F>(
        &mut self,
        group: &str,
        implementation: &str,
        tier: &str,
        id: &str,
        mut routine: F,
    ) where
        F: FnMut(&mut Bencher<'_, WallTime>),
    {
        say("ready", Some(id), None);
        let mut line = String::new();
        loop {
            line.clear();
            match self.input.read_line(&mut line) {
                Ok(0) | Err(_) => std::process::exit(0),
                Ok(_) => {}
            }
            match parse_command(&line) {
                Ok(Command::Next) => return,
                Ok(Command::Measure {
                    warm_up,
                    measurement,
                }) => {
                    let mut criterion = Criterion::default()
                        .without_plots()
                        .warm_up_time(warm_up)
                        .measurement_time(measurement)
                        .sample_size(SAMPLES)
                        .nresamples(RESAMPLES);
                    let mut bench = criterion.benchmark_group(group);
                    bench.sampling_mode(SamplingMode::Auto);
                    if tier.is_empty() {
                        bench.bench_function(implementation, &mut routine);
                    } else {
                        bench.bench_function(BenchmarkId::new(implementation, tier), &mut routine);
                    }
                    bench.finish();
                    say("measured", Some(id), None);
                }
                Err(message) => say("error", Some(id), Some(&message)),
            }
        }
    }

    /// Says the target has no more benchmarks.
    pub fn finish(&mut self) {
        say("done", None, None);
    }
}

#[cfg(test)]
mod tests {
    use super::{Command, parse_command, quoted};
    use std::time::Duration;

    #[test]
    fn commands() {
        assert_eq!(parse_command("next\n"), Ok(Command::Next));
        assert_eq!(
            parse_command("measure 15 60\n"),
            Ok(Command::Measure {
                warm_up: Duration::from_millis(15),
                measurement: Duration::from_millis(60)
            })
        );
        assert!(parse_command("measure 0 60").is_err());
        assert!(parse_command("measure x 60").is_err());
        assert!(parse_command("measure 1").is_err());
        assert!(parse_command("run").is_err());
    }

    #[test]
    fn ids_are_json_strings() {
        assert_eq!(quoted("a.b/c/1k"), "\"a.b/c/1k\"");
        assert_eq!(quoted("q\"\\"), "\"q\\\"\\\\\"");
    }
}
