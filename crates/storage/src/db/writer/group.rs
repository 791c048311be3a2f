//! One group of jobs: their transaction, each job in a savepoint of its
//! own where it asks for one, and the commit or rollback that answers them
//! all.

use rusqlite::Connection;

use super::{Completion, Job, WriteTx};
use crate::db::commit_mark::CommitWatch;
use crate::db::{PrepareKept, gathered_wal, step};
use crate::error::ApiError;

/// Runs the jobs in one transaction; whether a committed job changed
/// household data. A job alone in its group needs no savepoint: if it
/// fails, the whole transaction is rolled back instead.
pub(super) fn run_group(conn: &Connection, jobs: Vec<Job>, commits: &CommitWatch) -> bool {
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
    let ran = run_jobs(conn, jobs);
    let committed = if ran.spoiled {
        // A job without a savepoint failed after writing: nothing of the
        // group can be kept.
        let _ = tx.rollback();
        Err(ApiError::internal(
            "a write failed after it began; the group it was committed with was rolled back",
        ))
    } else if ran.any_ok {
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
        // Nothing to keep (every job failed): a failed job answers with its own error.
        tx.rollback()
            .map_err(|e| ApiError::internal(format!("rollback failed: {e}")))
    };
    let durable = ran.any_ok && committed.is_ok();
    for completion in ran.completions {
        completion(match &committed {
            Ok(()) => Ok(()),
            Err(e) => Err(ApiError::internal(e)),
        });
    }
    let rest_changed = !ran.rest.is_empty() && run_group(conn, ran.rest, commits);
    (durable && ran.changed) || rest_changed
}

/// What running a group's jobs left.
struct Ran {
    completions: Vec<Completion>,
    any_ok: bool,
    changed: bool,
    /// A job without a savepoint failed after it wrote.
    spoiled: bool,
    /// The jobs not run: those after the one that spoiled the group.
    rest: Vec<Job>,
}

/// Runs each job, in a savepoint of its own when the group has others and
/// the job asks for one.
fn run_jobs(conn: &Connection, jobs: Vec<Job>) -> Ran {
    let savepoints = jobs.len() > 1;
    let mut ran = Ran {
        completions: Vec::with_capacity(jobs.len()),
        any_ok: false,
        changed: false,
        spoiled: false,
        rest: Vec::new(),
    };
    let mut jobs = jobs.into_iter();
    for job in jobs.by_ref() {
        let savepoint = savepoints && job.savepoint;
        if savepoint && let Err(e) = step(conn, "SAVEPOINT job") {
            let message = format!("cannot open savepoint: {e}");
            ran.completions
                .push(Box::new(move |_| tracing::error!("{message}")));
            continue;
        }
        let write = WriteTx {
            conn,
            changed: std::cell::Cell::new(false),
            now: std::cell::OnceCell::new(),
        };
        let changes_before = conn.total_changes();
        let (ok, completion) = (job.run)(&write);
        ran.any_ok |= ok;
        ran.changed |= ok && write.changed.get();
        ran.completions.push(completion);
        if savepoint {
            let end = if ok {
                step(conn, "RELEASE job")
            } else {
                step(conn, "ROLLBACK TO job").and_then(|()| step(conn, "RELEASE job"))
            };
            if let Err(e) = end {
                tracing::error!("savepoint end failed: {e}");
            }
        } else if savepoints
            && !ok
            && (conn.total_changes() != changes_before || conn.is_autocommit())
        {
            ran.spoiled = true;
            break;
        }
    }
    ran.rest = jobs.collect();
    ran
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
        crate::db::statements::keep(&conn, || {
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
}
