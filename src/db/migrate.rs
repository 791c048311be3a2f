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
const MIGRATIONS: &[&str] = &[include_str!("../../schema.sql"), ADMIN_ACCESS_REPAIR];

/// Data only (the schema is unchanged): brings stored access in line with
/// the hardened rules.
/// - App tokens were once minted by one member for another; such a token
///   acts, and is audited, as a member who never chose to hold it (an
///   administrator could act as the owner that way). They are revoked.
/// - A member linked to a person manages them through a `self` grant, and
///   only there; links made before that rule get their grant, and `self`
///   grants on a person no longer linked are revoked.
const ADMIN_ACCESS_REPAIR: &str = "
UPDATE app_tokens
   SET revoked_at = strftime('%Y-%m-%dT%H:%M:%S', 'now') || '.000000Z'
 WHERE revoked_at IS NULL
   AND created_by_membership_id IS NOT NULL
   AND created_by_membership_id <> membership_id;

CREATE TEMP TABLE unlinked_self AS
SELECT m.id AS membership_id, m.household_id, m.person_id
  FROM memberships m
 WHERE m.person_id IS NOT NULL AND m.status <> 'revoked'
   AND NOT EXISTS (
       SELECT 1 FROM person_access_grants g
        WHERE g.membership_id = m.id AND g.person_id = m.person_id
          AND g.revoked_at IS NULL AND g.relationship_type = 'self');

UPDATE person_access_grants
   SET revoked_at = strftime('%Y-%m-%dT%H:%M:%S', 'now') || '.000000Z'
 WHERE revoked_at IS NULL
   AND (membership_id, person_id) IN (SELECT membership_id, person_id FROM unlinked_self);

INSERT INTO person_access_grants
    (household_id, membership_id, person_id, access_level, relationship_type, expires_at,
     created_by_membership_id, created_at)
SELECT household_id, membership_id, person_id, 'manage', 'self', NULL, NULL,
       strftime('%Y-%m-%dT%H:%M:%S', 'now') || '.000000Z'
  FROM unlinked_self;

UPDATE memberships SET permissions_version = permissions_version + 1
 WHERE id IN (SELECT membership_id FROM unlinked_self)
    OR id IN (SELECT g.membership_id FROM person_access_grants g
               JOIN memberships m ON m.id = g.membership_id
              WHERE g.revoked_at IS NULL AND g.relationship_type = 'self'
                AND m.person_id IS NOT g.person_id);

UPDATE person_access_grants
   SET revoked_at = strftime('%Y-%m-%dT%H:%M:%S', 'now') || '.000000Z'
 WHERE revoked_at IS NULL AND relationship_type = 'self'
   AND person_id IS NOT (SELECT m.person_id FROM memberships m
                          WHERE m.id = person_access_grants.membership_id);

DROP TABLE unlinked_self;
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
