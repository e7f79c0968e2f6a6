//! The `ours` side of every live group: dispatch lines through a gateway
//! executor, generic over the backend, and the check of an answer.

use std::hint::black_box;

use benches::callers::bench_callers;
use benches::target::Group;
use convert::RecordSet;
use gateway::{Executor, Outcome};
use tokio::runtime::Runtime;

/// Runs `line` on `executor` from a bench thread (outside the runtime).
pub fn run<E: Executor>(rt: &Runtime, executor: &E, line: &str) -> Outcome {
    rt.block_on(executor.run_line(line))
        .unwrap_or_else(|e| panic!("{line}: {e}"))
}

/// The record set of a line that returns rows.
pub fn rows<E: Executor>(rt: &Runtime, executor: &E, line: &str) -> RecordSet {
    match run(rt, executor, line) {
        Outcome::Rows(set) => set,
        other => panic!("{line}: expected rows, got {other:?}"),
    }
}

/// `ours` at `callers` callers over the pre-built `lines` (caller `c`
/// starts at a different offset and walks them round robin).
pub fn bench_lines<E: Executor>(
    g: &mut Group<'_>,
    tier: &str,
    callers: usize,
    rt: &Runtime,
    executor: &E,
    lines: &[String],
) {
    bench_callers(g, "ours", tier, callers, |caller| {
        let mut k = caller * 997;
        move |_| {
            let line = &lines[k % lines.len()];
            k += 1;
            let out = rt.block_on(executor.run_line(line));
            black_box(out.expect("line"));
        }
    });
}
