//! The settings of SQLite and of each connection: the writer's, the
//! readers' and those of the threads that read in place.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::PrepareKept;

/// Statements each connection keeps prepared (in rusqlite's cache, or
/// kept by address on the writer and the readers: `statements`): every
/// query the hot paths run, so none is parsed again.
pub(super) const STATEMENT_CACHE: usize = 128;
pub(super) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Page cache of each read-only connection, in KiB (SQLite's default is
/// 2 MiB each). A household's hot pages fit many times over, the operating
/// system's file cache answers a miss without touching the disk, and the
/// memory a reader kept after a long read no longer stays with it.
const READER_CACHE_KIB: u32 = 512;

/// Settings every connection gets. WAL lets readers run beside the writer;
/// synchronous=FULL makes an acknowledged dose survive a power cut.
pub(super) fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    plan_once(conn)?;
    // secure_delete=FAST zeroes a page's free space when SQLite lays it out,
    // at no extra I/O: otherwise whatever the heap last held there (a token
    // just generated on this thread, say) can reach the file unencrypted.
    conn.execute_batch(
        "PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL; PRAGMA secure_delete = FAST;",
    )?;
    Ok(())
}

/// Process-wide SQLite settings, which have to be made before SQLite
/// initialises: so before the first connection this process opens (they
/// are a no-op, refused by SQLite, after that).
///
/// - Page caches grow a page at a time. By default SQLite hands every new
///   page cache a first block of 20 pages (about 86 KB) at once, and a
///   query with `IN (SELECT value FROM json_each(..))` builds a temporary
///   index with a page cache of its own each time it runs: the list of
///   expected doses allocated and freed five such blocks per request, and
///   glibc consolidated its heap at every free of one.
/// - Savepoint journals stay in memory up to [`SUBJOURNAL_IN_MEMORY`]. The
///   writer runs each job of a group in its own savepoint, and a take's
///   savepoint journal passes SQLite's default of 64 KiB, so every group
///   created, wrote, read back and deleted a temporary file: about a ninth
///   of the writer's time under a stream of takes.
pub(super) fn configure_sqlite_once() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: SQLITE_CONFIG_PAGECACHE takes (void*, int, int); a null
        // buffer with no pages only sets the size of a new cache's first
        // block. sqlite3_config refuses (SQLITE_MISUSE) once initialised.
        let rc = unsafe {
            rusqlite::ffi::sqlite3_config(
                rusqlite::ffi::SQLITE_CONFIG_PAGECACHE,
                std::ptr::null_mut::<std::ffi::c_void>(),
                0 as std::ffi::c_int,
                0 as std::ffi::c_int,
            )
        };
        if rc != rusqlite::ffi::SQLITE_OK {
            tracing::debug!("SQLite page cache configuration not applied (code {rc})");
        }
        // SAFETY: SQLITE_CONFIG_STMTJRNL_SPILL takes one int.
        let rc = unsafe {
            rusqlite::ffi::sqlite3_config(
                rusqlite::ffi::SQLITE_CONFIG_STMTJRNL_SPILL,
                SUBJOURNAL_IN_MEMORY as std::ffi::c_int,
            )
        };
        if rc != rusqlite::ffi::SQLITE_OK {
            tracing::debug!("SQLite savepoint journal configuration not applied (code {rc})");
        }
    });
}

/// Bytes of a savepoint journal kept in memory before SQLite moves it to a
/// temporary file: a group of jobs journals far less; one very large job
/// (an import beside other writes) still goes to a file, in one write of
/// this size, which only the writer's connection makes and its VFS splits
/// (`gathered_wal`: the unix VFS writes at most 128 KiB at once).
const SUBJOURNAL_IN_MEMORY: u32 = 512 * 1024;

/// Runs one statement without results, planned once per connection.
pub(super) fn step(conn: &Connection, sql: &'static str) -> rusqlite::Result<()> {
    conn.prepare_kept(sql)?.execute([]).map(|_| ())
}

/// A read-only connection to `path` with the settings every reader gets.
pub(super) fn open_reader(path: &Path) -> rusqlite::Result<Connection> {
    configure_sqlite_once();
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    plan_once(&conn)?;
    conn.execute_batch(&format!(
        "PRAGMA foreign_keys = ON; PRAGMA cache_size = -{READER_CACHE_KIB};"
    ))?;
    Ok(conn)
}

/// Plans a statement once, whatever values are bound to it. Without this
/// SQLite looks at a bound `LIMIT :limit` (or a `LIKE` pattern) while
/// planning and then throws the cached statement away at the next bind, so
/// every paged list was parsed and planned again on every request.
fn plan_once(conn: &Connection) -> rusqlite::Result<bool> {
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )
}
