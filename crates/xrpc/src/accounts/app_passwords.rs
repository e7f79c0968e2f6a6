//! App passwords: the rows of the account file's `app_passwords` table and
//! their in-memory copy (which app-password sessions are still live).
//!
//! An app password is `xxxx-xxxx-xxxx-xxxx` (16 characters of the base32
//! alphabet, the reference's shape), shown once by `createAppPassword`
//! and stored as a scrypt hash (`password.rs`, the account passwords'
//! KDF and cost). Its salt is derived from the account's DID and the
//! cost, as the reference salts app-password hashes with the DID, so a
//! login with an app password runs one scrypt however many app passwords
//! the account holds: the candidate is hashed once and compared with each
//! stored hash.
//!
//! Each app password has a random id that its sessions' tokens carry
//! (`auth.rs`, claim `apw`); revoking it removes the id from the live set,
//! which every token check consults, so the sessions made with it end at
//! once (access and refresh tokens alike).

use std::collections::HashMap;

use rusqlite::params;

use super::Accounts;

/// App passwords one account may hold (the lexicon sets no bound; this
/// bounds the account file and the list answer).
pub const MAX_PER_ACCOUNT: usize = 50;
/// Longest app-password name (bytes).
pub const MAX_NAME_BYTES: usize = 128;

/// One app password (its hash, never the password).
#[derive(Debug, Clone)]
pub struct AppPassword {
    /// Random id, carried by its sessions' tokens.
    pub id: String,
    /// The name the user gave it, unique per account.
    pub name: String,
    /// Its scrypt hash.
    pub hash: String,
    /// Whether its sessions may use privileged methods.
    pub privileged: bool,
    /// RFC 3339 creation time.
    pub created_at: String,
}

pub(crate) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS app_passwords (
    did        TEXT NOT NULL,
    name       TEXT NOT NULL,
    id         TEXT NOT NULL UNIQUE,
    hash       TEXT NOT NULL,
    privileged INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (did, name)
);
";

/// Why a new app password was refused.
#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    /// The account already has one of that name.
    #[error("an app password of that name already exists")]
    Taken,
    /// The account holds [`MAX_PER_ACCOUNT`].
    #[error("too many app passwords (at most {MAX_PER_ACCOUNT})")]
    TooMany,
    /// SQLite failed.
    #[error("account file: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

/// The app passwords of every account, by DID.
pub(crate) type Live = HashMap<String, Vec<AppPassword>>;

/// Loads every app password of the account file.
pub(crate) fn load(conn: &rusqlite::Connection) -> rusqlite::Result<Live> {
    let mut st = conn.prepare(
        "SELECT did, id, name, hash, privileged, created_at FROM app_passwords \
         ORDER BY did, created_at, name",
    )?;
    let rows = st.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            AppPassword {
                id: r.get(1)?,
                name: r.get(2)?,
                hash: r.get(3)?,
                privileged: r.get(4)?,
                created_at: r.get(5)?,
            },
        ))
    })?;
    let mut live = Live::new();
    for row in rows {
        let (did, ap) = row?;
        live.entry(did).or_default().push(ap);
    }
    Ok(live)
}

/// Whether `s` has the shape of an app password (`xxxx-xxxx-xxxx-xxxx`,
/// lower-case base32): only such a password is tried against them.
pub fn is_app_password(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 19
        && b.iter().enumerate().all(|(i, &c)| {
            if i % 5 == 4 {
                c == b'-'
            } else {
                c.is_ascii_lowercase() || (b'2'..=b'7').contains(&c)
            }
        })
}

/// A fresh app password.
pub fn generate() -> Result<String, getrandom::Error> {
    const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
    let mut raw = [0u8; 16];
    getrandom::fill(&mut raw)?;
    let mut out = String::with_capacity(19);
    for (i, r) in raw.iter().enumerate() {
        if i > 0 && i % 4 == 0 {
            out.push('-');
        }
        out.push(ALPHABET[(r & 31) as usize] as char);
    }
    Ok(out)
}

/// The salt of `did`'s app-password hashes.
pub fn salt(did: &str) -> [u8; 16] {
    use sha2::Digest;
    let d = sha2::Sha256::digest(format!("atpds app password\0{did}").as_bytes());
    let mut s = [0u8; 16];
    s.copy_from_slice(&d[..16]);
    s
}

impl Accounts {
    /// `did`'s app passwords, oldest first.
    pub fn app_passwords(&self, did: &str) -> Vec<AppPassword> {
        self.app_pass_read().get(did).cloned().unwrap_or_default()
    }

    /// Whether the app password `id` of `did` is live.
    pub fn app_pass_live(&self, did: &str, id: &str) -> bool {
        self.app_pass_read()
            .get(did)
            .is_some_and(|v| v.iter().any(|a| a.id == id))
    }

    /// Records a new app password for `did`.
    pub fn add_app_password(&self, did: &str, ap: AppPassword) -> Result<(), CreateError> {
        let conn = self.conn();
        {
            let live = self.app_pass_read();
            let have = live.get(did).map_or(&[][..], |v| v.as_slice());
            if have.iter().any(|a| a.name == ap.name) {
                return Err(CreateError::Taken);
            }
            if have.len() >= MAX_PER_ACCOUNT {
                return Err(CreateError::TooMany);
            }
        }
        let inserted = conn.execute(
            "INSERT INTO app_passwords (did, name, id, hash, privileged, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![did, ap.name, ap.id, ap.hash, ap.privileged, ap.created_at],
        );
        match inserted {
            Ok(_) => {}
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::ConstraintViolation =>
            {
                return Err(CreateError::Taken);
            }
            Err(e) => return Err(e.into()),
        }
        self.app_pass_write()
            .entry(did.to_owned())
            .or_default()
            .push(ap);
        Ok(())
    }

    /// Revokes `did`'s app password `name`; whether there was one. Its
    /// sessions end: their tokens carry its id, no longer live.
    pub fn revoke_app_password(&self, did: &str, name: &str) -> rusqlite::Result<bool> {
        let conn = self.conn();
        let n = conn.execute(
            "DELETE FROM app_passwords WHERE did = ?1 AND name = ?2",
            [did, name],
        )?;
        let mut live = self.app_pass_write();
        if let Some(v) = live.get_mut(did) {
            v.retain(|a| a.name != name);
            if v.is_empty() {
                live.remove(did);
            }
        }
        Ok(n > 0)
    }

    /// Drops every app password of `did` (the account is gone).
    pub(crate) fn drop_app_passwords(
        &self,
        conn: &rusqlite::Connection,
        did: &str,
    ) -> rusqlite::Result<()> {
        conn.execute("DELETE FROM app_passwords WHERE did = ?1", [did])?;
        self.app_pass_write().remove(did);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_passwords_have_the_shape() {
        for _ in 0..100 {
            let p = generate().unwrap();
            assert!(is_app_password(&p), "{p}");
        }
        assert!(!is_app_password("abcd-efgh-ijkl-mno"));
        assert!(!is_app_password("abcd-efgh-ijkl-mnop-"));
        assert!(!is_app_password("abcd_efgh-ijkl-mnop"));
        assert!(!is_app_password("ABCD-efgh-ijkl-mnop"));
        assert!(!is_app_password("abc1-efgh-ijkl-mnop"));
    }

    #[test]
    fn add_list_revoke_persist() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.accounts");
        let ap = |id: &str, name: &str| AppPassword {
            id: id.into(),
            name: name.into(),
            hash: "scrypt$x".into(),
            privileged: false,
            created_at: "2026-12-05T00:00:00.000Z".into(),
        };
        {
            let a = Accounts::open(&p, false, "http://localhost").unwrap();
            a.add_app_password("did:plc:a", ap("i1", "one")).unwrap();
            a.add_app_password("did:plc:a", ap("i2", "two")).unwrap();
            assert!(matches!(
                a.add_app_password("did:plc:a", ap("i3", "one")),
                Err(CreateError::Taken)
            ));
            // Another account may use the name.
            a.add_app_password("did:plc:b", ap("i4", "one")).unwrap();
        }
        let a = Accounts::open(&p, false, "http://localhost").unwrap();
        let names: Vec<_> = a
            .app_passwords("did:plc:a")
            .into_iter()
            .map(|x| x.name)
            .collect();
        assert_eq!(names, ["one", "two"]);
        assert!(a.app_pass_live("did:plc:a", "i1"));
        assert!(!a.app_pass_live("did:plc:b", "i1"));
        assert!(a.revoke_app_password("did:plc:a", "one").unwrap());
        assert!(!a.revoke_app_password("did:plc:a", "one").unwrap());
        assert!(!a.app_pass_live("did:plc:a", "i1"));
        assert!(a.app_pass_live("did:plc:b", "i4"));
        for i in 0..MAX_PER_ACCOUNT - 1 {
            a.add_app_password("did:plc:a", ap(&format!("x{i}"), &format!("n{i}")))
                .unwrap();
        }
        assert!(matches!(
            a.add_app_password("did:plc:a", ap("y", "last")),
            Err(CreateError::TooMany)
        ));
    }
}
