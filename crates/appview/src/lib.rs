//! The read path of an atproto-canonical orchestration backend
//! (`docs/design/appview.md`): flows and flow runs with Prefect's API semantics,
//! whose canonical state is an atproto repository written through
//! `crates/store` (every mutation a signed commit), and whose reads come
//! from an in-process [`Index`] fed by those commits. The SQLite baseline
//! ([`SqliteBaseline`], Prefect's own schema and indexes) answers the same
//! read patterns; the PostgreSQL and Redis baselines live in
//! `--bench live_backends`, on the same pages; what the SQL baselines
//! share (Prefect's indexes, the read SQL, the JSON columns) is
//! [`baseline_sql`], the one module kept public for them.
//!
//! The seeded workload (`datagen::appview`) is an input only behind the
//! `workload` feature (`Input::from_op`, `AppView::apply_op`, `bulk`);
//! the `rest` feature adds the REST server (`rest`), and the `cli`
//! feature the `appview` binary. The read path itself
//! never needs the generator.
//!
//! # Modules
//!
//! | module | owns |
//! |---|---|
//! | `model` | flows, runs, states, their collections (our NSIDs), a commit's [`Mutation`] |
//! | `uuid` | [`Uuid`]: ids and record keys |
//! | `record` | the records as DAG-CBOR, both ways (strict decoder, proptested) |
//! | [`params`] | a run's parameters: any JSON value, each kept as its JSON text in Prefect's form |
//! | `plan` | the orchestration rules: an input checked and planned into a mutation |
//! | `ordset` | [`OrdSet`]: the ordered set with rank access |
//! | `rows` | the runs in one slab (a slot per run, carried by the ordered sets' keys): records and their dense rows |
//! | `index` | [`Index`]: record maps, sets per state and flow, ordered sets; fed by `#commit` frames |
//! | `query` | the read patterns, their parameters, the page |
//! | `run_page` | [`RunPage`]: a page of runs as dense rows and one text buffer |
//! | `filter` | [`RunFilter`], [`RunSort`]: the general flow-run read of Prefect's `/flow_runs/filter`; [`FlowSort`] |
//! | `app` | [`AppView`]: the store, its repository, writes as commits, the live index |
//! | `logs` | [`LogStore`]: the log lines, a SQLite table beside the store (why: its module doc) |
//! | `task_run` | task runs: their records (Prefect's JSON kept as text) and [`TaskIndex`] |
//! | `rebuild` | the index from an exported repository alone |
//! | `bulk` | the seeded workload straight into an index (the 10^5 tier; `workload` feature) |
//! | `baseline_sql` | the SQL every SQL baseline shares: index table, read SQL, JSON columns |
//! | `sqlite` | the SQLite baseline |
//! | `rest` | the Prefect-compatible REST server (`rest` feature; `appview serve`) |
//!
//! # The 10^5-run tier
//!
//! Signing ~290,000 commits to build a read fixture would take minutes of
//! every benchmark run's setup; the tier is built by `bulk::load`, which
//! applies the same decoded records through the same
//! `Index::apply_record` a commit feeds (the baselines load the same
//! rows in one transaction). The signed stream is measured at 300 runs
//! (`appview.seed_write/atproto/300`), and a test shows that the two
//! paths build equal indexes.

mod app;
pub mod baseline_sql;
#[cfg(feature = "workload")]
pub mod bulk;
mod error;
mod filter;
mod index;
mod logs;
mod model;
mod ordset;
pub mod params;
mod plan;
mod query;
mod rebuild;
mod record;
#[cfg(feature = "rest")]
pub mod rest;
mod rows;
mod run_page;
mod sqlite;
mod task_run;
mod uuid;
// The task runs' records read Prefect's RFC 3339 times with the REST
// server's parser, also in a build without the server.
#[cfg(not(feature = "rest"))]
#[path = "rest/time.rs"]
#[allow(dead_code)]
mod rest_time;
#[cfg(feature = "rest")]
use rest::time as rest_time;

pub use app::{APPVIEW_DID, AppView, signing_key, store_path, store_writes};
pub use error::{AppviewError, Result};
pub use filter::{Bounds, FlowSort, RunFilter, RunSort};
pub use index::Index;
pub use logs::{LOGS_FILE, LogFilter, LogRow, LogSort, LogStore, logs_path};
pub use model::{
    FLOW_NSID, Flow, FlowRun, FlowRunState, Mutation, RUN_NSID, Record, RecordRef, STATE_NSID,
    StateType,
};
pub use ordset::OrdSet;
pub use plan::{Input, NewFlow, NewRun, NewState};
pub use query::{
    ACTIVE_LIMIT, COMPLETED_LIMIT, FLOW_LIMIT, PAGE_LIMIT, PAGE_OFFSET, Page, Pattern, Query,
    ReadBackend, RunWithState, WINDOW_LIMIT, window,
};
pub use record::{decode as decode_record, encode as encode_record};
pub use run_page::{RunPage, RunView};
pub use sqlite::{PRAGMAS, SqliteBaseline};
pub use task_run::{TASK_RUN_NSID, TASK_STATE_NSID, TaskIndex, TaskRecord, TaskRun, TaskRunState};
pub use uuid::Uuid;

/// The SQLite baseline's file inside an appview directory.
pub const BASELINE_FILE: &str = "baseline.sqlite";
