//! Schema migrations under `PRAGMA user_version`.
//!
//! `schema.sql` is always the current schema. A new database is created from
//! it directly; an older one is brought forward by the numbered migrations.
//! Append to MIGRATIONS, never edit or remove one, and keep `schema.sql` equal
//! to the result (a test checks both roads end in the same schema).

use std::path::Path;

use rusqlite::Connection;

use super::OpenError;

pub const SCHEMA_SQL: &str = include_str!("../../schema.sql");

/// Migration N (1-based) moves a database from version N-1 to N.
/// Migration 1 is the first release's schema, identical to `schema.sql` then.
const MIGRATIONS: &[&str] = &[
    include_str!("../../schema.sql"),
    REVOKE_TOKENS_MINTED_FOR_OTHERS,
];

/// App tokens were once minted by one member for another; such a token acts,
/// and is audited, as a member who never chose to hold it (an administrator
/// could act as the owner that way). Data only: the schema is unchanged.
const REVOKE_TOKENS_MINTED_FOR_OTHERS: &str = "
UPDATE app_tokens
   SET revoked_at = strftime('%Y-%m-%dT%H:%M:%S', 'now') || '.000000Z'
 WHERE revoked_at IS NULL
   AND created_by_membership_id IS NOT NULL
   AND created_by_membership_id <> membership_id;
";

pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

pub(super) fn migrate(conn: &mut Connection, path: &Path) -> Result<(), OpenError> {
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
    } else {
        for sql in &MIGRATIONS[found as usize..] {
            tx.execute_batch(sql).map_err(sqlite_err)?;
        }
    }
    if found != SCHEMA_VERSION {
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(sqlite_err)?;
    }
    tx.commit().map_err(sqlite_err)
}
