//! Whether anything was committed to the database since a moment, told
//! without a read transaction.
//!
//! Every commit in WAL mode, by any connection of any process, rewrites
//! the WAL index's header in the shared memory (`-shm`) that every
//! connection maps: its change counter, frame count and checksums. The
//! header is read here through the mapping SQLite made for this
//! connection (never a mapping or file descriptor of our own: closing a
//! second descriptor of the `-shm` file would drop the POSIX locks SQLite
//! holds on it for the whole process). When the header reads the same as
//! at an earlier moment, nothing was committed in between; when it reads
//! otherwise (a commit, a checkpoint that started the WAL again, or a
//! header caught while being written) the caller reads the database as it
//! would have anyway. A header read while a commit is writing it belongs
//! to a commit that has not returned yet, which no request can have been
//! told of.

use std::ffi::c_void;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use rusqlite::{Connection, ffi};

/// The WAL index header's first copy: 48 bytes (SQLite's `WalIndexHdr`).
const HEADER_WORDS: usize = 12;

/// Size of a WAL index region (SQLite's `WALINDEX_PGSZ`); the header is at
/// the start of the first one.
const REGION_SIZE: i32 = 32 * 1024;

/// The header as it read at one moment.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct CommitMark([u32; HEADER_WORDS]);

/// A read-only connection together with where its WAL index header is.
pub struct MarkedReader {
    conn: Connection,
    /// Into SQLite's own mapping of the `-shm` file, which lives as long
    /// as this connection is open in WAL mode (it is unmapped only when
    /// the connection closes). `None` when it could not be found: every
    /// [`MarkedReader::mark`] is then `None`.
    header: Option<NonNull<AtomicU32>>,
}

// SAFETY: the header pointer is only read, through atomics, and stays
// valid for as long as the connection it came with, which moves with it.
unsafe impl Send for MarkedReader {}

impl MarkedReader {
    /// Wraps `conn`, a connection to a database in WAL mode. It reads the
    /// schema once first, so that SQLite has opened the WAL index itself.
    pub fn new(conn: Connection) -> rusqlite::Result<MarkedReader> {
        let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
        conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| {
            r.get::<_, i64>(0)
        })?;
        let header = if mode.eq_ignore_ascii_case("wal") {
            // SAFETY: the connection is open, and SQLite has mapped the
            // WAL index for the read above.
            unsafe { wal_index_header(&conn) }
        } else {
            None
        };
        Ok(MarkedReader { conn, header })
    }

    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    /// The WAL index header as it reads now; `None` when it cannot be read,
    /// which callers take as "something may have been committed".
    pub fn mark(&self) -> Option<CommitMark> {
        let header = self.header?;
        // SAFETY: the mapping lives as long as `self.conn` (see `header`).
        Some(unsafe { CommitMark::read(header.as_ptr()) })
    }
}

impl CommitMark {
    /// The header at `header`, the start of a mapped WAL index.
    ///
    /// # Safety
    /// `header` must point into a live mapping of a WAL index.
    pub(super) unsafe fn read(header: *const AtomicU32) -> CommitMark {
        // Acquire: what a commit wrote before its header is visible to
        // whatever this thread reads after seeing the new header.
        CommitMark(std::array::from_fn(|i| {
            // SAFETY: a WAL index region holds far more than the header.
            unsafe { (*header.add(i)).load(Ordering::Acquire) }
        }))
    }
}

/// What the writer's last commit left: its WAL index header, and a value
/// read in the same transaction by the statement a reader asked for
/// ([`CommitWatch::watch`]). A header names one state of the database
/// (every commit, by anyone, moves it on), so whoever reads that header
/// now knows the value without reading it: the access view learns that a
/// group of takes changed no access without a read transaction of its own.
#[derive(Default)]
pub struct CommitWatch {
    sql: OnceLock<&'static str>,
    last: Mutex<Option<(CommitMark, i64)>>,
}

impl CommitWatch {
    /// Has the writer read `sql` (one integer) in each commit from now on;
    /// the first statement asked for is the one kept.
    pub fn watch(&self, sql: &'static str) {
        let _ = self.sql.set(sql);
    }

    /// The statement to read in each commit, once somebody asked for one.
    pub(super) fn statement(&self) -> Option<&'static str> {
        self.sql.get().copied()
    }

    pub(super) fn committed(&self, header: CommitMark, value: i64) {
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Some((header, value));
    }

    /// The watched value in the state `mark` names, when the writer's last
    /// commit left that state.
    pub fn value_at(&self, mark: CommitMark) -> Option<i64> {
        match *self.last.lock().unwrap_or_else(PoisonError::into_inner) {
            Some((header, value)) if header == mark => Some(value),
            _ => None,
        }
    }
}

/// `conn`'s main database file, as its VFS opened it.
///
/// # Safety
/// `conn` must be open.
pub(super) unsafe fn main_file(conn: &Connection) -> Option<*mut ffi::sqlite3_file> {
    let mut file: *mut ffi::sqlite3_file = ptr::null_mut();
    // SAFETY: FILE_POINTER writes the main database's `sqlite3_file *`.
    let rc = unsafe {
        ffi::sqlite3_file_control(
            conn.handle(),
            c"main".as_ptr(),
            ffi::SQLITE_FCNTL_FILE_POINTER,
            (&raw mut file).cast::<c_void>(),
        )
    };
    (rc == ffi::SQLITE_OK && !file.is_null()).then_some(file)
}

/// The start of the WAL index SQLite mapped for `conn`'s main database.
///
/// # Safety
/// `conn` must be open and have read the database in WAL mode.
unsafe fn wal_index_header(conn: &Connection) -> Option<NonNull<AtomicU32>> {
    // SAFETY: the connection is open.
    let file = unsafe { main_file(conn)? };
    // SAFETY: an open file always has its methods; version 2 and later
    // have the shared-memory ones.
    let methods = unsafe { (*file).pMethods.as_ref()? };
    if methods.iVersion < 2 {
        return None;
    }
    let map = methods.xShmMap?;
    let mut region: *mut c_void = ptr::null_mut();
    // SAFETY: asking for region 0 without extending it answers the
    // mapping SQLite already made for this file, or null.
    let rc = unsafe { map(file, 0, REGION_SIZE, 0, (&raw mut region).cast()) };
    if rc != ffi::SQLITE_OK {
        return None;
    }
    NonNull::new(region.cast::<AtomicU32>())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wal_database() -> (tempfile::TempDir, Connection, MarkedReader) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("marked.db");
        let writer = Connection::open(&path).unwrap();
        writer
            .execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE marked (x INTEGER);")
            .unwrap();
        let reader =
            Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
        (dir, writer, MarkedReader::new(reader).unwrap())
    }

    #[test]
    fn the_mark_stays_while_nothing_commits_and_moves_at_every_commit() {
        let (_dir, writer, marked) = wal_database();
        let first = marked.mark().expect("a WAL database has a header");
        assert_eq!(marked.mark(), Some(first), "no commit, same mark");
        let mut seen = vec![first];
        for x in 0..5 {
            writer
                .execute("INSERT INTO marked VALUES (?1)", [x])
                .unwrap();
            let now = marked.mark().unwrap();
            assert!(!seen.contains(&now), "commit {x} moved the mark");
            seen.push(now);
        }
        // A read, however many, commits nothing.
        let _: i64 = writer
            .query_row("SELECT count(*) FROM marked", [], |r| r.get(0))
            .unwrap();
        assert_eq!(marked.mark(), seen.last().copied());
    }

    #[test]
    fn a_checkpoint_that_starts_the_wal_again_and_the_next_commit_move_the_mark() {
        let (_dir, writer, marked) = wal_database();
        writer.execute("INSERT INTO marked VALUES (1)", []).unwrap();
        let before = marked.mark().unwrap();
        writer
            .execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
            .unwrap();
        let after_checkpoint = marked.mark().unwrap();
        writer.execute("INSERT INTO marked VALUES (2)", []).unwrap();
        let after_commit = marked.mark().unwrap();
        assert_ne!(after_commit, before);
        assert_ne!(after_commit, after_checkpoint);
    }

    #[test]
    fn a_connection_not_in_wal_mode_has_no_mark() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.db");
        Connection::open(&path)
            .unwrap()
            .execute_batch("CREATE TABLE marked (x INTEGER);")
            .unwrap();
        let marked = MarkedReader::new(Connection::open(&path).unwrap()).unwrap();
        assert_eq!(marked.mark(), None);
    }
}
