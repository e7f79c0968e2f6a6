//! The writer's VFS: SQLite's own unix VFS, except that the writer's WAL
//! writes are coalesced into one `pwrite` per commit.
//!
//! SQLite appends each WAL frame with two `write` calls (the 24-byte frame
//! header, then the page), so a commit of 20 pages costs 40 system calls.
//! Measured on the 2-core bench VM (ext4), a single-caller createRecord
//! spent more time in the kernel than in user space, most of it in those
//! calls. This VFS gathers the WAL writes of one transaction in a buffer
//! and hands them to the underlying VFS in one write, at the latest when
//! the transaction's commit frame is complete.
//!
//! What makes this safe:
//! - A commit frame is recognised by its header (WAL format: bytes 4..8 of a
//!   frame header hold the database size after the commit, and are zero for
//!   every other frame). The buffer is written out as soon as the page that
//!   follows such a header is buffered, which is before SQLite publishes
//!   the frames in the wal-index (`walFrames` writes every frame first), so
//!   no reader, checkpointer or crashed process can see a committed frame
//!   that is not in the file.
//! - Every other operation on the WAL (read, sync, truncate, size, file
//!   control, memory map, close) writes the buffer out first, so the
//!   connection itself always reads what it wrote, and `synchronous = FULL`
//!   syncs exactly what it would have synced.
//! - Only files SQLite opens with `SQLITE_OPEN_WAL` are wrapped; the
//!   database file, its locks and the shared-memory index go straight to
//!   the unix VFS (the wrapped file *is* the unix VFS's file). Readers and
//!   the checkpointer use the default VFS; they share the unix VFS's
//!   per-process lock table with the writer because the same VFS opens
//!   every file.
//!
//! A failed write of the buffer is reported as the error of the call that
//! triggered it (for a commit, the write of its last page), so SQLite rolls
//! the transaction back as it would after any failed frame write.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::mem::size_of;
use std::ptr;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicPtr, Ordering};

use rusqlite::ffi;

/// The name the writer's connection opens with.
pub(crate) const NAME: &CStr = c"atstore-coalesce";

/// Past this many buffered bytes the buffer is written out even inside a
/// transaction (a large applyWrites spills frames before its commit).
const FLUSH_AT: usize = 1 << 20;

/// The largest write handed to the unix VFS at once: its `seekAndWrite`
/// takes at most 128 KiB - 1 per call (it masks the length with 0x1ffff).
const MAX_WRITE: usize = 0x1_0000 + 0xF000;

/// The unix VFS we wrap (set once, before registration).
static PARENT: AtomicPtr<ffi::sqlite3_vfs> = AtomicPtr::new(ptr::null_mut());

/// Registers the VFS once per process; later calls return the first
/// outcome.
pub(crate) fn register() -> Result<(), String> {
    static DONE: OnceLock<Result<(), String>> = OnceLock::new();
    DONE.get_or_init(|| {
        // SAFETY: sqlite3_vfs_find with NULL returns the default VFS (or
        // NULL); the struct it points to lives for the whole process.
        let parent = unsafe { ffi::sqlite3_vfs_find(ptr::null()) };
        if parent.is_null() {
            return Err("SQLite has no default VFS".into());
        }
        // SAFETY: non-null, a valid registered VFS (see above).
        let mut vfs: ffi::sqlite3_vfs = unsafe { *parent };
        let parent_size = usize::try_from(vfs.szOsFile).map_err(|e| e.to_string())?;
        let size = WalFile::inner_offset() + parent_size;
        vfs.szOsFile = c_int::try_from(size).map_err(|e| e.to_string())?;
        vfs.zName = NAME.as_ptr();
        vfs.pNext = ptr::null_mut();
        vfs.xOpen = Some(open);
        // `pAppData` and every other method stay the parent's: they only
        // consult the VFS struct for fields we copied.
        PARENT.store(parent, Ordering::Release);
        let vfs = Box::leak(Box::new(vfs));
        // SAFETY: `vfs` is a complete, 'static VFS struct; not the default.
        let rc = unsafe { ffi::sqlite3_vfs_register(vfs, 0) };
        if rc == ffi::SQLITE_OK {
            Ok(())
        } else {
            Err(format!("sqlite3_vfs_register failed with code {rc}"))
        }
    })
    .clone()
}

/// A wrapped WAL file: our method table first (SQLite's view), then the
/// buffer state, then the unix VFS's own file struct.
#[repr(C)]
struct WalFile {
    base: ffi::sqlite3_file,
    /// Bytes not yet written, starting at file offset `start`.
    buf: Vec<u8>,
    start: i64,
    /// The last buffered write was a commit frame's header.
    commit_header: bool,
}

impl WalFile {
    /// Offset of the unix VFS's file struct inside our allocation.
    const fn inner_offset() -> usize {
        // 16 covers every alignment a C file struct can ask for.
        const ALIGN: usize = 16;
        size_of::<WalFile>().div_ceil(ALIGN) * ALIGN
    }

    /// # Safety
    /// `f` must be a `WalFile` opened by [`open`].
    unsafe fn inner(f: *mut ffi::sqlite3_file) -> *mut ffi::sqlite3_file {
        // SAFETY: the allocation is `szOsFile` bytes, which holds the
        // parent's struct at `inner_offset` (see `register`).
        unsafe { f.cast::<u8>().add(Self::inner_offset()).cast() }
    }

    /// Writes the buffer out (no-op when empty).
    ///
    /// # Safety
    /// `f` must be a `WalFile` opened by [`open`].
    unsafe fn flush(f: *mut ffi::sqlite3_file) -> c_int {
        // SAFETY: caller's contract; SQLite uses one file from one thread
        // at a time.
        let w = unsafe { &mut *f.cast::<WalFile>() };
        if w.buf.is_empty() {
            return ffi::SQLITE_OK;
        }
        let mut rc = ffi::SQLITE_OK;
        let mut off = w.start;
        // SAFETY: the inner file is open with its parent's methods.
        let (inner, write) = unsafe {
            let inner = Self::inner(f);
            (inner, (*(*inner).pMethods).xWrite)
        };
        for chunk in w.buf.chunks(MAX_WRITE) {
            let Some(write) = write else {
                rc = ffi::SQLITE_IOERR_WRITE;
                break;
            };
            // `chunk.len()` <= MAX_WRITE fits a c_int.
            // SAFETY: `chunk` is readable for its length; the parent
            // copies it before returning.
            rc = unsafe { write(inner, chunk.as_ptr().cast(), chunk.len() as c_int, off) };
            if rc != ffi::SQLITE_OK {
                break;
            }
            off += chunk.len() as i64;
        }
        w.buf.clear();
        w.commit_header = false;
        rc
    }
}

/// The parent's method table of an open `WalFile`.
///
/// # Safety
/// `f` must be a `WalFile` opened by [`open`].
unsafe fn methods(f: *mut ffi::sqlite3_file) -> (*mut ffi::sqlite3_file, ffi::sqlite3_io_methods) {
    // SAFETY: caller's contract; the inner file was opened successfully.
    unsafe {
        let inner = WalFile::inner(f);
        (inner, *(*inner).pMethods)
    }
}

/// Flushes, then forwards to the parent's method `$m` (or returns `$none`
/// when the parent lacks it).
macro_rules! flush_then {
    ($f:expr, $m:ident, $none:expr, |$inner:ident, $x:ident| $call:expr) => {{
        // SAFETY: `$f` is a WalFile (only our method table reaches here).
        let rc = unsafe { WalFile::flush($f) };
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        // SAFETY: as above.
        let ($inner, m) = unsafe { methods($f) };
        match m.$m {
            // SAFETY: forwarding the caller's arguments to the parent.
            Some($x) => unsafe { $call },
            None => $none,
        }
    }};
}

unsafe extern "C" fn open(
    _vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let parent = PARENT.load(Ordering::Acquire);
    // SAFETY: `register` stored a valid VFS before registering us.
    let Some(parent_open) = (unsafe { (*parent).xOpen }) else {
        return ffi::SQLITE_CANTOPEN;
    };
    if flags & ffi::SQLITE_OPEN_WAL == 0 {
        // Not a WAL: the unix VFS's own file, in place.
        // SAFETY: our szOsFile is larger than the parent's.
        return unsafe { parent_open(parent, name, file, flags, out_flags) };
    }
    // SAFETY: SQLite gave us `szOsFile` writable bytes at `file`.
    unsafe {
        ptr::write(
            file.cast::<WalFile>(),
            WalFile {
                base: ffi::sqlite3_file {
                    pMethods: ptr::null(),
                },
                buf: Vec::new(),
                start: 0,
                commit_header: false,
            },
        );
        let inner = WalFile::inner(file);
        (*inner).pMethods = ptr::null();
        let rc = parent_open(parent, name, inner, flags, out_flags);
        if rc != ffi::SQLITE_OK || (*inner).pMethods.is_null() {
            if !(*inner).pMethods.is_null()
                && let Some(close) = (*(*inner).pMethods).xClose
            {
                close(inner);
            }
            ptr::drop_in_place(file.cast::<WalFile>());
            (*file).pMethods = ptr::null();
            return if rc == ffi::SQLITE_OK {
                ffi::SQLITE_CANTOPEN
            } else {
                rc
            };
        }
        (*file).pMethods = &WAL_METHODS;
    }
    ffi::SQLITE_OK
}

static WAL_METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 3,
    xClose: Some(close),
    xRead: Some(read),
    xWrite: Some(write),
    xTruncate: Some(truncate),
    xSync: Some(sync),
    xFileSize: Some(file_size),
    xLock: Some(lock),
    xUnlock: Some(unlock),
    xCheckReservedLock: Some(check_reserved_lock),
    xFileControl: Some(file_control),
    xSectorSize: Some(sector_size),
    xDeviceCharacteristics: Some(device_characteristics),
    xShmMap: Some(shm_map),
    xShmLock: Some(shm_lock),
    xShmBarrier: Some(shm_barrier),
    xShmUnmap: Some(shm_unmap),
    xFetch: Some(fetch),
    xUnfetch: Some(unfetch),
};

unsafe extern "C" fn close(f: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: `f` is a WalFile; after this it is never used again.
    unsafe {
        let flushed = WalFile::flush(f);
        let (inner, m) = methods(f);
        let rc = m.xClose.map_or(ffi::SQLITE_OK, |close| close(inner));
        ptr::drop_in_place(f.cast::<WalFile>());
        (*f).pMethods = ptr::null();
        if flushed != ffi::SQLITE_OK {
            flushed
        } else {
            rc
        }
    }
}

unsafe extern "C" fn read(
    f: *mut ffi::sqlite3_file,
    buf: *mut c_void,
    amt: c_int,
    off: i64,
) -> c_int {
    flush_then!(f, xRead, ffi::SQLITE_IOERR_READ, |inner, x| x(
        inner, buf, amt, off
    ))
}

unsafe extern "C" fn write(
    f: *mut ffi::sqlite3_file,
    data: *const c_void,
    amt: c_int,
    off: i64,
) -> c_int {
    let Ok(len) = usize::try_from(amt) else {
        return ffi::SQLITE_IOERR_WRITE;
    };
    // SAFETY: `f` is a WalFile; SQLite passes `amt` readable bytes.
    let (w, bytes) = unsafe {
        (
            &mut *f.cast::<WalFile>(),
            std::slice::from_raw_parts(data.cast::<u8>(), len),
        )
    };
    let end = w.start + w.buf.len() as i64;
    if !w.buf.is_empty() && off != end {
        // SAFETY: as above.
        let rc = unsafe { WalFile::flush(f) };
        if rc != ffi::SQLITE_OK {
            return rc;
        }
    }
    // SAFETY: as above (the flush may have run).
    let w = unsafe { &mut *f.cast::<WalFile>() };
    if w.buf.is_empty() {
        w.start = off;
    }
    w.buf.extend_from_slice(bytes);
    let completes_commit = w.commit_header;
    w.commit_header = is_commit_header(bytes);
    if completes_commit || w.buf.len() >= FLUSH_AT {
        // SAFETY: as above.
        return unsafe { WalFile::flush(f) };
    }
    ffi::SQLITE_OK
}

/// A WAL frame header (24 bytes) whose "database size after commit" field
/// (bytes 4..8) is set: the header of a transaction's last frame.
fn is_commit_header(bytes: &[u8]) -> bool {
    bytes.len() == 24 && bytes[4..8] != [0, 0, 0, 0]
}

unsafe extern "C" fn truncate(f: *mut ffi::sqlite3_file, size: i64) -> c_int {
    flush_then!(f, xTruncate, ffi::SQLITE_IOERR_TRUNCATE, |inner, x| x(
        inner, size
    ))
}

unsafe extern "C" fn sync(f: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    flush_then!(f, xSync, ffi::SQLITE_IOERR_FSYNC, |inner, x| x(
        inner, flags
    ))
}

unsafe extern "C" fn file_size(f: *mut ffi::sqlite3_file, size: *mut i64) -> c_int {
    flush_then!(f, xFileSize, ffi::SQLITE_IOERR_FSTAT, |inner, x| x(
        inner, size
    ))
}

unsafe extern "C" fn lock(f: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    flush_then!(f, xLock, ffi::SQLITE_OK, |inner, x| x(inner, level))
}

unsafe extern "C" fn unlock(f: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    flush_then!(f, xUnlock, ffi::SQLITE_OK, |inner, x| x(inner, level))
}

unsafe extern "C" fn check_reserved_lock(f: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    flush_then!(f, xCheckReservedLock, ffi::SQLITE_OK, |inner, x| x(
        inner, out
    ))
}

unsafe extern "C" fn file_control(f: *mut ffi::sqlite3_file, op: c_int, arg: *mut c_void) -> c_int {
    flush_then!(f, xFileControl, ffi::SQLITE_NOTFOUND, |inner, x| x(
        inner, op, arg
    ))
}

unsafe extern "C" fn sector_size(f: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: `f` is a WalFile.
    let (inner, m) = unsafe { methods(f) };
    // SAFETY: forwarding to the parent.
    m.xSectorSize.map_or(4096, |x| unsafe { x(inner) })
}

unsafe extern "C" fn device_characteristics(f: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: `f` is a WalFile.
    let (inner, m) = unsafe { methods(f) };
    // SAFETY: forwarding to the parent.
    m.xDeviceCharacteristics.map_or(0, |x| unsafe { x(inner) })
}

unsafe extern "C" fn shm_map(
    f: *mut ffi::sqlite3_file,
    page: c_int,
    size: c_int,
    extend: c_int,
    out: *mut *mut c_void,
) -> c_int {
    flush_then!(f, xShmMap, ffi::SQLITE_IOERR_SHMMAP, |inner, x| x(
        inner, page, size, extend, out
    ))
}

unsafe extern "C" fn shm_lock(
    f: *mut ffi::sqlite3_file,
    offset: c_int,
    n: c_int,
    flags: c_int,
) -> c_int {
    flush_then!(f, xShmLock, ffi::SQLITE_IOERR_SHMLOCK, |inner, x| x(
        inner, offset, n, flags
    ))
}

unsafe extern "C" fn shm_barrier(f: *mut ffi::sqlite3_file) {
    // SAFETY: `f` is a WalFile.
    let (inner, m) = unsafe { methods(f) };
    if let Some(x) = m.xShmBarrier {
        // SAFETY: forwarding to the parent.
        unsafe { x(inner) }
    }
}

unsafe extern "C" fn shm_unmap(f: *mut ffi::sqlite3_file, delete: c_int) -> c_int {
    flush_then!(f, xShmUnmap, ffi::SQLITE_OK, |inner, x| x(inner, delete))
}

unsafe extern "C" fn fetch(
    f: *mut ffi::sqlite3_file,
    off: i64,
    amt: c_int,
    out: *mut *mut c_void,
) -> c_int {
    // SAFETY: callers of xFetch accept a NULL page (read instead).
    unsafe { *out = ptr::null_mut() };
    flush_then!(f, xFetch, ffi::SQLITE_OK, |inner, x| x(
        inner, off, amt, out
    ))
}

unsafe extern "C" fn unfetch(f: *mut ffi::sqlite3_file, off: i64, page: *mut c_void) -> c_int {
    // SAFETY: `f` is a WalFile.
    let (inner, m) = unsafe { methods(f) };
    // SAFETY: forwarding to the parent.
    m.xUnfetch
        .map_or(ffi::SQLITE_OK, |x| unsafe { x(inner, off, page) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_headers_are_recognised() {
        let mut h = [0u8; 24];
        h[..4].copy_from_slice(&7u32.to_be_bytes());
        assert!(!is_commit_header(&h), "a frame with no commit size");
        h[4..8].copy_from_slice(&1234u32.to_be_bytes());
        assert!(is_commit_header(&h));
        assert!(!is_commit_header(&[1u8; 4096]), "a page is not a header");
        assert!(!is_commit_header(&[1u8; 32]), "the WAL header is 32 bytes");
    }

    use rusqlite::{Connection, OpenFlags, params};

    fn open_pair(path: &std::path::Path, cache_pages: i64, sync: &str) -> (Connection, Connection) {
        register().expect("register");
        let w = Connection::open_with_flags_and_vfs(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE,
            NAME,
        )
        .expect("writer");
        w.execute_batch(&format!(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = {sync}; \
             PRAGMA wal_autocheckpoint = 0; PRAGMA cache_size = {cache_pages}; \
             CREATE TABLE IF NOT EXISTS t (k INTEGER PRIMARY KEY, v BLOB NOT NULL);"
        ))
        .expect("schema");
        let r =
            Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).expect("reader");
        (w, r)
    }

    fn value(k: i64, len: usize) -> Vec<u8> {
        (0..len).map(|i| (k as usize * 31 + i * 7) as u8).collect()
    }

    /// Inserts row `k` with `value(k, len)`.
    fn put(w: &Connection, k: i64, len: usize) -> rusqlite::Result<usize> {
        w.execute(
            "INSERT INTO t (k, v) VALUES (?1, ?2)",
            params![k, value(k, len)],
        )
    }

    /// Sets row `k` to `value(of, len)`.
    fn set(w: &Connection, k: i64, of: i64, len: usize) -> rusqlite::Result<usize> {
        w.execute(
            "UPDATE t SET v = ?2 WHERE k = ?1",
            params![k, value(of, len)],
        )
    }

    fn check(conn: &Connection, keys: std::ops::Range<i64>, len: usize) {
        let mut st = conn
            .prepare("SELECT v FROM t WHERE k = ?1")
            .expect("prepare");
        for k in keys {
            let v: Vec<u8> = st.query_row(params![k], |r| r.get(0)).expect("row");
            assert_eq!(v, value(k, len), "row {k}");
        }
    }

    /// Commits are visible to another connection as soon as they return;
    /// transactions that spill past the page cache (frames written before
    /// the commit, pages rewritten in place, frames read back) and past
    /// the flush threshold, and rolled-back spills, leave an intact file.
    #[test]
    fn wal_writes_survive_spills_rollbacks_and_reopen() {
        for sync in ["NORMAL", "FULL"] {
            spills_rollbacks_and_reopen(sync);
        }
    }

    fn spills_rollbacks_and_reopen(sync: &str) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("v.sqlite");
        {
            // A 16-page cache makes every larger transaction spill.
            let (w, r) = open_pair(&path, 16, sync);
            for k in 0..50i64 {
                put(&w, k, 300).expect("small commit");
                check(&r, k..k + 1, 300);
            }
            // ~3 MiB in one transaction: spills, exceeds FLUSH_AT, updates
            // rows it wrote earlier in the same transaction.
            w.execute_batch("BEGIN").expect("begin");
            for k in 1000..1800i64 {
                put(&w, k, 3000).expect("insert");
            }
            for k in 1000..1100i64 {
                set(&w, k, k + 1, 3000).expect("update");
                set(&w, k, k, 3000).expect("update back");
            }
            w.execute_batch("COMMIT").expect("commit");
            check(&r, 1000..1800, 3000);
            // A spilled transaction rolled back leaves no trace.
            w.execute_batch("BEGIN").expect("begin");
            for k in 5000..5400i64 {
                put(&w, k, 3000).expect("insert");
            }
            w.execute_batch("ROLLBACK").expect("rollback");
            put(&w, 9, 10).expect_err("key 9 exists");
            put(&w, 60, 300).expect("commit after rollback");
            let n: i64 = r
                .query_row("SELECT COUNT(*) FROM t", [], |row| row.get(0))
                .expect("count");
            assert_eq!(n, 50 + 800 + 1);
            // A checkpoint through the writer, then more commits (WAL reuse).
            w.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
                .expect("checkpoint");
            for k in 100..120i64 {
                put(&w, k, 300).expect("commit after checkpoint");
            }
            check(&r, 100..120, 300);
        }
        // Reopened with the default VFS: everything is there and sound.
        let c = Connection::open(&path).expect("reopen");
        let ok: String = c
            .query_row("PRAGMA integrity_check", [], |row| row.get(0))
            .expect("integrity");
        assert_eq!(ok, "ok");
        check(&c, 0..50, 300);
        check(&c, 1000..1800, 3000);
        check(&c, 100..120, 300);
    }

    #[test]
    fn registers_once() {
        assert_eq!(register(), Ok(()));
        assert_eq!(register(), Ok(()));
    }
}
