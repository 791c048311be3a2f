//! SQL for households themselves.

use crate::db::PrepareKept;
use crate::db::WriteTx;
use jiff::civil::Date;
use jiff::tz::TimeZone;
use rusqlite::{Connection, OptionalExtension, params};

use super::model::Household;
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

/// The household's record, for its settings and for what shows its name,
/// zone or token limit.
pub fn find(conn: &Connection, household_id: i64) -> Result<Option<Household>> {
    Ok(conn
        .prepare_kept(
            "SELECT id, portable_id, name, time_zone, app_token_max_age_days, created_at,
                    updated_at, lock_version
             FROM households WHERE id = ?1",
        )?
        .query_row([household_id], |r| {
            Ok(Household {
                id: r.get(0)?,
                portable_id: r.get(1)?,
                name: r.get(2)?,
                time_zone: r.get(3)?,
                app_token_max_age_days: r.get(4)?,
                created_at: r.get(5)?,
                updated_at: r.get(6)?,
                lock_version: r.get(7)?,
            })
        })
        .optional()?)
}

/// Saves the administrable columns with the new `lock_version`/`updated_at`.
pub fn update(conn: &WriteTx, s: &Household) -> Result<()> {
    conn.prepare_kept(
        "UPDATE households SET name = ?2, time_zone = ?3, app_token_max_age_days = ?4,
                lock_version = ?5, updated_at = ?6
         WHERE id = ?1",
    )?
    .execute(params![
        s.id,
        s.name,
        s.time_zone,
        s.app_token_max_age_days,
        s.lock_version,
        s.updated_at,
    ])?;
    Ok(())
}

/// Every household's id (the reminder engine walks them all).
pub fn household_ids(conn: &Connection) -> Result<Vec<i64>> {
    let mut stmt = conn.prepare_kept("SELECT id FROM households ORDER BY id")?;
    let ids = stmt
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<i64>>>()?;
    Ok(ids)
}
