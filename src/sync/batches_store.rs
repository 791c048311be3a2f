//! SQL of sync batches beyond the resources' own: who a saved result's
//! record belongs to, for the re-check before a replay.

use rusqlite::{Connection, OptionalExtension, params};

use crate::error::Result;

/// The person of the household's record `portable_id` in `table` (person in
/// `column`), if the record is still there.
pub fn person_of(
    conn: &Connection,
    household_id: i64,
    table: &str,
    column: &str,
    portable_id: &str,
) -> Result<Option<i64>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {column} FROM {table} WHERE household_id = ?1 AND portable_id = ?2"
        ))?
        .query_row(params![household_id, portable_id], |r| r.get(0))
        .optional()?)
}
