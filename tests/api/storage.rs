//! The database file: schema, pragmas, version guard, the single writer.

use pillbox::db::{DATABASE_FILE, Db, SCHEMA_SQL, SCHEMA_VERSION};
use rusqlite::{Connection, OptionalExtension};

fn schema_of(conn: &Connection) -> Vec<(String, String, String, Option<String>)> {
    let mut stmt = conn
        .prepare(
            "SELECT type, name, tbl_name, sql FROM sqlite_master
             WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name",
        )
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[tokio::test]
async fn fresh_database_schema_equals_schema_sql() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    db.close().await;
    let file = Connection::open(dir.path().join(DATABASE_FILE)).unwrap();
    let reference = Connection::open_in_memory().unwrap();
    reference.execute_batch(SCHEMA_SQL).unwrap();
    assert_eq!(schema_of(&file), schema_of(&reference));
    let version: i64 = file
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    let mode: String = file
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[tokio::test]
async fn writer_connection_is_durable_and_enforces_foreign_keys() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let (sync, fk): (i64, i64) = db
        .write(|c| {
            Ok((
                c.query_row("PRAGMA synchronous", [], |r| r.get(0))?,
                c.query_row("PRAGMA foreign_keys", [], |r| r.get(0))?,
            ))
        })
        .await
        .unwrap();
    assert_eq!(sync, 2, "synchronous=FULL");
    assert_eq!(fk, 1);
    let orphan = db
        .write(|c| {
            c.execute(
                "INSERT INTO people (portable_id, household_id, name, person_type, has_capacity, created_at, updated_at)
                 VALUES ('x', 424242, 'n', 'adult', 1, 't', 't')",
                [],
            )?;
            Ok(())
        })
        .await;
    assert!(
        orphan.is_err(),
        "a person in a missing household must be refused"
    );
}

#[tokio::test]
async fn reopening_keeps_data_and_a_newer_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    db.write(|c| {
        pillbox::household::store::insert(c, "Kept", "UTC", &pillbox::domain::Timestamp::now())?;
        Ok(())
    })
    .await
    .unwrap();
    db.close().await;
    let db = Db::open(dir.path()).unwrap();
    let n: i64 = db
        .read(|c| Ok(c.query_row("SELECT count(*) FROM households", [], |r| r.get(0))?))
        .await
        .unwrap();
    assert_eq!(n, 1);
    db.close().await;

    let file = Connection::open(dir.path().join(DATABASE_FILE)).unwrap();
    file.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    drop(file);
    let err = Db::open(dir.path())
        .err()
        .expect("a newer database must be refused");
    let message = err.to_string();
    assert!(
        message.contains("newer than this pillbox binary"),
        "{message}"
    );
}

#[tokio::test]
async fn read_connections_cannot_write() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let attempt = db
        .read(|c| {
            c.execute(
                "INSERT INTO instance_settings (key, value) VALUES ('a', 'b')",
                [],
            )?;
            Ok(())
        })
        .await;
    assert!(attempt.is_err());
}

/// Migration 13: a file whose change feed counted its cursor with
/// AUTOINCREMENT goes on from its largest seq without it.
#[tokio::test]
async fn the_change_feed_goes_on_from_its_largest_seq_after_migration() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(DATABASE_FILE);
    // Entries of a household the test does not make.
    let append = |conn: &Connection| -> i64 {
        conn.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
        conn.execute(
            "INSERT INTO change_feed (household_id, record_type, record_id, record_portable_id, action, occurred_at)
             VALUES (1, 'medication', 1, 'x', 'update', 't')",
            [],
        )
        .unwrap();
        conn.last_insert_rowid()
    };
    {
        let old = Connection::open(&path).unwrap();
        old.execute_batch(include_str!(
            "../../crates/storage/src/db/migrations/0001_initial.sql"
        ))
        .unwrap();
        old.pragma_update(None, "user_version", 1).unwrap();
        let seqs: Vec<i64> = (0..3).map(|_| append(&old)).collect();
        assert_eq!(seqs, [1, 2, 3]);
    }
    let db = Db::open(dir.path()).unwrap();
    db.close().await;
    let file = Connection::open(&path).unwrap();
    let definition: String = file
        .query_row(
            "SELECT sql FROM sqlite_schema WHERE name = 'change_feed'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(!definition.contains("AUTOINCREMENT"), "{definition}");
    assert_eq!(append(&file), 4, "the cursor goes on from the largest seq");
    let check: String = file
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
}

/// Migration 16: every portable table is rebuilt so that a portable id is
/// unique within its household. Rows, row ids and the references between
/// them come through; two households may then hold the same id, one
/// household still may not hold it twice.
#[tokio::test]
async fn portable_ids_become_unique_per_household_and_every_row_survives() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(DATABASE_FILE);
    const SHARED: &str = "0199b0a0-0000-7000-8000-00000000abcd";
    {
        let old = Connection::open(&path).unwrap();
        for sql in [
            include_str!("../../crates/storage/src/db/migrations/0001_initial.sql"),
            include_str!("../../crates/storage/src/db/migrations/0002_plan_revisions.sql"),
            include_str!("../../crates/storage/src/db/migrations/0003_admin_access_repair.sql"),
            include_str!("../../crates/storage/src/db/migrations/0004_sign_in.sql"),
            include_str!("../../crates/storage/src/db/migrations/0005_reminders.sql"),
            include_str!("../../crates/storage/src/db/migrations/0006_invitations_and_mail.sql"),
            include_str!("../../crates/storage/src/db/migrations/0007_pause_actor_refs.sql"),
            include_str!("../../crates/storage/src/db/migrations/0008_oidc.sql"),
            include_str!("../../crates/storage/src/db/migrations/0009_review_prompts.sql"),
            include_str!("../../crates/storage/src/db/migrations/0010_sources_by_medicine.sql"),
            include_str!("../../crates/storage/src/db/migrations/0011_checks_without_lists.sql"),
            include_str!("../../crates/storage/src/db/migrations/0012_access_stamp.sql"),
            include_str!(
                "../../crates/storage/src/db/migrations/0013_change_feed_without_autoincrement.sql"
            ),
            include_str!("../../crates/storage/src/db/migrations/0014_plan_stamp.sql"),
            include_str!("../../crates/storage/src/db/migrations/0015_linked_identities.sql"),
        ] {
            old.execute_batch(sql).unwrap();
        }
        old.pragma_update(None, "user_version", 15).unwrap();
        old.execute_batch(&format!(
            "PRAGMA foreign_keys = ON;
             INSERT INTO households (id, portable_id, name, time_zone, created_at, updated_at)
               VALUES (1, 'h1', 'One', 'UTC', 't', 't'), (2, 'h2', 'Two', 'UTC', 't', 't');
             INSERT INTO locations (id, portable_id, household_id, name, created_at, updated_at)
               VALUES (7, '{SHARED}', 1, 'Kitchen', 't', 't');
             INSERT INTO medications (id, portable_id, household_id, location_id, name, created_at, updated_at)
               VALUES (9, 'm9', 1, 7, 'Calpol', 't', 't');"
        ))
        .unwrap();
        // Before: an id is the whole installation's.
        assert!(
            old.execute(
                &format!(
                    "INSERT INTO locations (portable_id, household_id, name, created_at, updated_at)
                     VALUES ('{SHARED}', 2, 'Hall', 't', 't')"
                ),
                [],
            )
            .is_err()
        );
    }
    let db = Db::open(dir.path()).unwrap();
    db.close().await;
    let file = Connection::open(&path).unwrap();
    file.execute_batch("PRAGMA foreign_keys = ON").unwrap();
    let kept: (i64, String, i64) = file
        .query_row(
            "SELECT m.id, l.name, l.id FROM medications m JOIN locations l ON l.id = m.location_id",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(kept, (9, "Kitchen".to_string(), 7));
    let insert = |household: i64| {
        file.execute(
            &format!(
                "INSERT INTO locations (portable_id, household_id, name, created_at, updated_at)
                 VALUES ('{SHARED}', {household}, 'Hall', 't', 't')"
            ),
            [],
        )
    };
    insert(2).expect("another household may hold the same id");
    assert!(insert(1).is_err(), "one household holds an id once");
    // The references into the rebuilt tables still hold.
    assert!(
        file.execute(
            "INSERT INTO medications (portable_id, household_id, location_id, name, created_at, updated_at)
             VALUES ('m10', 1, 4242, 'Nothing', 't', 't')",
            [],
        )
        .is_err()
    );
    let check: String = file
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let dangling: Option<String> = file
        .query_row("PRAGMA foreign_key_check", [], |r| r.get(0))
        .optional()
        .unwrap();
    assert_eq!(dangling, None);
}
