//! `appview` CLI: shows the read path to a person.
//!
//! ```text
//! cargo run --release -p appview --features cli -- seed --runs 300 --db DIR
//! cargo run --release -p appview --features cli -- query <pattern> [--backend index|sqlite] --db DIR [--run UUID] [--now MICROS]
//! cargo run --release -p appview --features cli -- serve --db DIR [--listen 127.0.0.1:4200]
//! ```
//!
//! `serve` runs the Prefect-compatible REST server (`appview::rest`) on
//! the appview in `DIR` (created when missing): point Prefect's client at
//! it with `PREFECT_API_URL=http://ADDR/api`. It prints the address it
//! listens on and serves until interrupted (Ctrl-C).
//!
//! `seed` writes the seeded workload twice into an empty `DIR`: as signed
//! commits of the appview's repository (`appview.sqlite`, the index fed
//! as they land) and as SQL transactions into the baseline
//! (`baseline.sqlite`); it prints both rates. `query` prints one read
//! pattern's page as a table, from the index (rebuilt from the
//! repository) or from the baseline. `point_lookup` defaults to the run
//! with the latest expected start; `completed_1h` to the hour before the
//! latest end.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use appview::{
    AppView, AppviewError, BASELINE_FILE, FlowRun, Page, Pattern, Query, ReadBackend, Result,
    SqliteBaseline, Uuid, store_path,
};
use clap::{Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "appview",
    version,
    about = "The appview read path: seed it, query it"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Backend {
    /// The index fed by the repository's commits.
    Index,
    /// The SQLite baseline (Prefect's schema).
    Sqlite,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Writes the seeded workload (seed 1337) into an empty directory.
    Seed {
        /// Flow runs (the reference's scale is 300; at most 10^7).
        #[arg(long, default_value_t = 300,
              value_parser = clap::value_parser!(u64).range(1..=datagen::appview::MAX_RUNS as u64))]
        runs: u64,
        /// The directory (created; must not hold an appview yet).
        #[arg(long, value_name = "DIR")]
        db: PathBuf,
    },
    /// Prints one read pattern's page.
    Query {
        /// point_lookup, active_by_state, completed_50, paginated,
        /// count_completed, flow_list or completed_1h.
        pattern: String,
        /// Where the page comes from.
        #[arg(long, value_enum, default_value_t = Backend::Index)]
        backend: Backend,
        /// The directory `seed` wrote.
        #[arg(long, value_name = "DIR")]
        db: PathBuf,
        /// The run of `point_lookup`.
        #[arg(long)]
        run: Option<String>,
        /// The end of `completed_1h`'s window (µs since the epoch).
        #[arg(long)]
        now: Option<i64>,
    },
    /// Serves the Prefect-compatible REST API until interrupted.
    Serve {
        /// The appview directory (created when missing).
        #[arg(long, value_name = "DIR")]
        db: PathBuf,
        /// Where to listen (port 0: any free port, printed).
        #[arg(long, default_value = "127.0.0.1:4200")]
        listen: std::net::SocketAddr,
        /// Open connections at most.
        #[arg(long, default_value_t = 512)]
        max_connections: usize,
    },
}

fn serve(
    dir: &std::path::Path,
    listen: std::net::SocketAddr,
    max_connections: usize,
) -> Result<()> {
    let app = std::sync::Arc::new(AppView::open(dir, store::Config::default())?);
    let config = appview::rest::RestConfig {
        listen,
        max_connections,
        ..Default::default()
    };
    let rt = appview::rest::runtime(config.workers)?;
    rt.block_on(appview::rest::serve(
        app,
        config,
        |addr| {
            use std::io::Write as _;
            println!("appview: Prefect REST API on http://{addr}/api");
            let _ = std::io::stdout().flush();
        },
        async {
            let _ = tokio::signal::ctrl_c().await;
        },
    ))?;
    Ok(())
}

fn seed(runs: u64, dir: &std::path::Path) -> Result<()> {
    // In range (clap checked it against MAX_RUNS), so it fits a usize.
    let runs = usize::try_from(runs).unwrap_or(datagen::appview::MAX_RUNS);
    if store_path(dir).exists() || dir.join(BASELINE_FILE).exists() {
        return Err(AppviewError::Io(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!(
                "{}: holds an appview already; seed an empty directory",
                dir.display()
            ),
        )));
    }
    let workload = datagen::appview::workload(runs);
    let app = AppView::open(dir, store::Config::default())?;
    // The mutations each write planned are the baseline's transactions:
    // no second planning pass (and no second index) for the SQL side.
    let mut mutations = Vec::with_capacity(workload.ops.len());
    let t = Instant::now();
    for op in &workload.ops {
        mutations.push(app.apply_op(op)?);
    }
    let atproto = t.elapsed();
    let mut sql = SqliteBaseline::open(&dir.join(BASELINE_FILE))?;
    let t = Instant::now();
    for m in &mutations {
        sql.apply(m)?;
    }
    let sqlite = t.elapsed();
    sql.analyze()?;
    let n = workload.ops.len() as f64;
    println!(
        "seeded {} flows, {} runs, {} writes (seed {})",
        workload.flows,
        workload.runs,
        workload.ops.len(),
        datagen::appview::APPVIEW_SEED
    );
    println!(
        "atproto (signed commits + index): {:.0} writes/s; sqlite (one transaction each): {:.0} writes/s",
        n / atproto.as_secs_f64(),
        n / sqlite.as_secs_f64()
    );
    let index = app.index();
    let per_flow = index.flows().map(|f| index.runs_of_flow(f.id));
    let (fewest, most) = per_flow.fold((usize::MAX, 0), |(lo, hi), n| (lo.min(n), hi.max(n)));
    println!(
        "index: {} runs ({fewest}-{most} per flow), {} states",
        index.run_count(),
        index.state_count()
    );
    Ok(())
}

fn query(
    pattern: &str,
    backend: Backend,
    dir: &std::path::Path,
    run: Option<&str>,
    now: Option<i64>,
) -> Result<()> {
    let pattern = Pattern::parse(pattern)?;
    let run = run.map(Uuid::parse).transpose()?;
    let (page, defaults) = match backend {
        Backend::Index => {
            let app = AppView::open_existing(dir)?;
            let defaults = app.index().defaults();
            let q = Query::new(
                pattern,
                run.or(defaults.0).unwrap_or_default(),
                now.or(defaults.1).unwrap_or(0),
            );
            (app.query(&q)?, q)
        }
        Backend::Sqlite => {
            let path = dir.join(BASELINE_FILE);
            if !path.is_file() {
                return Err(AppviewError::NoDatabase(dir.to_path_buf()));
            }
            let sql = SqliteBaseline::open_existing(&path)?;
            let defaults = sql.defaults()?;
            let q = Query::new(
                pattern,
                run.or(defaults.0).unwrap_or_default(),
                now.or(defaults.1).unwrap_or(0),
            );
            (sql.query(&q)?, q)
        }
    };
    println!("{} on {:?}: {:?}", pattern.name(), backend, defaults);
    print!("{}", to_table(&page));
    Ok(())
}

/// A page as a text table for a person.
fn to_table(page: &Page) -> String {
    let mut out = String::new();
    let run_header = "id                                    state      name        expected_start     start              end                run_time_s  runs";
    let run_line = |out: &mut String, r: &FlowRun| {
        let t = |v: Option<i64>| v.map_or_else(|| "-".to_owned(), |v| v.to_string());
        let _ = writeln!(
            out,
            "{}  {:<9}  {:<10}  {:<17}  {:<17}  {:<17}  {:>10}  {:>4}",
            r.id,
            r.state_type.as_str(),
            r.name,
            r.expected_start,
            t(r.start),
            t(r.end),
            format!("{:.3}", r.total_run_time as f64 / 1e6),
            r.run_count
        );
    };
    match page {
        Page::Run(None) => out.push_str("(no such run)\n"),
        Page::Run(Some(r)) => {
            let _ = writeln!(out, "{run_header}");
            run_line(&mut out, &r.run);
            if let Some(s) = &r.state {
                let _ = writeln!(
                    out,
                    "current state: {} {} at {} ({}) {:?}",
                    s.id,
                    s.state_type.as_str(),
                    s.timestamp,
                    s.name,
                    s.message
                );
            }
        }
        Page::Runs(runs) => {
            let _ = writeln!(out, "{run_header}");
            for r in runs.iter() {
                run_line(&mut out, &r.to_run());
            }
            let _ = writeln!(out, "({} rows)", runs.len());
        }
        Page::Count(n) => {
            let _ = writeln!(out, "count\n{n}");
        }
        Page::Flows(flows) => {
            let _ = writeln!(
                out,
                "id                                    name                      tags"
            );
            for f in flows {
                let _ = writeln!(out, "{}  {:<24}  {}", f.id, f.name, f.tags.join(","));
            }
            let _ = writeln!(out, "({} rows)", flows.len());
        }
    }
    out
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Seed { runs, db } => seed(*runs, db),
        Command::Query {
            pattern,
            backend,
            db,
            run,
            now,
        } => query(pattern, *backend, db, run.as_deref(), *now),
        Command::Serve {
            db,
            listen,
            max_connections,
        } => serve(db, *listen, *max_connections),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e @ AppviewError::UnknownPattern(_)) => {
            let names: Vec<&str> = Pattern::ALL.iter().map(|p| p.name()).collect();
            eprintln!("appview: {e} (expected one of: {})", names.join(", "));
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("appview: {e}");
            ExitCode::from(2)
        }
    }
}
