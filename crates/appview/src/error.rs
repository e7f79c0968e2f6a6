//! [`AppviewError`]: everything the appview refuses or fails on, each
//! naming what was wrong. A refused mutation writes nothing.

/// The appview's errors.
#[derive(Debug, thiserror::Error)]
pub enum AppviewError {
    /// Not a lowercase hyphenated UUID.
    #[error("not a lowercase hyphenated UUID: {0:?}")]
    BadUuid(String),
    /// A state type name outside the model's nine.
    #[error(
        "unknown state type {0:?} (expected SCHEDULED, PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, CRASHED, PAUSED or CANCELLING)"
    )]
    UnknownStateType(String),
    /// A run names a flow that does not exist.
    #[error("no flow {0}")]
    UnknownFlow(String),
    /// A state change names a run that does not exist.
    #[error("no flow run {0}")]
    UnknownRun(String),
    /// A flow of that name exists already.
    #[error("a flow named {0:?} exists already")]
    DuplicateFlowName(String),
    /// The id is taken by a flow, run or state already.
    #[error("id {0} exists already")]
    DuplicateId(String),
    /// The run is in a terminal state, which it cannot leave.
    #[error("flow run {run} is {from}, a terminal state: it cannot move to {to}")]
    InvalidTransition {
        /// The run.
        run: String,
        /// Its current state type.
        from: &'static str,
        /// The refused state type.
        to: &'static str,
    },
    /// A state change not later than the run's current state.
    #[error("flow run {run}: state timestamp {timestamp} is not after the current one ({current})")]
    StaleTimestamp {
        /// The run.
        run: String,
        /// The refused timestamp (µs).
        timestamp: i64,
        /// The current state's (µs).
        current: i64,
    },
    /// A state change whose derived run field does not fit an `i64` (a
    /// run count already at the maximum, or a run time between extreme
    /// timestamps).
    #[error("flow run {run}: {field} would overflow")]
    Overflow {
        /// The run.
        run: String,
        /// The field (`runCount`, `totalRunTime`).
        field: &'static str,
    },
    /// A flow-run sort name outside Prefect's nine (`RunSort::ALL`).
    #[error("unknown flow run sort {0:?}")]
    UnknownSort(String),
    /// A query pattern name outside the spec's seven (the CLI lists the
    /// seven, `Pattern::ALL`).
    #[error("unknown read pattern {0:?}")]
    UnknownPattern(String),
    /// A record in the repository or a commit that does not decode as the
    /// model says.
    #[error("bad {collection} record {rkey}: {reason}")]
    BadRecord {
        /// Its collection.
        collection: String,
        /// Its record key.
        rkey: String,
        /// What was wrong.
        reason: String,
    },
    /// A firehose frame or CAR that does not decode.
    #[error("bad commit: {0}")]
    BadCommit(String),
    /// The directory holds no appview database.
    #[error("{0}: no appview database here (run `appview seed --db DIR` first)")]
    NoDatabase(std::path::PathBuf),
    /// The record store failed.
    #[error(transparent)]
    Store(#[from] store::StoreError),
    /// SQLite (the baseline) failed.
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A column of the baseline holds the wrong type.
    #[error("sqlite column: {0}")]
    SqliteColumn(#[from] rusqlite::types::FromSqlError),
    /// A JSON column of the baseline did not parse.
    #[error("baseline json column: {0}")]
    Json(#[from] serde_json::Error),
    /// Parameters that are not a bounded JSON object.
    #[error(transparent)]
    Params(#[from] crate::params::ParamsError),
    /// An I/O failure.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// The appview's result.
pub type Result<T> = std::result::Result<T, AppviewError>;
