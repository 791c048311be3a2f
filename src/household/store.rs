//! SQL for households themselves.

use crate::db::PrepareKept;
use crate::db::WriteTx;
use jiff::civil::Date;
use jiff::tz::TimeZone;
use rusqlite::{Connection, OptionalExtension, params};

use crate::domain::Timestamp;
use crate::error::{ApiError, Result};

pub fn insert(conn: &WriteTx, name: &str, time_zone: &str, now: &Timestamp) -> Result<i64> {
    conn.execute(
        "INSERT INTO households (portable_id, name, time_zone, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?4)",
        params![crate::db::new_portable_id(), name, time_zone, now],
    )?;
    Ok(conn.last_insert_rowid())
}

pub fn exists(conn: &Connection, household_id: i64) -> Result<bool> {
    Ok(conn
        .prepare_kept("SELECT 1 FROM households WHERE id = ?1")?
        .query_row([household_id], |_| Ok(()))
        .optional()?
        .is_some())
}

/// The household's time zone; on a reader thread kept until the next
/// commit, since nearly every read of the day's doses or stock asks.
pub fn time_zone(conn: &Connection, household_id: i64) -> Result<TimeZone> {
    let kept = crate::db::kept(conn, household_id, || {
        let name: String = conn
            .prepare_kept("SELECT time_zone FROM households WHERE id = ?1")?
            .query_row([household_id], |r| r.get(0))
            .optional()?
            .ok_or_else(|| ApiError::not_found("household"))?;
        TimeZone::get(&name)
            .map_err(|e| ApiError::internal(format!("household time zone {name}: {e}")))
    })?;
    Ok(TimeZone::clone(&kept))
}

/// Today's date in the household's time zone.
pub fn today(conn: &Connection, household_id: i64) -> Result<Date> {
    let tz = time_zone(conn, household_id)?;
    Ok(jiff::Timestamp::now().to_zoned_datetime(tz).date())
}

/// A household as the host operator lists them.
pub struct HouseholdSummary {
    pub id: i64,
    pub name: String,
    pub time_zone: String,
    pub active_members: i64,
    pub created_at: Timestamp,
}

/// Every household on this server, oldest first.
pub fn list_all(conn: &Connection) -> Result<Vec<HouseholdSummary>> {
    Ok(conn
        .prepare(
            "SELECT h.id, h.name, h.time_zone, h.created_at,
                    (SELECT count(*) FROM memberships m
                     WHERE m.household_id = h.id AND m.status = 'active')
             FROM households h ORDER BY h.id",
        )?
        .query_map([], |r| {
            Ok(HouseholdSummary {
                id: r.get(0)?,
                name: r.get(1)?,
                time_zone: r.get(2)?,
                created_at: r.get(3)?,
                active_members: r.get(4)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}
