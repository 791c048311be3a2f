//! Medication takes: doses actually given, under a schedule or a direct
//! assignment. The rules for recording and listing them.
//!
//! Recording needs record access to the source's person (`view` → 403, a
//! person outside the caller's scope → 404). A take keeps its own dose
//! (defaulting from what the source calls for when it is recorded, a taper
//! step's dose included), so changing the plan later never rewrites it;
//! takes are immutable and never deleted. Recording deducts the dose from
//! the taken-from medication's stock (or the own stock of the dosage option
//! its source was built from: `medicine::stock::deduct_take`) exactly once,
//! in the same transaction, never below zero. An occurrence key links the take to one expected dose
//! only when it was given within that dose's window (widened by
//! [`OCCURRENCE_GRACE`]), and turns that dose's saved outcome taken. A
//! client_uuid makes recording safe to retry: the same client_uuid returns
//! the recorded take and deducts nothing. Recording is never refused for a
//! safety limit (the dose was already given); the answer carries warnings
//! instead, counting doses of the same medicine under the person's other
//! sources too.

pub mod model;
mod replay;
pub mod routes;
mod source_plan;
pub mod store;
mod warnings;

use std::rc::Rc;

use crate::db::WriteTx;
use crate::domain;
use jiff::civil::Date;
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};
use rusqlite::Connection;

use crate::auth::{AccessLevel, Actor, access};
use crate::care::dose_occurrences::outcomes as dose_outcomes;
use crate::care::dose_occurrences::{ScheduleHistory, cycle_window};
use crate::care::occurrence_key;
use crate::db::change_feed::{self, Action, Change};
use crate::decimal::{Dec, PositiveDecimal};
use crate::domain::{Page, ResourceId};
use crate::error::{ApiError, Problems, Result};
use crate::household::locations;
use crate::medicine::medications::{self, model::MedicationStock};
use crate::medicine::vocab::{DoseUnit, ScheduleType};
use model::{MedicationTake, NewMedicationTake, SourceType, Warning};
use source_plan::SourcePlan;
pub use store::Filter;
use store::Source;

pub const RECORD_TYPE: &str = crate::domain::record_type::MEDICATION_TAKE;
/// How far ahead of the server's clock a take may be dated.
const MAX_FUTURE: SignedDuration = SignedDuration::from_mins(5);
/// A dose given this long before its expected dose's window opens, or
/// after it closes, may still be linked to it: a 20:00 dose given just after
/// midnight, a morning dose given the night before.
pub const OCCURRENCE_GRACE: SignedDuration = SignedDuration::from_hours(12);
/// No dose is dated before this day (nor before the person's birth).
const EARLIEST_TAKEN_ON: Date = jiff::civil::date(1900, 1, 1);

/// A recorded take and what the caller should know about it.
#[derive(Debug)]
pub struct Recorded {
    pub take: MedicationTake,
    pub warnings: Vec<Warning>,
    pub next_dose_allowed_at: Option<crate::domain::Timestamp>,
    /// True when a retry (same client_uuid) returned an earlier take.
    pub replayed: bool,
}

/// Recording a take needs this access to the person.
pub const WRITE_LEVEL: AccessLevel = AccessLevel::Record;

/// 404 (naming `missing`) when the person is outside the actor's scope, 403
/// when visible but the access is below record.
pub fn require_record(
    conn: &Connection,
    actor: &Actor,
    person_id: i64,
    missing: &str,
) -> Result<()> {
    access::require_level(
        conn,
        actor,
        person_id,
        WRITE_LEVEL,
        missing,
        "recording a dose needs record access to the person",
    )
}

/// `listMedicationTakes`: takes of the people the actor may view, newest
/// first.
pub fn list(
    conn: &Connection,
    actor: &Actor,
    filter: &Filter,
    page: Page,
) -> Result<(Vec<MedicationTake>, i64)> {
    store::list_visible(conn, actor, filter, page)
}

fn timestamp(stored: &str) -> Result<Timestamp> {
    stored
        .parse()
        .map_err(|e| ApiError::internal(format!("stored timestamp {stored}: {e}")))
}

/// Records a take, all in the caller's transaction: the take, the stock
/// deduction with its medication's new version, the saved outcome of the
/// expected dose it names (now taken) and the change-feed entries. A
/// repeated client_uuid with the same facts returns the saved take and
/// changes nothing; with other facts it is a 409 `client_uuid_reused`.
/// Access is checked before anything, a replay included.
pub fn create(conn: &WriteTx, actor: &Actor, input: NewMedicationTake) -> Result<Recorded> {
    record(conn, actor, input, true)
}

/// A take restored by a portable import: the same rule as `create`, except
/// that the stock it used is not deducted again (the imported stock figures
/// already count it).
pub fn restore(conn: &WriteTx, actor: &Actor, input: NewMedicationTake) -> Result<Recorded> {
    record(conn, actor, input, false)
}

fn record(
    conn: &WriteTx,
    actor: &Actor,
    input: NewMedicationTake,
    deduct_stock: bool,
) -> Result<Recorded> {
    let taken_at_ts: Timestamp = input.taken_at.parse().map_err(|_| {
        ApiError::invalid("taken_at", "must be an ISO 8601 date-time with an offset")
    })?;
    let taken_at = domain::Timestamp::from_jiff(taken_at_ts);
    // Nearly every take brings a new client_uuid, so the saved take of a
    // repeated one is looked for only when this take cannot be recorded
    // (it may be the retry of one that could) or its client_uuid is
    // already stored: the answer is the replay's either way, as if it had
    // been looked for first. Nothing is written before that is known.
    let prepared = match prepare(conn, actor, &input, taken_at_ts, deduct_stock) {
        Ok(prepared) => prepared,
        Err(refused) => {
            return replay::replay(conn, actor, &input, &taken_at)?.ok_or(refused);
        }
    };
    match write_new(conn, actor, &input, &taken_at, prepared)? {
        Some(recorded) => Ok(recorded),
        None => replay::replay(conn, actor, &input, &taken_at)?
            .ok_or_else(|| ApiError::internal("a take's client_uuid is stored and not found")),
    }
}

/// What a new take is recorded from, all read and checked before anything
/// is written: recording writes nothing before it has decided to succeed
/// (so it runs without a savepoint of its own: `Db::write_checked_first`).
struct Prepared {
    plan: Rc<SourcePlan>,
    medication: MedicationStock,
    location: Option<(i64, String)>,
    occurrence: Option<LinkedOccurrence>,
    planned: Planned,
    dose_amount: Dec,
    dose_unit: DoseUnit,
    /// What the dose does to the stock it draws on; `None` when restored.
    deduction: Option<crate::medicine::stock::Deduction>,
}

/// Reads and checks what recording `input` needs: its source and the
/// caller's access to it, the time, where it is taken from, the expected
/// dose it names, the plan then in force and the stock it draws on.
fn prepare(
    conn: &Connection,
    actor: &Actor,
    input: &NewMedicationTake,
    taken_at_ts: Timestamp,
    deduct_stock: bool,
) -> Result<Prepared> {
    let noun = input.source_type.noun();
    let plan = source_plan::find(
        conn,
        actor.household_id,
        input.source_type,
        &input.source_id,
    )?
    .filter(|p| !p.source.retired)
    .ok_or_else(|| ApiError::not_found(noun))?;
    let (source, tz) = (&plan.source, &plan.tz);
    require_record(conn, actor, source.person_id, noun)?;

    check_input(source, tz, taken_at_ts)?;
    let (medication, location) = taken_from(conn, actor, source, input)?;
    let occurrence = match &input.occurrence_key {
        Some(key) => Some(linked_occurrence(conn, tz, source, key, taken_at_ts)?),
        None => None,
    };
    // The dose of the expected dose named, or else of the day it was given.
    let planned = planned_for(
        conn,
        actor.household_id,
        &plan,
        taken_at_ts,
        occurrence.as_ref().map(|o| (o.starts_on, o.position)),
    )?;
    let dose_amount = input
        .dose_amount
        .map_or(planned.dose_amount, PositiveDecimal::get);
    let dose_unit = input.dose_unit.unwrap_or(planned.dose_unit);
    let deduction = if deduct_stock {
        Some(crate::medicine::stock::plan_take(
            conn,
            actor.household_id,
            &medication,
            source.source_dosage_option_id,
            dose_amount,
            dose_unit,
        )?)
    } else {
        None
    };
    Ok(Prepared {
        plan,
        medication,
        location,
        occurrence,
        planned,
        dose_amount,
        dose_unit,
        deduction,
    })
}

/// Writes the new take and what follows it; `None`, having written
/// nothing, when its client_uuid is already stored.
fn write_new(
    conn: &WriteTx,
    actor: &Actor,
    input: &NewMedicationTake,
    taken_at: &domain::Timestamp,
    prepared: Prepared,
) -> Result<Option<Recorded>> {
    let (dose_amount, dose_unit) = (prepared.dose_amount, prepared.dose_unit);
    let now = conn.now().clone();
    let portable_id = crate::db::new_portable_id();
    let Some(id) = store::insert(
        conn,
        &store::NewRow {
            portable_id: &portable_id,
            household_id: actor.household_id,
            person_id: prepared.plan.source.person_id,
            source_type: prepared.plan.source.source_type,
            source_id: prepared.plan.source.id,
            client_uuid: input.client_uuid.as_ref().map(|c| c.0.as_str()),
            taken_at,
            dose_amount,
            dose_unit,
            taken_from_medication_id: Some(prepared.medication.id),
            taken_from_location_id: prepared.location.as_ref().map(|l| l.0),
            occurrence_key: input.occurrence_key.as_deref(),
            occurrence_window_starts_on: prepared.occurrence.as_ref().map(|o| o.window.clone()),
            occurrence_position: prepared.occurrence.as_ref().map(|o| o.position),
            recorded_by_membership_id: Some(actor.membership_id),
            created_at: &now,
        },
    )?
    else {
        return Ok(None);
    };
    recorded(
        conn,
        actor,
        &prepared.plan.source,
        (id, &portable_id),
        prepared.occurrence.as_ref(),
    )?;
    let stock_warnings = match prepared.deduction {
        Some(deduction) => {
            crate::medicine::stock::deduct_take(conn, actor.household_id, deduction)?
        }
        None => Vec::new(),
    }
    .into_iter()
    .map(|(code, message)| Warning {
        code: code.into(),
        message,
    });

    // The take as saved, from what was just written: reading it back would
    // be one more query of six tables on the writer for every dose.
    let take = MedicationTake {
        id,
        portable_id,
        person_id: prepared.plan.source.person_id,
        person_portable_id: prepared.plan.source.person_portable_id.clone(),
        source_type: prepared.plan.source.source_type,
        source_id: prepared.plan.source.id,
        source_portable_id: prepared.plan.source.portable_id.clone(),
        client_uuid: input.client_uuid.as_ref().map(|c| c.0.clone()),
        taken_at: taken_at.clone(),
        dose_amount,
        dose_unit,
        taken_from_medication_id: Some(prepared.medication.id),
        taken_from_medication_portable_id: Some(prepared.medication.portable_id),
        taken_from_location_id: prepared.location.as_ref().map(|l| l.0),
        taken_from_location_portable_id: prepared.location.map(|l| l.1),
        occurrence_key: input.occurrence_key.clone(),
        recorded_by_membership_id: Some(actor.membership_id),
        created_at: now,
        lock_version: 1,
    };
    debug_assert_eq!(store::find(conn, id)?.as_ref(), Some(&take));
    let (mut warnings, next_dose_allowed_at) = warnings::warnings(
        conn,
        actor.household_id,
        &prepared.plan,
        &take,
        // Judged by the plan of the day the dose was given, which is what
        // was planned above unless the take names an expected dose.
        prepared.occurrence.is_none().then_some(prepared.planned),
    )?;
    warnings.extend(stock_warnings);
    Ok(Some(Recorded {
        take,
        warnings,
        next_dose_allowed_at,
        replayed: false,
    }))
}

/// The medication a take is taken from (the source's unless it names
/// another) and the location it names (id, portable id), if any; 404 for
/// either outside the household.
fn taken_from(
    conn: &Connection,
    actor: &Actor,
    source: &Source,
    input: &NewMedicationTake,
) -> Result<(MedicationStock, Option<(i64, String)>)> {
    let medication_ref = input
        .taken_from_medication_id
        .clone()
        .unwrap_or(ResourceId::Numeric(source.medication_id));
    let medication = medications::store::find_stock(conn, actor.household_id, &medication_ref)?
        .ok_or_else(|| ApiError::not_found("medication"))?;
    let location = match &input.taken_from_location_id {
        Some(id) => {
            let found = locations::store::find(conn, actor.household_id, id)?
                .ok_or_else(|| ApiError::not_found("location"))?;
            Some((found.id, found.portable_id))
        }
        None => None,
    };
    Ok((medication, location))
}

/// What follows a new take (`take`: id, portable id) in the same
/// transaction: its change-feed entry, and the expected dose it names
/// turning taken.
fn recorded(
    conn: &WriteTx,
    actor: &Actor,
    source: &Source,
    take: (i64, &str),
    occurrence: Option<&LinkedOccurrence>,
) -> Result<()> {
    change_feed::append(
        conn,
        Change {
            household_id: actor.household_id,
            record_type: RECORD_TYPE,
            record_id: take.0,
            record_portable_id: take.1,
            action: Action::Create,
            person_id: Some(source.person_id),
        },
    )?;
    if let Some(saved) = occurrence.and_then(|o| o.saved.as_ref()) {
        dose_outcomes::link_take(conn, actor, saved, take.0)?;
    }
    Ok(())
}

/// The 422 for a take dated in the future (beyond [`MAX_FUTURE`]), before
/// [`EARLIEST_TAKEN_ON`] or before the person's birth (in the household
/// time zone).
fn check_input(source: &Source, tz: &TimeZone, taken_at: Timestamp) -> Result<()> {
    let taken_on = taken_at.to_zoned_datetime(tz.clone()).date();
    let born_on = source
        .person_born_on
        .as_deref()
        .and_then(|d| d.parse::<Date>().ok());
    let mut problems = Problems::default();
    if taken_at > Timestamp::now() + MAX_FUTURE {
        problems.add("taken_at", "must not be more than 5 minutes in the future");
    } else if taken_on < EARLIEST_TAKEN_ON {
        problems.add("taken_at", "must not be before 1900-01-01");
    } else if born_on.is_some_and(|born| taken_on < born) {
        problems.add(
            "taken_at",
            "must not be before the person's date of birth (in the household time zone)",
        );
    }
    problems.check("the medication take is invalid")
}

/// The expected dose an occurrence key links a take to.
struct LinkedOccurrence {
    /// The day its window starts on, and the same as stored text.
    starts_on: Date,
    window: String,
    position: i64,
    /// Its saved outcome, not taken (it turns taken with the take).
    saved: Option<crate::care::dose_occurrences::model::DoseOutcome>,
}

/// The expected dose `key` names, when it is one of `source`'s, its
/// widened window contains `taken_at`, and no other take is linked to it.
fn linked_occurrence(
    conn: &Connection,
    tz: &TimeZone,
    source: &Source,
    key: &str,
    taken_at: Timestamp,
) -> Result<LinkedOccurrence> {
    let occurrence = occurrence_key::verify(conn, key)?;
    if occurrence.source_type != source.source_type.as_str()
        || occurrence.source_portable_id != source.portable_id
    {
        return Err(ApiError::invalid(
            "occurrence_key",
            "names an expected dose of another schedule or person medication",
        ));
    }
    let (opens, closes) = linkable_between(tz, source, occurrence.window_starts_on)?;
    if taken_at < opens || taken_at >= closes {
        return Err(ApiError::invalid(
            "occurrence_key",
            "names an expected dose whose window, widened by 12 hours either side, \
             does not contain taken_at",
        ));
    }
    let window = occurrence.window_starts_on.to_string();
    let position = i64::from(occurrence.position);
    if store::find_by_occurrence(conn, source.source_type, source.id, &window, position)?.is_some()
    {
        return Err(ApiError::conflict(
            "occurrence_already_taken",
            "this expected dose is already linked to another take",
        ));
    }
    let saved =
        dose_outcomes::linkable_outcome(conn, source.source_type, source.id, &window, position)?;
    Ok(LinkedOccurrence {
        starts_on: occurrence.window_starts_on,
        window,
        position,
        saved,
    })
}

/// The instants between which a dose may be linked to the expected dose of
/// `source` whose window starts on `starts_on`: its window (a schedule's
/// day, an assignment's dose-cycle window) in the household time zone,
/// widened by [`OCCURRENCE_GRACE`] either side.
fn linkable_between(
    tz: &TimeZone,
    source: &Source,
    starts_on: Date,
) -> Result<(Timestamp, Timestamp)> {
    let (first, last) = match source.source_type {
        SourceType::Schedule => (starts_on, starts_on),
        SourceType::PersonMedication => cycle_window(source.dose_cycle, starts_on),
    };
    let opens = midnight(tz, first)?;
    let closes = midnight(tz, last.tomorrow().unwrap_or(last))?;
    Ok((opens - OCCURRENCE_GRACE, closes + OCCURRENCE_GRACE))
}

/// What a source calls for on one day: its dose and limits.
#[derive(Debug, Clone, Copy)]
pub(super) struct Planned {
    dose_amount: Dec,
    dose_unit: DoseUnit,
    max_daily_doses: Option<i64>,
    min_hours_between_doses: Option<Dec>,
}

/// The dose and limits `source` called for: for a schedule, from the plan
/// in force then (plan history: a later edit never changes what an earlier
/// dose called for), a tapering schedule's step included with its own
/// limits winning, as listDoseOccurrences applies them. With `occurrence`
/// (the day its window starts on, and its position) it is that expected
/// dose's; otherwise the plan at `at`. A direct assignment's own.
fn planned_for(
    conn: &Connection,
    household_id: i64,
    plan: &SourcePlan,
    at: Timestamp,
    occurrence: Option<(Date, i64)>,
) -> Result<Planned> {
    let source = &plan.source;
    let own = Planned {
        dose_amount: source.dose_amount,
        dose_unit: source.dose_unit,
        max_daily_doses: source.max_daily_doses,
        min_hours_between_doses: source.min_hours_between_doses,
    };
    if source.source_type != SourceType::Schedule {
        return Ok(own);
    }
    // A schedule never revised, and not tapering, has one plan all along:
    // its own, whatever the day (an expected dose named still goes by the
    // history, which also knows its pauses and position).
    if occurrence.is_none() && source.schedule_type != Some(ScheduleType::Tapering) && !plan.revised
    {
        return Ok(own);
    }
    let Some(history) = ScheduleHistory::load(conn, household_id, source.id)? else {
        return Ok(own);
    };
    if let Some((day, position)) = occurrence
        && let Some(dose) = history
            .doses_on(day)?
            .into_iter()
            .find(|d| i64::from(d.position) == position)
    {
        return Ok(Planned {
            dose_amount: dose.dose_amount,
            dose_unit: dose.dose_unit,
            max_daily_doses: dose.max_daily_doses,
            min_hours_between_doses: dose.min_hours_between_doses,
        });
    }
    let plan = history.plan_at(at);
    Ok(match history.taper_step_at(at) {
        Some(step) => Planned {
            dose_amount: step.dose_amount,
            dose_unit: step.dose_unit.unwrap_or(plan.dose_unit),
            max_daily_doses: step.max_daily_doses.or(plan.max_daily_doses),
            min_hours_between_doses: step
                .min_hours_between_doses
                .or(plan.min_hours_between_doses),
        },
        None => Planned {
            dose_amount: plan.dose_amount,
            dose_unit: plan.dose_unit,
            max_daily_doses: plan.max_daily_doses,
            min_hours_between_doses: plan.min_hours_between_doses,
        },
    })
}

/// The start of `date` in `tz`.
fn midnight(tz: &TimeZone, date: Date) -> Result<Timestamp> {
    Ok(date
        .to_zoned_datetime(tz.clone())
        .map_err(|e| ApiError::internal(format!("start of {date}: {e}")))?
        .timestamp())
}
