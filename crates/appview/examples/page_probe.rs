//! Reads the index's list pages of the seeded workload, many times, for
//! `callgrind`'s cache simulation: how many instructions and cache misses
//! one page of `appview.<pattern>/index/<tier>` costs. The index is bulk
//! loaded first (`PROBE_RUNS` runs, default 100,000, the bench's 10^5
//! tier); only `read_pages` is meant to be counted:
//!
//! ```text
//! cargo build --release -p appview --example page_probe --features workload
//! valgrind --tool=callgrind --cache-sim=yes --toggle-collect='*read_pages*' \
//!     target/release/examples/page_probe [PATTERN] [PAGES]
//! callgrind_annotate callgrind.out.<pid> | head
//! ```
//!
//! PATTERN is one of the seven names (default `paginated`); PAGES the
//! number of reads (default 2,000; point lookups cycle through the
//! tier's runs). It prints the rows read, so the reads are not optimised
//! away, and the wall time per page (meaningless under valgrind).

use std::hint::black_box;
use std::time::Instant;

use appview::{Index, Pattern, Query, Uuid, bulk};

#[inline(never)]
fn read_pages(index: &Index, queries: &[Query], pages: usize) -> usize {
    let mut rows = 0;
    for i in 0..pages {
        rows += black_box(index.read(&queries[i % queries.len()])).rows();
    }
    rows
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let pattern = Pattern::parse(args.next().as_deref().unwrap_or("paginated"))?;
    let pages: usize = args.next().map_or(Ok(2000), |s| s.parse())?;
    let runs: usize = std::env::var("PROBE_RUNS").map_or(Ok(100_000), |s| s.parse())?;
    let workload = datagen::appview::workload(runs);
    let (index, _) = bulk::load(&workload)?;
    let ids: Vec<Uuid> = index.runs().map(|r| r.id).take(1024).collect();
    let queries: Vec<Query> = ids
        .iter()
        .map(|&id| Query::new(pattern, id, workload.now_us))
        .collect();
    let t = Instant::now();
    let rows = read_pages(&index, &queries, pages);
    println!(
        "{}: {pages} pages, {rows} rows, {:.0} ns/page (runs {})",
        pattern.name(),
        t.elapsed().as_nanos() as f64 / pages as f64,
        index.run_count()
    );
    Ok(())
}
