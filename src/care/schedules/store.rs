//! SQL for schedules. A retired schedule keeps its row (past doses and
//! pause history point at it) and is invisible to every read here.

use crate::db::PrepareKept;
use crate::db::WriteTx;
use jiff::civil::Date;
use rusqlite::types::Type;
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::dose::Dose;
use super::model::ScheduleRow;
use crate::auth::Actor;
use crate::care::source_row::{self, Filter, ListSql};
use crate::domain::{Page, ResourceId, Timestamp};
use crate::error::Result;

const COLUMNS: &str = "s.id, s.portable_id, s.person_id, p.portable_id, s.medication_id,
    m.portable_id, s.source_dosage_option_id, d.portable_id, s.dose_amount, s.dose_unit,
    s.dose_cycle, s.max_daily_doses, s.min_hours_between_doses, s.frequency, s.schedule_type,
    s.schedule_config, s.start_date, s.end_date, s.active, s.notes, s.retired_at,
    s.lock_version, s.created_at, s.updated_at";

/// One set of joins gives every row its portable references (no query per row).
const FROM: &str = "schedules s
    JOIN people p ON p.id = s.person_id
    JOIN medications m ON m.id = s.medication_id
    LEFT JOIN dosage_options d ON d.id = s.source_dosage_option_id";

fn conversion(
    index: usize,
    err: impl std::error::Error + Send + Sync + 'static,
) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(index, Type::Text, Box::new(err))
}

fn date(r: &Row<'_>, index: usize) -> rusqlite::Result<Option<Date>> {
    r.get::<_, Option<String>>(index)?
        .map(|text| text.parse::<Date>().map_err(|e| conversion(index, e)))
        .transpose()
}

fn from_row(r: &Row<'_>) -> rusqlite::Result<ScheduleRow> {
    let config: String = r.get(15)?;
    Ok(ScheduleRow {
        id: r.get(0)?,
        portable_id: r.get(1)?,
        person_id: r.get(2)?,
        person_portable_id: r.get(3)?,
        dose: Dose {
            medication_id: r.get(4)?,
            medication_portable_id: r.get(5)?,
            source_dosage_option_id: r.get(6)?,
            source_dosage_option_portable_id: r.get(7)?,
            dose_amount: r.get(8)?,
            dose_unit: r.get(9)?,
            dose_cycle: r.get(10)?,
            max_daily_doses: r.get(11)?,
            min_hours_between_doses: r.get(12)?,
        },
        frequency: r.get(13)?,
        schedule_type: r.get(14)?,
        schedule_config: serde_json::from_str(&config).map_err(|e| conversion(15, e))?,
        start_date: date(r, 16)?.ok_or(rusqlite::Error::InvalidColumnType(
            16,
            "start_date".into(),
            Type::Null,
        ))?,
        end_date: date(r, 17)?,
        active: r.get(18)?,
        notes: r.get(19)?,
        retired_at: r.get(20)?,
        lock_version: r.get(21)?,
        created_at: r.get(22)?,
        updated_at: r.get(23)?,
    })
}

/// A live (unretired) schedule of the household by numeric or portable id,
/// whoever its person is: the caller's access is checked by the rules.
pub fn find(conn: &Connection, household_id: i64, id: &ResourceId) -> Result<Option<ScheduleRow>> {
    let (numeric, portable) = id.sql_parts();
    Ok(conn
        .prepare_kept(crate::db::sql!(
            "SELECT {COLUMNS} FROM {FROM}
             WHERE s.household_id = ?1 AND s.id = coalesce(?2, (SELECT id FROM schedules WHERE household_id = ?1 AND portable_id = ?3))
               AND s.retired_at IS NULL"
        ))?
        .query_row(params![household_id, numeric, portable], from_row)
        .optional()?)
}

const LIST: ListSql = ListSql {
    alias: "s",
    columns: COLUMNS,
    from: FROM,
    order_by: "s.id",
};

/// One page of the live schedules of people the actor may view, and the total.
pub fn list_visible(
    conn: &Connection,
    actor: &Actor,
    filter: &Filter,
    page: Page,
) -> Result<(Vec<ScheduleRow>, i64)> {
    source_row::list_visible(conn, actor, filter, page, &LIST, from_row)
}

pub fn insert(conn: &WriteTx, household_id: i64, s: &ScheduleRow) -> Result<i64> {
    conn.prepare_kept(
        "INSERT INTO schedules (portable_id, household_id, person_id, medication_id,
             source_dosage_option_id, dose_amount, dose_unit, frequency, dose_cycle,
             max_daily_doses, min_hours_between_doses, schedule_type, schedule_config,
             start_date, end_date, active, notes, lock_version, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
                 ?18, ?19, ?20)",
    )?
    .execute(params![
        s.portable_id,
        household_id,
        s.person_id,
        s.dose.medication_id,
        s.dose.source_dosage_option_id,
        s.dose.dose_amount,
        s.dose.dose_unit,
        s.frequency,
        s.dose.dose_cycle,
        s.dose.max_daily_doses,
        s.dose.min_hours_between_doses,
        s.schedule_type,
        s.schedule_config.to_string(),
        s.start_date.to_string(),
        s.end_date.map(|d| d.to_string()),
        s.active,
        s.notes,
        s.lock_version,
        s.created_at,
        s.updated_at,
    ])?;
    Ok(conn.last_insert_rowid())
}

/// Saves every changeable field of the row; the person never changes and
/// `active` changes only through pausing and resuming.
pub fn update(conn: &WriteTx, s: &ScheduleRow) -> Result<()> {
    conn.prepare_kept(
        "UPDATE schedules SET medication_id = ?2, source_dosage_option_id = ?3,
             dose_amount = ?4, dose_unit = ?5, frequency = ?6, dose_cycle = ?7,
             max_daily_doses = ?8, min_hours_between_doses = ?9, schedule_type = ?10,
             schedule_config = ?11, start_date = ?12, end_date = ?13, notes = ?14,
             lock_version = ?15, updated_at = ?16
         WHERE id = ?1",
    )?
    .execute(params![
        s.id,
        s.dose.medication_id,
        s.dose.source_dosage_option_id,
        s.dose.dose_amount,
        s.dose.dose_unit,
        s.frequency,
        s.dose.dose_cycle,
        s.dose.max_daily_doses,
        s.dose.min_hours_between_doses,
        s.schedule_type,
        s.schedule_config.to_string(),
        s.start_date.to_string(),
        s.end_date.map(|d| d.to_string()),
        s.notes,
        s.lock_version,
        s.updated_at,
    ])?;
    Ok(())
}

/// Retires a schedule: it leaves every list and read, and stops (active
/// false); the row stays for the history that points at it.
pub fn retire(conn: &WriteTx, id: i64, now: &Timestamp) -> Result<()> {
    conn.prepare_kept(
        "UPDATE schedules SET retired_at = ?2, active = 0, updated_at = ?2,
             lock_version = lock_version + 1
         WHERE id = ?1",
    )?
    .execute(params![id, now])?;
    Ok(())
}

/// How many live (unretired) schedules use a medication.
pub fn count_live_for_medication(conn: &Connection, medication_id: i64) -> Result<i64> {
    Ok(conn
        .prepare_kept(
            "SELECT count(*) FROM schedules WHERE medication_id = ?1 AND retired_at IS NULL",
        )?
        .query_row([medication_id], |r| r.get(0))?)
}

/// The live (unretired) schedules of a person with set times (prn
/// excluded) that have not ended before `today`: (portable id, type,
/// stored config).
pub fn running_for_person(
    conn: &Connection,
    person_id: i64,
    today: Date,
) -> Result<
    Vec<(
        String,
        crate::medicine::vocab::ScheduleType,
        serde_json::Value,
    )>,
> {
    Ok(conn
        .prepare_kept(
            "SELECT portable_id, schedule_type, schedule_config FROM schedules
             WHERE person_id = ?1 AND retired_at IS NULL AND schedule_type <> 'prn'
               AND (end_date IS NULL OR end_date >= ?2)
             ORDER BY id",
        )?
        .query_map(params![person_id, today.to_string()], |r| {
            let config: String = r.get(2)?;
            Ok((
                r.get(0)?,
                r.get(1)?,
                serde_json::from_str(&config).map_err(|e| conversion(2, e))?,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// Sets the schedule's `active` flag (false while paused), as a change to
/// it: its version moves on.
pub fn set_active(conn: &WriteTx, id: i64, active: bool, now: &Timestamp) -> Result<()> {
    conn.prepare_kept(
        "UPDATE schedules SET active = ?2, updated_at = ?3, lock_version = lock_version + 1
         WHERE id = ?1",
    )?
    .execute(params![id, active, now])?;
    Ok(())
}
