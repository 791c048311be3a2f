use super::*;
use rusqlite::{Connection, OpenFlags};
use std::cell::Cell;

thread_local! {
    /// Writes of gathered bytes made on this thread.
    pub(super) static WRITES_OUT: Cell<u64> = const { Cell::new(0) };
    /// Times gathered bytes were forgotten when the WAL was let go.
    pub(super) static DISCARDED: Cell<u64> = const { Cell::new(0) };
}

fn open_gathering(path: &std::path::Path, synchronous: &str) -> Connection {
    let conn = Connection::open_with_flags_and_vfs(path, OpenFlags::default(), register().unwrap())
        .unwrap();
    conn.execute_batch(&format!(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = {synchronous};
         PRAGMA wal_autocheckpoint = 0;
         CREATE TABLE IF NOT EXISTS gathered (id INTEGER PRIMARY KEY, k TEXT UNIQUE, v BLOB);
         CREATE INDEX IF NOT EXISTS gathered_by_v ON gathered (v);"
    ))
    .unwrap();
    conn
}

fn insert(conn: &Connection, from: i64, rows: i64, size: usize) {
    let tx = conn.unchecked_transaction().unwrap();
    for n in from..from + rows {
        tx.execute(
            "INSERT INTO gathered (id, k, v) VALUES (?1, ?2, ?3)",
            rusqlite::params![n, format!("key {n:08}"), vec![(n % 251) as u8; size]],
        )
        .unwrap_or_else(|e| panic!("row {n} size {size}: {e}"));
    }
    tx.commit().unwrap();
}

fn integrity(conn: &Connection) -> String {
    conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap()
}

/// Rows and the bytes of their blobs.
fn rows_and_bytes(conn: &Connection) -> (i64, i64) {
    conn.query_row("SELECT count(*), sum(length(v)) FROM gathered", [], |r| {
        Ok((r.get(0)?, r.get(1)?))
    })
    .unwrap()
}

fn count(conn: &Connection) -> i64 {
    conn.query_row("SELECT count(*) FROM gathered", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn a_commit_goes_out_in_one_write_and_is_read_at_once_elsewhere() {
    for synchronous in ["FULL", "NORMAL"] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gathered.sqlite3");
        let writer = open_gathering(&path, synchronous);
        let reader = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
        let mut expected = 0;
        for round in 0..20 {
            let before = WRITES_OUT.get();
            // Rows across several pages of the table and both indexes.
            insert(&writer, expected, 12, 900);
            expected += 12;
            assert_eq!(
                WRITES_OUT.get() - before,
                1,
                "round {round} ({synchronous}): one write of the commit's frames"
            );
            // Read through the default VFS, from the file: the frames
            // were written before the commit was published.
            assert_eq!(count(&reader), expected, "{synchronous}");
        }
    }
}

#[test]
fn frames_of_a_rolled_back_transaction_never_reach_the_file_later() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gathered.sqlite3");
    let writer = open_gathering(&path, "FULL");
    insert(&writer, 0, 300, 3000);
    // A transaction larger than the writer's cache writes frames into
    // the WAL before any commit (a spill), then rolls back: the last of
    // them are still gathered when it gives up the WAL. (Rows rewritten
    // in place: the file does not grow, so SQLite reads nothing back.)
    // With the WAL emptied first, the rollback reads the pages it undoes
    // back from the database file, never touching the WAL.
    writer
        .execute_batch("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA cache_size = 10;")
        .unwrap();
    let tx = writer.unchecked_transaction().unwrap();
    tx.execute("UPDATE gathered SET v = zeroblob(2999) WHERE id < 40", [])
        .unwrap();
    let discarded = DISCARDED.get();
    drop(tx);
    assert!(DISCARDED.get() > discarded, "frames were still gathered");
    // A command beside the server commits where those frames were...
    let other = Connection::open(&path).unwrap();
    insert(&other, 1000, 400, 700);
    // ...and the writer reads and commits again.
    assert_eq!(count(&writer), 700);
    insert(&writer, 2000, 5, 100);
    drop(other);
    drop(writer);
    let fresh = Connection::open(&path).unwrap();
    assert_eq!(integrity(&fresh), "ok");
    assert_eq!(count(&fresh), 705);
    let zeroes: i64 = fresh
        .query_row(
            "SELECT count(*) FROM gathered WHERE v = zeroblob(2999)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(zeroes, 0, "the rolled-back update is nowhere");
}

#[test]
fn the_files_read_the_same_through_the_default_vfs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gathered.sqlite3");
    let writer = open_gathering(&path, "FULL");
    // Small and large commits (past what is gathered at once), a
    // checkpoint that starts the WAL again, and more commits after it.
    insert(&writer, 0, 50, 100);
    insert(&writer, 50, 400, 3000);
    writer
        .execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .unwrap();
    insert(&writer, 450, 30, 2000);
    writer
        .execute("DELETE FROM gathered WHERE id % 3 = 0", [])
        .unwrap();
    insert(&writer, 1000, 5, 10);
    let (rows, sum) = rows_and_bytes(&writer);

    // Another process's view of the files before the writer closes...
    let other = Connection::open(&path).unwrap();
    assert_eq!(rows_and_bytes(&other), (rows, sum));
    drop(other);
    drop(writer);
    // ...and after it closed.
    let other = Connection::open(&path).unwrap();
    assert_eq!(integrity(&other), "ok");
    assert_eq!(count(&other), rows);
}
