//! `listDoseOccurrences` step by step: the people, the projection of each
//! source's doses of the day, the takes and saved outcomes those doses
//! settle against, and the order they are answered in. The projection
//! rules are in the parent module's documentation.

use std::collections::{HashMap, HashSet};

use jiff::Timestamp;
use jiff::civil::Date;
use jiff::tz::TimeZone;
use rusqlite::Connection;
use rust_decimal::Decimal;

use super::history::{Revisions, Timeline};
use super::model::{
    DayMeta, DoseOccurrence, MAX_DAILY_DOSES_EXCEEDED, OTHER_SOURCE_TOO_SOON, Outcome, TOO_SOON,
};
use super::projection::{PlannedDose, paused_at, paused_throughout, planned_doses, untimed_window};
use super::store::{
    self, AssignmentSource, OccurrenceIdentity, Pause, PersonRef, SavedOutcome, ScheduleSource,
    SourceCommon, SourceIds, Take,
};
use super::{MAX_POSITIONS, PERSON_MEDICATION, SCHEDULE, cycle_window, start_of};
use crate::auth::{Actor, access};
use crate::care::notification_preferences::slots::{self, SlotTimes};
use crate::care::occurrence_key;
use crate::care::plan::{AssignmentPlan, SchedulePlan};
use crate::decimal::Dec;
use crate::domain::ResourceId;
use crate::error::{ApiError, Result};
use crate::household::{people, store as household_store};

/// The people to list: the one asked for (404 outside the caller's scope),
/// or everyone the caller may view.
fn people_for(
    conn: &Connection,
    actor: &Actor,
    person_id: Option<&ResourceId>,
) -> Result<Vec<PersonRef>> {
    let Some(id) = person_id else {
        return store::visible_people(conn, actor);
    };
    let person = people::store::find(conn, actor.household_id, id)?
        .ok_or_else(|| ApiError::not_found("person"))?;
    if access::person_access(conn, actor, person.id)?.is_none() {
        return Err(ApiError::not_found("person"));
    }
    Ok(vec![PersonRef {
        id: person.id,
        portable_id: person.portable_id,
    }])
}

/// A projected dose before its outcome and warnings are known.
struct Expected {
    dose: DoseOccurrence,
    /// Index into `limits`.
    limit: usize,
}

/// The limits one source's takes are checked against, over its window.
struct Limits {
    source_type: &'static str,
    source_id: i64,
    person_id: i64,
    medication_id: i64,
    from: crate::domain::Timestamp,
    until: crate::domain::Timestamp,
    max_doses: Option<i64>,
    min_hours: Option<Dec>,
}

impl Limits {
    /// Warnings about this source's takes within its window; doses of the
    /// same medicine for the person under other sources count toward
    /// max_doses and may come too soon, as a take's own warnings say.
    fn warnings(&self, takes: &[Take]) -> Vec<String> {
        let in_window = |t: &&Take| {
            t.taken_at.as_str() >= self.from.as_str() && t.taken_at.as_str() < self.until.as_str()
        };
        let own = |t: &Take| t.source_type == self.source_type && t.source_id == self.source_id;
        let within: Vec<&Take> = takes.iter().filter(|t| own(t)).filter(in_window).collect();
        let others: Vec<&Take> = takes
            .iter()
            .filter(|t| {
                !own(t)
                    && t.person_id == self.person_id
                    && t.medication_id == Some(self.medication_id)
            })
            .filter(in_window)
            .collect();
        let mut out = warnings(&within, others.len(), self.max_doses, self.min_hours);
        if self
            .min_hours
            .is_some_and(|h| h.is_positive() && any_closer(&within, &others, h))
        {
            out.push(OTHER_SOURCE_TOO_SOON.to_string());
        }
        out
    }
}

fn blank(
    source_type: &'static str,
    source: &SourceCommon,
    window: (Date, Date),
    position: u32,
) -> DoseOccurrence {
    DoseOccurrence {
        occurrence_key: String::new(),
        source_type,
        source_id: source.id,
        source_portable_id: source.portable_id.clone(),
        person_id: source.person_id,
        person_portable_id: source.person_portable_id.clone(),
        medication_id: source.medication_id,
        medication_portable_id: source.medication_portable_id.clone(),
        medication_display_name: source.medication_display_name.clone(),
        dose_amount: source.dose_amount,
        dose_unit: source.dose_unit,
        window_starts_on: window.0,
        window_ends_on: window.1,
        position,
        scheduled_at: None,
        outcome: Outcome::Open,
        reason: None,
        note: None,
        medication_take_id: None,
        medication_take_portable_id: None,
        warnings: Vec::new(),
    }
}

/// Whether a take of `own` and one of `others` are closer than `min_hours`.
fn any_closer(own: &[&Take], others: &[&Take], min_hours: Dec) -> bool {
    let Some(min_millis) = min_hours.0.checked_mul(Decimal::from(3_600_000)) else {
        return !own.is_empty() && !others.is_empty();
    };
    let times = |takes: &[&Take]| -> Vec<Timestamp> {
        takes.iter().map(|t| t.taken_at.to_jiff()).collect()
    };
    let others = times(others);
    times(own).iter().any(|a| {
        others.iter().any(|b| {
            let gap = a.duration_since(*b).as_millis().abs();
            Decimal::from_i128_with_scale(gap, 0) < min_millis
        })
    })
}

/// Warnings about takes (sorted by time) against a source's limits, with
/// `also_counted` doses of the same medicine under other sources.
fn warnings(
    takes: &[&Take],
    also_counted: usize,
    max_doses: Option<i64>,
    min_hours: Option<Dec>,
) -> Vec<String> {
    let mut out = Vec::new();
    if max_doses.is_some_and(|max| (takes.len() + also_counted) as i64 > max) {
        out.push(MAX_DAILY_DOSES_EXCEEDED.to_string());
    }
    if let Some(min_hours) = min_hours.filter(|h| h.is_positive()) {
        // Overflow: a limit beyond any gap between two instants.
        let min_millis = min_hours.0.checked_mul(Decimal::from(3_600_000));
        let times: Vec<Timestamp> = takes.iter().map(|t| t.taken_at.to_jiff()).collect();
        let too_soon = times.windows(2).any(|pair| {
            let gap = pair[1].duration_since(pair[0]).as_millis();
            min_millis.is_none_or(|min| Decimal::from_i128_with_scale(gap, 0) < min)
        });
        if too_soon {
            out.push(TOO_SOON.to_string());
        }
    }
    out
}

/// What the projection reads that depends only on the stored data (not on
/// the caller, the day or the clock), for every person of the household:
/// the zone and its history, every schedule and assignment, the pause
/// periods, the saved plan history, each scheduled person's slot times over
/// time and the key signer. On a reader thread it is read once per
/// committed change and kept (`crate::db::kept`): a phone asks for the day
/// far more often than the plan changes.
struct HouseholdPlan {
    time_zone: TimeZone,
    zones: Timeline<TimeZone>,
    /// Each schedule with its plans over time (read from the history once,
    /// not per request: its current state holds from its `updated_at`).
    schedules: Vec<(ScheduleSource, Timeline<SchedulePlan>)>,
    assignments: Vec<(AssignmentSource, Timeline<AssignmentPlan>)>,
    pauses: Vec<Pause>,
    slots: HashMap<i64, Timeline<SlotTimes>>,
    signer: occurrence_key::KeptKeys,
}

impl HouseholdPlan {
    fn load(conn: &Connection, household_id: i64) -> Result<HouseholdPlan> {
        let time_zone = household_store::time_zone(conn, household_id)?;
        let schedules = store::schedules(conn, household_id)?;
        let revisions = Revisions::load(conn, household_id)?;
        let mut slots = HashMap::new();
        for schedule in &schedules {
            let person_id = schedule.common.person_id;
            if let std::collections::hash_map::Entry::Vacant(entry) = slots.entry(person_id) {
                let current = slots::slot_times(conn, person_id)?;
                entry.insert(revisions.slot_times(person_id, current));
            }
        }
        let schedules = schedules
            .into_iter()
            .map(|x| {
                let plans = revisions.schedule(x.common.id, x.plan.clone(), x.updated_at);
                (x, plans)
            })
            .collect();
        let assignments = store::assignments(conn, household_id)?
            .into_iter()
            .map(|x| {
                let plans = revisions.assignment(x.common.id, x.plan.clone(), x.updated_at);
                (x, plans)
            })
            .collect();
        Ok(HouseholdPlan {
            zones: revisions.time_zone(household_id, time_zone.clone()),
            time_zone,
            assignments,
            pauses: store::pauses(conn, household_id)?,
            slots,
            schedules,
            signer: occurrence_key::KeptKeys::new(occurrence_key::Signer::new(
                &occurrence_key::secret(conn)?,
            )),
        })
    }

    fn slots(&self, person_id: i64) -> Result<&Timeline<SlotTimes>> {
        self.slots
            .get(&person_id)
            .ok_or_else(|| ApiError::internal("slot times of a scheduled person are missing"))
    }

    fn pauses_of(&self, source_type: &str, source_id: i64) -> Vec<&Pause> {
        self.pauses
            .iter()
            .filter(|p| p.source_type == source_type && p.source_id == source_id)
            .collect()
    }
}

/// The household's plan as it stands, and the day and instant projected.
struct Inputs<'p> {
    plan: &'p HouseholdPlan,
    date: Date,
    now: Timestamp,
}

/// The doses projected so far, the limits of their sources, and the span
/// of time the takes of those sources are read over.
struct Projected {
    expected: Vec<Expected>,
    limits: Vec<Limits>,
    sources: SourceIds,
    first_window: Date,
    last_window: Date,
}

impl Projected {
    fn new(date: Date) -> Self {
        Projected {
            expected: Vec::new(),
            limits: Vec::new(),
            sources: SourceIds::default(),
            first_window: date,
            last_window: date,
        }
    }

    /// Adds a source's limits over its window (read in `zone`); the index
    /// its doses refer to.
    fn add_limits(
        &mut self,
        zone: &TimeZone,
        source_type: &'static str,
        source: &SourceCommon,
        window: (Date, Date),
        max_doses: Option<i64>,
        min_hours: Option<Dec>,
    ) -> Result<usize> {
        self.first_window = self.first_window.min(window.0);
        self.last_window = self.last_window.max(window.1);
        self.limits.push(Limits {
            source_type,
            source_id: source.id,
            person_id: source.person_id,
            medication_id: source.medication_id,
            from: crate::domain::Timestamp::from_jiff(start_of(zone, window.0)?),
            until: crate::domain::Timestamp::from_jiff(start_of(
                zone,
                window.1.tomorrow().unwrap_or(window.1),
            )?),
            max_doses,
            min_hours,
        });
        Ok(self.limits.len() - 1)
    }
}

/// `listDoseOccurrences`: the expected doses of `date` (default today in
/// the household's time zone) for one person or everyone the caller may
/// view, ordered by person, then time (untimed doses last), source and
/// position.
pub fn list(
    conn: &Connection,
    actor: &Actor,
    date: Option<Date>,
    person_id: Option<&ResourceId>,
) -> Result<(Vec<DoseOccurrence>, DayMeta)> {
    let plan = crate::db::kept(conn, actor.household_id, || {
        HouseholdPlan::load(conn, actor.household_id)
    })?;
    let tz = &plan.time_zone;
    let now = Timestamp::now();
    let date = match date {
        Some(date) => date,
        None => now.to_zoned_datetime(tz.clone()).date(),
    };
    let meta = DayMeta {
        date,
        time_zone: tz.iana_name().unwrap_or("UTC").to_string(),
    };
    let people = people_for(conn, actor, person_id)?;
    if people.is_empty() {
        return Ok((Vec::new(), meta));
    }
    let listed: HashSet<i64> = people.iter().map(|p| p.id).collect();
    let inputs = Inputs {
        plan: &plan,
        date,
        now,
    };

    let mut projected = Projected::new(date);
    let of_listed = |person_id: i64| listed.contains(&person_id);
    for (schedule, plans) in plan
        .schedules
        .iter()
        .filter(|(s, _)| of_listed(s.common.person_id))
    {
        project_schedule(&inputs, schedule, plans, &mut projected)?;
    }
    for (assignment, plans) in plan
        .assignments
        .iter()
        .filter(|(a, _)| of_listed(a.common.person_id))
    {
        project_assignment(&inputs, assignment, plans, &mut projected)?;
    }
    if projected.expected.is_empty() {
        return Ok((Vec::new(), meta));
    }

    let person_ids: Vec<i64> = people.iter().map(|p| p.id).collect();
    let takes = takes_within(conn, &person_ids, &projected)?;
    let outcomes = store::saved_outcomes(conn, actor.household_id, &people, date)?;
    let source_warnings: Vec<Vec<String>> = projected
        .limits
        .iter()
        .map(|l| l.warnings(&takes))
        .collect();
    let settled = Settled {
        linked: linked_takes(&takes),
        outcomes,
        source_warnings,
        signer: &plan.signer,
    };
    let mut out: Vec<DoseOccurrence> = projected
        .expected
        .into_iter()
        .map(|expected| settled.settle(expected))
        .collect();
    out.sort_by(|a, b| order_key(a).cmp(&order_key(b)));
    Ok((out, meta))
}

/// A schedule's timed doses of the day: those its plan in force at each
/// one's time calls for, less those paused or after its retirement. Its
/// limits are the plan's that governs now (or its first dose still to come).
fn project_schedule(
    inputs: &Inputs<'_>,
    schedule: &ScheduleSource,
    plans: &Timeline<SchedulePlan>,
    projected: &mut Projected,
) -> Result<()> {
    let (date, now) = (inputs.date, inputs.now);
    let source = &schedule.common;
    let household = inputs.plan;
    let slots = household.slots(source.person_id)?;
    let planned = planned_doses(date, plans, &household.zones, slots)?;
    let paused = household.pauses_of(SCHEDULE, source.id);
    let listed: Vec<&PlannedDose> = planned
        .iter()
        .filter(|d| {
            schedule.retired_at.is_none_or(|r| d.scheduled_at < r)
                && !paused_at(&paused, d.scheduled_at)
        })
        .collect();
    let Some(governing) = listed
        .iter()
        .rev()
        .find(|d| d.scheduled_at <= now)
        .or(listed.first())
    else {
        return Ok(());
    };
    projected.sources.schedules.push(source.id);
    let zone = household.zones.at(governing.scheduled_at.min(now)).clone();
    let limit = projected.add_limits(
        &zone,
        SCHEDULE,
        source,
        cycle_window(governing.dose_cycle, date),
        governing.max_daily_doses,
        governing.min_hours_between_doses,
    )?;
    for planned in listed {
        let mut dose = blank(SCHEDULE, source, (date, date), planned.position);
        dose.scheduled_at = Some(crate::domain::Timestamp::from_jiff(planned.scheduled_at));
        dose.dose_amount = planned.dose_amount;
        dose.dose_unit = planned.dose_unit;
        projected.expected.push(Expected { dose, limit });
    }
    Ok(())
}

/// A direct assignment's untimed doses of its dose-cycle window containing
/// the day, unless it was retired before the window or pauses cover all of it.
fn project_assignment(
    inputs: &Inputs<'_>,
    assignment: &AssignmentSource,
    plans: &Timeline<AssignmentPlan>,
    projected: &mut Projected,
) -> Result<()> {
    let (date, now) = (inputs.date, inputs.now);
    let source = &assignment.common;
    let household = inputs.plan;
    let Some((window, plan)) = untimed_window(date, plans, &household.zones, now)? else {
        return Ok(());
    };
    // The window in the zone of the plan that governs it (its end, or now).
    let end_now = start_of(
        household.zones.at(now),
        window.1.tomorrow().unwrap_or(window.1),
    )?;
    let governed_at = (end_now - jiff::SignedDuration::from_micros(1)).min(now);
    let zone = household.zones.at(governed_at).clone();
    let window_from = start_of(&zone, window.0)?;
    let window_until = start_of(&zone, window.1.tomorrow().unwrap_or(window.1))?;
    if assignment.retired_at.is_some_and(|r| r <= window_from)
        || paused_throughout(
            &household.pauses_of(PERSON_MEDICATION, source.id),
            window_from,
            window_until,
        )
    {
        return Ok(());
    }
    projected.sources.person_medications.push(source.id);
    let limit = projected.add_limits(
        &zone,
        PERSON_MEDICATION,
        source,
        window,
        plan.max_daily_doses,
        plan.min_hours_between_doses,
    )?;
    let count = plan.max_daily_doses.unwrap_or(1).clamp(1, MAX_POSITIONS);
    for position in 1..=count {
        let mut dose = blank(PERSON_MEDICATION, source, window, position as u32);
        dose.dose_amount = plan.dose_amount;
        dose.dose_unit = plan.dose_unit;
        projected.expected.push(Expected { dose, limit });
    }
    Ok(())
}

/// The takes of the projected sources over all their windows (each
/// source's window is read in its own zone: the zone may have changed).
fn takes_within(conn: &Connection, people: &[i64], projected: &Projected) -> Result<Vec<Take>> {
    let limits = &projected.limits;
    let from = limits
        .iter()
        .map(|l| l.from.as_str())
        .min()
        .unwrap_or_default();
    let until = limits
        .iter()
        .map(|l| l.until.as_str())
        .max()
        .unwrap_or_default();
    store::takes(
        conn,
        people,
        &projected.sources,
        from,
        until,
        projected.first_window,
        projected.last_window,
    )
}

/// (source type, source id, window start, position) of an occurrence.
type LinkKey<'a> = (&'a str, i64, &'a str, i64);

/// The takes that name an occurrence, the first for each.
fn linked_takes(takes: &[Take]) -> HashMap<LinkKey<'_>, &Take> {
    let mut linked: HashMap<LinkKey<'_>, &Take> = HashMap::new();
    for take in takes {
        if let (Some(window), Some(position)) = (&take.window_starts_on, take.position) {
            linked
                .entry((&take.source_type, take.source_id, window, position))
                .or_insert(take);
        }
    }
    linked
}

/// What a projected dose is settled against: the takes linked to an
/// occurrence, the saved outcomes, each source's warnings and the key
/// signer.
struct Settled<'t> {
    linked: HashMap<LinkKey<'t>, &'t Take>,
    outcomes: HashMap<OccurrenceIdentity, SavedOutcome>,
    source_warnings: Vec<Vec<String>>,
    signer: &'t occurrence_key::KeptKeys,
}

impl Settled<'_> {
    /// The dose with its outcome (`taken` through a linked take, else the
    /// saved one, else `open`), its source's warnings and its signed key.
    fn settle(&self, Expected { mut dose, limit }: Expected) -> DoseOccurrence {
        let window = crate::domain::timestamp::date_text(dose.window_starts_on);
        let position = i64::from(dose.position);
        if let Some(take) = self
            .linked
            .get(&(dose.source_type, dose.source_id, &window, position))
        {
            dose.outcome = Outcome::Taken;
            dose.medication_take_id = Some(take.id);
            dose.medication_take_portable_id = Some(take.portable_id.clone());
        } else if let Some(saved) = self.outcomes.get(&(
            dose.source_type.to_string(),
            dose.source_id,
            window,
            position,
        )) {
            dose.outcome = saved.outcome;
            dose.reason = saved.reason.clone();
            dose.note = saved.note.clone();
            dose.medication_take_id = saved.medication_take_id;
            dose.medication_take_portable_id = saved.medication_take_portable_id.clone();
        }
        dose.warnings = self.source_warnings[limit].clone();
        dose.occurrence_key = self.signer.key(
            (dose.source_type, dose.source_id),
            &dose.source_portable_id,
            dose.window_starts_on,
            dose.position,
        );
        dose
    }
}

/// Person, then time (untimed doses last), schedules before assignments,
/// source and position.
fn order_key(
    dose: &DoseOccurrence,
) -> (i64, bool, &Option<crate::domain::Timestamp>, bool, i64, u32) {
    (
        dose.person_id,
        dose.scheduled_at.is_none(),
        &dose.scheduled_at,
        dose.source_type != SCHEDULE,
        dose.source_id,
        dose.position,
    )
}
