//! SQL for notification preferences: at most one row per person.

use crate::db::PrepareKept;
use crate::db::WriteTx;
use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::domain::Timestamp;
use crate::error::Result;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreferenceRow {
    pub id: i64,
    pub portable_id: String,
    pub person_id: i64,
    pub enabled: bool,
    pub dose_due_enabled: bool,
    pub missed_dose_enabled: bool,
    pub low_stock_enabled: bool,
    pub private_text_enabled: bool,
    /// 'HH:MM:SS' or NULL.
    pub morning_time: Option<String>,
    pub afternoon_time: Option<String>,
    pub evening_time: Option<String>,
    pub night_time: Option<String>,
    pub lock_version: i64,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

const COLUMNS: &str = "n.id, n.portable_id, n.person_id, n.enabled, n.dose_due_enabled,
    n.missed_dose_enabled, n.low_stock_enabled, n.private_text_enabled, n.morning_time,
    n.afternoon_time, n.evening_time, n.night_time, n.lock_version, n.created_at, n.updated_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<PreferenceRow> {
    Ok(PreferenceRow {
        id: r.get(0)?,
        portable_id: r.get(1)?,
        person_id: r.get(2)?,
        enabled: r.get(3)?,
        dose_due_enabled: r.get(4)?,
        missed_dose_enabled: r.get(5)?,
        low_stock_enabled: r.get(6)?,
        private_text_enabled: r.get(7)?,
        morning_time: r.get(8)?,
        afternoon_time: r.get(9)?,
        evening_time: r.get(10)?,
        night_time: r.get(11)?,
        lock_version: r.get(12)?,
        created_at: r.get(13)?,
        updated_at: r.get(14)?,
    })
}

/// The person's saved preferences, if they were ever written.
pub fn find_by_person(conn: &Connection, person_id: i64) -> Result<Option<PreferenceRow>> {
    Ok(conn
        .prepare_kept(crate::db::sql!(
            "SELECT {COLUMNS} FROM notification_preferences n WHERE n.person_id = ?1"
        ))?
        .query_row([person_id], from_row)
        .optional()?)
}

pub fn insert(conn: &WriteTx, household_id: i64, row: &PreferenceRow) -> Result<i64> {
    conn.prepare_kept(
        "INSERT INTO notification_preferences (portable_id, household_id, person_id, enabled,
             dose_due_enabled, missed_dose_enabled, low_stock_enabled, private_text_enabled,
             morning_time, afternoon_time, evening_time, night_time, lock_version, created_at,
             updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
    )?
    .execute(params![
        row.portable_id,
        household_id,
        row.person_id,
        row.enabled,
        row.dose_due_enabled,
        row.missed_dose_enabled,
        row.low_stock_enabled,
        row.private_text_enabled,
        row.morning_time,
        row.afternoon_time,
        row.evening_time,
        row.night_time,
        row.lock_version,
        row.created_at,
        row.updated_at,
    ])?;
    Ok(conn.last_insert_rowid())
}

/// Saves the row's settings and its new `lock_version`/`updated_at`.
pub fn update(conn: &WriteTx, row: &PreferenceRow) -> Result<()> {
    conn.prepare_kept(
        "UPDATE notification_preferences SET enabled = ?2, dose_due_enabled = ?3,
             missed_dose_enabled = ?4, low_stock_enabled = ?5, private_text_enabled = ?6,
             morning_time = ?7, afternoon_time = ?8, evening_time = ?9, night_time = ?10,
             lock_version = ?11, updated_at = ?12
         WHERE id = ?1",
    )?
    .execute(params![
        row.id,
        row.enabled,
        row.dose_due_enabled,
        row.missed_dose_enabled,
        row.low_stock_enabled,
        row.private_text_enabled,
        row.morning_time,
        row.afternoon_time,
        row.evening_time,
        row.night_time,
        row.lock_version,
        row.updated_at,
    ])?;
    Ok(())
}
