//! [`SpaceStore`]: the connections to the store's SQLite file, spaces and
//! members, and the access check.
//!
//! One writer connection behind a mutex (a write batch is one IMMEDIATE
//! transaction on it) and a bounded pool of reader connections: a read
//! never waits for the writer mutex, and the writer mutex is never held
//! while a record is encoded, a CID hashed or an added element expanded
//! (`write.rs` does those first), nor while blobs are read (blobs stay in
//! the store's `blobs` table and are served by the store).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use repo::syntax::TidGenerator;
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

use crate::error::{Result, SpaceError};
use crate::lthash::LtHash;
use crate::schema;
use crate::sql;
use crate::types::{Need, Policy, SpaceInfo};
use crate::uri::{SpaceRef, check_did};

/// How to open a [`SpaceStore`].
#[derive(Clone, Debug)]
pub struct Config {
    /// synchronous FULL (power-loss durable) instead of NORMAL.
    pub durable: bool,
    /// Let this crate's commits run SQLite's automatic checkpoints; turn it
    /// off when a running store's checkpointer owns the WAL.
    pub autocheckpoint: bool,
    /// Reader connections kept open (more are opened under load and
    /// closed on return).
    pub readers: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            durable: false,
            autocheckpoint: true,
            readers: 8,
        }
    }
}

/// The spaces in one SQLite file.
pub struct SpaceStore {
    path: PathBuf,
    config: Config,
    pub(crate) writer: Mutex<Connection>,
    readers: Mutex<Vec<Connection>>,
    pub(crate) tids: TidGenerator,
}

/// A pooled reader, returned to the pool on drop.
pub(crate) struct Reader<'a> {
    store: &'a SpaceStore,
    conn: Option<Connection>,
}

impl std::ops::Deref for Reader<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        // Set in `reader()`, taken only in drop.
        self.conn
            .as_ref()
            .expect("reader connection present until drop")
    }
}

impl std::ops::DerefMut for Reader<'_> {
    fn deref_mut(&mut self) -> &mut Connection {
        self.conn
            .as_mut()
            .expect("reader connection present until drop")
    }
}

impl Drop for Reader<'_> {
    fn drop(&mut self) {
        if let Some(c) = self.conn.take() {
            let mut pool = self.store.readers.lock().unwrap_or_else(|p| p.into_inner());
            if pool.len() < self.store.config.readers {
                pool.push(c);
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl SpaceStore {
    /// Opens (creating if needed) the space tables in the SQLite file at
    /// `path`: the store's database, or a file of its own.
    pub fn open(path: impl AsRef<Path>, config: Config) -> Result<SpaceStore> {
        let path = path.as_ref().to_path_buf();
        let mut writer = Connection::open(&path)?;
        schema::apply_pragmas(&writer, config.durable, config.autocheckpoint)?;
        schema::migrate(&mut writer)?;
        let mut clock = [0u8; 2];
        let _ = getrandom::fill(&mut clock);
        Ok(SpaceStore {
            path,
            config,
            writer: Mutex::new(writer),
            readers: Mutex::new(Vec::new()),
            tids: TidGenerator::new(u16::from_le_bytes(clock)),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn reader(&self) -> Result<Reader<'_>> {
        let pooled = lock(&self.readers).pop();
        let conn = match pooled {
            Some(c) => c,
            None => {
                let c = Connection::open_with_flags(
                    &self.path,
                    OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                )?;
                schema::apply_pragmas(&c, self.config.durable, false)?;
                c.pragma_update(None, "query_only", true)?;
                c
            }
        };
        Ok(Reader {
            store: self,
            conn: Some(conn),
        })
    }

    /// Creates a space anchored on `authority` (the caller), with an empty
    /// writer repo for the authority and the authority as a read-write
    /// member. `skey` defaults to a fresh TID.
    pub fn create_space(
        &self,
        authority: &str,
        space_type: &str,
        skey: Option<&str>,
        policy: Policy,
        app_access: &str,
    ) -> Result<SpaceRef> {
        let tid;
        let skey = match skey {
            Some(s) => s,
            None => {
                tid = self.tids.next_tid().encode();
                std::str::from_utf8(&tid).unwrap_or("2222222222222")
            }
        };
        let space = SpaceRef::new(authority, space_type, skey)?;
        let uri = space.to_uri();
        let now = now_iso();
        let mut w = lock(&self.writer);
        let tx = w.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let exists: Option<i64> = tx
            .prepare_cached(sql::SPACE_BY_URI)?
            .query_row([&uri], |r| r.get(0))
            .optional()?;
        if exists.is_some() {
            return Err(SpaceError::SpaceAlreadyExists(uri));
        }
        tx.prepare_cached(sql::SPACE_INSERT)?.execute(params![
            uri,
            authority,
            space_type,
            skey,
            policy.as_str(),
            Option::<&str>::None,
            app_access,
            now
        ])?;
        let id = tx.last_insert_rowid();
        tx.prepare_cached(sql::REPO_INSERT)?.execute(params![
            id,
            authority,
            &LtHash::new().to_bytes()[..],
            ""
        ])?;
        tx.prepare_cached(sql::MEMBER_UPSERT)?
            .execute(params![id, authority, true, true])?;
        tx.commit()?;
        Ok(space)
    }

    /// Adds or changes a member's access.
    pub fn put_member(&self, space: &SpaceRef, did: &str, read: bool, write: bool) -> Result<()> {
        check_did("member", did)?;
        let info = self.space(space)?;
        let w = lock(&self.writer);
        w.prepare_cached(sql::MEMBER_UPSERT)?
            .execute(params![info.id, did, read, write])?;
        Ok(())
    }

    /// Removes a member (the authority stays).
    pub fn remove_member(&self, space: &SpaceRef, did: &str) -> Result<()> {
        let info = self.space(space)?;
        if did == info.authority {
            return Err(SpaceError::Forbidden(
                "the authority cannot be removed from its space".into(),
            ));
        }
        let w = lock(&self.writer);
        w.prepare_cached(sql::MEMBER_DELETE)?
            .execute(params![info.id, did])?;
        Ok(())
    }

    /// Members after `cursor` (a DID), in DID order: `(did, read, write)`.
    pub fn members(
        &self,
        space: &SpaceRef,
        cursor: Option<&str>,
        limit: u32,
    ) -> Result<Vec<(String, bool, bool)>> {
        let info = self.space(space)?;
        let r = self.reader()?;
        let mut st = r.prepare_cached(sql::MEMBERS)?;
        let rows = st.query_map(
            params![
                info.id,
                cursor.unwrap_or(""),
                limit.clamp(1, crate::MAX_LIMIT)
            ],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// Marks the space deleted: its reads and writes then fail with
    /// `SpaceNotFound` (rows stay until a compaction this crate does not
    /// run yet).
    pub fn delete_space(&self, space: &SpaceRef) -> Result<()> {
        let info = self.space(space)?;
        let w = lock(&self.writer);
        w.prepare_cached(sql::SPACE_MARK_DELETED)?
            .execute(params![info.id, now_iso()])?;
        Ok(())
    }

    /// The spaces `authority` owns, after `cursor`, in URI order.
    pub fn spaces_of(
        &self,
        authority: &str,
        cursor: Option<&str>,
        limit: u32,
    ) -> Result<Vec<String>> {
        let r = self.reader()?;
        let mut st = r.prepare_cached(sql::SPACES_OF)?;
        let rows = st.query_map(
            params![
                authority,
                cursor.unwrap_or(""),
                limit.clamp(1, crate::MAX_LIMIT)
            ],
            |r| r.get(0),
        )?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// The space's row (not deleted).
    pub fn space(&self, space: &SpaceRef) -> Result<SpaceInfo> {
        let r = self.reader()?;
        space_row(&r, space)
    }

    /// Checks that `caller` may do `need` in `space`, and returns the
    /// space: the authority may do anything; a member reads with read
    /// access and writes (into its own repo only) with write access; a
    /// public space is read by anyone; a personal space admits only the
    /// authority.
    pub fn authorize(&self, space: &SpaceRef, caller: &str, need: Need<'_>) -> Result<SpaceInfo> {
        let r = self.reader()?;
        let info = space_row(&r, space)?;
        if caller == info.authority {
            return match need {
                Need::Write { repo } if repo != caller => Err(SpaceError::Forbidden(format!(
                    "{caller} may write only into its own repo, not {repo}"
                ))),
                _ => Ok(info),
            };
        }
        let member: Option<(bool, bool)> = r
            .prepare_cached(sql::MEMBER_GET)?
            .query_row(params![info.id, caller], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        let (read, write) = match info.policy {
            Policy::Personal => (false, false),
            Policy::MemberList => member.unwrap_or((false, false)),
            Policy::Public => (true, member.is_some_and(|m| m.1)),
        };
        let ok = match need {
            Need::Read => read,
            Need::Write { repo } => {
                if repo != caller {
                    return Err(SpaceError::Forbidden(format!(
                        "{caller} may write only into its own repo, not {repo}"
                    )));
                }
                write
            }
            Need::Admin => false,
        };
        if ok {
            Ok(info)
        } else {
            let what = match need {
                Need::Read => "read",
                Need::Write { .. } => "write",
                Need::Admin => "manage",
            };
            Err(SpaceError::Forbidden(format!(
                "{caller} may not {what} {space}"
            )))
        }
    }
}

pub(crate) fn space_row(conn: &Connection, space: &SpaceRef) -> Result<SpaceInfo> {
    let uri = space.to_uri();
    let row: Option<(i64, String, String, Option<String>)> = conn
        .prepare_cached(sql::SPACE_BY_URI)?
        .query_row([&uri], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .optional()?;
    match row {
        Some((id, authority, policy, None)) => Ok(SpaceInfo {
            id,
            authority,
            policy: Policy::parse(&policy)
                .ok_or_else(|| SpaceError::Corrupt(format!("policy {policy:?}")))?,
        }),
        _ => Err(SpaceError::SpaceNotFound(uri)),
    }
}

/// Now as an RFC 3339 UTC datetime with milliseconds (`codec::datetime`
/// owns the civil-date arithmetic).
fn now_iso() -> String {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis();
    codec::datetime::rfc3339_millis(i64::try_from(ms).unwrap_or(i64::MAX))
}
