//! The startup stages the server times and reports, named as the PDS
//! benchmark notes this workspace follows name them (`storage_ms`,
//! `migrations_ms`, `sequence_ms`, `account_setup_ms`, `http_init_ms`), so
//! a startup bench can read them off the report line.
//!
//! What each stage covers here:
//! - `storage`: opening the store file and setting its PRAGMAs;
//! - `migrations`: reading the schema version and running what is pending;
//! - `sequence`: recovering the next event number, plus the revision
//!   backfill of blocks written before revisions were kept (nothing on a
//!   store this build wrote);
//! - `account_setup`: the secret file (JWT key, PLC rotation key), the
//!   account file, dropping account rows without a repository, and the
//!   unknown-identifier password hash (random bytes, no KDF run);
//! - `http_init`: binding the listener, the read pool, and starting the
//!   firehose broadcaster.

use std::time::Duration;

/// How long each startup stage took.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stages {
    /// Opening the store file, PRAGMAs.
    pub storage: Duration,
    /// Schema version and migrations.
    pub migrations: Duration,
    /// The next sequence number and the revision backfill.
    pub sequence: Duration,
    /// Secrets, account file, the unknown-identifier hash.
    pub account_setup: Duration,
    /// Listener, read pool, firehose broadcaster.
    pub http_init: Duration,
}

impl Stages {
    /// `storage_ms=0.41 migrations_ms=0.02 ...`: milliseconds, two decimals.
    pub fn line(&self) -> String {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        format!(
            "storage_ms={:.2} migrations_ms={:.2} sequence_ms={:.2} account_setup_ms={:.2} http_init_ms={:.2}",
            ms(self.storage),
            ms(self.migrations),
            ms(self.sequence),
            ms(self.account_setup),
            ms(self.http_init),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_every_stage_in_milliseconds() {
        let s = Stages {
            storage: Duration::from_micros(1500),
            migrations: Duration::from_micros(20),
            sequence: Duration::from_millis(3),
            account_setup: Duration::from_micros(250),
            http_init: Duration::from_micros(90),
        };
        assert_eq!(
            s.line(),
            "storage_ms=1.50 migrations_ms=0.02 sequence_ms=3.00 account_setup_ms=0.25 http_init_ms=0.09"
        );
    }
}
