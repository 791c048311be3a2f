//! Schema migrations under `PRAGMA user_version`.
//!
//! `schema.sql` is always the current schema. A new database is created from
//! it directly; an older one is brought forward by the numbered migrations.
//! Append to MIGRATIONS, never edit or remove one, and keep `schema.sql` equal
//! to the result (a test checks both roads end in the same schema).

use std::collections::HashSet;
use std::path::Path;

use rusqlite::Connection;

use super::OpenError;

pub const SCHEMA_SQL: &str = include_str!("../../../../schema.sql");

/// Migration N (1-based) moves a database from version N-1 to N.
/// Migration 1 is the first release's schema, as `schema.sql` was then.
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/0001_initial.sql"),
    include_str!("migrations/0002_plan_revisions.sql"),
    include_str!("migrations/0003_admin_access_repair.sql"),
    include_str!("migrations/0004_sign_in.sql"),
    include_str!("migrations/0005_reminders.sql"),
    include_str!("migrations/0006_invitations_and_mail.sql"),
    include_str!("migrations/0007_pause_actor_refs.sql"),
    include_str!("migrations/0008_oidc.sql"),
    include_str!("migrations/0009_review_prompts.sql"),
    include_str!("migrations/0010_sources_by_medicine.sql"),
    include_str!("migrations/0011_checks_without_lists.sql"),
    include_str!("migrations/0012_access_stamp.sql"),
    include_str!("migrations/0013_change_feed_without_autoincrement.sql"),
    include_str!("migrations/0014_plan_stamp.sql"),
    include_str!("migrations/0015_linked_identities.sql"),
    include_str!("migrations/0016_portable_ids_per_household.sql"),
];

pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Refuses a database some other program made: one with tables but no
/// schema version of ours, or a version without our tables. Reads only.
pub fn check_is_ours(conn: &Connection, path: &Path) -> Result<(), OpenError> {
    let foreign = || OpenError::Foreign {
        path: path.to_path_buf(),
    };
    let read = |sql: &str| -> Result<i64, OpenError> {
        conn.query_row(sql, [], |r| r.get(0)).map_err(|source| {
            if source.sqlite_error_code() == Some(rusqlite::ErrorCode::NotADatabase) {
                foreign()
            } else {
                OpenError::Sqlite {
                    path: path.to_path_buf(),
                    source,
                }
            }
        })
    };
    let version = read("PRAGMA user_version")?;
    let objects = read("SELECT count(*) FROM sqlite_schema")?;
    let ours = read(
        "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name IN ('households', 'instance_settings')",
    )?;
    if (version == 0 && objects > 0) || (version > 0 && ours < 2) {
        return Err(foreign());
    }
    Ok(())
}

pub(super) fn migrate(conn: &mut Connection, path: &Path) -> Result<(), OpenError> {
    let sqlite_err = |source| OpenError::Sqlite {
        path: path.to_path_buf(),
        source,
    };
    // A migration that rebuilds a table (SQLite's way of changing a
    // constraint) must not have references to it rewritten or its rows
    // deleted on the way: foreign keys are off while migrations run (the
    // pragma is a no-op inside a transaction) and every one is checked
    // before the commit.
    conn.pragma_update(None, "foreign_keys", false)
        .map_err(sqlite_err)?;
    let migrated = migrate_in_one_transaction(conn, path);
    conn.pragma_update(None, "foreign_keys", true)
        .map_err(sqlite_err)?;
    migrated
}

fn migrate_in_one_transaction(conn: &mut Connection, path: &Path) -> Result<(), OpenError> {
    let sqlite_err = |source| OpenError::Sqlite {
        path: path.to_path_buf(),
        source,
    };
    // EXCLUSIVE: two processes starting at once cannot both migrate.
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Exclusive)
        .map_err(sqlite_err)?;
    let found: i64 = tx
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(sqlite_err)?;
    if found > SCHEMA_VERSION {
        return Err(OpenError::TooNew {
            path: path.to_path_buf(),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    if found == 0 {
        tx.execute_batch(SCHEMA_SQL).map_err(sqlite_err)?;
    } else if found < SCHEMA_VERSION {
        // A file may hold a dangling reference from before foreign keys
        // were on; a migration must add none.
        let broken_before = broken_references(&tx).map_err(sqlite_err)?;
        for sql in &MIGRATIONS[found as usize..] {
            tx.execute_batch(sql).map_err(sqlite_err)?;
        }
        // A migration may rewrite a definition in sqlite_schema itself
        // (writable_schema), which other connections only notice by this
        // cookie; one more step of it is harmless otherwise.
        let cookie: i64 = tx
            .query_row("PRAGMA schema_version", [], |r| r.get(0))
            .map_err(sqlite_err)?;
        tx.pragma_update(None, "schema_version", cookie + 1)
            .map_err(sqlite_err)?;
        let broken = broken_references(&tx).map_err(sqlite_err)?;
        if let Some((table, _)) = broken.difference(&broken_before).next() {
            return Err(sqlite_err(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY),
                Some(format!("a migration left a broken reference in {table}")),
            )));
        }
    }
    if found != SCHEMA_VERSION {
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(sqlite_err)?;
    }
    tx.commit().map_err(sqlite_err)
}

/// Every row whose reference names no row: (table, rowid).
fn broken_references(conn: &Connection) -> rusqlite::Result<HashSet<(String, Option<i64>)>> {
    conn.prepare("PRAGMA foreign_key_check")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect()
}

#[cfg(test)]
mod tests {
    use super::SCHEMA_SQL;

    /// A list of three or more values after IN makes SQLite build a
    /// temporary b-tree of it on every row it checks (migration 11).
    #[test]
    fn no_rule_compares_a_column_with_a_list_of_three_or_more_values() {
        let long_lists: Vec<&str> = SCHEMA_SQL
            .match_indices(" IN (")
            .filter_map(|(at, _)| {
                let list = &SCHEMA_SQL[at..];
                let list = &list[..list.find(')')?];
                (list.matches(',').count() >= 2).then_some(list)
            })
            .collect();
        assert!(long_lists.is_empty(), "{long_lists:?}");
    }
}
