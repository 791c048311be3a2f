//! SQL of the portable import and data exports (reads only: every record
//! is written by its own resource's rule and store).

use rusqlite::{OptionalExtension, params};

use crate::error::{ApiError, Result};

/// The tables whose records a bundle carries.
const PORTABLE_TABLES: &[&str] = &[
    "people",
    "locations",
    "medications",
    "dosage_options",
    "schedules",
    "person_medications",
    "medication_takes",
    "notification_preferences",
    "health_events",
    "medication_pause_periods",
    "dose_occurrences",
];

fn checked(table: &str) -> Result<&str> {
    PORTABLE_TABLES
        .iter()
        .find(|t| **t == table)
        .copied()
        .ok_or_else(|| ApiError::internal(format!("{table} is not a portable table")))
}

/// The row id of the household's record `portable_id` in `table`.
pub fn row_id(
    conn: &rusqlite::Connection,
    table: &str,
    household_id: i64,
    portable_id: &str,
) -> Result<Option<i64>> {
    let table = checked(table)?;
    Ok(conn
        .prepare_cached(&format!(
            "SELECT id FROM {table} WHERE household_id = ?1 AND portable_id = ?2"
        ))?
        .query_row(params![household_id, portable_id], |r| r.get(0))
        .optional()?)
}
