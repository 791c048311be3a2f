//! The outcomes saved for expected doses (`dose_occurrences`): read for a
//! day's projection, and written as a dose is decided, reopened, taken or
//! restored by an import.

use std::collections::HashMap;

use jiff::civil::Date;
use rusqlite::{Connection, OptionalExtension, Row, named_params, params};

use super::PersonRef;
use crate::care::dose_occurrences::model::{DoseOutcome, Outcome};
use crate::db::{PrepareKept, WriteTx};
use crate::domain::ResourceId;
use crate::error::Result;

fn ids_json(people: &[PersonRef]) -> String {
    serde_json::Value::from(people.iter().map(|p| p.id).collect::<Vec<_>>()).to_string()
}

/// A saved outcome of an expected dose.
#[derive(Debug, Clone)]
pub struct SavedOutcome {
    pub outcome: Outcome,
    pub reason: Option<String>,
    pub note: Option<String>,
    pub medication_take_id: Option<i64>,
    pub medication_take_portable_id: Option<String>,
}

/// (source_type, source_id, window_starts_on, position).
pub type OccurrenceIdentity = (String, i64, String, i64);

/// The saved outcomes of these people's occurrences whose window contains
/// `on`, by occurrence. One query for the whole day.
pub fn saved_outcomes(
    conn: &Connection,
    household_id: i64,
    people: &[PersonRef],
    on: Date,
) -> Result<HashMap<OccurrenceIdentity, SavedOutcome>> {
    let rows = conn
        .prepare_kept(
            "SELECT o.source_type, o.source_id, o.window_starts_on, o.position, o.outcome,
                    o.reason, o.note, o.medication_take_id, t.portable_id
             FROM dose_occurrences o
             LEFT JOIN medication_takes t ON t.id = o.medication_take_id
             WHERE o.household_id = :household_id
               AND o.person_id IN (SELECT value FROM json_each(:people))
               AND o.window_starts_on <= :on AND o.window_ends_on >= :on",
        )?
        .query_map(
            named_params! {
                ":household_id": household_id,
                ":people": ids_json(people),
                ":on": on.to_string(),
            },
            |r| {
                Ok((
                    (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?),
                    SavedOutcome {
                        outcome: r.get(4)?,
                        reason: r.get(5)?,
                        note: r.get(6)?,
                        medication_take_id: r.get(7)?,
                        medication_take_portable_id: r.get(8)?,
                    },
                ))
            },
        )?
        .collect::<rusqlite::Result<HashMap<_, _>>>()?;
    Ok(rows)
}

const OUTCOME_COLUMNS: &str =
    "id, portable_id, person_id, source_type, source_id, window_starts_on,
    window_ends_on, position, scheduled_at, outcome, reason, note, resolved_at,
    medication_take_id, lock_version, created_at, updated_at";

fn outcome_row(r: &Row<'_>) -> rusqlite::Result<DoseOutcome> {
    Ok(DoseOutcome {
        id: r.get(0)?,
        portable_id: r.get(1)?,
        person_id: r.get(2)?,
        source_type: r.get(3)?,
        source_id: r.get(4)?,
        window_starts_on: r.get(5)?,
        window_ends_on: r.get(6)?,
        position: r.get(7)?,
        scheduled_at: r.get(8)?,
        outcome: r.get(9)?,
        reason: r.get(10)?,
        note: r.get(11)?,
        resolved_at: r.get(12)?,
        medication_take_id: r.get(13)?,
        lock_version: r.get(14)?,
        created_at: r.get(15)?,
        updated_at: r.get(16)?,
    })
}

pub fn outcome_by_id(conn: &Connection, id: i64) -> Result<DoseOutcome> {
    Ok(conn
        .prepare_kept(crate::db::sql!(
            "SELECT {OUTCOME_COLUMNS} FROM dose_occurrences WHERE id = ?1"
        ))?
        .query_row([id], outcome_row)?)
}

pub fn outcome_by_occurrence(
    conn: &Connection,
    source_type: &str,
    source_id: i64,
    window: &str,
    position: i64,
) -> Result<Option<DoseOutcome>> {
    Ok(conn
        .prepare_kept(crate::db::sql!(
            "SELECT {OUTCOME_COLUMNS} FROM dose_occurrences
             WHERE source_type = ?1 AND source_id = ?2 AND window_starts_on = ?3 AND position = ?4"
        ))?
        .query_row(
            params![source_type, source_id, window, position],
            outcome_row,
        )
        .optional()?)
}

/// The outcome `id` (numeric or portable) of the household.
pub fn find_outcome(
    conn: &Connection,
    household_id: i64,
    id: &ResourceId,
) -> Result<Option<DoseOutcome>> {
    let (numeric, portable) = id.sql_parts();
    Ok(conn
        .prepare_kept(crate::db::sql!(
            "SELECT {OUTCOME_COLUMNS} FROM dose_occurrences
             WHERE household_id = ?1 AND id = coalesce(?2, (SELECT id FROM dose_occurrences WHERE household_id = ?1 AND portable_id = ?3))"
        ))?
        .query_row(params![household_id, numeric, portable], outcome_row)
        .optional()?)
}

/// A new `not_taken` row (routine outcomes never carry a scheduled time).
pub struct NewNotTaken<'a> {
    pub portable_id: &'a str,
    pub household_id: i64,
    pub person_id: i64,
    pub source_type: &'a str,
    pub source_id: i64,
    pub window_starts_on: &'a str,
    pub window_ends_on: &'a str,
    pub position: i64,
    pub reason: Option<&'a str>,
    pub note: Option<&'a str>,
    pub membership_id: i64,
}

pub fn insert_not_taken(conn: &WriteTx, new: &NewNotTaken<'_>) -> Result<i64> {
    conn.prepare_kept(
        "INSERT INTO dose_occurrences
           (portable_id, household_id, person_id, source_type, source_id, window_starts_on,
            window_ends_on, position, scheduled_at, outcome, reason, note, resolved_at,
            medication_take_id, actor_membership_id, lock_version, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, NULL, 'not_taken', ?9, ?10, ?11, NULL, ?12, 1,
                 ?11, ?11)",
    )?
    .execute(params![
        new.portable_id,
        new.household_id,
        new.person_id,
        new.source_type,
        new.source_id,
        new.window_starts_on,
        new.window_ends_on,
        new.position,
        new.reason,
        new.note,
        crate::domain::Timestamp::now(),
        new.membership_id,
    ])?;
    Ok(conn.last_insert_rowid())
}

/// An outcome as a portable import restores it.
pub struct Restored<'a> {
    pub source_type: crate::care::medication_takes::model::SourceType,
    pub source_id: &'a ResourceId,
    pub window_starts_on: &'a str,
    /// None for an older v2 row saved without one: the source's cycle
    /// decides it on first import.
    pub window_ends_on: Option<&'a str>,
    pub position: i64,
    pub scheduled_at: Option<&'a str>,
    pub outcome: Outcome,
    pub reason: Option<&'a str>,
    pub note: Option<&'a str>,
    pub resolved_at: Option<&'a str>,
    /// The linked take's row id (the importer resolves its portable id).
    pub medication_take_id: Option<i64>,
}

/// A restored outcome (portable import) with its own times.
pub struct RestoredOutcome<'a> {
    pub portable_id: &'a str,
    pub household_id: i64,
    pub person_id: i64,
    pub source_type: &'a str,
    pub source_id: i64,
    pub restored: &'a Restored<'a>,
    pub window_ends_on: &'a str,
    pub medication_take_id: Option<i64>,
    pub membership_id: i64,
}

pub fn insert_restored(conn: &WriteTx, new: &RestoredOutcome<'_>) -> Result<i64> {
    let r = new.restored;
    conn.prepare_kept(
        "INSERT INTO dose_occurrences
           (portable_id, household_id, person_id, source_type, source_id, window_starts_on,
            window_ends_on, position, scheduled_at, outcome, reason, note, resolved_at,
            medication_take_id, actor_membership_id, lock_version, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, 1, ?16, ?16)",
    )?
    .execute(params![
        new.portable_id,
        new.household_id,
        new.person_id,
        new.source_type,
        new.source_id,
        r.window_starts_on,
        new.window_ends_on,
        r.position,
        r.scheduled_at,
        r.outcome,
        r.reason,
        r.note,
        r.resolved_at,
        new.medication_take_id,
        new.membership_id,
        crate::domain::Timestamp::now(),
    ])?;
    Ok(conn.last_insert_rowid())
}

/// Decides a reopened row `not_taken` again (a new version).
pub fn decide_not_taken(
    conn: &WriteTx,
    id: i64,
    reason: Option<&str>,
    note: Option<&str>,
    membership_id: i64,
) -> Result<()> {
    conn.prepare_kept(
        "UPDATE dose_occurrences
         SET outcome = 'not_taken', reason = ?2, note = ?3, resolved_at = ?4,
             actor_membership_id = ?5, lock_version = lock_version + 1, updated_at = ?4
         WHERE id = ?1",
    )?
    .execute(params![
        id,
        reason,
        note,
        crate::domain::Timestamp::now(),
        membership_id
    ])?;
    Ok(())
}

/// Reopens a decided row: no resolution, reason or note (a new version).
pub fn reopen(conn: &WriteTx, id: i64, membership_id: i64) -> Result<()> {
    conn.prepare_kept(
        "UPDATE dose_occurrences
         SET outcome = 'open', resolved_at = NULL, reason = NULL, note = NULL,
             actor_membership_id = ?2, lock_version = lock_version + 1, updated_at = ?3
         WHERE id = ?1",
    )?
    .execute(params![id, membership_id, crate::domain::Timestamp::now()])?;
    Ok(())
}

/// Resolves a row `taken` by take `take_id` (a new version): a not_taken
/// decision's reason and note no longer describe the dose.
pub fn mark_taken(conn: &WriteTx, id: i64, take_id: i64, membership_id: i64) -> Result<()> {
    conn.prepare_kept(
        "UPDATE dose_occurrences
         SET outcome = 'taken', medication_take_id = ?2, reason = NULL, note = NULL,
             resolved_at = ?4, actor_membership_id = ?3, lock_version = lock_version + 1,
             updated_at = ?4
         WHERE id = ?1",
    )?
    .execute(params![
        id,
        take_id,
        membership_id,
        crate::domain::Timestamp::now()
    ])?;
    Ok(())
}
