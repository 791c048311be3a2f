//! SQL for household settings (the administrable columns of `households`).

use crate::db::PrepareKept;
use crate::db::WriteTx;
use rusqlite::{Connection, OptionalExtension, params};

use super::model::HouseholdSettings;
use crate::error::Result;

pub fn find(conn: &Connection, household_id: i64) -> Result<Option<HouseholdSettings>> {
    Ok(conn
        .prepare_kept(
            "SELECT id, portable_id, name, time_zone, app_token_max_age_days, created_at,
                    updated_at, lock_version
             FROM households WHERE id = ?1",
        )?
        .query_row([household_id], |r| {
            Ok(HouseholdSettings {
                id: r.get(0)?,
                portable_id: r.get(1)?,
                name: r.get(2)?,
                time_zone: r.get(3)?,
                app_token_max_age_days: r.get(4)?,
                missed_dose_grace_minutes: crate::reminders::DEFAULT_GRACE_MINUTES,
                delivery_health: Vec::new(),
                warnings: Vec::new(),
                created_at: r.get(5)?,
                updated_at: r.get(6)?,
                lock_version: r.get(7)?,
            })
        })
        .optional()?)
}

/// Saves the settings with their new `lock_version`/`updated_at`.
pub fn update(conn: &WriteTx, s: &HouseholdSettings) -> Result<()> {
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
