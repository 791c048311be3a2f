//! A fixed set of reader threads, each owning one read-only connection, fed
//! by one queue. A read is handed over once and answered once, with no pool
//! checkout in between, and the number of threads (and so of connections
//! and per-thread allocator arenas) does not grow with load: a burst of
//! clients waits in the queue instead of each taking a thread.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Condvar, Mutex};

use rusqlite::Connection;

use super::step;

/// Runs on a reader thread with its connection.
pub type ReadJob = Box<dyn FnOnce(&Connection) + Send>;

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
    /// Moves on when the connections should be closed until the next read
    /// (see [`Readers::close_connections`]).
    close: u64,
}

/// Opens a reader's connection again after [`Readers::close_connections`].
pub type Open = Arc<dyn Fn() -> rusqlite::Result<Connection> + Send + Sync>;

/// What a thread last did of the releases asked of it.
#[derive(Default, Clone, Copy)]
struct Done {
    release: u64,
    close: u64,
}

/// Why a thread stopped reading through its connection.
enum Stop {
    /// The database was dropped: the thread ends.
    Closed,
    /// Close the connection until the next read.
    CloseConnection,
}

pub struct Readers {
    queue: Arc<Queue>,
}

impl Readers {
    /// One thread for each connection given; `open` opens one again after
    /// [`Readers::close_connections`].
    pub fn start(connections: Vec<Connection>, open: Open) -> std::io::Result<Readers> {
        let queue = Arc::new(Queue::default());
        for (n, conn) in connections.into_iter().enumerate() {
            let queue = queue.clone();
            let open = open.clone();
            std::thread::Builder::new()
                .name(format!("pillbox-read-{n}"))
                .spawn(move || serve(conn, &queue, &open))?;
        }
        Ok(Readers { queue })
    }

    /// Has every reader thread close its connection once idle (a sleeping
    /// thread at once) and open it again at its next read: a connection
    /// holds its parsed schema (about 430 KB), its prepared statements and
    /// its page cache, and what the thread kept from its reads, which a
    /// server nobody asks anything need not hold. The next read pays for
    /// the opening, about a millisecond.
    pub fn close_connections(&self) {
        let mut state = self.queue.state.lock().unwrap_or_else(|e| e.into_inner());
        state.close = state.close.wrapping_add(1);
        drop(state);
        self.queue.ready.notify_all();
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

/// A reader thread: reads through `conn` until the database is dropped,
/// closing it when asked and opening another for the next read.
fn serve(conn: Connection, queue: &Queue, open: &Open) {
    let mut done = Done::default();
    let mut conn = conn;
    let mut first = None;
    loop {
        let stop = super::statements::keep(&conn, || run(&conn, queue, &mut done, first.take()));
        // What this thread kept belongs to this connection's data_version.
        super::kept::forget();
        drop(conn);
        if let Stop::Closed = stop {
            return;
        }
        // Idle with no connection open until the next read.
        conn = loop {
            let Some(job) = next_job(queue, &mut done) else {
                return;
            };
            match open() {
                Ok(conn) => {
                    first = Some(job);
                    break conn;
                }
                // The read is answered with an internal error (its reply
                // is dropped); the next one tries again.
                Err(e) => tracing::error!("cannot open a reader connection: {e}"),
            }
        };
    }
}

/// The next job, waiting for one; `None` once the database is dropped.
/// Requests to let go of memory are taken as done: nothing is held.
fn next_job(queue: &Queue, done: &mut Done) -> Option<ReadJob> {
    let mut state = queue.state.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        *done = Done {
            release: state.release,
            close: state.close,
        };
        if let Some(job) = state.jobs.pop_front() {
            return Some(job);
        }
        if state.closed {
            return None;
        }
        state = queue.ready.wait(state).unwrap_or_else(|e| e.into_inner());
    }
}

/// Runs `first`, then queued jobs, until told to close the connection or
/// the database is dropped.
fn run(conn: &Connection, queue: &Queue, done: &mut Done, first: Option<ReadJob>) -> Stop {
    if let Some(job) = first {
        run_job(conn, job);
    }
    loop {
        let job = {
            let mut state = queue.state.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                if state.release != done.release {
                    done.release = state.release;
                    break None;
                }
                if let Some(job) = state.jobs.pop_front() {
                    break Some(job);
                }
                if state.closed {
                    return Stop::Closed;
                }
                // Only once nothing is queued.
                if state.close != done.close {
                    done.close = state.close;
                    return Stop::CloseConnection;
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
    super::kept::begin_read();
    let result = catch_unwind(AssertUnwindSafe(|| read(conn))).ok();
    super::kept::end_read();
    if !conn.is_autocommit() {
        let _ = step(conn, "ROLLBACK");
    }
    result
}
