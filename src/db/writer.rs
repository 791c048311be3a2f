//! The single writer: one thread owns the write connection and runs submitted
//! jobs. Jobs waiting together share one transaction (group commit), each in
//! its own SAVEPOINT, so a failing job rolls back only itself while the batch
//! pays for a single fsync. A job's result is sent only after the commit is
//! durable.

use std::ops::Deref;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::thread::JoinHandle;

use rusqlite::Connection;
use tokio::sync::{mpsc, oneshot, watch};

use super::commit_mark::CommitWatch;
use super::{PrepareKept, gathered_wal, step};
use crate::error::{ApiError, Result};

/// How many queued jobs one transaction may take.
const MAX_GROUP: usize = 128;
const QUEUE_DEPTH: usize = 1024;

/// The connection inside the writer's transaction. Only the writer makes
/// one, so a rule that takes `&WriteTx` cannot be handed a pooled read
/// connection: that would not compile. Reads take `&Connection`, which a
/// `&WriteTx` also gives.
pub struct WriteTx<'c> {
    conn: &'c Connection,
    /// Set when the job changed household data (it appended to the change
    /// feed); background tasks that follow the data are woken after commit.
    changed: std::cell::Cell<bool>,
}

impl WriteTx<'_> {
    /// Notes that this job changed household data.
    pub fn mark_changed(&self) {
        self.changed.set(true);
    }
}

impl Deref for WriteTx<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.conn
    }
}

/// Called once the group's commit has finished: `Ok` when durable.
type Completion = Box<dyn FnOnce(Result<()>) + Send>;
/// Runs inside its savepoint; says whether it succeeded and how to answer.
type Job = Box<dyn FnOnce(&WriteTx) -> (bool, Completion) + Send>;

enum Message {
    Job(Job),
    /// Let go of the connection's page cache (between groups).
    ReleaseMemory,
    /// Nobody is asking anything: fold the WAL back into the database
    /// file, then let go of the page cache.
    Idle,
    /// Finish what is queued before this, then stop.
    Stop,
}

pub struct Writer {
    sender: mpsc::Sender<Message>,
    /// Counts commits that changed household data.
    changes: std::sync::Arc<watch::Sender<u64>>,
    /// What the last commit left (see [`CommitWatch`]).
    watch: std::sync::Arc<CommitWatch>,
    thread: std::sync::Mutex<Option<JoinHandle<()>>>,
}

impl Writer {
    pub fn start(conn: Connection) -> std::io::Result<Writer> {
        let (sender, receiver) = mpsc::channel(QUEUE_DEPTH);
        let changes = std::sync::Arc::new(watch::Sender::new(0));
        let notify = changes.clone();
        let watch = std::sync::Arc::new(CommitWatch::default());
        let watched = watch.clone();
        let thread = std::thread::Builder::new()
            .name("pillbox-writer".into())
            .spawn(move || run(conn, receiver, &notify, &watched))?;
        Ok(Writer {
            sender,
            changes,
            watch,
            thread: std::sync::Mutex::new(Some(thread)),
        })
    }

    pub async fn submit<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&WriteTx) -> Result<T> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel::<Result<T>>();
        let job: Job = Box::new(move |conn| {
            let result = catch_unwind(AssertUnwindSafe(|| f(conn)))
                .unwrap_or_else(|_| Err(ApiError::internal("write job panicked")));
            let ok = result.is_ok();
            let completion: Completion = Box::new(move |commit| {
                // A failed job's own error stands; a good job fails if the commit did.
                let _ = reply.send(commit.and(result));
            });
            (ok, completion)
        });
        self.sender
            .send(Message::Job(job))
            .await
            .map_err(|_| ApiError::internal("database writer has stopped"))?;
        answer
            .await
            .map_err(|_| ApiError::internal("database writer dropped a job"))?
    }

    /// Has the writer let go of its SQLite page cache after the jobs queued
    /// so far. SQLite keeps a connection's cache across transactions while
    /// no other connection writes, and the writer is the only one: after a
    /// stream of takes it held its whole cache (about 2 MB) for good. A full
    /// queue skips this round (the writer is busy; its cache is in use).
    pub fn release_memory(&self) {
        let _ = self.sender.try_send(Message::ReleaseMemory);
    }

    /// [`Writer::release_memory`] for a server nobody is asking anything,
    /// after folding the WAL back into the database file and emptying it
    /// (see [`fold_wal`]): the writer checkpoints inside a commit only
    /// once the WAL holds `WAL_FRAMES_BEFORE_CHECKPOINT` frames, and a
    /// household's server is quiet most of the day, so the copy is made
    /// when nothing waits for it and the WAL file gives its space back.
    pub fn release_idle(&self) {
        let _ = self.sender.try_send(Message::Idle);
    }

    /// Wakes whenever a commit changed household data.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    pub fn commit_watch(&self) -> &CommitWatch {
        &self.watch
    }

    /// Lets jobs queued so far finish, then stops the thread. Later writes
    /// fail with an internal error instead of hanging.
    pub fn shutdown(&self) {
        let _ = self.sender.blocking_send(Message::Stop);
        let handle = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(handle) = handle {
            let _ = handle.join();
        }
    }
}

fn run(
    conn: Connection,
    mut receiver: mpsc::Receiver<Message>,
    changes: &watch::Sender<u64>,
    commits: &CommitWatch,
) {
    super::statements::keep(&conn, || serve(&conn, &mut receiver, changes, commits));
    receiver.close();
    // Fold the WAL back into the main file on a clean stop.
    let _ = conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);");
}

/// Runs groups of jobs until told to stop or every sender is gone.
fn serve(
    conn: &Connection,
    receiver: &mut mpsc::Receiver<Message>,
    changes: &watch::Sender<u64>,
    commits: &CommitWatch,
) {
    let mut group: Vec<Job> = Vec::with_capacity(MAX_GROUP);
    let mut stopping = false;
    while !stopping {
        let mut release = false;
        let mut fold = false;
        match receiver.blocking_recv() {
            Some(Message::Job(job)) => group.push(job),
            Some(Message::ReleaseMemory) => release = true,
            Some(Message::Idle) => (release, fold) = (true, true),
            Some(Message::Stop) | None => break,
        }
        while group.len() < MAX_GROUP && !release {
            match receiver.try_recv() {
                Ok(Message::Job(job)) => group.push(job),
                Ok(Message::ReleaseMemory) => release = true,
                Ok(Message::Idle) => (release, fold) = (true, true),
                Ok(Message::Stop) => {
                    stopping = true;
                    break;
                }
                Err(_) => break,
            }
        }
        if !group.is_empty() && run_group(conn, std::mem::take(&mut group), commits) {
            changes.send_modify(|n| *n = n.wrapping_add(1));
        }
        if fold {
            fold_wal(conn);
        }
        if release {
            let _ = step(conn, "PRAGMA shrink_memory");
        }
    }
}

/// Copies the WAL's pages into the database file, syncs it and empties the
/// WAL file, without waiting: a reader still reading from the WAL keeps
/// its frames there (SQLite then copies what it can, and the rest goes at
/// the next fold or checkpoint).
fn fold_wal(conn: &Connection) {
    let _ = conn.busy_timeout(std::time::Duration::ZERO);
    let _ = conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);");
    let _ = conn.busy_timeout(super::BUSY_TIMEOUT);
}

/// Runs the jobs in one transaction; whether a committed job changed
/// household data. A job alone in its group needs no savepoint: if it
/// fails, the whole transaction is rolled back instead.
fn run_group(conn: &Connection, jobs: Vec<Job>, commits: &CommitWatch) -> bool {
    let mut changed = false;
    let mut any_ok = false;
    let savepoints = jobs.len() > 1;
    let mut completions: Vec<Completion> = Vec::with_capacity(jobs.len());
    let tx = match Group::begin(conn) {
        Ok(tx) => tx,
        Err(e) => {
            let message = format!("cannot begin write transaction: {e}");
            for job in jobs {
                // Answer without running: nothing was written.
                drop(job);
                tracing::error!("{message}");
            }
            return false;
        }
    };
    for job in jobs {
        if savepoints && let Err(e) = step(conn, "SAVEPOINT job") {
            let message = format!("cannot open savepoint: {e}");
            completions.push(Box::new(move |_| tracing::error!("{message}")));
            continue;
        }
        let write = WriteTx {
            conn,
            changed: std::cell::Cell::new(false),
        };
        let (ok, completion) = job(&write);
        any_ok |= ok;
        changed |= ok && write.changed.get();
        if savepoints {
            let end = if ok {
                step(conn, "RELEASE job")
            } else {
                step(conn, "ROLLBACK TO job").and_then(|()| step(conn, "RELEASE job"))
            };
            if let Err(e) = end {
                tracing::error!("savepoint end failed: {e}");
            }
        }
        completions.push(completion);
    }
    // Nothing to keep (every job failed): a failed job answers with its own error.
    let committed = if any_ok {
        let watched = watched_value(conn, commits);
        let committed = tx
            .commit()
            .map_err(|e| ApiError::internal(format!("commit failed: {e}")));
        let header = gathered_wal::take_committed_header(conn);
        if let (Ok(()), Some(header), Some(value)) = (&committed, header, watched) {
            commits.committed(header, value);
        }
        committed
    } else {
        tx.rollback()
            .map_err(|e| ApiError::internal(format!("rollback failed: {e}")))
    };
    let durable = any_ok && committed.is_ok();
    for completion in completions {
        completion(match &committed {
            Ok(()) => Ok(()),
            Err(e) => Err(ApiError::internal(e)),
        });
    }
    durable && changed
}

/// The value the watched statement reads in the group's transaction,
/// about to commit; `None` when nobody watches or it could not be read
/// (the commit is then not published, and readers read for themselves).
fn watched_value(conn: &Connection, commits: &CommitWatch) -> Option<i64> {
    let sql = commits.statement()?;
    conn.prepare_kept(sql)
        .and_then(|mut s| s.query_row([], |r| r.get(0)))
        .ok()
}

/// A group's transaction, begun and ended by statements the writer keeps
/// prepared (rusqlite's `Transaction` parsed `BEGIN IMMEDIATE` and
/// `COMMIT` again for every group, about 7,000 instructions). Rolled back
/// if dropped unfinished, and after a commit that failed.
struct Group<'c> {
    conn: &'c Connection,
    open: bool,
}

impl<'c> Group<'c> {
    fn begin(conn: &'c Connection) -> rusqlite::Result<Group<'c>> {
        // A header left by a commit outside the groups (a migration) is
        // not this group's.
        let _ = gathered_wal::take_committed_header(conn);
        step(conn, "BEGIN IMMEDIATE")?;
        Ok(Group { conn, open: true })
    }

    fn commit(mut self) -> rusqlite::Result<()> {
        let committed = step(self.conn, "COMMIT");
        // A failed COMMIT leaves the transaction open: drop rolls it back.
        self.open = committed.is_err();
        committed
    }

    fn rollback(mut self) -> rusqlite::Result<()> {
        self.open = false;
        step(self.conn, "ROLLBACK")
    }
}

impl Drop for Group<'_> {
    fn drop(&mut self) {
        if self.open && !self.conn.is_autocommit() {
            let _ = step(self.conn, "ROLLBACK");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writer() -> (tempfile::TempDir, Writer) {
        let dir = tempfile::tempdir().unwrap();
        let conn = Connection::open(dir.path().join("w.sqlite3")).unwrap();
        conn.execute_batch("PRAGMA journal_mode=WAL; CREATE TABLE t (v INTEGER UNIQUE);")
            .unwrap();
        (dir, Writer::start(conn).unwrap())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn failing_job_rolls_back_only_itself_in_a_group() {
        let (_dir, writer) = writer();
        let writer = std::sync::Arc::new(writer);
        let mut handles = Vec::new();
        for i in 0..200 {
            let writer = writer.clone();
            handles.push(tokio::spawn(async move {
                writer
                    .submit(move |c| {
                        c.execute("INSERT INTO t (v) VALUES (?1)", [i])?;
                        if i % 10 == 0 {
                            return Err(ApiError::invalid("v", "is a multiple of ten"));
                        }
                        Ok(i)
                    })
                    .await
            }));
        }
        let mut ok = 0;
        for h in handles {
            if h.await.unwrap().is_ok() {
                ok += 1;
            }
        }
        assert_eq!(ok, 180);
        let count: i64 = writer
            .submit(|c| {
                Ok(c.query_row("SELECT count(*) FROM t WHERE v % 10 = 0", [], |r| r.get(0))?)
            })
            .await
            .unwrap();
        assert_eq!(count, 0);
        let total: i64 = writer
            .submit(|c| Ok(c.query_row("SELECT count(*) FROM t", [], |r| r.get(0))?))
            .await
            .unwrap();
        assert_eq!(total, 180);
    }

    use crate::db::tests::cache_used;

    #[tokio::test]
    async fn the_writer_lets_go_of_its_page_cache_between_groups() {
        let (_dir, writer) = writer();
        let filled = writer
            .submit(|c| {
                c.execute_batch(
                    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
                     INSERT INTO t (v) SELECT i FROM n;",
                )?;
                Ok(())
            })
            .await;
        assert!(filled.is_ok());
        // SQLite keeps the cache across transactions: the writer is the
        // only connection that writes.
        let kept = writer.submit(|c| Ok(cache_used(c))).await.unwrap();
        assert!(kept > 200_000, "the cache holds the pages written: {kept}");

        writer.release_memory();
        let after = writer.submit(|c| Ok(cache_used(c))).await.unwrap();
        assert!(after < kept / 4, "released: {kept} bytes, then {after}");
        let total: i64 = writer
            .submit(|c| Ok(c.query_row("SELECT count(*) FROM t", [], |r| r.get(0))?))
            .await
            .unwrap();
        assert_eq!(total, 20_000, "writes carry on after the release");
    }

    #[test]
    fn a_group_left_unfinished_is_rolled_back_and_a_committed_one_kept() {
        let dir = tempfile::tempdir().unwrap();
        let conn = Connection::open(dir.path().join("g.sqlite3")).unwrap();
        conn.execute_batch("PRAGMA journal_mode=WAL; CREATE TABLE t (v INTEGER);")
            .unwrap();
        let count = |conn: &Connection| -> i64 {
            conn.query_row("SELECT count(*) FROM t", [], |r| r.get(0))
                .unwrap()
        };
        super::super::statements::keep(&conn, || {
            let group = Group::begin(&conn).unwrap();
            conn.execute("INSERT INTO t (v) VALUES (1)", []).unwrap();
            drop(group);
            assert!(conn.is_autocommit(), "the transaction ended");
            assert_eq!(count(&conn), 0, "an unfinished group keeps nothing");

            let group = Group::begin(&conn).unwrap();
            conn.execute("INSERT INTO t (v) VALUES (2)", []).unwrap();
            group.commit().unwrap();
            let group = Group::begin(&conn).unwrap();
            conn.execute("INSERT INTO t (v) VALUES (3)", []).unwrap();
            group.rollback().unwrap();
            assert!(conn.is_autocommit());
        });
        let other = Connection::open(dir.path().join("g.sqlite3")).unwrap();
        assert_eq!(count(&other), 1, "only the committed group is there");
    }

    #[tokio::test]
    async fn panicking_job_is_an_error_and_the_writer_survives() {
        let (_dir, writer) = writer();
        let r: Result<()> = writer
            .submit(|c| {
                c.execute("INSERT INTO t (v) VALUES (1)", [])?;
                panic!("boom")
            })
            .await;
        assert!(matches!(r, Err(ApiError::Internal(_))));
        let total: i64 = writer
            .submit(|c| Ok(c.query_row("SELECT count(*) FROM t", [], |r| r.get(0))?))
            .await
            .unwrap();
        assert_eq!(total, 0);
    }
}
