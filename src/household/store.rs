//! SQL for households themselves.

use jiff::civil::Date;
use jiff::tz::TimeZone;
use rusqlite::{Connection, OptionalExtension, params};

use crate::error::{ApiError, Result};

pub fn insert(conn: &Connection, name: &str, time_zone: &str, now: &str) -> Result<i64> {
    conn.execute(
        "INSERT INTO households (portable_id, name, time_zone, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?4)",
        params![crate::db::new_portable_id(), name, time_zone, now],
    )?;
    Ok(conn.last_insert_rowid())
}

pub fn exists(conn: &Connection, household_id: i64) -> Result<bool> {
    Ok(conn
        .query_row(
            "SELECT 1 FROM households WHERE id = ?1",
            [household_id],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

pub fn time_zone(conn: &Connection, household_id: i64) -> Result<TimeZone> {
    let name: String = conn
        .prepare_cached("SELECT time_zone FROM households WHERE id = ?1")?
        .query_row([household_id], |r| r.get(0))
        .optional()?
        .ok_or_else(|| ApiError::not_found("household"))?;
    TimeZone::get(&name).map_err(|e| ApiError::internal(format!("household time zone {name}: {e}")))
}

/// Today's date in the household's time zone.
pub fn today(conn: &Connection, household_id: i64) -> Result<Date> {
    let tz = time_zone(conn, household_id)?;
    Ok(jiff::Timestamp::now().to_zoned_datetime(tz).date())
}
