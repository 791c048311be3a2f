//! Medication takes: doses actually given, under a schedule or a direct
//! assignment. The rules for recording and listing them.
//!
//! Recording needs record access to the source's person (`view` → 403, a
//! person outside the caller's scope → 404). A take keeps its own dose
//! (defaulting from the source when it is recorded), so changing the plan
//! later never rewrites it; takes are immutable. Recording deducts the dose
//! from the taken-from medication's stock (or the own stock of the dosage
//! option its source was built from: `medicine::stock::deduct_take`)
//! exactly once, in the same transaction, never below zero. A client_uuid
//! makes recording safe to retry: the same client_uuid returns the recorded
//! take and deducts nothing. Recording is never refused for a safety limit (the dose was
//! already given); the answer carries warnings instead.

pub mod model;
pub mod routes;
pub mod store;

use jiff::civil::Date;
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Span, Timestamp};
use rusqlite::Connection;
use rust_decimal::Decimal;
use rust_decimal::prelude::ToPrimitive;

use crate::auth::{AccessLevel, Actor, access};
use crate::care::occurrence_key;
use crate::db::change_feed::{self, Action, Change};
use crate::decimal::Dec;
use crate::error::{ApiError, Problems, Result};
use crate::household::locations;
use crate::http::extract::{Page, ResourceId};
use crate::medicine::medications;
use crate::medicine::vocab::DoseCycle;
use model::{MedicationTake, NewMedicationTake, Warning};
pub use store::Filter;
use store::Source;

pub const RECORD_TYPE: &str = "MedicationTake";
/// How far ahead of the server's clock a take may be dated.
const MAX_FUTURE: SignedDuration = SignedDuration::from_mins(5);

/// A recorded take and what the caller should know about it.
#[derive(Debug)]
pub struct Recorded {
    pub take: MedicationTake,
    pub warnings: Vec<Warning>,
    pub next_dose_allowed_at: Option<String>,
    /// True when a retry (same client_uuid) returned an earlier take.
    pub replayed: bool,
}

/// Recording a take needs this access to the person.
pub const WRITE_LEVEL: AccessLevel = AccessLevel::Record;

/// 404 (naming `missing`) when the person is outside the actor's scope, 403
/// when visible but the access is below record.
fn require_record(conn: &Connection, actor: &Actor, person_id: i64, missing: &str) -> Result<()> {
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

fn matches(id: &ResourceId, numeric: Option<i64>, portable: Option<&str>) -> bool {
    match id {
        ResourceId::Numeric(n) => numeric == Some(*n),
        ResourceId::Portable(p) => portable == Some(p.as_str()),
    }
}

/// Whether a retry states the same facts as the saved take. Attributes the
/// retry leaves out that default from the source (dose, medication) are
/// not compared; the others must match what was saved.
fn same_facts(saved: &MedicationTake, input: &NewMedicationTake, taken_at: &str) -> bool {
    let optional = |sent: &Option<ResourceId>, numeric: Option<i64>, portable: Option<&str>| {
        sent.as_ref()
            .is_none_or(|id| matches(id, numeric, portable))
    };
    saved.source_type == input.source_type
        && matches(
            &input.source_id,
            Some(saved.source_id),
            Some(&saved.source_portable_id),
        )
        && saved.taken_at == taken_at
        && input.dose_amount.is_none_or(|a| a == saved.dose_amount)
        && input.dose_unit.is_none_or(|u| u == saved.dose_unit)
        && optional(
            &input.taken_from_medication_id,
            saved.taken_from_medication_id,
            saved.taken_from_medication_portable_id.as_deref(),
        )
        && match &input.taken_from_location_id {
            None => saved.taken_from_location_id.is_none(),
            Some(id) => matches(
                id,
                saved.taken_from_location_id,
                saved.taken_from_location_portable_id.as_deref(),
            ),
        }
        && input.occurrence_key == saved.occurrence_key
}

/// Records a take, all in the caller's transaction: the take, the stock
/// deduction with its medication's new version, and the change-feed
/// entries. A repeated client_uuid with the same facts returns the saved
/// take and changes nothing; with other facts it is a 409
/// `client_uuid_reused`. Access is checked before anything, a replay
/// included.
pub fn create(conn: &Connection, actor: &Actor, input: NewMedicationTake) -> Result<Recorded> {
    let taken_at_ts: Timestamp = input.taken_at.parse().map_err(|_| {
        ApiError::invalid("taken_at", "must be an ISO 8601 date-time with an offset")
    })?;
    let taken_at = crate::time::format(taken_at_ts);

    if let Some(client_uuid) = &input.client_uuid
        && let Some(saved) = store::find_by_client_uuid(conn, actor.household_id, &client_uuid.0)?
    {
        require_record(conn, actor, saved.person_id, saved.source_type.noun())?;
        if !same_facts(&saved, &input, &taken_at) {
            return Err(ApiError::conflict(
                "client_uuid_reused",
                "this client_uuid was already used for a different take; \
                 use a new client_uuid for a new take",
            ));
        }
        let source = store::find_source(
            conn,
            actor.household_id,
            saved.source_type,
            &ResourceId::Numeric(saved.source_id),
        )?
        .ok_or_else(|| ApiError::internal("the source of a saved take is missing"))?;
        let (warnings, next_dose_allowed_at) = limits(conn, actor.household_id, &source, &saved)?;
        return Ok(Recorded {
            take: saved,
            warnings,
            next_dose_allowed_at,
            replayed: true,
        });
    }

    let noun = input.source_type.noun();
    let source = store::find_source(
        conn,
        actor.household_id,
        input.source_type,
        &input.source_id,
    )?
    .filter(|s| !s.retired)
    .ok_or_else(|| ApiError::not_found(noun))?;
    require_record(conn, actor, source.person_id, noun)?;

    let mut problems = Problems::default();
    if taken_at_ts > Timestamp::now() + MAX_FUTURE {
        problems.add("taken_at", "must not be more than 5 minutes in the future");
    }
    if input.dose_amount.is_some_and(|a| !a.is_positive()) {
        problems.add("dose_amount", "must be greater than zero");
    }
    problems.check("the medication take is invalid")?;
    let dose_amount = input.dose_amount.unwrap_or(source.dose_amount);
    let dose_unit = input.dose_unit.unwrap_or(source.dose_unit);

    let medication_ref = input
        .taken_from_medication_id
        .clone()
        .unwrap_or(ResourceId::Numeric(source.medication_id));
    let medication = medications::store::find(conn, actor.household_id, &medication_ref)?
        .ok_or_else(|| ApiError::not_found("medication"))?;
    let location = match &input.taken_from_location_id {
        Some(id) => Some(
            locations::store::find(conn, actor.household_id, id)?
                .ok_or_else(|| ApiError::not_found("location"))?,
        ),
        None => None,
    };

    let occurrence = match &input.occurrence_key {
        Some(key) => {
            let occurrence = occurrence_key::verify(conn, key)?;
            if occurrence.source_type != source.source_type.as_str()
                || occurrence.source_portable_id != source.portable_id
            {
                return Err(ApiError::invalid(
                    "occurrence_key",
                    "names an expected dose of another schedule or person medication",
                ));
            }
            let window = occurrence.window_starts_on.to_string();
            let position = i64::from(occurrence.position);
            if store::find_by_occurrence(conn, source.source_type, source.id, &window, position)?
                .is_some()
            {
                return Err(ApiError::conflict(
                    "occurrence_already_taken",
                    "this expected dose is already linked to another take",
                ));
            }
            Some((window, position))
        }
        None => None,
    };

    let now = crate::time::now();
    let portable_id = crate::db::new_portable_id();
    let (window, position) = occurrence.unzip();
    let id = store::insert(
        conn,
        &store::NewRow {
            portable_id: &portable_id,
            household_id: actor.household_id,
            person_id: source.person_id,
            source_type: source.source_type,
            source_id: source.id,
            client_uuid: input.client_uuid.as_ref().map(|c| c.0.as_str()),
            taken_at: &taken_at,
            dose_amount,
            dose_unit,
            taken_from_medication_id: Some(medication.id),
            taken_from_location_id: location.as_ref().map(|l| l.id),
            occurrence_key: input.occurrence_key.as_deref(),
            occurrence_window_starts_on: window,
            occurrence_position: position,
            recorded_by_membership_id: Some(actor.membership_id),
            created_at: &now,
        },
    )?;
    change_feed::append(
        conn,
        Change {
            household_id: actor.household_id,
            record_type: RECORD_TYPE,
            record_id: id,
            record_portable_id: &portable_id,
            action: Action::Create,
            person_id: Some(source.person_id),
        },
    )?;

    let stock_warnings = crate::medicine::stock::deduct_take(
        conn,
        actor.household_id,
        &medication,
        (source.source_type.as_str(), source.id),
        dose_amount,
        dose_unit,
        &now,
    )?
    .into_iter()
    .map(|(code, message)| Warning { code, message });

    let take = store::find(conn, id)?.ok_or_else(|| ApiError::internal("saved take is missing"))?;
    let (mut warnings, next_dose_allowed_at) = limits(conn, actor.household_id, &source, &take)?;
    warnings.extend(stock_warnings);
    Ok(Recorded {
        take,
        warnings,
        next_dose_allowed_at,
        replayed: false,
    })
}

/// The [start, end) of the dose-cycle window containing `at`: its day, ISO
/// week or month in the household time zone.
fn window(at: Timestamp, tz: &TimeZone, cycle: DoseCycle) -> Result<(Timestamp, Timestamp)> {
    let date = at.to_zoned_datetime(tz.clone()).date();
    let bad = |e: jiff::Error| ApiError::internal(format!("dose-cycle window: {e}"));
    let (start, end): (Date, Date) = match cycle {
        DoseCycle::Daily => (date, date.checked_add(Span::new().days(1)).map_err(bad)?),
        DoseCycle::Weekly => {
            let back = i64::from(date.weekday().to_monday_zero_offset());
            let start = date.checked_sub(Span::new().days(back)).map_err(bad)?;
            (start, start.checked_add(Span::new().days(7)).map_err(bad)?)
        }
        DoseCycle::Monthly => {
            let start = date.first_of_month();
            (
                start,
                start.checked_add(Span::new().months(1)).map_err(bad)?,
            )
        }
    };
    let at_midnight = |d: Date| -> Result<Timestamp> {
        Ok(d.to_zoned_datetime(tz.clone()).map_err(bad)?.timestamp())
    };
    Ok((at_midnight(start)?, at_midnight(end)?))
}

fn period(cycle: DoseCycle) -> &'static str {
    match cycle {
        DoseCycle::Daily => "day",
        DoseCycle::Weekly => "week",
        DoseCycle::Monthly => "month",
    }
}

/// Whole seconds in a number of hours.
fn hours_to_duration(hours: Dec) -> SignedDuration {
    let secs = (hours.0 * Decimal::from(3600))
        .round()
        .to_i64()
        .unwrap_or(i64::MAX);
    SignedDuration::from_secs(secs)
}

fn duration_to_hours(d: SignedDuration) -> Dec {
    Dec((Decimal::from(d.as_secs()) / Decimal::from(3600))
        .round_dp(2)
        .normalize())
}

/// The safety-limit warnings of a take, judged against the takes of its
/// source recorded up to it (so a replay answers as the first time did),
/// and, for as-needed sources, when the next dose is allowed.
fn limits(
    conn: &Connection,
    household_id: i64,
    source: &Source,
    take: &MedicationTake,
) -> Result<(Vec<Warning>, Option<String>)> {
    let tz = crate::household::store::time_zone(conn, household_id)?;
    let cycle = source.dose_cycle.unwrap_or(DoseCycle::Daily);
    let min_gap = source
        .min_hours_between_doses
        .filter(|h| h.is_positive())
        .map(hours_to_duration);
    let taken_at = timestamp(&take.taken_at)?;
    let mut warnings = Vec::new();

    let count_around = |at: Timestamp| -> Result<(i64, Timestamp)> {
        let (start, end) = window(at, &tz, cycle)?;
        let count = store::count_in_window(
            conn,
            source.source_type,
            source.id,
            &crate::time::format(start),
            &crate::time::format(end),
            take.id,
        )?;
        Ok((count, end))
    };

    if let Some(max) = source.max_daily_doses {
        let (count, _) = count_around(taken_at)?;
        if count > max {
            warnings.push(Warning {
                code: "max_daily_doses_exceeded",
                message: format!(
                    "{count} doses recorded in this {}; the limit is {max}",
                    period(cycle)
                ),
            });
        }
    }
    if let Some(min_gap) = min_gap {
        let (before, after) =
            store::neighbours(conn, source.source_type, source.id, &take.taken_at, take.id)?;
        let mut closest: Option<SignedDuration> = None;
        for other in before.iter().chain(after.iter()) {
            let gap = taken_at.duration_since(timestamp(other)?).abs();
            closest = Some(closest.map_or(gap, |c| c.min(gap)));
        }
        if let Some(gap) = closest.filter(|gap| *gap < min_gap) {
            warnings.push(Warning {
                code: "min_hours_between_doses",
                message: format!(
                    "another dose was recorded {} hours from this one; at least {} hours should pass between doses",
                    duration_to_hours(gap),
                    duration_to_hours(min_gap)
                ),
            });
        }
    }

    let mut next = None;
    if source.as_needed
        && let Some(latest) = store::latest_taken_at(conn, source.source_type, source.id, take.id)?
    {
        let latest = timestamp(&latest)?;
        if let Some(min_gap) = min_gap {
            next = Some(latest + min_gap);
        }
        if let Some(max) = source.max_daily_doses {
            let (count, end) = count_around(latest)?;
            if count >= max {
                next = Some(next.map_or(end, |n: Timestamp| n.max(end)));
            }
        }
    }
    Ok((warnings, next.map(crate::time::format)))
}
