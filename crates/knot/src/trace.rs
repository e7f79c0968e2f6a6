//! Phase timings on stderr, for finding where a helper run spends its
//! time: with `KNOT_TRACE=1` each phase (start-up, state load, every git
//! subprocess, every HTTP request) prints one `knot-trace:` line with the
//! milliseconds since the helper started and the phase's own duration.
//! Off by default; a check of a cached flag when off.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

static START: OnceLock<Instant> = OnceLock::new();
static ON: OnceLock<bool> = OnceLock::new();

/// Whether tracing is on (`KNOT_TRACE=1`).
pub fn on() -> bool {
    *ON.get_or_init(|| std::env::var("KNOT_TRACE").as_deref() == Ok("1"))
}

/// Marks the helper's start (the origin of every later line).
pub fn start() {
    let _ = START.get_or_init(Instant::now);
}

/// Prints `what`, which took `took` (if known), when tracing is on.
pub fn mark(what: &str, took: Option<Duration>) {
    if !on() {
        return;
    }
    let at = START.get_or_init(Instant::now).elapsed();
    let unix_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    match took {
        Some(d) => eprintln!(
            "knot-trace: {:8.2} ms (unix {unix_ms}) {what} took {:.2} ms",
            at.as_secs_f64() * 1e3,
            d.as_secs_f64() * 1e3
        ),
        None => eprintln!(
            "knot-trace: {:8.2} ms (unix {unix_ms}) {what}",
            at.as_secs_f64() * 1e3
        ),
    }
}

/// Runs `f` and marks it with its duration.
pub fn timed<T>(what: impl FnOnce() -> String, f: impl FnOnce() -> T) -> T {
    if !on() {
        return f();
    }
    let t = Instant::now();
    let r = f();
    mark(&what(), Some(t.elapsed()));
    r
}
