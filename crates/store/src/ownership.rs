//! Who may open a database file, and how: one writer process, many readers.
//!
//! **One writer.** A store opened for writing holds an exclusive advisory
//! lock (`flock`) on `<database>.lock` beside the database, with its pid
//! written in the file, for as long as it is open. A second writer, in
//! this process or another, gets [`StoreError::Locked`] naming the
//! database and the holder's pid instead of a store whose cached sequence
//! numbers collide with the first one's. The kernel drops the lock when
//! the holder exits, however it exits, so a crash leaves no stale lock
//! (the file stays, holding the last pid; it is not a lock by itself).
//! Readers ([`crate::Store::open_read_only`]) take no lock: SQLite's WAL
//! lets them read while the writer writes.
//!
//! **Our databases only.** A database the store creates is stamped with
//! `PRAGMA application_id` = [`APPLICATION_ID`] (ASCII "atst") and its
//! schema version in `user_version`. Opening refuses, before changing
//! anything in it, a file that is not SQLite, or an SQLite database with
//! another application id or with tables but no stamp
//! ([`StoreError::ForeignDatabase`]). A database from before the stamp
//! (our tables, `user_version` set, application id 0) is stamped on its
//! next writable open.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use rusqlite::Connection;

use crate::error::{Result, StoreError};

/// `PRAGMA application_id` of an atbench store: ASCII "atst".
pub const APPLICATION_ID: i64 = 0x6174_7374;

/// The writer's hold on a database: released when dropped.
#[derive(Debug)]
pub(crate) struct WriterLock {
    _file: File,
}

/// `<database>.lock`.
pub(crate) fn lock_path(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

fn io<'p>(path: &'p Path, op: &'static str) -> impl FnOnce(std::io::Error) -> StoreError + 'p {
    move |source| StoreError::File {
        path: path.to_path_buf(),
        op,
        source,
    }
}

impl WriterLock {
    /// Takes the exclusive writer lock of `db`, or says who holds it.
    pub(crate) fn acquire(db: &Path) -> Result<WriterLock> {
        let path = lock_path(db);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io(&path, "open the lock file"))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                // The holder writes its pid just after it locks: give it a
                // moment before saying "another process".
                let mut pid = None;
                for _ in 0..50 {
                    let mut text = String::new();
                    pid = file
                        .seek(SeekFrom::Start(0))
                        .and_then(|_| file.read_to_string(&mut text))
                        .ok()
                        .and_then(|_| text.trim().parse::<u32>().ok());
                    if pid.is_some() {
                        break;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                return Err(StoreError::Locked {
                    path: db.to_path_buf(),
                    pid,
                });
            }
            Err(TryLockError::Error(e)) => return Err(io(&path, "lock")(e)),
        }
        file.set_len(0).map_err(io(&path, "write the lock file"))?;
        file.seek(SeekFrom::Start(0))
            .and_then(|_| writeln!(file, "{}", std::process::id()))
            .map_err(io(&path, "write the lock file"))?;
        Ok(WriterLock { _file: file })
    }
}

/// What a database file holds, read without changing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Identity {
    /// No file, an empty file, or an SQLite database with no tables.
    Fresh,
    /// One of ours (stamped, or our tables from before the stamp).
    Ours { stamped: bool, version: i64 },
}

/// `error` as [`StoreError::ForeignDatabase`] when SQLite says `db` is not
/// a database at all.
pub(crate) fn foreign_if_not_a_database(error: StoreError, db: &Path) -> StoreError {
    match error {
        StoreError::Sqlite(rusqlite::Error::SqliteFailure(e, _))
            if e.code == rusqlite::ErrorCode::NotADatabase =>
        {
            StoreError::ForeignDatabase {
                path: db.to_path_buf(),
                detail: "not an SQLite database".into(),
            }
        }
        other => other,
    }
}

/// Reads the identity of `db` through `conn` (open on it, nothing written
/// yet) with one query; a foreign file is an error.
pub(crate) fn identify(conn: &Connection, db: &Path) -> Result<Identity> {
    let foreign = |detail: String| StoreError::ForeignDatabase {
        path: db.to_path_buf(),
        detail,
    };
    let row = conn.query_row(
        "SELECT (SELECT application_id FROM pragma_application_id), \
                (SELECT user_version FROM pragma_user_version), \
                (SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'), \
                (SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' \
                   AND name IN ('repo_root', 'repo_blocks', 'records', 'seq_events'))",
        [],
        |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, i64>(3)?,
            ))
        },
    );
    let (app, version, tables, ours) = row.map_err(|e| foreign_if_not_a_database(e.into(), db))?;
    match app {
        APPLICATION_ID => Ok(Identity::Ours {
            stamped: true,
            version,
        }),
        0 if tables == 0 => Ok(Identity::Fresh),
        0 if version > 0 && ours == 4 => Ok(Identity::Ours {
            stamped: false,
            version,
        }),
        0 => Err(foreign(format!(
            "an SQLite database with {tables} tables of another application"
        ))),
        other => Err(foreign(format!(
            "an SQLite database of application id {other:#x}, not atbench's {APPLICATION_ID:#x}"
        ))),
    }
}

/// Stamps a database we own (called by the writable open after its
/// migrations).
pub(crate) fn stamp(conn: &Connection) -> Result<()> {
    conn.execute_batch(&format!("PRAGMA application_id = {APPLICATION_ID}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_writer_is_refused_with_the_holders_pid() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("a.sqlite");
        let first = WriterLock::acquire(&db).expect("first writer");
        match WriterLock::acquire(&db) {
            Err(StoreError::Locked { path, pid }) => {
                assert_eq!(path, db);
                assert_eq!(pid, Some(std::process::id()));
            }
            other => panic!("expected Locked, got {other:?}"),
        }
        drop(first);
        WriterLock::acquire(&db).expect("free again once the first is gone");
    }

    fn identify_file(db: &Path) -> Result<Identity> {
        let conn = Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
        identify(&conn, db)
    }

    #[test]
    fn foreign_files_are_named_and_refused() {
        let dir = tempfile::tempdir().unwrap();
        let text = dir.path().join("notes.txt");
        std::fs::write(&text, "hello, not a database at all").unwrap();
        assert!(matches!(
            identify_file(&text),
            Err(StoreError::ForeignDatabase { .. })
        ));
        let other = dir.path().join("other.sqlite");
        let conn = Connection::open(&other).unwrap();
        conn.execute_batch("CREATE TABLE t (x); PRAGMA application_id = 7;")
            .unwrap();
        drop(conn);
        let err = identify_file(&other).unwrap_err();
        assert!(err.to_string().contains("other.sqlite"), "{err}");
        let plain = dir.path().join("plain.sqlite");
        Connection::open(&plain)
            .unwrap()
            .execute_batch("CREATE TABLE t (x)")
            .unwrap();
        assert!(matches!(
            identify_file(&plain),
            Err(StoreError::ForeignDatabase { .. })
        ));
        let empty = dir.path().join("empty.sqlite");
        std::fs::write(&empty, b"").unwrap();
        assert_eq!(identify_file(&empty).unwrap(), Identity::Fresh);
    }
}
