//! The account file: a small SQLite database of our own beside the store
//! (`DB.accounts`), holding what the store does not: each account's
//! handle, email and password hash, the live refresh tokens, and the app
//! passwords (their rows and live set: `app_passwords.rs`).
//!
//! Why a file of its own: the store owns repositories and their events;
//! logins and sessions are the server's business, change on a different
//! schedule, and must not share the store's writer queue (a login would
//! otherwise wait behind a group commit). Every account is also held in
//! memory (two maps under read-write locks, read-mostly), so resolving a
//! handle or a session never touches SQLite. Writes (a new account, a
//! refresh-token rotation) go to the file first, then to the maps.
//!
//! A handle is reserved here (its row inserted, the handle column unique)
//! before the store creates the repository, so two concurrent
//! `createAccount` calls for one handle cannot both win; a row whose
//! repository never got created (a crash in between) is dropped at startup.

// App passwords: their table and checks, an `impl Accounts` of their own.
pub(crate) mod app_passwords;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, RwLock};

use repo::cbor::json::push_json_str;
use rusqlite::{Connection, OptionalExtension, params};

/// One account.
#[derive(Debug, Clone)]
pub struct Account {
    /// Its DID.
    pub did: String,
    /// Its handle (lower case).
    pub handle: String,
    /// Its email, if given.
    pub email: Option<String>,
    /// Its password hash (`password.rs`).
    pub password: String,
    /// Its repository signing key, as a `did:key`.
    pub key: String,
    /// Its DID document as JSON text, rendered once ([`Account::new`]):
    /// every field of it is fixed for the account's life (the public URL
    /// is the server's), and getSession, createSession and describeRepo
    /// all answer with it.
    pub did_doc: String,
}

impl Account {
    /// An account served at `public_url`, its DID document rendered.
    pub fn new(
        did: String,
        handle: String,
        email: Option<String>,
        password: String,
        key: String,
        public_url: &str,
    ) -> Account {
        let did_doc = render_did_doc(&did, &handle, &key, public_url);
        Account {
            did,
            handle,
            email,
            password,
            key,
            did_doc,
        }
    }
}

/// The DID document of an account, as JSON text.
fn render_did_doc(did: &str, handle: &str, key: &str, public_url: &str) -> String {
    let mut s = String::with_capacity(512);
    s.push_str(
        "{\"@context\":[\"https://www.w3.org/ns/did/v1\",\"https://w3id.org/security/multikey/v1\",\
         \"https://w3id.org/security/suites/secp256k1-2019/v1\"],\"id\":",
    );
    push_json_str(did, &mut s);
    s.push_str(",\"alsoKnownAs\":[\"at://");
    s.push_str(handle);
    s.push_str("\"],\"verificationMethod\":[{\"id\":");
    push_json_str(&format!("{did}#atproto"), &mut s);
    s.push_str(",\"type\":\"Multikey\",\"controller\":");
    push_json_str(did, &mut s);
    s.push_str(",\"publicKeyMultibase\":");
    push_json_str(key.strip_prefix("did:key:").unwrap_or(key), &mut s);
    s.push_str("}],\"service\":[{\"id\":\"#atproto_pds\",\"type\":\"AtprotoPersonalDataServer\",\"serviceEndpoint\":");
    push_json_str(public_url, &mut s);
    s.push_str("}]}");
    s
}

/// Why a reservation failed.
#[derive(Debug, thiserror::Error)]
pub enum ReserveError {
    /// The handle (or DID) is taken.
    #[error("handle already taken")]
    Taken,
    /// SQLite failed.
    #[error("account file: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

#[derive(Default)]
struct Maps {
    by_did: HashMap<String, Arc<Account>>,
    by_handle: HashMap<String, Arc<Account>>,
    by_email: HashMap<String, Arc<Account>>,
}

/// The account file and its in-memory copy.
pub struct Accounts {
    conn: Mutex<Connection>,
    maps: RwLock<Maps>,
    /// Every account's app passwords (`app_passwords.rs`).
    app_passes: RwLock<app_passwords::Live>,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS accounts (
    did        TEXT PRIMARY KEY,
    handle     TEXT NOT NULL UNIQUE,
    email      TEXT,
    password   TEXT NOT NULL,
    signing_key TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS refresh_tokens (
    jti        TEXT PRIMARY KEY,
    did        TEXT NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS preferences (
    did        TEXT PRIMARY KEY,
    json       TEXT NOT NULL
);
";

impl Accounts {
    /// Opens (creating) the account file and loads every account.
    /// `public_url` goes into each account's DID document.
    pub fn open(path: &Path, durable: bool, public_url: &str) -> rusqlite::Result<Self> {
        let conn = Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", if durable { "FULL" } else { "NORMAL" })?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        conn.execute_batch(SCHEMA)?;
        conn.execute_batch(app_passwords::SCHEMA)?;
        let app_passes = app_passwords::load(&conn)?;
        conn.execute(
            "DELETE FROM refresh_tokens WHERE expires_at < ?1",
            [crate::auth::now()],
        )?;
        let mut maps = Maps::default();
        {
            let mut st =
                conn.prepare("SELECT did, handle, email, password, signing_key FROM accounts")?;
            let rows = st.query_map([], |r| {
                Ok(Account::new(
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    public_url,
                ))
            })?;
            for a in rows {
                maps.insert(Arc::new(a?));
            }
        }
        Ok(Accounts {
            conn: Mutex::new(conn),
            maps: RwLock::new(maps),
            app_passes: RwLock::new(app_passes),
        })
    }

    pub(crate) fn app_pass_read(&self) -> std::sync::RwLockReadGuard<'_, app_passwords::Live> {
        self.app_passes.read().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn app_pass_write(&self) -> std::sync::RwLockWriteGuard<'_, app_passwords::Live> {
        self.app_passes.write().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Maps> {
        self.maps.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Maps> {
        self.maps.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Drops accounts whose DID `keep` rejects (a repository that never got
    /// created); returns how many.
    pub fn retain(&self, keep: impl Fn(&str) -> bool) -> rusqlite::Result<usize> {
        let gone: Vec<String> = self
            .read()
            .by_did
            .keys()
            .filter(|d| !keep(d))
            .cloned()
            .collect();
        for did in &gone {
            self.remove(did)?;
        }
        Ok(gone.len())
    }

    /// Inserts a new account, refusing a taken handle, DID or email.
    pub fn reserve(&self, account: Account) -> Result<Arc<Account>, ReserveError> {
        let account = Arc::new(account);
        let conn = self.conn();
        {
            let m = self.read();
            if m.by_handle.contains_key(&account.handle)
                || m.by_did.contains_key(&account.did)
                || account
                    .email
                    .as_ref()
                    .is_some_and(|e| m.by_email.contains_key(e))
            {
                return Err(ReserveError::Taken);
            }
        }
        let inserted = conn.execute(
            "INSERT INTO accounts (did, handle, email, password, signing_key, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                account.did,
                account.handle,
                account.email,
                account.password,
                account.key,
                crate::auth::now()
            ],
        );
        match inserted {
            Ok(_) => {}
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::ConstraintViolation =>
            {
                return Err(ReserveError::Taken);
            }
            Err(e) => return Err(e.into()),
        }
        self.write().insert(account.clone());
        Ok(account)
    }

    /// Removes an account (and its refresh tokens).
    pub fn remove(&self, did: &str) -> rusqlite::Result<()> {
        let conn = self.conn();
        conn.execute("DELETE FROM accounts WHERE did = ?1", [did])?;
        conn.execute("DELETE FROM refresh_tokens WHERE did = ?1", [did])?;
        conn.execute("DELETE FROM preferences WHERE did = ?1", [did])?;
        self.drop_app_passwords(&conn, did)?;
        let mut m = self.write();
        if let Some(a) = m.by_did.remove(did) {
            m.by_handle.remove(&a.handle);
            if let Some(e) = &a.email {
                m.by_email.remove(e);
            }
        }
        Ok(())
    }

    /// The `app.bsky` preference array `did` last put (JSON text), if any
    /// (`routes/actor.rs` checks it).
    pub fn preferences(&self, did: &str) -> rusqlite::Result<Option<String>> {
        use rusqlite::OptionalExtension;
        self.conn()
            .query_row("SELECT json FROM preferences WHERE did = ?1", [did], |r| {
                r.get(0)
            })
            .optional()
    }

    /// Replaces `did`'s preference array with `json` (checked by the caller).
    pub fn put_preferences(&self, did: &str, json: &str) -> rusqlite::Result<()> {
        self.conn().execute(
            "INSERT INTO preferences (did, json) VALUES (?1, ?2)
             ON CONFLICT (did) DO UPDATE SET json = excluded.json",
            [did, json],
        )?;
        Ok(())
    }

    /// The account of `did`.
    pub fn by_did(&self, did: &str) -> Option<Arc<Account>> {
        self.read().by_did.get(did).cloned()
    }

    /// The account of `handle` (case-insensitive).
    pub fn by_handle(&self, handle: &str) -> Option<Arc<Account>> {
        let m = self.read();
        match m.by_handle.get(handle) {
            Some(a) => Some(a.clone()),
            None if handle.bytes().any(|b| b.is_ascii_uppercase()) => {
                m.by_handle.get(&handle.to_ascii_lowercase()).cloned()
            }
            None => None,
        }
    }

    /// A login identifier: a DID, a handle or an email.
    pub fn by_identifier(&self, id: &str) -> Option<Arc<Account>> {
        if id.starts_with("did:") {
            return self.by_did(id);
        }
        if id.contains('@') {
            return self.read().by_email.get(&id.to_ascii_lowercase()).cloned();
        }
        self.by_handle(id)
    }

    /// Records a live refresh token.
    pub fn add_refresh(&self, jti: &str, did: &str, expires_at: i64) -> rusqlite::Result<()> {
        self.conn().execute(
            "INSERT INTO refresh_tokens (jti, did, expires_at) VALUES (?1, ?2, ?3)",
            params![jti, did, expires_at],
        )?;
        Ok(())
    }

    /// Deletes a refresh token; returns whether it was live (for `did`).
    pub fn take_refresh(&self, jti: &str, did: &str) -> rusqlite::Result<bool> {
        let found: Option<String> = self
            .conn()
            .query_row(
                "DELETE FROM refresh_tokens WHERE jti = ?1 RETURNING did",
                [jti],
                |r| r.get(0),
            )
            .optional()?;
        Ok(found.as_deref() == Some(did))
    }
}

impl Maps {
    fn insert(&mut self, a: Arc<Account>) {
        self.by_handle.insert(a.handle.clone(), a.clone());
        if let Some(e) = &a.email {
            self.by_email.insert(e.clone(), a.clone());
        }
        self.by_did.insert(a.did.clone(), a);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acct(did: &str, handle: &str) -> Account {
        Account::new(
            did.into(),
            handle.into(),
            Some(format!("{handle}@example.com")),
            "scrypt$x".into(),
            "did:key:z".into(),
            "http://localhost",
        )
    }

    #[test]
    fn did_doc_is_rendered_once_and_is_json() {
        let a = acct("did:plc:a", "alice.test");
        let doc: serde_json::Value = serde_json::from_str(&a.did_doc).unwrap();
        assert_eq!(doc["id"], "did:plc:a");
        assert_eq!(doc["alsoKnownAs"][0], "at://alice.test");
        assert_eq!(doc["verificationMethod"][0]["id"], "did:plc:a#atproto");
        assert_eq!(doc["verificationMethod"][0]["publicKeyMultibase"], "z");
        assert_eq!(doc["service"][0]["serviceEndpoint"], "http://localhost");
    }

    #[test]
    fn reserve_persists_and_refuses_duplicates() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.accounts");
        {
            let a = Accounts::open(&p, false, "http://localhost").unwrap();
            a.reserve(acct("did:plc:a", "alice.test")).unwrap();
            assert!(matches!(
                a.reserve(acct("did:plc:b", "alice.test")),
                Err(ReserveError::Taken)
            ));
            a.add_refresh("j", "did:plc:a", i64::MAX).unwrap();
        }
        let a = Accounts::open(&p, false, "http://localhost").unwrap();
        assert_eq!(a.by_handle("ALICE.test").unwrap().did, "did:plc:a");
        assert_eq!(
            a.by_identifier("alice.test@example.com").unwrap().did,
            "did:plc:a"
        );
        assert!(!a.take_refresh("j", "did:plc:b").unwrap());
        assert!(!a.take_refresh("j", "did:plc:a").unwrap());
        a.add_refresh("k", "did:plc:a", i64::MAX).unwrap();
        assert!(a.take_refresh("k", "did:plc:a").unwrap());
        assert_eq!(a.retain(|_| false).unwrap(), 1);
        assert!(a.by_did("did:plc:a").is_none());
    }
}
