//! What the projection reads: the people listed, their schedules and
//! direct assignments as stored now, the pauses of those sources and the
//! takes recorded against them.

use jiff::Timestamp;
use jiff::civil::Date;
use rusqlite::types::Type;
use rusqlite::{Connection, Row, named_params, params};

use crate::auth::Actor;
use crate::auth::store::VISIBLE_PERSON;
use crate::care::plan::{AssignmentPlan, SchedulePlan};
use crate::db::PrepareKept;
use crate::decimal::Dec;
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
