//! SQL for the dose-occurrence projection and for persisted outcomes. Every
//! projection read covers all the people of one request at once (no query
//! per person, source or dose): people are passed as a JSON array bound once
//! and unpacked with `json_each`.

use crate::db::PrepareKept;
use crate::db::WriteTx;
use std::collections::HashMap;

use jiff::Timestamp;
use jiff::civil::Date;
use rusqlite::types::Type;
use rusqlite::{Connection, OptionalExtension, Row, named_params, params};

use super::model::DoseOutcome;
use crate::auth::Actor;
use crate::auth::store::VISIBLE_PERSON;
use crate::care::plan::{AssignmentPlan, SchedulePlan};
use crate::decimal::Dec;
use crate::domain::ResourceId;
use crate::error::Result;
use crate::medicine::vocab::{DoseCycle, DoseUnit};

/// A person whose doses are listed.
#[derive(Debug, Clone)]
pub struct PersonRef {
    pub id: i64,
    pub portable_id: String,
}

/// What a schedule and a direct assignment share for the projection.
#[derive(Debug, Clone)]
pub struct SourceCommon {
    pub id: i64,
    pub portable_id: String,
    pub person_id: i64,
    pub person_portable_id: String,
    pub medication_id: i64,
    pub medication_portable_id: String,
    pub medication_display_name: String,
    pub dose_amount: Dec,
    pub dose_unit: DoseUnit,
    pub dose_cycle: Option<DoseCycle>,
    pub max_daily_doses: Option<i64>,
    pub min_hours_between_doses: Option<Dec>,
}

/// A schedule of a listed person as stored now (retired and paused ones
/// included: their past doses stay listed).
#[derive(Debug, Clone)]
pub struct ScheduleSource {
    pub common: SourceCommon,
    pub plan: SchedulePlan,
    pub retired_at: Option<Timestamp>,
    pub updated_at: Option<Timestamp>,
}

/// A direct assignment of a listed person as stored now.
#[derive(Debug, Clone)]
pub struct AssignmentSource {
    pub common: SourceCommon,
    pub plan: AssignmentPlan,
    pub retired_at: Option<Timestamp>,
    pub updated_at: Option<Timestamp>,
}

fn conversion(
    index: usize,
    err: impl std::error::Error + Send + Sync + 'static,
) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(index, Type::Text, Box::new(err))
}

fn date(r: &Row<'_>, index: usize) -> rusqlite::Result<Date> {
    let text: String = r.get(index)?;
    text.parse::<Date>().map_err(|e| conversion(index, e))
}

fn optional_date(r: &Row<'_>, index: usize) -> rusqlite::Result<Option<Date>> {
    r.get::<_, Option<String>>(index)?
        .map(|text| text.parse::<Date>().map_err(|e| conversion(index, e)))
        .transpose()
}

fn instant(r: &Row<'_>, index: usize) -> rusqlite::Result<Option<Timestamp>> {
    Ok(r.get::<_, Option<String>>(index)?
        .and_then(|text| text.parse::<Timestamp>().ok()))
}

fn ids_json(people: &[PersonRef]) -> String {
    serde_json::Value::from(people.iter().map(|p| p.id).collect::<Vec<_>>()).to_string()
}

/// The people of the household the actor may view, in id order.
pub fn visible_people(conn: &Connection, actor: &Actor) -> Result<Vec<PersonRef>> {
    let now = crate::domain::Timestamp::now();
    Ok(conn
        .prepare_kept(crate::db::sql!(
            "SELECT p.id, p.portable_id FROM people p
             WHERE p.household_id = :household_id AND {VISIBLE_PERSON}
             ORDER BY p.id"
        ))?
        .query_map(
            named_params! {
                ":household_id": actor.household_id,
                ":membership_id": actor.membership_id,
                ":is_manager": actor.is_manager(),
                ":now": now,
            },
            |r| {
                Ok(PersonRef {
                    id: r.get(0)?,
                    portable_id: r.get(1)?,
                })
            },
        )?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

const COMMON: &str = "x.id, x.portable_id, x.person_id, p.portable_id, x.medication_id,
    m.portable_id, COALESCE(m.friendly_name, m.name), x.dose_amount, x.dose_unit, x.dose_cycle,
    x.max_daily_doses, x.min_hours_between_doses, x.retired_at, x.updated_at";

fn common(r: &Row<'_>) -> rusqlite::Result<SourceCommon> {
    Ok(SourceCommon {
        id: r.get(0)?,
        portable_id: r.get(1)?,
        person_id: r.get(2)?,
        person_portable_id: r.get(3)?,
        medication_id: r.get(4)?,
        medication_portable_id: r.get(5)?,
        medication_display_name: r.get(6)?,
        dose_amount: r.get(7)?,
        dose_unit: r.get(8)?,
        dose_cycle: r.get(9)?,
        max_daily_doses: r.get(10)?,
        min_hours_between_doses: r.get(11)?,
    })
}

/// Every schedule of the household, retired and paused ones too (the plan
/// in force decides, day by day, whether it has doses), in id order.
pub fn schedules(conn: &Connection, household_id: i64) -> Result<Vec<ScheduleSource>> {
    schedules_where(conn, household_id, None)
}

// One statement for one schedule and another for all: statements are
// planned once whatever is bound (QPSG), so a shared `:id IS NULL OR x.id =
// :id` would read every schedule of the household to find one.
const ALL_SCHEDULES: &str = "x.household_id = :household_id ORDER BY x.id";
const ONE_SCHEDULE: &str = "x.household_id = :household_id AND x.id = :id";

/// One schedule of the household by id, retired or not.
pub fn schedule(conn: &Connection, household_id: i64, id: i64) -> Result<Option<ScheduleSource>> {
    Ok(schedules_where(conn, household_id, Some(id))?.pop())
}

fn schedules_where(
    conn: &Connection,
    household_id: i64,
    id: Option<i64>,
) -> Result<Vec<ScheduleSource>> {
    let mut statement = conn.prepare_cached(&format!(
        "SELECT {COMMON}, x.schedule_type, x.schedule_config, x.start_date, x.end_date
         FROM schedules x
         JOIN people p ON p.id = x.person_id
         JOIN medications m ON m.id = x.medication_id
         WHERE {}",
        if id.is_some() {
            ONE_SCHEDULE
        } else {
            ALL_SCHEDULES
        }
    ))?;
    let rows = match id {
        Some(id) => statement.query(named_params! { ":household_id": household_id, ":id": id })?,
        None => statement.query(named_params! { ":household_id": household_id })?,
    }
    .mapped(|r| {
        let common = common(r)?;
        let config: String = r.get(15)?;
        Ok(ScheduleSource {
            plan: SchedulePlan {
                schedule_type: r.get(14)?,
                schedule_config: serde_json::from_str(&config).map_err(|e| conversion(15, e))?,
                start_date: date(r, 16)?,
                end_date: optional_date(r, 17)?,
                dose_amount: common.dose_amount,
                dose_unit: common.dose_unit,
                dose_cycle: common.dose_cycle,
                max_daily_doses: common.max_daily_doses,
                min_hours_between_doses: common.min_hours_between_doses,
                read_config: Default::default(),
            },
            common,
            retired_at: instant(r, 12)?,
            updated_at: instant(r, 13)?,
        })
    })
    .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// Every direct assignment of the household (as-needed, retired and paused
/// ones too), in id order.
pub fn assignments(conn: &Connection, household_id: i64) -> Result<Vec<AssignmentSource>> {
    Ok(conn
        .prepare_kept(crate::db::sql!(
            "SELECT {COMMON}, x.administration_kind
             FROM person_medications x
             JOIN people p ON p.id = x.person_id
             JOIN medications m ON m.id = x.medication_id
             WHERE x.household_id = :household_id
             ORDER BY x.id"
        ))?
        .query_map(
            named_params! {
                ":household_id": household_id,
            },
            |r| {
                let common = common(r)?;
                Ok(AssignmentSource {
                    plan: AssignmentPlan {
                        administration_kind: r.get(14)?,
                        dose_amount: common.dose_amount,
                        dose_unit: common.dose_unit,
                        dose_cycle: common.dose_cycle,
                        max_daily_doses: common.max_daily_doses,
                        min_hours_between_doses: common.min_hours_between_doses,
                    },
                    common,
                    retired_at: instant(r, 12)?,
                    updated_at: instant(r, 13)?,
                })
            },
        )?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// A pause of a listed source: from its start (a legacy period with an
/// unknown start counts from when it was recorded) until its end (`None`
/// while open).
#[derive(Debug, Clone)]
pub struct Pause {
    pub source_type: String,
    pub source_id: i64,
    pub from: Timestamp,
    pub until: Option<Timestamp>,
}

/// The pause periods of the household's sources (one query).
pub fn pauses(conn: &Connection, household_id: i64) -> Result<Vec<Pause>> {
    pauses_where(conn, household_id, None)
}

/// The pause periods of one source (one query).
pub fn pauses_of_source(
    conn: &Connection,
    household_id: i64,
    source_type: &str,
    source_id: i64,
) -> Result<Vec<Pause>> {
    pauses_where(conn, household_id, Some((source_type, source_id)))
}

fn pauses_where(
    conn: &Connection,
    household_id: i64,
    source: Option<(&str, i64)>,
) -> Result<Vec<Pause>> {
    let rows = conn
        .prepare_kept(
            "SELECT source_type, source_id, COALESCE(started_at, created_at), ended_at
             FROM medication_pause_periods
             WHERE household_id = ?1
               AND (?2 IS NULL OR (source_type = ?2 AND source_id = ?3))
             ORDER BY id",
        )?
        .query_map(
            params![household_id, source.map(|s| s.0), source.map(|s| s.1)],
            |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    instant(r, 2)?,
                    instant(r, 3)?,
                ))
            },
        )?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows
        .into_iter()
        .filter_map(|(source_type, source_id, from, until)| {
            Some(Pause {
                source_type,
                source_id,
                from: from?,
                until,
            })
        })
        .collect())
}

/// A recorded dose of one of the listed sources.
#[derive(Debug, Clone)]
pub struct Take {
    pub id: i64,
    pub portable_id: String,
    pub source_type: String,
    pub source_id: i64,
    /// The expected dose it was linked to, if any.
    pub window_starts_on: Option<String>,
    pub position: Option<i64>,
    pub taken_at: crate::domain::Timestamp,
    pub person_id: i64,
    /// The medication of its source.
    pub medication_id: Option<i64>,
}

/// The sources a projection covers, by kind.
#[derive(Debug, Default)]
pub struct SourceIds {
    pub schedules: Vec<i64>,
    pub person_medications: Vec<i64>,
}

/// The takes of these sources that were taken in `[from, until)` (stored
/// timestamps compare as text) or are linked to an occurrence whose window
/// starts in `[first_window, last_window]`, and every other take of these
/// people in `[from, until)` (doses of the same medicine under other
/// sources count toward the limits). One query for the whole day.
pub fn takes(
    conn: &Connection,
    people: &[i64],
    sources: &SourceIds,
    from: &str,
    until: &str,
    first_window: Date,
    last_window: Date,
) -> Result<Vec<Take>> {
    if sources.schedules.is_empty() && sources.person_medications.is_empty() {
        return Ok(Vec::new());
    }
    Ok(conn
        .prepare_kept(
            "SELECT t.id, t.portable_id, t.source_type, t.source_id,
                    t.occurrence_window_starts_on, t.occurrence_position, t.taken_at,
                    t.person_id, coalesce(s.medication_id, a.medication_id)
             FROM medication_takes t
             LEFT JOIN schedules s ON t.source_type = 'schedule' AND s.id = t.source_id
             LEFT JOIN person_medications a
                    ON t.source_type = 'person_medication' AND a.id = t.source_id
             WHERE (((t.source_type = 'schedule'
                       AND t.source_id IN (SELECT value FROM json_each(:schedules)))
                 OR (t.source_type = 'person_medication'
                       AND t.source_id IN (SELECT value FROM json_each(:assignments))))
               AND ((t.taken_at >= :from AND t.taken_at < :until)
                 OR (t.occurrence_window_starts_on >= :first_window
                       AND t.occurrence_window_starts_on <= :last_window)))
                OR (t.person_id IN (SELECT value FROM json_each(:people))
                    AND t.taken_at >= :from AND t.taken_at < :until)
             ORDER BY t.taken_at, t.id",
        )?
        .query_map(
            named_params! {
                ":schedules": serde_json::Value::from(sources.schedules.clone()).to_string(),
                ":assignments": serde_json::Value::from(sources.person_medications.clone()).to_string(),
                ":people": serde_json::Value::from(people.to_vec()).to_string(),
                ":from": from,
                ":until": until,
                ":first_window": first_window.to_string(),
                ":last_window": last_window.to_string(),
            },
            |r| {
                Ok(Take {
                    id: r.get(0)?,
                    portable_id: r.get(1)?,
                    source_type: r.get(2)?,
                    source_id: r.get(3)?,
                    window_starts_on: r.get(4)?,
                    position: r.get(5)?,
                    taken_at: r.get(6)?,
                    person_id: r.get(7)?,
                    medication_id: r.get(8)?,
                })
            },
        )?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// A saved outcome of an expected dose.
#[derive(Debug, Clone)]
pub struct SavedOutcome {
    pub outcome: super::model::Outcome,
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

// ---- Persisted outcomes ----------------------------------------------------

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
             WHERE household_id = ?1 AND id = coalesce(?2, (SELECT id FROM dose_occurrences WHERE portable_id = ?3))"
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
    pub outcome: super::model::Outcome,
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
