//! Account and identity state and their firehose events.
//!
//! `repo_root` carries each account's `handle`, `active` flag and `status`
//! (schema version 2). Changing them goes through the writer like every
//! other write and appends an `#identity` (handle / identity update) or
//! `#account` (hosting status) event to the same sequenced log the
//! catch-up serves, in the same transaction as the state change. Creating
//! an account emits `#identity`, `#account` (active) and `#sync`.

use repo::firehose::{AccountEvent, Frame, IdentityEvent};
use repo::syntax::{validate_did, validate_handle};
use rusqlite::{OptionalExtension, params};

use crate::Store;
use crate::error::{Result, StoreError};
use crate::events::{Encoded, now_datetime};
use crate::writer::Writer;

/// The statuses atproto's `#account` event defines for inactive accounts.
pub const ACCOUNT_STATUSES: &[&str] = &[
    "takendown",
    "suspended",
    "deleted",
    "deactivated",
    "desynchronized",
    "throttled",
];

/// An account's hosting state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountState {
    /// The handle last set with [`Store::update_identity`], if any.
    pub handle: Option<String>,
    /// Whether the account is active.
    pub active: bool,
    /// Why not, when inactive.
    pub status: Option<String>,
}

fn check_status(active: bool, status: Option<&str>) -> Result<()> {
    match (active, status) {
        (true, None) => Ok(()),
        (false, Some(s)) if ACCOUNT_STATUSES.contains(&s) => Ok(()),
        (true, Some(s)) => Err(StoreError::InvalidAccountStatus(format!(
            "{s} on an active account"
        ))),
        (false, Some(s)) => Err(StoreError::InvalidAccountStatus(s.to_owned())),
        (false, None) => Err(StoreError::InvalidAccountStatus(
            "an inactive account needs a status".into(),
        )),
    }
}

impl Writer {
    /// Appends an `#identity` event; returns its seq.
    pub(crate) fn identity_event(&mut self, did: &str, handle: Option<&str>) -> Result<i64> {
        let seq = self.next_seq;
        let time = now_datetime();
        let frame = Frame::Identity(IdentityEvent {
            seq,
            did,
            time: &time,
            handle,
        });
        let frame = Encoded::new(&frame, 96 + did.len() + handle.map_or(0, str::len));
        self.put_event(did, "#identity", frame)?;
        Ok(seq)
    }

    /// Appends an `#account` event; returns its seq.
    pub(crate) fn account_event(
        &mut self,
        did: &str,
        active: bool,
        status: Option<&str>,
    ) -> Result<i64> {
        let seq = self.next_seq;
        let time = now_datetime();
        let frame = Frame::Account(AccountEvent {
            seq,
            did,
            time: &time,
            active,
            status,
        });
        let frame = Encoded::new(&frame, 112 + did.len());
        self.put_event(did, "#account", frame)?;
        Ok(seq)
    }

    fn require_account(&self, did: &str) -> Result<()> {
        let found: Option<i64> = self
            .conn
            .prepare_cached("SELECT 1 FROM repo_root WHERE did = ?1")?
            .query_row([did], |r| r.get(0))
            .optional()?;
        match found {
            Some(_) => Ok(()),
            None => Err(StoreError::UnknownAccount(did.to_owned())),
        }
    }

    fn update_identity(&mut self, did: &str, handle: Option<&str>) -> Result<i64> {
        self.require_account(did)?;
        self.conn
            .prepare_cached("UPDATE repo_root SET handle = ?2 WHERE did = ?1")?
            .execute(params![did, handle])?;
        self.identity_event(did, handle)
    }

    fn set_status(&mut self, did: &str, active: bool, status: Option<&str>) -> Result<i64> {
        self.require_account(did)?;
        self.conn
            .prepare_cached("UPDATE repo_root SET active = ?2, status = ?3 WHERE did = ?1")?
            .execute(params![did, active, status])?;
        self.account_event(did, active, status)
    }
}

impl Store {
    /// Sets (or clears) `did`'s handle and emits `#identity`; returns the
    /// event's seq.
    pub fn update_identity(&self, did: &str, handle: Option<&str>) -> Result<i64> {
        validate_did(did)?;
        if let Some(h) = handle {
            validate_handle(h)?;
        }
        let (did, handle) = (did.to_owned(), handle.map(str::to_owned));
        self.submit(move |w| w.update_identity(&did, handle.as_deref()))
    }

    /// Changes `did`'s hosting status and emits `#account`; returns the
    /// event's seq. `status` must be `None` when `active`, and one of
    /// [`ACCOUNT_STATUSES`] otherwise.
    pub fn set_account_status(&self, did: &str, active: bool, status: Option<&str>) -> Result<i64> {
        validate_did(did)?;
        check_status(active, status)?;
        let (did, status) = (did.to_owned(), status.map(str::to_owned));
        self.submit(move |w| w.set_status(&did, active, status.as_deref()))
    }

    /// listRepos: one page of accounts in DID order after `cursor`, each
    /// with its current root and hosting state, in one range scan.
    pub fn list_repos(
        &self,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, crate::RepoRoot, AccountState)>> {
        if let Some(c) = cursor {
            validate_did(c)?;
        }
        let r = self.reader()?;
        let mut st = r.prepare_cached(
            "SELECT did, commit_cid, rev, data_cid, handle, active, status FROM repo_root \
             WHERE did > ?1 ORDER BY did LIMIT ?2",
        )?;
        let mut rows = st.query(rusqlite::params![
            cursor.unwrap_or(""),
            i64::try_from(limit).unwrap_or(i64::MAX)
        ])?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            out.push((
                row.get::<_, String>(0)?,
                crate::RepoRoot {
                    commit: crate::rows::cid_from_sql(row.get_ref(1)?.as_blob()?)?,
                    rev: row.get(2)?,
                    data: crate::rows::cid_from_sql(row.get_ref(3)?.as_blob()?)?,
                },
                AccountState {
                    handle: row.get(4)?,
                    active: row.get(5)?,
                    status: row.get(6)?,
                },
            ));
        }
        Ok(out)
    }

    /// `did`'s handle and hosting status (`None`: unknown account).
    pub fn account_state(&self, did: &str) -> Result<Option<AccountState>> {
        validate_did(did)?;
        let r = self.reader()?;
        let row = r
            .prepare_cached("SELECT handle, active, status FROM repo_root WHERE did = ?1")?
            .query_row([did], |row| {
                Ok(AccountState {
                    handle: row.get(0)?,
                    active: row.get(1)?,
                    status: row.get(2)?,
                })
            })
            .optional()?;
        Ok(row)
    }
}

#[cfg(test)]
mod tests {
    use super::check_status;

    #[test]
    fn statuses() {
        assert!(check_status(true, None).is_ok());
        assert!(check_status(false, Some("deactivated")).is_ok());
        assert!(check_status(false, Some("takendown")).is_ok());
        assert!(check_status(true, Some("deactivated")).is_err());
        assert!(check_status(false, None).is_err());
        assert!(check_status(false, Some("napping")).is_err());
    }
}
