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
//! resuming, never by these attributes. A change of the plan is kept in the
//! plan history (`dose_occurrences::history`) effective from the change, so
//! expected doses before it never move; the plan must hold together as a
//! whole (`plan::check_plan`).

pub mod model;
pub mod plan;
pub mod routes;
pub mod store;

use crate::db::WriteTx;
use jiff::civil::Date;
use rusqlite::Connection;
use serde_json::Value;

use crate::auth::Actor;
use crate::care::notification_preferences::slots;
use crate::care::pause_periods::model::SourceType;
use crate::care::schedule_config::{self, ScheduleConfig};
use crate::care::source_row;
pub use crate::care::source_row::Filter;
use crate::care::sources::model::{Dose, SourceHead, SourceStamps};
use crate::care::sources::{self, person_for_plan};
use crate::db::change_feed::Action;
use crate::domain::{IfMatch, ResourceId, Text, trimmed};
use crate::error::{Problems, Result};
use crate::medicine::medications::model::MedicationRow;
use crate::medicine::vocab::ScheduleType;
use model::{Schedule, ScheduleAttributes, ScheduleRow};
use plan::PlanContext;

pub const RECORD_TYPE: &str = crate::domain::record_type::SCHEDULE;

crate::care::source_row::source_row!(ScheduleRow, SourceType::Schedule, RECORD_TYPE, "schedule");

/// `getSchedule`: view access to the person.
pub fn get(conn: &Connection, actor: &Actor, id: &ResourceId) -> Result<Schedule> {
    sources::get(conn, actor, id)
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
    let target = (&mut row.source, &mut row.notes);
    let settled = sources::apply_common(
        conn,
        actor,
        target,
        current,
        &mut attrs,
        whole,
        &mut problems,
    )?;
    let (medication, option) = match settled {
        Some(settled) => (Some(settled.medication), settled.applied_option),
        None => (None, None),
    };
    match attrs.frequency {
        Some(value) => row.frequency = trimmed(value.map(Text::into_inner)),
        None => match &option {
            Some(option) => row.frequency = option.frequency.clone(),
            None if whole => row.frequency = None,
            None => {}
        },
    }
    let config = apply_type_and_config(
        row,
        attrs.schedule_type,
        attrs.schedule_config,
        medication.as_ref(),
        whole,
        &mut problems,
    );
    apply_dates(row, attrs.start_date, attrs.end_date, whole, &mut problems);
    // The plan as a whole is judged only once each attribute is valid.
    if let Some(config) = config.filter(|_| problems.is_empty()) {
        let slot_times = slots::slot_times(conn, row.source.person_id)?;
        let plan = PlanContext {
            schedule_type: row.schedule_type,
            start_date: row.start_date,
            end_date: row.end_date,
            dose_unit: row.source.dose.dose_unit,
            dose_cycle: row.source.dose.dose_cycle,
            max_daily_doses: row.source.dose.max_daily_doses,
            slot_times: &slot_times,
        };
        plan::check_plan(&config, &plan, &mut problems);
    }
    problems.check("the schedule's attributes are invalid")
}

/// The schedule type (a new schedule's from its medication's default) and
/// its config; the config as checked, when the type is known.
fn apply_type_and_config(
    row: &mut ScheduleRow,
    schedule_type: Option<Option<ScheduleType>>,
    config: Option<Option<Value>>,
    medication: Option<&MedicationRow>,
    whole: bool,
    problems: &mut Problems,
) -> Option<ScheduleConfig> {
    let mut type_known = true;
    match schedule_type {
        Some(None) => {
            problems.add("schedule_type", "must not be null");
            type_known = false;
        }
        Some(Some(t)) => row.schedule_type = t,
        None if whole => match medication.and_then(|m| m.default_schedule_type) {
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
    match config {
        Some(None) => problems.add(
            schedule_config::FIELD,
            "must be an object (use {} for none)",
        ),
        Some(Some(config)) => row.schedule_config = config,
        None if whole => row.schedule_config = serde_json::json!({}),
        None => {}
    }
    if !type_known {
        return None;
    }
    let checked = schedule_config::collect(row.schedule_type, &row.schedule_config, problems);
    row.schedule_config = checked.to_json();
    Some(checked)
}

/// The dates the schedule runs between; the end never before the start.
fn apply_dates(
    row: &mut ScheduleRow,
    start_date: Option<Option<Date>>,
    end_date: Option<Option<Date>>,
    whole: bool,
    problems: &mut Problems,
) {
    let mut start_known = true;
    match start_date {
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
    match end_date {
        Some(value) => row.end_date = value,
        None if whole => row.end_date = None,
        None => {}
    }
    if start_known && row.end_date.is_some_and(|end| end < row.start_date) {
        problems.add("end_date", "must be on or after start_date");
    }
}

/// A schedule with no attributes applied yet (placeholders for the
/// required ones, which `apply` insists on).
fn blank(source: SourceHead, stamps: SourceStamps) -> ScheduleRow {
    ScheduleRow {
        source,
        frequency: None,
        schedule_type: crate::medicine::vocab::ScheduleType::Daily,
        schedule_config: serde_json::json!({}),
        start_date: jiff::civil::Date::MIN,
        end_date: None,
        active: true,
        notes: None,
        stamps,
    }
}

/// `createSchedule`: person_id, medication_id and start_date are required,
/// and dose_amount, dose_unit and schedule_type unless the dosage option or
/// the medication gives them; needs manage access to the person.
pub fn create(conn: &WriteTx, actor: &Actor, mut attrs: ScheduleAttributes) -> Result<Schedule> {
    let (person_id, person_portable_id) = person_for_plan(conn, actor, attrs.person_id.take())?;
    let mut row = blank(
        SourceHead::new(person_id, person_portable_id),
        SourceStamps::new(),
    );
    apply(conn, actor, &mut row, None, attrs, true)?;
    row.source.id = source_row::insert(conn, actor.household_id, &row)?;
    sources::record(conn, actor, &row, Action::Create)?;
    sources::to_api(conn, row)
}

/// `updateSchedule` (PATCH): any subset of the attributes; person_id, when
/// sent, must name the schedule's person.
pub fn update(
    conn: &WriteTx,
    actor: &Actor,
    id: &ResourceId,
    if_match: &IfMatch,
    attrs: ScheduleAttributes,
) -> Result<Schedule> {
    let mut row: ScheduleRow = sources::find_for_change(conn, actor, id, if_match)?;
    let current = row.source.dose.clone();
    apply(conn, actor, &mut row, Some(&current), attrs, false)?;
    sources::save(conn, actor, row)
}

/// `replaceSchedule` (PUT): the whole schedule as on create (an omitted
/// medication_id keeps the medication); other omitted attributes take
/// their defaults or become null.
pub fn replace(
    conn: &WriteTx,
    actor: &Actor,
    id: &ResourceId,
    if_match: &IfMatch,
    attrs: ScheduleAttributes,
) -> Result<Schedule> {
    let current: ScheduleRow = sources::find_for_change(conn, actor, id, if_match)?;
    let mut row = ScheduleRow {
        active: current.active,
        ..blank(current.source.without_dose(), current.stamps.clone())
    };
    let saved = current.source.dose;
    apply(conn, actor, &mut row, Some(&saved), attrs, true)?;
    sources::save(conn, actor, row)
}

/// `deleteSchedule`: retires the schedule (see `sources::delete`).
pub fn delete(conn: &WriteTx, actor: &Actor, id: &ResourceId, if_match: &IfMatch) -> Result<()> {
    sources::delete::<ScheduleRow>(conn, actor, id, if_match)
}

/// `pauseSchedule` (deprecated; see `sources::pause`).
pub fn pause(
    conn: &WriteTx,
    actor: &Actor,
    id: &ResourceId,
    if_match: &IfMatch,
) -> Result<Schedule> {
    sources::pause(conn, actor, id, if_match)
}

/// `resumeSchedule` (deprecated; see `sources::resume`).
pub fn resume(
    conn: &WriteTx,
    actor: &Actor,
    id: &ResourceId,
    if_match: &IfMatch,
) -> Result<Schedule> {
    sources::resume(conn, actor, id, if_match)
}
