//! SQL of sync batches beyond the resources' own: who a saved result's
//! record belongs to, for the re-check before a replay.

use rusqlite::{Connection, OptionalExtension, params};

use crate::error::Result;

/// The person (`person_id`) of the household's record `portable_id` in
/// `table`, deleted or retired ones included, if the record is still there.
pub fn person_of(
    conn: &Connection,
    household_id: i64,
    table: &str,
    portable_id: &str,
) -> Result<Option<i64>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT person_id FROM {table} WHERE household_id = ?1 AND portable_id = ?2"
        ))?
        .query_row(params![household_id, portable_id], |r| r.get(0))
        .optional()?)
}
