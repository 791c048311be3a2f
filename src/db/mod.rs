//! Storage: one SQLite file, a pool of read-only connections, and the single
//! writer thread through which every write of the code base goes.

/// SQL text put together by `format!` from constants, once per call site:
/// every call of a hot query formatted it again (and allocated) only to
/// look the statement up in the connection's cache. The text is built by a
/// `static`, so a runtime value among the arguments does not compile.
macro_rules! sql {
    ($($arg:tt)*) => {{
        static SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| format!($($arg)*));
        SQL.as_str()
    }};
}
pub(crate) use sql;

pub mod change_feed;
pub mod check;
mod columns;
mod commit_mark;
pub use commit_mark::{CommitMark, CommitWatch, MarkedReader};
mod gathered_wal;
pub mod idempotency;
mod in_place;
pub mod instance;
mod kept;
pub use kept::{kept, kept_with_plan};
mod migrate;
pub use migrate::check_is_ours;
pub mod page;
pub mod private_files;
mod readers;
mod statements;
pub use kept::read_generation;
pub use readers::read_transaction;
pub use statements::PrepareKept;
mod writer;

pub use writer::WriteTx;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::error::{ApiError, Result};

pub use migrate::{SCHEMA_SQL, SCHEMA_VERSION};
pub use writer::Writer;

pub const DATABASE_FILE: &str = "pillbox.sqlite3";

/// Reader threads (each with its connection) unless the server is told otherwise.
pub const DEFAULT_READERS: u32 = 4;
/// Statements each connection keeps prepared (in rusqlite's cache, or
/// kept by address on the writer and the readers: `statements`): every
/// query the hot paths run, so none is parsed again.
const STATEMENT_CACHE: usize = 128;
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Page cache of each read-only connection, in KiB (SQLite's default is
/// 2 MiB each). A household's hot pages fit many times over, the operating
/// system's file cache answers a miss without touching the disk, and the
/// memory a reader kept after a long read no longer stays with it.
const READER_CACHE_KIB: u32 = 512;
/// Frames the WAL may hold before the writer copies them into the database
/// file inside a commit (SQLite's automatic checkpoint; its default is
/// 1,000): about 40 MB of WAL at 4 KiB pages. A checkpoint writes each page
/// once however many commits rewrote it (the end of every growing table
/// and index is rewritten by each group of takes) and syncs the database
/// file once, so ten times fewer checkpoints cost the writer far less than
/// a tenth of the time; a quiet server folds the WAL back at once anyway
/// (`Writer::release_idle`), so it reaches this bound only under a long
/// stream of writes.
const WAL_FRAMES_BEFORE_CHECKPOINT: u32 = 10_000;

#[derive(Clone)]
pub struct Db {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    /// Tells this database from any other the process opened (tests open
    /// many), for the connections of in-place reads.
    serial: u64,
    readers: readers::Readers,
    writer: Writer,
    /// What other parts of the server keep for this database (one value per type).
    attached: std::sync::RwLock<Vec<Arc<dyn std::any::Any + Send + Sync>>>,
    /// Reads and writes asked of this database so far (see [`Db::jobs_asked`]).
    jobs: std::sync::atomic::AtomicU64,
}

/// Errors while opening the database at start-up; shown to the operator as one line.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("permission denied: the data directory {path} is not writable by the user {user}")]
    PermissionDenied { path: PathBuf, user: String },
    #[error(
        "the data directory {path} belongs to the user {owner}; run this command as that user (sudo -u {login} pillbox ...) so the server can still open the files it creates"
    )]
    WrongUser {
        path: PathBuf,
        owner: String,
        login: String,
    },
    #[error("cannot create data directory {path}: {source}")]
    DataDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the data directory {path} is a file, not a directory; pass --data-dir a directory")]
    NotADirectory { path: PathBuf },
    #[error(
        "no Pillbox database at {path}; run `pillbox setup` first, or pass the --data-dir the server uses"
    )]
    Missing { path: PathBuf },
    #[error(
        "{path} is not a Pillbox database (it belongs to another program); refusing to change it: move it away or choose another --data-dir"
    )]
    Foreign { path: PathBuf },
    #[error("cannot open database {path}: {source}")]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error(
        "database {path} has schema version {found}, newer than this pillbox binary supports ({supported}); run a newer pillbox or restore a backup"
    )]
    TooNew {
        path: PathBuf,
        found: i64,
        supported: i64,
    },
    #[error("cannot start the database readers: {0}")]
    Readers(std::io::Error),
    #[error("cannot start the database writer: {0}")]
    Writer(std::io::Error),
}

/// Whether opening may create the data directory and a new database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// `serve` and `setup`: the first start creates everything.
    Create,
    /// Administration commands: a mistyped --data-dir must not leave an
    /// empty database behind.
    Existing,
}

/// Settings every connection gets. WAL lets readers run beside the writer;
/// synchronous=FULL makes an acknowledged dose survive a power cut.
fn configure(conn: &Connection) -> rusqlite::Result<()> {
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
fn configure_sqlite_once() {
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
fn step(conn: &Connection, sql: &'static str) -> rusqlite::Result<()> {
    conn.prepare_kept(sql)?.execute([]).map(|_| ())
}

/// A read-only connection to `path` with the settings every reader gets.
fn open_reader(path: &Path) -> rusqlite::Result<Connection> {
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

impl Db {
    /// Opens (creating on first start) the database under `data_dir`, applies
    /// migrations and starts the writer thread.
    pub fn open(data_dir: &Path) -> std::result::Result<Db, OpenError> {
        Db::open_with(data_dir, OpenMode::Create)
    }

    pub fn open_with(data_dir: &Path, mode: OpenMode) -> std::result::Result<Db, OpenError> {
        Db::open_with_readers(data_dir, mode, DEFAULT_READERS)
    }

    /// `open_with`, serving reads from `readers` threads (at least one).
    pub fn open_with_readers(
        data_dir: &Path,
        mode: OpenMode,
        readers: u32,
    ) -> std::result::Result<Db, OpenError> {
        let path = data_dir.join(DATABASE_FILE);
        prepare_data_dir(data_dir, mode)?;
        configure_sqlite_once();
        let sqlite_err = |source| OpenError::Sqlite {
            path: path.clone(),
            source,
        };
        // The writer's connection gathers each commit's WAL frames into one
        // write (see `gathered_wal`); every other connection reads the same
        // files through SQLite's default VFS.
        let vfs = gathered_wal::register().map_err(|code| {
            sqlite_err(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(code),
                Some("cannot register the writer's VFS".into()),
            ))
        })?;
        let mut conn = Connection::open_with_flags_and_vfs(&path, OpenFlags::default(), vfs)
            .map_err(sqlite_err)?;
        // Before anything writes (even the journal mode): another program's
        // database is refused untouched.
        migrate::check_is_ours(&conn, &path)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(sqlite_err)?;
        configure(&conn).map_err(sqlite_err)?;
        conn.pragma_update(None, "wal_autocheckpoint", WAL_FRAMES_BEFORE_CHECKPOINT)
            .map_err(sqlite_err)?;
        migrate::migrate(&mut conn, &path)?;
        instance::ensure(&conn).map_err(sqlite_err)?;

        let connections = (0..readers.max(1))
            .map(|_| open_reader(&path))
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(sqlite_err)?;
        let reopen: readers::Open = {
            let path = path.clone();
            Arc::new(move || open_reader(&path))
        };
        let readers = readers::Readers::start(connections, reopen).map_err(OpenError::Readers)?;
        let writer = Writer::start(conn).map_err(OpenError::Writer)?;
        Ok(Db {
            inner: Arc::new(Inner {
                path,
                serial: {
                    static SERIALS: std::sync::atomic::AtomicU64 =
                        std::sync::atomic::AtomicU64::new(0);
                    SERIALS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                },
                readers,
                writer,
                attached: std::sync::RwLock::default(),
                jobs: std::sync::atomic::AtomicU64::new(0),
            }),
        })
    }

    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Runs a read on one of the reader threads' read-only connections,
    /// off the async threads.
    pub async fn read<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        self.count_job();
        let (reply, answer) = tokio::sync::oneshot::channel();
        // Inside the caller's runtime, as on a blocking-pool thread: a
        // streamed read waits on the runtime for its client.
        let runtime = tokio::runtime::Handle::try_current().ok();
        self.inner
            .readers
            .submit(Box::new(move |conn: &Connection| {
                let _entered = runtime.as_ref().map(tokio::runtime::Handle::enter);
                let _ = reply.send(f(conn));
            }));
        answer
            .await
            .map_err(|_| ApiError::internal("read task failed"))?
    }

    /// Runs a read of a few microseconds in place, on the calling thread,
    /// through that thread's own read-only connection (see `in_place`):
    /// one resource found by id, whose answer is usually kept. Anything
    /// that can take longer goes through [`Db::read`].
    pub fn read_here<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        self.count_job();
        in_place::read(self.inner.serial, &self.inner.path, f)
    }

    /// How many reads and writes were asked of this database since it was
    /// opened, by requests and background tasks alike: the server hands
    /// memory back once this stops moving (`memory::Returns`).
    pub fn jobs_asked(&self) -> u64 {
        self.inner.jobs.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn count_job(&self) {
        self.inner
            .jobs
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Has each reader let go of its SQLite page cache before its next
    /// read (a sleeping reader at once), and the writer after the writes
    /// queued so far, so that what they cached during a burst goes back to
    /// the allocator, which can then hand it back to the system. (Any
    /// commit makes a reader drop its cache at its next read anyway; after
    /// reads alone, the caches stayed full.) The next reads and writes
    /// fetch their pages again from the operating system's file cache.
    pub fn release_memory(&self) {
        self.inner.readers.release_memory();
        self.inner.writer.release_memory();
    }

    /// [`Db::release_memory`] for a server nobody is asking anything: the
    /// readers, and the threads that read in place, close their connections
    /// until their next read instead of only emptying their caches (see
    /// `Readers::close_connections`, `in_place::close_all`), and the writer
    /// folds the WAL back into the database file first
    /// (`Writer::release_idle`).
    pub fn release_idle_memory(&self) {
        self.inner.readers.close_connections();
        in_place::close_all();
        self.inner.writer.release_idle();
    }

    /// The value of type `T` kept with this database, made on first use:
    /// state that must be shared by everything using the same database (the
    /// access view of `auth`), without `db` knowing its type.
    pub fn attached<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        let find = |all: &[Arc<dyn std::any::Any + Send + Sync>]| {
            all.iter()
                .find_map(|value| value.clone().downcast::<T>().ok())
        };
        let attached = &self.inner.attached;
        if let Some(found) = find(&attached.read().unwrap_or_else(|e| e.into_inner())) {
            return found;
        }
        let mut all = attached.write().unwrap_or_else(|e| e.into_inner());
        if let Some(found) = find(&all) {
            return found;
        }
        let value = Arc::new(T::default());
        all.push(value.clone());
        value
    }

    /// A new read-only connection with the readers' settings, for a part of
    /// the server that reads in place (see `auth::view`).
    pub fn open_reader(&self) -> rusqlite::Result<Connection> {
        open_reader(&self.inner.path)
    }

    /// What the writer's last commit left, for readers that watch a value.
    pub fn commit_watch(&self) -> &CommitWatch {
        self.inner.writer.commit_watch()
    }

    /// A read-only connection that can tell, without a read, whether
    /// anything was committed since an earlier moment.
    pub fn open_marked_reader(&self) -> rusqlite::Result<MarkedReader> {
        MarkedReader::new(self.open_reader()?)
    }

    /// Runs `f` inside a write transaction on the writer thread and resolves
    /// once the transaction is durably committed. If `f` fails, none of its
    /// writes are kept. This is the only write path of the code base.
    pub async fn write<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&WriteTx) -> Result<T> + Send + 'static,
    {
        self.count_job();
        self.inner.writer.submit(f).await
    }

    /// [`Db::write`] for a rule that checks everything it needs before its
    /// first write, so that a failure after that is the database's (or a
    /// bug): it runs without a savepoint of its own inside its group
    /// (see `writer`). Recording a dose is one.
    pub async fn write_checked_first<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&WriteTx) -> Result<T> + Send + 'static,
    {
        self.count_job();
        self.inner.writer.submit_checked_first(f).await
    }

    /// Moves on after every commit that changed household data (anything
    /// that reaches the change feed), for background tasks that follow it.
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.writer.changes()
    }

    /// Waits for queued writes to finish and stops the writer thread (the
    /// WAL is checkpointed into the main file). Writes after this fail.
    pub async fn close(self) {
        let inner = self.inner.clone();
        let _ = tokio::task::spawn_blocking(move || inner.writer.shutdown()).await;
    }
}

/// Checks the data directory before SQLite sees it, so each way it can be
/// wrong gets its own actionable message.
fn prepare_data_dir(data_dir: &Path, mode: OpenMode) -> std::result::Result<(), OpenError> {
    let denied = || OpenError::PermissionDenied {
        path: data_dir.to_path_buf(),
        user: process_user(),
    };
    match std::fs::metadata(data_dir) {
        Ok(meta) if !meta.is_dir() => {
            return Err(OpenError::NotADirectory {
                path: data_dir.to_path_buf(),
            });
        }
        Ok(meta) => refuse_root_in_a_service_dir(data_dir, &meta)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && mode == OpenMode::Create => {
            private_files::create_dir(data_dir).map_err(|source| match source.kind() {
                std::io::ErrorKind::PermissionDenied => denied(),
                std::io::ErrorKind::NotADirectory => OpenError::NotADirectory {
                    path: data_dir.to_path_buf(),
                },
                _ => OpenError::DataDir {
                    path: data_dir.to_path_buf(),
                    source,
                },
            })?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => return Err(denied()),
        Err(_) => {}
    }
    let path = data_dir.join(DATABASE_FILE);
    if mode == OpenMode::Existing && !path.is_file() {
        return Err(OpenError::Missing { path });
    }
    // SQLite needs to create its -wal and -shm files beside the database,
    // and reports a directory it cannot write to only as "unable to open".
    let probe = data_dir.join(format!(".pillbox-write-check-{}", std::process::id()));
    let failed = |source| OpenError::DataDir {
        path: data_dir.to_path_buf(),
        source,
    };
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
        }
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => return Err(denied()),
        Err(source) => return Err(failed(source)),
    }
    // SQLite would create a missing database with the umask's mode (and
    // its -wal and -shm files with the database's): it opens ours instead.
    if mode == OpenMode::Create {
        private_files::create_database(&path).map_err(failed)?;
    }
    Ok(())
}

/// Root running a command on the service's data directory would leave the
/// database's -wal and -shm files owned by root, and the server, running as
/// its own user, could then no longer open the database.
fn refuse_root_in_a_service_dir(
    data_dir: &Path,
    meta: &std::fs::Metadata,
) -> std::result::Result<(), OpenError> {
    use std::os::unix::fs::MetadataExt;
    if effective_uid() == Some(0) && meta.uid() != 0 {
        let owner = user_name(meta.uid());
        let login = match owner.split_once(" (uid ") {
            Some((name, _)) => name.to_string(),
            None => format!("'#{}'", meta.uid()),
        };
        return Err(OpenError::WrongUser {
            path: data_dir.to_path_buf(),
            owner,
            login,
        });
    }
    Ok(())
}

/// The user this process runs as, by name where the system says it.
pub fn process_user() -> String {
    match effective_uid() {
        Some(uid) => user_name(uid),
        None => std::env::var("USER").unwrap_or_else(|_| "(unknown)".into()),
    }
}

fn effective_uid() -> Option<u32> {
    std::fs::read_to_string("/proc/self/status")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// "name (uid N)" from /etc/passwd, read directly: a static binary cannot
/// load the NSS modules `getpwuid` would need.
fn user_name(uid: u32) -> String {
    let uid = uid.to_string();
    std::fs::read_to_string("/etc/passwd")
        .ok()
        .and_then(|passwd| {
            passwd.lines().find_map(|line| {
                let mut fields = line.split(':');
                let name = fields.next()?;
                (fields.nth(1)? == uid).then(|| format!("{name} (uid {uid})"))
            })
        })
        .unwrap_or_else(|| format!("uid {uid}"))
}

thread_local! {
    /// The portable id the next record made on this thread takes (see
    /// [`with_portable_id`]).
    static NEXT_PORTABLE_ID: std::cell::RefCell<Option<String>> =
        const { std::cell::RefCell::new(None) };
}

/// A new portable id: UUID v7, so ids sort by creation time; or the one a
/// portable import asked for with [`with_portable_id`].
pub fn new_portable_id() -> String {
    NEXT_PORTABLE_ID
        .with(|next| next.borrow_mut().take())
        .unwrap_or_else(|| uuid::Uuid::now_v7().to_string())
}

/// Runs `f` (a create rule) so that the first record it makes takes
/// `portable_id`: an imported record keeps its identity across
/// installations, made by the same rule as any other. Writes run on the
/// one writer thread, one job at a time, so the id cannot reach another
/// request; it is cleared when `f` returns, whether or not it was used.
pub fn with_portable_id<T>(portable_id: &str, f: impl FnOnce() -> T) -> T {
    struct Clear;
    impl Drop for Clear {
        fn drop(&mut self) {
            NEXT_PORTABLE_ID.with(|next| next.borrow_mut().take());
        }
    }
    NEXT_PORTABLE_ID.with(|next| *next.borrow_mut() = Some(portable_id.to_string()));
    let _clear = Clear;
    f()
}

#[cfg(test)]
mod tests {
    use rusqlite::StatementStatus;

    #[test]
    fn a_cached_paged_statement_is_planned_once_whatever_is_bound() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        super::configure(&conn).unwrap();
        conn.execute_batch(
            "CREATE TABLE planned AS SELECT 1 AS id, 'a' AS name
                 UNION ALL SELECT 2, 'b' UNION ALL SELECT 3, 'c';
             CREATE INDEX planned_by_name ON planned (name);",
        )
        .unwrap();
        let sql = "SELECT id FROM planned WHERE name LIKE :pattern ORDER BY id LIMIT :limit OFFSET :offset";
        for (pattern, limit, offset) in [("a%", 1, 0), ("b%", 2, 1), ("%", 3, 0), ("%", 3, 0)] {
            let mut statement = conn.prepare_cached(sql).unwrap();
            let rows: Vec<i64> = statement
                .query_map(
                    rusqlite::named_params! {":pattern": pattern, ":limit": limit, ":offset": offset},
                    |r| r.get(0),
                )
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap();
            assert!(rows.len() <= limit as usize);
            assert_eq!(statement.get_status(StatementStatus::RePrepare), 0);
        }
    }

    /// A new database with one reader thread, set up by `sql` through the
    /// writer; its directory goes when the first value is dropped.
    async fn scratch_db(sql: &'static str) -> (tempfile::TempDir, super::Db) {
        let dir = tempfile::tempdir().unwrap();
        let db = super::Db::open_with_readers(dir.path(), super::OpenMode::Create, 1).unwrap();
        db.write(move |conn| Ok(conn.execute_batch(sql)?))
            .await
            .unwrap();
        (dir, db)
    }

    /// Adds `rows` random blobs of `bytes` each to `scratch`, in one commit.
    async fn fill_scratch(db: &super::Db, rows: u32, bytes: u32) {
        db.write(move |conn| {
            conn.execute(
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)
                 INSERT INTO scratch (v) SELECT randomblob(?2) FROM n",
                [rows, bytes],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    }

    #[tokio::test]
    async fn a_read_sees_one_snapshot_and_the_next_read_sees_what_was_committed() {
        let (_dir, db) = scratch_db("CREATE TABLE scratch (v TEXT);").await;
        let path = db.path().to_path_buf();
        let count = |conn: &rusqlite::Connection| -> rusqlite::Result<i64> {
            conn.query_row("SELECT count(*) FROM scratch", [], |r| r.get(0))
        };
        let (before, during) = db
            .read(move |conn| {
                let before = count(conn)?;
                // A command beside the server commits in the middle of the read.
                let other = rusqlite::Connection::open(&path)?;
                other.execute("INSERT INTO scratch (v) VALUES ('new')", [])?;
                Ok((before, count(conn)?))
            })
            .await
            .unwrap();
        assert_eq!(before, during);
        // The read's transaction was ended: the same thread's next read is current.
        let after = db.read(move |conn| Ok(count(conn)?)).await.unwrap();
        assert_eq!(after, before + 1);
    }

    /// What the writer keeps under the plan stamp is made again after any
    /// write to a plan table: earlier in the same job, rolled back, or
    /// committed by another connection; and only then.
    #[tokio::test]
    async fn the_writer_keeps_a_plan_value_exactly_while_the_plan_stamp_stays() {
        use crate::error::Result;
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};

        // The scratch table stands for the plan: each write to it moves
        // the stamp by hand, as the schema's triggers do for the plan's.
        let (_dir, db) = scratch_db("CREATE TABLE scratch (v TEXT);").await;
        const STAMP: &str = "UPDATE plan_stamp SET stamp = random();";
        let made = Arc::new(AtomicUsize::new(0));
        // The scratch values, kept as a take's plan is; and how many times
        // they were made so far.
        let names = {
            let made = made.clone();
            move |conn: &rusqlite::Connection| -> Result<(String, usize)> {
                let names = super::kept_with_plan(conn, "names", || -> Result<String> {
                    made.fetch_add(1, Ordering::SeqCst);
                    Ok(conn.query_row(
                        "SELECT coalesce(group_concat(v, ','), '') FROM scratch",
                        [],
                        |r| r.get(0),
                    )?)
                })?;
                Ok((String::clone(&names), made.load(Ordering::SeqCst)))
            }
        };

        let n = names.clone();
        let seen = db
            .write(move |conn| Ok(vec![n(conn)?, n(conn)?]))
            .await
            .unwrap();
        assert_eq!(seen, [("".into(), 1), ("".into(), 1)], "kept");

        let n = names.clone();
        let seen = db
            .write(move |conn| {
                let before = n(conn)?;
                conn.execute_batch(&format!("INSERT INTO scratch (v) VALUES ('Ash'); {STAMP}"))?;
                Ok(vec![before, n(conn)?, n(conn)?])
            })
            .await
            .unwrap();
        assert_eq!(
            seen,
            [("".into(), 1), ("Ash".into(), 2), ("Ash".into(), 2)],
            "a plan written earlier in the same job is seen at once"
        );

        let n = names.clone();
        let seen = db
            .write(move |conn| {
                conn.execute_batch(&format!(
                    "SAVEPOINT edit; UPDATE scratch SET v = 'Birch'; {STAMP}"
                ))?;
                let during = n(conn)?;
                conn.execute_batch("ROLLBACK TO edit; RELEASE edit;")?;
                Ok(vec![during, n(conn)?])
            })
            .await
            .unwrap();
        assert_eq!(
            seen,
            [("Birch".into(), 3), ("Ash".into(), 4)],
            "what was kept from a write rolled back is not used after it"
        );

        // A command beside the server commits a change of the plan.
        let path = db.path().to_path_buf();
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute_batch(&format!("UPDATE scratch SET v = 'Cedar'; {STAMP}"))
            .unwrap();
        let n = names.clone();
        let seen = db.write(move |conn| Ok(vec![n(conn)?])).await.unwrap();
        assert_eq!(seen, [("Cedar".into(), 5)]);

        let n = names.clone();
        let seen = db.write(move |conn| Ok(vec![n(conn)?])).await.unwrap();
        assert_eq!(seen, [("Cedar".into(), 5)], "kept again");

        // A reader thread keeps it as `kept` does, under its own generation.
        let n = names.clone();
        let (_, times) = db.read(move |conn| n(conn)).await.unwrap();
        assert_eq!(times, 6);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_quiet_server_closes_the_in_place_connections_and_the_next_read_is_current() {
        let (_dir, db) = scratch_db("CREATE TABLE scratch (v TEXT);").await;
        // A value kept on this thread until the next commit, as a rendered
        // medication is.
        let kept_count = || {
            db.read_here(|conn| {
                let count = super::kept(conn, "scratch", || {
                    conn.query_row("SELECT count(*) FROM scratch", [], |r| r.get::<_, i64>(0))
                })?;
                Ok(*count)
            })
        };
        assert_eq!(kept_count().unwrap(), 0);

        db.release_idle_memory();
        assert!(!super::in_place::open_here(), "the connection was closed");
        db.write(|conn| Ok(conn.execute("INSERT INTO scratch (v) VALUES ('new')", [])?))
            .await
            .unwrap();
        // A new connection's data_version says nothing of the old one's: what
        // the thread kept was forgotten with it.
        assert_eq!(kept_count().unwrap(), 1);
    }

    #[tokio::test]
    async fn the_writer_checkpoints_only_past_its_bound_and_a_quiet_server_folds_the_wal() {
        let (dir, db) = scratch_db("CREATE TABLE scratch (v BLOB);").await;
        // One commit of about 1,500 pages: past SQLite's default bound of
        // 1,000 frames, well under ours.
        fill_scratch(&db, 1500, 4000).await;
        let wal = db.path().with_extension("sqlite3-wal");
        // What the database file holds without its WAL, read from a copy.
        let rows_in_the_file = || -> i64 {
            let copy = dir.path().join("copy.sqlite3");
            std::fs::copy(db.path(), &copy).unwrap();
            let conn = rusqlite::Connection::open(&copy).unwrap();
            let table: i64 = conn
                .query_row(
                    "SELECT count(*) FROM sqlite_schema WHERE name = 'scratch'",
                    [],
                    |r| r.get(0),
                )
                .unwrap();
            let count = match table {
                0 => 0,
                _ => conn
                    .query_row("SELECT count(*) FROM scratch", [], |r| r.get(0))
                    .unwrap(),
            };
            drop(conn);
            std::fs::remove_file(&copy).unwrap();
            count
        };
        assert_eq!(rows_in_the_file(), 0, "no checkpoint at 1,500 frames");
        assert!(std::fs::metadata(&wal).unwrap().len() > 1500 * 4096);

        db.release_idle_memory();
        let folded = async {
            while std::fs::metadata(&wal).unwrap().len() > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(10), folded)
            .await
            .expect("the WAL was emptied");
        assert_eq!(rows_in_the_file(), 1500, "every page is in the file");
        let count = db
            .read(|conn| {
                Ok(conn.query_row("SELECT count(*) FROM scratch", [], |r| r.get::<_, i64>(0))?)
            })
            .await
            .unwrap();
        assert_eq!(count, 1500);
    }

    #[tokio::test]
    async fn a_write_whose_savepoint_journal_outgrows_memory_commits() {
        let (_dir, db) = scratch_db("CREATE TABLE scratch (v BLOB);").await;
        fill_scratch(&db, 400, 3000).await;
        // One statement rewriting about 1.6 MB of existing pages inside the
        // writer's transaction: its journal of the pages' old contents is
        // far past what SQLite keeps in memory before using a file.
        db.write(|conn| Ok(conn.execute("UPDATE scratch SET v = zeroblob(2999)", [])?))
            .await
            .unwrap();
        let rewritten = db
            .read(|conn| {
                Ok(conn.query_row(
                    "SELECT count(*) FROM scratch WHERE length(v) = 2999",
                    [],
                    |r| r.get::<_, i64>(0),
                )?)
            })
            .await
            .unwrap();
        assert_eq!(rewritten, 400);
    }

    /// Bytes of page cache `conn` holds.
    pub(super) fn cache_used(conn: &rusqlite::Connection) -> i64 {
        let (mut current, mut highest) = (0, 0);
        // SAFETY: the handle is valid while `conn` is borrowed, and
        // sqlite3_db_status only reads the connection's counters.
        let rc = unsafe {
            rusqlite::ffi::sqlite3_db_status(
                conn.handle(),
                rusqlite::ffi::SQLITE_DBSTATUS_CACHE_USED,
                &mut current,
                &mut highest,
                0,
            )
        };
        assert_eq!(rc, rusqlite::ffi::SQLITE_OK);
        i64::from(current)
    }

    #[tokio::test]
    async fn released_memory_leaves_the_readers_page_caches_empty() {
        let (_dir, db) = scratch_db(
            "CREATE TABLE scratch (v TEXT);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
             INSERT INTO scratch SELECT printf('%0200d', i) FROM n;",
        )
        .await;
        let filled = db
            .read(|conn| {
                conn.query_row("SELECT count(*) FROM scratch WHERE v LIKE '%9'", [], |_| {
                    Ok(())
                })?;
                Ok(cache_used(conn))
            })
            .await
            .unwrap();
        assert!(filled > 64 * 1024, "the scan cached {filled} bytes");
        // Any commit would make the reader drop its cache at its next read
        // anyway (SQLite's WAL mode does); here nothing is committed.
        db.release_memory();
        // The one reader let its cache go before this read.
        let left = db.read(|conn| Ok(cache_used(conn))).await.unwrap();
        assert!(left < filled / 4, "{left} of {filled} bytes still cached");
    }

    /// This process's open files that are the database at `path` or its
    /// WAL and shared-memory files.
    #[cfg(target_os = "linux")]
    fn open_files_of(path: &std::path::Path) -> usize {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|entry| std::fs::read_link(entry.ok()?.path()).ok())
            .filter(|target| {
                target
                    .to_string_lossy()
                    .starts_with(&*path.to_string_lossy())
            })
            .count()
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn an_idle_reader_closes_its_connection_and_forgets_what_it_kept() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let (_dir, db) =
            scratch_db("CREATE TABLE scratch (v TEXT); INSERT INTO scratch VALUES ('a');").await;
        let made = std::sync::Arc::new(AtomicUsize::new(0));
        let read = || {
            let made = made.clone();
            db.read(move |conn| {
                let count = super::kept::kept(conn, "rows", || {
                    made.fetch_add(1, Ordering::Relaxed);
                    conn.query_row("SELECT count(*) FROM scratch", [], |r| r.get::<_, i64>(0))
                })?;
                Ok(*count)
            })
        };
        assert_eq!(read().await.unwrap(), 1);
        assert_eq!(read().await.unwrap(), 1);
        assert_eq!(
            made.load(Ordering::Relaxed),
            1,
            "kept while nothing commits"
        );
        let open = open_files_of(db.path());

        db.release_idle_memory();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while open_files_of(db.path()) >= open && std::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert!(
            open_files_of(db.path()) < open,
            "the reader closed its connection ({open} files open before)"
        );

        // The next read opens a connection again, and works its value out
        // again: the old connection's data_version says nothing of the new.
        assert_eq!(read().await.unwrap(), 1);
        assert_eq!(made.load(Ordering::Relaxed), 2);
        assert_eq!(open_files_of(db.path()), open);
        db.write(|conn| Ok(conn.execute_batch("INSERT INTO scratch VALUES ('b');")?))
            .await
            .unwrap();
        assert_eq!(read().await.unwrap(), 2);
    }

    #[tokio::test]
    async fn the_writer_tells_the_value_it_read_in_the_commit_that_left_the_database_as_it_is() {
        let (dir, db) = scratch_db("CREATE TABLE scratch (x INTEGER)").await;
        db.commit_watch().watch("SELECT count(*) FROM scratch");
        let reader = db.open_marked_reader().unwrap();
        for expected in 1..=3 {
            db.write(|conn| Ok(conn.execute("INSERT INTO scratch VALUES (1)", [])?))
                .await
                .unwrap();
            let mark = reader.mark().expect("a WAL database");
            assert_eq!(db.commit_watch().value_at(mark), Some(expected));
        }
        // A commit by another connection: the writer's value says nothing
        // of the state it left.
        let other = rusqlite::Connection::open(dir.path().join(super::DATABASE_FILE)).unwrap();
        other.execute("INSERT INTO scratch VALUES (1)", []).unwrap();
        let mark = reader.mark().unwrap();
        assert_eq!(db.commit_watch().value_at(mark), None);
        // A group whose every job failed commits nothing, and the header
        // it finds is still the other connection's.
        let failed = db
            .write(|conn| -> crate::error::Result<()> {
                conn.execute("INSERT INTO scratch VALUES (1)", [])?;
                Err(crate::error::ApiError::internal("no"))
            })
            .await;
        assert!(failed.is_err());
        assert_eq!(reader.mark(), Some(mark));
        assert_eq!(db.commit_watch().value_at(mark), None);
        db.write(|conn| Ok(conn.execute("INSERT INTO scratch VALUES (1)", [])?))
            .await
            .unwrap();
        assert_eq!(db.commit_watch().value_at(reader.mark().unwrap()), Some(5));
    }
}
