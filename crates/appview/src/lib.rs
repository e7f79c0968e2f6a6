//! The read path of an atproto-canonical orchestration backend
//! (`spec/appview.md`): flows and flow runs with Prefect's API semantics,
//! whose canonical state is an atproto repository written through
//! `crates/store` (every mutation a signed commit), and whose reads come
//! from an in-process [`Index`] fed by those commits. The SQLite baseline
//! ([`SqliteBaseline`], Prefect's own schema and indexes) answers the same
//! read patterns; the PostgreSQL and Redis baselines live in
//! `--bench live_backends`, on the same SQL and the same pages.
//!
//! # Modules
//!
//! | module | owns |
//! |---|---|
//! | `model` | flows, runs, states, their collections (our NSIDs), a commit's [`Mutation`] |
//! | `uuid` | [`Uuid`]: ids and record keys |
//! | `record` | the records as DAG-CBOR, both ways (strict decoder, proptested) |
//! | `plan` | the orchestration rules: an input checked and planned into a mutation |
//! | `ordset` | [`OrdSet`]: the ordered set with rank access |
//! | `index` | [`Index`]: record maps, sets per state and flow, ordered sets; fed by `#commit` frames |
//! | `query` | the read patterns, their parameters, the page |
//! | `app` | [`AppView`]: the store, its repository, writes as commits, the live index |
//! | `rebuild` | the index from an exported repository alone |
//! | `bulk` | the seeded workload straight into an index (the 10^5 tier) |
//! | `sqlite` | the SQLite baseline |
//!
//! # The 10^5-run tier
//!
//! Signing ~290,000 commits to build a read fixture would take minutes of
//! every benchmark run's setup; the tier is built by [`bulk::load`], which
//! applies the same decoded records through the same
//! [`Index::apply_record`] a commit feeds (the baselines load the same
//! rows in one transaction). The signed stream is measured at 300 runs
//! (`appview.seed_write/atproto/300`), and a test shows that the two
//! paths build equal indexes.

mod app;
pub mod bulk;
mod error;
mod index;
mod model;
mod ordset;
mod plan;
mod query;
mod rebuild;
mod record;
mod sqlite;
mod uuid;

pub use app::{APPVIEW_DID, AppView, STORE_FILE, signing_key, store_path, store_writes};
pub use error::{AppviewError, Result};
pub use index::Index;
pub use model::{
    FLOW_NSID, Flow, FlowRun, FlowRunState, Mutation, RUN_NSID, Record, RecordRef, STATE_NSID,
    StateType,
};
pub use ordset::{DEFAULT_CHUNK, OrdSet};
pub use plan::{Input, Lookup, NewFlow, NewRun, NewState, plan};
pub use query::{
    ACTIVE_LIMIT, COMPLETED_LIMIT, FLOW_LIMIT, PAGE_LIMIT, PAGE_OFFSET, PATTERN_NAMES, Page,
    Pattern, Query, ReadBackend, RunWithState, WINDOW_LIMIT, WINDOW_US, window,
};
pub use rebuild::{index_car, rebuild};
pub use record::{decode as decode_record, encode as encode_record};
pub use sqlite::{
    INDEX_NAMES, INDEXES, PRAGMAS, RUN_COLUMNS, SqliteBaseline, TABLES, flow_list_sql,
    insert_run_sql, list_sql, params_from_json, params_json, params_value, point_lookup_sql,
    run_from_row, tags_from_json, tags_json, tags_value,
};
pub use uuid::Uuid;

/// The SQLite baseline's file inside an appview directory.
pub const BASELINE_FILE: &str = "baseline.sqlite";
