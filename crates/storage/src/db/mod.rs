//! Storage: one SQLite file, a pool of read-only connections, and the single
//! writer thread through which every write of the code base goes.

/// SQL text put together by `format!` from constants, once per call site:
/// every call of a hot query formatted it again (and allocated) only to
/// look the statement up in the connection's cache. The text is built by a
/// `static`, so a runtime value among the arguments does not compile.
#[macro_export]
macro_rules! sql {
    ($($arg:tt)*) => {{
        static SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| format!($($arg)*));
        SQL.as_str()
    }};
}
pub use crate::sql;

pub mod change_feed;
pub mod check;
mod commit_mark;
pub use commit_mark::{CommitMark, CommitWatch, MarkedReader};
mod connection;
use connection::{
    BUSY_TIMEOUT, STATEMENT_CACHE, configure, configure_sqlite_once, open_reader, step,
};
mod gathered_wal;
pub mod idempotency;
mod in_place;
pub mod instance;
mod kept;
pub use kept::{kept, kept_with_plan};
mod migrate;
pub use migrate::check_is_ours;
mod open;
pub use open::{OpenError, OpenMode};
pub mod page;
mod portable_id;
pub use portable_id::{new_portable_id, with_portable_id};
pub mod private_files;
mod readers;
mod statements;
pub use kept::read_generation;
pub use readers::read_transaction;
pub use statements::{PrepareKept, each_row};
mod writer;

pub use writer::WriteTx;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rusqlite::Connection;

use crate::error::{ApiError, Result};

pub use migrate::{SCHEMA_SQL, SCHEMA_VERSION};
pub use writer::Writer;

pub const DATABASE_FILE: &str = "pillbox.sqlite3";

/// Reader threads (each with its connection) unless the server is told otherwise.
pub const DEFAULT_READERS: u32 = 4;

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

impl Db {
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

#[cfg(test)]
mod tests;
