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
    let sql =
        "SELECT id FROM planned WHERE name LIKE :pattern ORDER BY id LIMIT :limit OFFSET :offset";
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
        .read(
            |conn| Ok(conn.query_row("SELECT count(*) FROM scratch", [], |r| r.get::<_, i64>(0))?),
        )
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
