//! The single writer: one thread owns the write connection and runs submitted
//! jobs. Jobs waiting together share one transaction (group commit), each in
//! its own SAVEPOINT, so a failing job rolls back only itself while the batch
//! pays for a single fsync. A job's result is sent only after the commit is
//! durable.
//!
//! A job whose rule checks everything before its first write (a recorded
//! dose) runs without a savepoint of its own: copying each page it changes
//! into a savepoint journal, and opening and releasing that savepoint, were
//! about a twelfth of the writer's instructions under a stream of takes.
//! Failing before it writes, it leaves nothing to roll back; should it
//! still fail having written, the whole group is rolled back and each job
//! that ran in it is answered with that failure (nothing of it was kept),
//! and the jobs after it run in a group of their own.

use std::ops::Deref;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::thread::JoinHandle;

use rusqlite::Connection;
use tokio::sync::{mpsc, oneshot, watch};

use super::commit_mark::CommitWatch;
use super::step;
use crate::domain::Timestamp;
use crate::error::{ApiError, Result};

mod group;

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
    /// The job's moment, read from the clock when first asked.
    now: std::cell::OnceCell<Timestamp>,
}

impl WriteTx<'_> {
    /// Notes that this job changed household data.
    pub fn mark_changed(&self) {
        self.changed.set(true);
    }

    /// The moment of this job: every time it stamps (a record's
    /// created_at, its change-feed entries) is the same one, read from the
    /// clock and formatted once.
    pub fn now(&self) -> &Timestamp {
        self.now.get_or_init(Timestamp::now)
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
/// Runs inside the group's transaction; says whether it succeeded and how
/// to answer.
type Run = Box<dyn FnOnce(&WriteTx) -> (bool, Completion) + Send>;

struct Job {
    run: Run,
    /// Runs in a savepoint of its own when its group has other jobs; false
    /// for a rule that writes nothing before it has decided to succeed.
    savepoint: bool,
}

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
        self.queue(f, true).await
    }

    /// [`Writer::submit`] for a rule that checks everything before its
    /// first write, so that a failure after it is the database's (or a
    /// bug): it runs without a savepoint of its own (see the module's
    /// documentation).
    pub async fn submit_checked_first<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&WriteTx) -> Result<T> + Send + 'static,
    {
        self.queue(f, false).await
    }

    async fn queue<T, F>(&self, f: F, savepoint: bool) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&WriteTx) -> Result<T> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel::<Result<T>>();
        let run: Run = Box::new(move |conn| {
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
            .send(Message::Job(Job { run, savepoint }))
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
    super::kept::begin_writing();
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
        if !group.is_empty() && group::run_group(conn, std::mem::take(&mut group), commits) {
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

    type TestJob = Box<dyn FnOnce(&WriteTx) -> Result<i64> + Send>;

    /// Queues `jobs` behind a job that holds the writer until they are all
    /// queued, so that they run as one group; their answers, in order.
    async fn in_one_group(
        writer: std::sync::Arc<Writer>,
        jobs: Vec<(bool, TestJob)>,
    ) -> Vec<Result<i64>> {
        let (queued, wait) = std::sync::mpsc::channel::<()>();
        let (holding, held) = tokio::sync::oneshot::channel::<()>();
        let holder = {
            let writer = writer.clone();
            tokio::spawn(async move {
                writer
                    .submit(move |_| {
                        let _ = holding.send(());
                        let _ = wait.recv();
                        Ok(0)
                    })
                    .await
            })
        };
        held.await.unwrap();
        let mut answers = Vec::new();
        for (savepoint, job) in jobs {
            let submitter = writer.clone();
            answers.push(tokio::spawn(async move {
                if savepoint {
                    submitter.submit(job).await
                } else {
                    submitter.submit_checked_first(job).await
                }
            }));
            // Each is queued before the next is submitted.
            while writer.sender.capacity() > QUEUE_DEPTH - answers.len() {
                tokio::task::yield_now().await;
            }
        }
        queued.send(()).unwrap();
        holder.await.unwrap().unwrap();
        let mut results = Vec::new();
        for answer in answers {
            results.push(answer.await.unwrap());
        }
        results
    }

    fn insert(v: i64) -> TestJob {
        Box::new(move |c| {
            c.execute("INSERT INTO t (v) VALUES (?1)", [v])?;
            Ok(v)
        })
    }

    async fn stored(writer: &Writer) -> Vec<i64> {
        writer
            .submit(|c| {
                let mut s = c.prepare("SELECT v FROM t ORDER BY v")?;
                let rows = s.query_map([], |r| r.get(0))?;
                Ok(rows.collect::<rusqlite::Result<Vec<i64>>>()?)
            })
            .await
            .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_job_checked_first_that_fails_before_writing_leaves_its_group_alone() {
        let (_dir, writer) = writer();
        let writer = std::sync::Arc::new(writer);
        let refused: TestJob =
            Box::new(|_| Err(ApiError::invalid("v", "is refused before any write")));
        let results = in_one_group(
            writer.clone(),
            vec![
                (false, insert(1)),
                (false, refused),
                (true, insert(3)),
                (false, insert(4)),
            ],
        )
        .await;
        assert_eq!(results[0].as_ref().ok(), Some(&1));
        assert!(
            matches!(results[1], Err(ApiError::Validation { .. })),
            "{:?}",
            results[1]
        );
        assert_eq!(results[2].as_ref().ok(), Some(&3));
        assert_eq!(results[3].as_ref().ok(), Some(&4));
        assert_eq!(stored(&writer).await, vec![1, 3, 4]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_job_checked_first_that_fails_after_writing_rolls_back_its_group_and_the_rest_still_run()
     {
        let (_dir, writer) = writer();
        let writer = std::sync::Arc::new(writer);
        let broken: TestJob = Box::new(|c| {
            c.execute("INSERT INTO t (v) VALUES (2)", [])?;
            Err(ApiError::internal("failed after its first write"))
        });
        let results = in_one_group(
            writer.clone(),
            vec![
                (true, insert(1)),
                (false, insert(5)),
                (false, broken),
                (false, insert(3)),
                (true, insert(4)),
            ],
        )
        .await;
        for (i, result) in results.iter().take(3).enumerate() {
            assert!(
                matches!(result, Err(ApiError::Internal(_))),
                "job {i}: {result:?}"
            );
        }
        assert_eq!(results[3].as_ref().ok(), Some(&3));
        assert_eq!(results[4].as_ref().ok(), Some(&4));
        assert_eq!(
            stored(&writer).await,
            vec![3, 4],
            "nothing of the spoiled group is kept"
        );
    }

    #[tokio::test]
    async fn a_job_stamps_one_moment_read_when_first_asked() {
        let (_dir, writer) = writer();
        let before = Timestamp::now();
        let (first, later) = writer
            .submit(|c| {
                let first = c.now().clone();
                std::thread::sleep(std::time::Duration::from_millis(5));
                Ok((first, c.now().clone()))
            })
            .await
            .unwrap();
        assert_eq!(first, later, "one moment for the whole job");
        assert!(first.to_jiff() >= before.to_jiff());
        let next = writer.submit(|c| Ok(c.now().clone())).await.unwrap();
        assert!(next.to_jiff() > first.to_jiff(), "the next job has its own");
    }
}
