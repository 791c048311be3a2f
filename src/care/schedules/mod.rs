//! Schedules: when a person takes a medication (its dose, how often, from
//! when to when). The rules for reading, creating, changing and retiring
//! them.
//!
//! Reading needs view access to the schedule's person; a schedule of a
//! person outside the caller's scope does not exist for it (404). Creating,
//! changing and deleting need manage access (`view` and `record` → 403): a
//! carer who records doses does not change the plan. A schedule stays with
//! its person for life. If-Match is optional on changes (stale → 409).
//! Deleting retires: the row stays for the takes, outcomes and pause
//! history that point at it, the schedule stops and leaves every list and
//! read (404), and the change feed records the retirement and a deletion
//! marker. `active` is false while paused and is set only by pausing and
//! resuming, never by these attributes.

pub mod dose;
pub mod model;
pub mod routes;
pub mod store;

use rusqlite::Connection;

use crate::auth::{AccessLevel, Actor, access};
use crate::care::pause_periods::{self, model::SourceType};
use crate::care::schedule_config;
pub use crate::care::sources::Filter;
use crate::db::change_feed::{self, Action, Change};
use crate::error::{ApiError, Problems, Result};
use crate::household::people;
use crate::http::extract::{IfMatch, Page, ResourceId};
use crate::http::respond::etag;
use dose::Dose;
use model::{Schedule, ScheduleAttributes, ScheduleRow};

pub const RECORD_TYPE: &str = "Schedule";
/// The access to the person that changing the plan needs.
pub const WRITE_LEVEL: AccessLevel = AccessLevel::Manage;
const MAX_FREQUENCY: usize = 200;
const MAX_NOTES: usize = 2000;

/// The API shape of stored schedules, each with its open pause period
/// (one query for the whole page).
fn shape(conn: &Connection, rows: Vec<ScheduleRow>) -> Result<Vec<Schedule>> {
    let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
    let mut open = pause_periods::open_for(conn, SourceType::Schedule, &ids)?;
    Ok(rows
        .into_iter()
        .map(|row| Schedule {
            current_pause_period: open.remove(&row.id),
            record: row,
        })
        .collect())
}

/// The API shape of one stored schedule.
fn to_api(conn: &Connection, row: ScheduleRow) -> Result<Schedule> {
    shape(conn, vec![row])?
        .pop()
        .ok_or_else(|| ApiError::internal("shaping lost a schedule"))
}

/// 404 (naming `missing`) when the person is outside the actor's scope, 403
/// when visible but the access is below `needed`.
pub fn require_access(
    conn: &Connection,
    actor: &Actor,
    person_id: i64,
    needed: AccessLevel,
    missing: &str,
) -> Result<()> {
    match access::person_access(conn, actor, person_id)? {
        None => Err(ApiError::not_found(missing)),
        Some(level) if level >= needed => Ok(()),
        Some(_) => Err(ApiError::forbidden(
            "changing a person's medication plan needs manage access to the person",
        )),
    }
}

/// The person a new schedule or assignment is for: (id, portable id), with
/// manage access (404 outside scope, 403 below).
pub fn person_for_plan(
    conn: &Connection,
    actor: &Actor,
    person_id: Option<Option<ResourceId>>,
) -> Result<(i64, String)> {
    match person_id {
        None => Err(ApiError::invalid("person_id", "is required")),
        Some(None) => Err(ApiError::invalid("person_id", "must not be null")),
        Some(Some(id)) => {
            let person = people::store::find(conn, actor.household_id, &id)?
                .ok_or_else(|| ApiError::not_found("person"))?;
            require_access(conn, actor, person.id, WRITE_LEVEL, "person")?;
            Ok((person.id, person.portable_id))
        }
    }
}

/// Checks that a person_id sent on a change names the record's own person.
pub fn check_same_person(
    sent: Option<Option<ResourceId>>,
    person_id: i64,
    person_portable_id: &str,
    problems: &mut Problems,
) {
    match sent {
        None => {}
        Some(Some(ResourceId::Numeric(n))) if n == person_id => {}
        Some(Some(ResourceId::Portable(p))) if p == person_portable_id => {}
        Some(None) => problems.add("person_id", "must not be null"),
        Some(Some(_)) => problems.add(
            "person_id",
            "cannot change: create a new one for the other person instead",
        ),
    }
}

/// Trims text; blank becomes `None`; longer than `max` is a problem.
pub fn text(
    field: &str,
    value: Option<String>,
    max: usize,
    problems: &mut Problems,
) -> Option<Option<String>> {
    let value = value
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    if value.as_ref().is_some_and(|v| v.chars().count() > max) {
        problems.add(field, format!("must be at most {max} characters"));
        None
    } else {
        Some(value)
    }
}

/// The live schedule `id` whose person the actor may reach at `needed` (404/403).
fn find(
    conn: &Connection,
    actor: &Actor,
    id: &ResourceId,
    needed: AccessLevel,
) -> Result<ScheduleRow> {
    let row = store::find(conn, actor.household_id, id)?
        .ok_or_else(|| ApiError::not_found("schedule"))?;
    require_access(conn, actor, row.person_id, needed, "schedule")?;
    Ok(row)
}

/// `getSchedule`: view access to the person.
pub fn get(conn: &Connection, actor: &Actor, id: &ResourceId) -> Result<Schedule> {
    let row = find(conn, actor, id, AccessLevel::View)?;
    to_api(conn, row)
}

/// `listSchedules`: live schedules of the people the actor may view.
pub fn list(
    conn: &Connection,
    actor: &Actor,
    filter: &Filter,
    page: Page,
) -> Result<(Vec<Schedule>, i64)> {
    let (rows, total) = store::list_visible(conn, actor, filter, page)?;
    Ok((shape(conn, rows)?, total))
}

/// Applies attributes to a schedule, collecting every problem before
/// answering. `current` is the saved dose (PATCH and PUT); `whole` (create
/// and PUT) gives omitted attributes their defaults. The person is settled
/// before this.
fn apply(
    conn: &Connection,
    actor: &Actor,
    row: &mut ScheduleRow,
    current: Option<&Dose>,
    mut attrs: ScheduleAttributes,
    whole: bool,
) -> Result<()> {
    let mut problems = Problems::default();
    check_same_person(
        attrs.person_id.take(),
        row.person_id,
        &row.person_portable_id,
        &mut problems,
    );
    let settled = dose::settle(
        conn,
        actor.household_id,
        current,
        whole,
        attrs.take_dose(),
        &mut problems,
    )?;
    let (medication, option) = match settled {
        Some(settled) => {
            if let Some(dose) = settled.dose {
                row.dose = dose;
            }
            (Some(settled.medication), settled.applied_option)
        }
        None => (None, None),
    };
    match attrs.frequency {
        Some(value) => {
            if let Some(value) = text("frequency", value, MAX_FREQUENCY, &mut problems) {
                row.frequency = value;
            }
        }
        None => match &option {
            Some(option) => row.frequency = option.frequency.clone(),
            None if whole => row.frequency = None,
            None => {}
        },
    }
    let mut type_known = true;
    match attrs.schedule_type {
        Some(None) => {
            problems.add("schedule_type", "must not be null");
            type_known = false;
        }
        Some(Some(t)) => row.schedule_type = t,
        None if whole => match medication.as_ref().and_then(|m| m.default_schedule_type) {
            Some(t) => row.schedule_type = t,
            None => {
                if medication.is_some() {
                    problems.add(
                        "schedule_type",
                        "is required (the medication has no default_schedule_type)",
                    );
                }
                type_known = false;
            }
        },
        None => {}
    }
    match attrs.schedule_config {
        Some(None) => problems.add(
            schedule_config::FIELD,
            "must be an object (use {} for none)",
        ),
        Some(Some(config)) => row.schedule_config = config,
        None if whole => row.schedule_config = serde_json::json!({}),
        None => {}
    }
    if type_known {
        let config =
            schedule_config::collect(row.schedule_type, &row.schedule_config, &mut problems);
        row.schedule_config = config.to_json();
    }
    let mut start_known = true;
    match attrs.start_date {
        None if whole => {
            problems.add("start_date", "is required");
            start_known = false;
        }
        Some(None) => {
            problems.add("start_date", "must not be null");
            start_known = false;
        }
        Some(Some(date)) => row.start_date = date,
        None => {}
    }
    match attrs.end_date {
        Some(value) => row.end_date = value,
        None if whole => row.end_date = None,
        None => {}
    }
    if start_known && row.end_date.is_some_and(|end| end < row.start_date) {
        problems.add("end_date", "must be on or after start_date");
    }
    match attrs.notes {
        Some(value) => {
            if let Some(value) = text("notes", value, MAX_NOTES, &mut problems) {
                row.notes = value;
            }
        }
        None if whole => row.notes = None,
        None => {}
    }
    problems.check("the schedule's attributes are invalid")
}

fn record(conn: &Connection, actor: &Actor, row: &ScheduleRow, action: Action) -> Result<()> {
    change_feed::append(
        conn,
        Change {
            household_id: actor.household_id,
            record_type: RECORD_TYPE,
            record_id: row.id,
            record_portable_id: &row.portable_id,
            action,
            person_id: Some(row.person_id),
        },
    )
}

/// A schedule with no attributes applied yet (placeholders for the
/// required ones, which `apply` insists on).
fn blank(person_id: i64, person_portable_id: String) -> ScheduleRow {
    let now = crate::time::now();
    ScheduleRow {
        id: 0,
        portable_id: crate::db::new_portable_id(),
        person_id,
        person_portable_id,
        dose: Dose {
            medication_id: 0,
            medication_portable_id: String::new(),
            source_dosage_option_id: None,
            source_dosage_option_portable_id: None,
            dose_amount: crate::decimal::Dec::ZERO,
            dose_unit: crate::medicine::vocab::DoseUnit::Tablet,
            dose_cycle: None,
            max_daily_doses: None,
            min_hours_between_doses: None,
        },
        frequency: None,
        schedule_type: crate::medicine::vocab::ScheduleType::Daily,
        schedule_config: serde_json::json!({}),
        start_date: jiff::civil::Date::MIN,
        end_date: None,
        active: true,
        notes: None,
        retired_at: None,
        created_at: now.clone(),
        updated_at: now,
        lock_version: 1,
    }
}

/// `createSchedule`: person_id, medication_id and start_date are required,
/// and dose_amount, dose_unit and schedule_type unless the dosage option or
/// the medication gives them; needs manage access to the person.
pub fn create(conn: &Connection, actor: &Actor, mut attrs: ScheduleAttributes) -> Result<Schedule> {
    let (person_id, person_portable_id) = person_for_plan(conn, actor, attrs.person_id.take())?;
    let mut row = blank(person_id, person_portable_id);
    apply(conn, actor, &mut row, None, attrs, true)?;
    row.id = store::insert(conn, actor.household_id, &row)?;
    record(conn, actor, &row, Action::Create)?;
    to_api(conn, row)
}

/// The schedule to change: live and its person in scope (404), manage
/// access (403), and If-Match, when sent, current (409).
fn find_for_change(
    conn: &Connection,
    actor: &Actor,
    id: &ResourceId,
    if_match: &IfMatch,
) -> Result<ScheduleRow> {
    let row = find(conn, actor, id, WRITE_LEVEL)?;
    if_match.check(&etag(&row.portable_id, row.lock_version))?;
    Ok(row)
}

fn save(conn: &Connection, actor: &Actor, mut row: ScheduleRow) -> Result<Schedule> {
    row.lock_version += 1;
    row.updated_at = crate::time::now();
    store::update(conn, &row)?;
    record(conn, actor, &row, Action::Update)?;
    to_api(conn, row)
}

/// `updateSchedule` (PATCH): any subset of the attributes; person_id, when
/// sent, must name the schedule's person.
pub fn update(
    conn: &Connection,
    actor: &Actor,
    id: &ResourceId,
    if_match: &IfMatch,
    attrs: ScheduleAttributes,
) -> Result<Schedule> {
    let mut row = find_for_change(conn, actor, id, if_match)?;
    let current = row.dose.clone();
    apply(conn, actor, &mut row, Some(&current), attrs, false)?;
    save(conn, actor, row)
}

/// `replaceSchedule` (PUT): the whole schedule as on create (an omitted
/// medication_id keeps the medication); other omitted attributes take
/// their defaults or become null.
pub fn replace(
    conn: &Connection,
    actor: &Actor,
    id: &ResourceId,
    if_match: &IfMatch,
    attrs: ScheduleAttributes,
) -> Result<Schedule> {
    let current = find_for_change(conn, actor, id, if_match)?;
    let mut row = ScheduleRow {
        id: current.id,
        portable_id: current.portable_id.clone(),
        active: current.active,
        created_at: current.created_at.clone(),
        lock_version: current.lock_version,
        ..blank(current.person_id, current.person_portable_id.clone())
    };
    apply(conn, actor, &mut row, Some(&current.dose), attrs, true)?;
    save(conn, actor, row)
}

/// `deleteSchedule`: retires the schedule, recording the retirement (an
/// update) and a deletion marker in the change feed.
pub fn delete(conn: &Connection, actor: &Actor, id: &ResourceId, if_match: &IfMatch) -> Result<()> {
    let row = find_for_change(conn, actor, id, if_match)?;
    store::retire(conn, row.id, &crate::time::now())?;
    record(conn, actor, &row, Action::Update)?;
    record(conn, actor, &row, Action::Delete)
}

/// `pauseSchedule` (deprecated): opens a pause period with the reason
/// `reason_not_recorded` through the pause-period rule (409
/// `pause_period_open` when one is open). Needs manage access; a retired
/// schedule is not found. If-Match, when sent, must be current.
pub fn pause(
    conn: &Connection,
    actor: &Actor,
    id: &ResourceId,
    if_match: &IfMatch,
) -> Result<Schedule> {
    let row = find_for_change(conn, actor, id, if_match)?;
    pause_periods::pause_without_reason(conn, actor, SourceType::Schedule, &row.portable_id)?;
    get(conn, actor, &ResourceId::Numeric(row.id))
}

/// `resumeSchedule` (deprecated): closes the schedule's open pause period
/// through the pause-period rule (409 when none is open).
pub fn resume(
    conn: &Connection,
    actor: &Actor,
    id: &ResourceId,
    if_match: &IfMatch,
) -> Result<Schedule> {
    let row = find_for_change(conn, actor, id, if_match)?;
    pause_periods::resume_source(conn, actor, SourceType::Schedule, row.id)?;
    get(conn, actor, &ResourceId::Numeric(row.id))
}
