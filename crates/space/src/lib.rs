//! Permissioned data ("spaces") over the store's SQLite file.
//!
//! What this crate owns, in two layers (byte layout and choices:
//! `docs/design/space.md`, `crates/space/README.md`):
//!
//! - **The core, byte-exact to the August 2026 alpha (E2):** spaces and
//!   their members, each writer repo's records, its LtHash state
//!   ([`lthash`]) and its oplog (one row per op of a write batch, one rev
//!   per batch); listRecords (limit, cursor, reverse, excludeValues) and
//!   listRepoOps (since, limit, cursor `rev/idx`, the state on the last
//!   page only). Its tables are its own (`schema.rs`), beside the public
//!   repo's and never touching them.
//! - **The envelope** ([`envelope`]): getRepo's encoding and each
//!   response's authentication, behind one trait, [`envelope::Envelope`],
//!   with two implementations labelled by era: [`envelope::E2`] (two-root
//!   CARv1, a deniable signed commit built per response with HKDF-Expand
//!   and HMAC) and [`envelope::E4`] (a streamed STAR archive, a MAC keyed
//!   per request from a P-256 KEM; where the E4 details are unpublished
//!   the choices are documented in that module and kept replaceable).
//!
//! | module | owns |
//! |---|---|
//! | `store` | [`SpaceStore`]: connections, spaces, members, the access check |
//! | `write` | the write path: one transaction per batch |
//! | `read` | getRecord, listRecords, listRepoOps, the export |
//! | `schema` | the tables, migrations, PRAGMAs |
//! | `sql` | every statement (the query-plan test reads them from here) |
//! | [`lthash`] | the set hash |
//! | [`commit`] | E2 signed commits and E4 commits |
//! | [`star`] | STAR v1 framing |
//! | [`envelope`] | the two eras' getRepo and response authentication |
//! | `uri` | space-refs and record URIs |
//!
//! **Locks: no operation holds the writer lock while it reads or
//! materialises a blob.** One writer connection behind a mutex serves the
//! writes: createSpace, the member changes and deleteSpace (one statement or
//! one short transaction each), and a write batch (one IMMEDIATE
//! transaction: previous CIDs, row writes, the expansions of removed
//! elements, COMMIT; decoding, hashing and added elements' expansions run
//! before the mutex). No write reads blob bytes: a record's blob references
//! are taken from its value before the mutex. Every read takes a pooled
//! reader connection and never the writer mutex (the pool's own mutex only
//! to pop or return a connection): getRecord and listRecords one query,
//! listRepoOps and getRepo one read transaction (E2 collects the records,
//! then signs after the transaction; E4 writes each row to its writer
//! inside it). getBlob checks `space_blob_ref` on a reader here and reads
//! the range through the store's readers (atpds). What is shared is
//! SQLite's write lock on the file: a write batch here and a public-repo
//! commit of the store queue on each other (busy timeout 5 s).

pub mod commit;
pub mod envelope;
mod error;
pub mod lthash;
mod read;
mod schema;
mod sql;
pub mod star;
mod store;
mod types;
mod uri;
mod write;

pub use error::{Result, SpaceError};
pub use read::RecordSink;
pub use schema::SCHEMA_VERSION;
pub use store::{Config, SpaceStore};
pub use types::{
    BatchResult, ListPage, ListParams, ListedRecord, MAX_LIMIT, MAX_RECORD_BYTES, MAX_WRITES, Need,
    OpEntry, OpsPage, OpsParams, Policy, RepoState, SpaceInfo, Write, WriteResult,
};
pub use uri::SpaceRef;

/// Every statement the crate runs, by name (for query-plan checks).
pub fn statements() -> &'static [(&'static str, &'static str)] {
    sql::STATEMENTS
}
