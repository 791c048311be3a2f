//! A fixed set of reader threads, each owning one read-only connection, fed
//! by one queue. A read is handed over once and answered once, with no pool
//! checkout in between, and the number of threads (and so of connections
//! and per-thread allocator arenas) does not grow with load: a burst of
//! clients waits in the queue instead of each taking a thread.

use crate::db::PrepareKept;
use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Condvar, Mutex};

use rusqlite::Connection;

use super::step;

/// Runs on a reader thread with its connection.
pub type ReadJob = Box<dyn FnOnce(&Connection) + Send>;

/// Where this thread stands for [`read_generation`].
#[derive(Clone, Copy)]
enum Generation {
    /// Not a reader thread.
    Elsewhere,
    /// A read is running and has not asked yet.
    Unread,
    Read(Option<i64>),
}

thread_local! {
    static GENERATION: std::cell::Cell<Generation> =
        const { std::cell::Cell::new(Generation::Elsewhere) };
}

/// On a reader thread, a number that stays the same between two reads
/// exactly while nothing was committed between them (SQLite's
/// `data_version` of the thread's read-only connection, `conn`, which
/// every commit of another connection, this server's writer or a command
/// beside it, moves on); `None` anywhere else. What is worked out from the
/// data can be kept under it, on that thread, and is current while it is
/// unchanged. Read once per read, when first asked.
pub fn read_generation(conn: &Connection) -> Option<i64> {
    match GENERATION.get() {
        Generation::Elsewhere => None,
        Generation::Read(generation) => generation,
        Generation::Unread => {
            let generation = data_version(conn);
            GENERATION.set(Generation::Read(generation));
            generation
        }
    }
}

/// A read transaction for what `conn` reads until it is committed or
/// dropped; `None` when `conn` is already inside one (every read on a
/// reader thread is, see `Readers`), which then gives the same snapshot.
pub fn read_transaction(conn: &Connection) -> rusqlite::Result<Option<rusqlite::Transaction<'_>>> {
    if conn.is_autocommit() {
        conn.unchecked_transaction().map(Some)
    } else {
        Ok(None)
    }
}

fn data_version(conn: &Connection) -> Option<i64> {
    conn.prepare_kept("PRAGMA data_version")
        .and_then(|mut s| s.query_row([], |r| r.get(0)))
        .ok()
}

#[derive(Default)]
struct Queue {
    state: Mutex<State>,
    ready: Condvar,
}

#[derive(Default)]
struct State {
    jobs: VecDeque<ReadJob>,
    /// Set when the database is dropped: the threads finish what is queued and end.
    closed: bool,
    /// Moves on when the page caches should be let go (see
    /// [`Readers::release_memory`]); each thread remembers what it last did.
    release: u64,
}

pub struct Readers {
    queue: Arc<Queue>,
}

impl Readers {
    /// One thread for each connection given.
    pub fn start(connections: Vec<Connection>) -> std::io::Result<Readers> {
        let queue = Arc::new(Queue::default());
        for (n, conn) in connections.into_iter().enumerate() {
            let queue = queue.clone();
            std::thread::Builder::new()
                .name(format!("pillbox-read-{n}"))
                .spawn(move || super::statements::keep(&conn, || run(&conn, &queue)))?;
        }
        Ok(Readers { queue })
    }

    /// Has every reader thread let go of its SQLite page cache before its
    /// next read (a sleeping thread at once): after a burst, what the
    /// readers cached is handed back to the allocator, and from there to
    /// the system. The next read reads its pages again from the operating
    /// system's file cache.
    pub fn release_memory(&self) {
        let mut state = self.queue.state.lock().unwrap_or_else(|e| e.into_inner());
        state.release = state.release.wrapping_add(1);
        drop(state);
        self.queue.ready.notify_all();
    }

    /// Queues `job`; a reader thread runs it as soon as one is free.
    pub fn submit(&self, job: ReadJob) {
        let mut state = self.queue.state.lock().unwrap_or_else(|e| e.into_inner());
        state.jobs.push_back(job);
        drop(state);
        self.queue.ready.notify_one();
    }
}

impl Drop for Readers {
    fn drop(&mut self) {
        self.queue
            .state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .closed = true;
        self.queue.ready.notify_all();
    }
}

fn run(conn: &Connection, queue: &Queue) {
    let mut released = 0;
    loop {
        let job = {
            let mut state = queue.state.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                if state.release != released {
                    released = state.release;
                    break None;
                }
                if let Some(job) = state.jobs.pop_front() {
                    break Some(job);
                }
                if state.closed {
                    return;
                }
                state = queue.ready.wait(state).unwrap_or_else(|e| e.into_inner());
            }
        };
        match job {
            Some(job) => run_job(conn, job),
            None => {
                let _ = step(conn, "PRAGMA shrink_memory");
            }
        }
    }
}

fn run_job(conn: &Connection, job: ReadJob) {
    // A panicking read drops its reply (its caller sees an internal
    // error); the thread and its connection carry on.
    let _ = run_read(conn, job);
}

/// Runs `read` on `conn`, the connection this thread keeps values for
/// (`kept`), as every read runs: in one read transaction, so every
/// statement sees the same snapshot and SQLite takes its read lock on the
/// WAL once instead of once per statement (should BEGIN fail, the read
/// still runs, a statement at a time). `None` when `read` panicked; the
/// connection is left ready for the next read either way.
pub(super) fn run_read<R>(conn: &Connection, read: impl FnOnce(&Connection) -> R) -> Option<R> {
    let _ = step(conn, "BEGIN");
    GENERATION.set(Generation::Unread);
    let result = catch_unwind(AssertUnwindSafe(|| read(conn))).ok();
    GENERATION.set(Generation::Elsewhere);
    if !conn.is_autocommit() {
        let _ = step(conn, "ROLLBACK");
    }
    result
}
