//! `atpds --snapshot FILE`: the server's files restored from a backup
//! before it starts, so that a startup bench (or an operator) can start
//! from a copy of a real store and leave the backup untouched.
//!
//! The store file and its account file (`FILE.accounts`, when present) are
//! copied with SQLite's online backup API from a read-only connection to
//! the backup: a consistent copy even if another process writes to the
//! backup meanwhile, whatever its journal mode, and the backup is never
//! written (not even a WAL checkpoint). The secret file (`FILE.secret`,
//! when present) is copied as bytes. Whatever the destination held before
//! (its `-wal` and `-shm` files included) is removed first: the copy
//! replaces it whole.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use crate::app::beside;
use crate::error::ServerError;

/// Copies the database at `src` over `dst` through the backup API, `src`
/// opened read-only.
fn copy_database(src: &Path, dst: &Path) -> Result<(), ServerError> {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        match std::fs::remove_file(beside(dst, suffix)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
    }
    let from = Connection::open_with_flags(
        src,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    let mut to = Connection::open(dst)?;
    let backup = rusqlite::backup::Backup::new(&from, &mut to)?;
    // All pages in one step: the copy holds the source's read lock once.
    match backup.step(-1)? {
        rusqlite::backup::StepResult::Done => Ok(()),
        other => Err(ServerError::Startup(format!(
            "snapshot {}: the backup stopped early ({other:?})",
            src.display()
        ))),
    }
}

/// Restores the backup `src` (a store file, with its `.accounts` and
/// `.secret` files beside it when they exist) as the store `db`.
pub fn restore_snapshot(src: &Path, db: &Path) -> Result<(), ServerError> {
    if !src.is_file() {
        return Err(ServerError::Startup(format!(
            "snapshot {} is not a file",
            src.display()
        )));
    }
    if src.canonicalize()? == db.canonicalize().unwrap_or_else(|_| db.to_path_buf()) {
        return Err(ServerError::Startup(format!(
            "snapshot {} is the store itself",
            src.display()
        )));
    }
    copy_database(src, db)?;
    let accounts = beside(src, ".accounts");
    if accounts.is_file() {
        copy_database(&accounts, &beside(db, ".accounts"))?;
    }
    let secret = beside(src, ".secret");
    if secret.is_file() {
        std::fs::copy(&secret, beside(db, ".secret"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(path: &Path) -> Vec<(i64, String)> {
        let c = Connection::open(path).unwrap();
        let mut st = c.prepare("SELECT a, b FROM t ORDER BY a").unwrap();
        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn copies_the_store_and_its_account_file_and_replaces_what_was_there() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("backup.sqlite");
        let c = Connection::open(&src).unwrap();
        c.pragma_update(None, "journal_mode", "WAL").unwrap();
        c.execute_batch("CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT); INSERT INTO t VALUES (1, 'one'), (2, 'two');")
            .unwrap();
        let acc = Connection::open(beside(&src, ".accounts")).unwrap();
        acc.execute_batch(
            "CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT); INSERT INTO t VALUES (7, 'alice');",
        )
        .unwrap();
        std::fs::write(beside(&src, ".secret"), "secret text").unwrap();

        let db = dir.path().join("pds.sqlite");
        std::fs::write(&db, b"not a database").unwrap();
        std::fs::write(beside(&db, "-wal"), b"stale wal").unwrap();
        restore_snapshot(&src, &db).unwrap();
        assert_eq!(table(&db), vec![(1, "one".into()), (2, "two".into())]);
        assert_eq!(table(&beside(&db, ".accounts")), vec![(7, "alice".into())]);
        assert_eq!(
            std::fs::read_to_string(beside(&db, ".secret")).unwrap(),
            "secret text"
        );
        // The copy is its own file: writing it leaves the backup as it was
        // (the source connection is still open in WAL mode here).
        Connection::open(&db)
            .unwrap()
            .execute("INSERT INTO t VALUES (3, 'three')", [])
            .unwrap();
        assert_eq!(table(&src).len(), 2);
        drop(c);
    }

    #[test]
    fn refuses_a_missing_backup_and_the_store_itself() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("pds.sqlite");
        assert!(restore_snapshot(&dir.path().join("none.sqlite"), &db).is_err());
        Connection::open(&db)
            .unwrap()
            .execute_batch("CREATE TABLE t(a)")
            .unwrap();
        assert!(restore_snapshot(&db, &db).is_err());
    }
}
