//! The data gateway's executors (`docs/design/gateway.md`): a dispatch line is
//! parsed (`crates/convert`), run on a live backend over a real
//! connection, and its answer converted back (rows -> record set, objects
//! -> bytes).
//!
//! | concept | module (private) | entry points |
//! |---|---|---|
//! | the executor trait and what a line returns | `executor` | [`Executor`], [`Outcome`] |
//! | errors | `error` | [`GatewayError`], [`Backend`] |
//! | URLs, pools, timeouts | `config` | [`SqlConfig`], [`RedisConfig`], [`S3Config`], [`PoolConfig`] |
//! | SQL lines and placeholder counts | `sql`, `placeholders` | [`parse_sql_line`], [`count_placeholders`] |
//! | PostgreSQL | `postgres` | [`PgExecutor`] |
//! | MariaDB / MySQL | `mysql` | [`MysqlExecutor`] |
//! | Redis (the KV line shape) | `kv` | [`RedisExecutor`], [`parse_kv_line`] |
//! | S3 | `object` | [`S3Executor`], [`parse_object_line`] |
//! | an S3 emulator for tests (feature `s3-emulator`) | `s3_emulator` | `S3Emulator` |
//!
//! Timestamps (RFC 3339 parameters, MySQL's calendar fields) are
//! `codec::datetime`'s, the workspace's one owner of dates. The modules
//! are private: every type has one path, `gateway::Name`.
//!
//! A line's path starts at [`Executor::run_line`]: `parse` (no round trip;
//! bad lines and placeholder mismatches stop here) then `execute`
//! (checkout from the pool, round trip, conversion).
//!
//! # Clients, and why
//!
//! - PostgreSQL: `tokio-postgres`, the native async client (binary
//!   protocol, pipelining); the pool is ours (`postgres`: shared
//!   connections, since a client pipelines) with a statement cache per
//!   connection. No TLS, no derive macros; lighter to build than `sqlx`,
//!   which would also bring its query macros.
//! - MariaDB/MySQL: `mysql_async` (pure Rust, its own pool and statement
//!   cache), with default features off (no TLS, no decimal/date crates;
//!   the Rust flate2 backend).
//! - Redis: the `redis` crate (`tokio-comp`, `connection-manager`): a
//!   reconnecting multiplexed connection per pool slot (`kv`).
//! - S3: `object_store` 0.12's S3 client (SigV4 over reqwest on `ring`
//!   with rustls); `aws-sdk-s3` would bring the whole Smithy runtime and
//!   `object_store` 0.13+ builds `aws-lc-sys`, both far heavier on CI's
//!   two cores.
//!
//! Parameters are always bound, never interpolated into the statement.
//! Nothing input-dependent panics: every fault is a [`GatewayError`].

mod config;
mod error;
mod executor;
mod kv;
mod mysql;
mod object;
mod placeholders;
mod postgres;
#[cfg(feature = "s3-emulator")]
mod s3_emulator;
mod sql;

pub use config::{
    DEFAULT_MYSQL_URL, DEFAULT_PG_URL, DEFAULT_REDIS_URL, PoolConfig, RedisConfig, S3Config,
    SqlConfig,
};
pub use error::{Backend, GatewayError};
pub use executor::{Executor, KvOutcome, ObjectEntry, ObjectOutcome, Outcome};
pub use kv::{KvRequest, RedisExecutor, parse_kv_line};
pub use mysql::MysqlExecutor;
pub use object::{ObjectRequest, S3Executor, parse_object_line};
pub use placeholders::{Dialect, count_placeholders};
pub use postgres::PgExecutor;
#[cfg(feature = "s3-emulator")]
pub use s3_emulator::S3Emulator;
pub use sql::{SqlRequest, parse_sql_line};
