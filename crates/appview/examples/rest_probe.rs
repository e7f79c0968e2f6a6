//! What a REST list page costs inside the server, without HTTP: the
//! handler `appview::rest::routes::respond` (body parsed as JSON, the
//! request model read, the index's page, the page rendered as Prefect's
//! JSON) run many times on the bench's 10^5 tier, with the same bodies as
//! `appview.rest_<pattern>` sends. Set beside that group's
//! `appview.callers-1` row and `appview.rest_health` (the HTTP floor), it
//! says how much of a REST page is the handler and how much is HTTP;
//! under `callgrind` it says where the handler spends its instructions:
//!
//! ```text
//! cargo build --release -p appview --example rest_probe --features workload,rest
//! target/release/examples/rest_probe [PATTERN] [PAGES]
//! valgrind --tool=callgrind --toggle-collect='*handle_pages*' \
//!     target/release/examples/rest_probe paginated 500
//! callgrind_annotate --inclusive=yes callgrind.out.<pid> | head -40
//! ```
//!
//! PATTERN is one of the list patterns (`active_by_state`,
//! `completed_50`, `paginated`, `completed_1h`; default `paginated`),
//! PAGES the number of handler calls (default 2,000). It prints the
//! handler's median time per page over 9 rounds and the body's bytes.

use std::hint::black_box;
use std::time::Instant;

use appview::rest::routes::{Route, respond};
use appview::{AppView, Pattern, bulk};

#[inline(never)]
fn handle_pages(app: &AppView, body: &[u8], pages: usize) -> usize {
    let mut bytes = 0;
    for _ in 0..pages {
        let reply = black_box(respond(app, Route::ReadRuns, body));
        bytes += reply.body.len();
    }
    bytes
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let pattern = Pattern::parse(args.next().as_deref().unwrap_or("paginated"))?;
    let pages: usize = args.next().map_or(Ok(2000), |s| s.parse())?;
    let runs: usize = std::env::var("PROBE_RUNS").map_or(Ok(100_000), |s| s.parse())?;
    let workload = datagen::appview::workload(runs);
    let (index, _) = bulk::load(&workload)?;
    let states = |s: &str| format!(r#""flow_runs":{{"state":{{"type":{{"any_":[{s}]}}}}}}"#);
    let body = match pattern {
        Pattern::ActiveByState => format!(
            r#"{{{},"sort":"ID_DESC","limit":{}}}"#,
            states(r#""RUNNING","PENDING""#),
            appview::ACTIVE_LIMIT
        ),
        Pattern::Completed50 => format!(
            r#"{{{},"sort":"START_TIME_DESC","limit":{}}}"#,
            states(r#""COMPLETED""#),
            appview::COMPLETED_LIMIT
        ),
        Pattern::Paginated => format!(
            r#"{{"sort":"EXPECTED_START_TIME_DESC","offset":{},"limit":{}}}"#,
            appview::PAGE_OFFSET,
            appview::PAGE_LIMIT
        ),
        Pattern::Completed1h => {
            let (from, to) = appview::window(workload.now_us);
            format!(
                r#"{{"flow_runs":{{"end_time":{{"after_":"{}","before_":"{}"}}}},"sort":"END_TIME_DESC","limit":{}}}"#,
                appview::rest::time::format(from),
                appview::rest::time::format(to),
                appview::WINDOW_LIMIT
            )
        }
        other => return Err(format!("{} is not a list pattern", other.name()).into()),
    };
    let dir = tempfile::tempdir()?;
    let app = AppView::read_fixture(dir.path(), index)?;
    let first = respond(&app, Route::ReadRuns, body.as_bytes());
    if first.status != 200 {
        return Err(format!("{}: {}", first.status, first.body).into());
    }
    let mut per_page = Vec::new();
    let mut bytes = 0;
    for _ in 0..9 {
        let t = Instant::now();
        bytes = handle_pages(&app, body.as_bytes(), pages);
        per_page.push(t.elapsed().as_nanos() as f64 / pages as f64);
    }
    per_page.sort_by(f64::total_cmp);
    println!(
        "{}: handler median {:.0} ns/page (min {:.0}), {} bytes/page, {} rows",
        pattern.name(),
        per_page[per_page.len() / 2],
        per_page[0],
        bytes / pages,
        first.body.matches("\"state_details\"").count()
    );
    Ok(())
}
