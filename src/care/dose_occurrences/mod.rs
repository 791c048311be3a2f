//! Expected doses (`listDoseOccurrences`): the doses each person's routine
//! sources call for on one day in the household's time zone, each with a
//! signed occurrence key and its outcome. A read only projects: nothing is
//! ever written, so listing the same day twice gives the same keys.
//!
//! Projection rules:
//!
//! - History: a plan change never rewrites past doses. Each input of the
//!   projection (a schedule's or assignment's plan, the person's slot
//!   times, the household time zone) is a [`history::Timeline`]; a timed
//!   dose is what the plan, slot times and zone in force at its own
//!   scheduled time give ([`planned_doses`]), so a change moves only doses
//!   after it. Positions count the day's planned doses in time order, so
//!   doses before a change keep their positions, outcomes and takes. An
//!   untimed window follows the plan in force at its end, or now for the
//!   current window ([`untimed_window`]).
//! - Sources: every schedule and assignment of the people, retired and
//!   paused ones too: a schedule has doses on the days its plan is in
//!   effect (start_date ≤ day ≤ end_date, end_date included, or no end);
//!   prn schedules and as-needed assignments have none.
//! - Pauses are periods: a timed dose is left out when its scheduled time
//!   falls inside a pause period (from its start up to its end; a legacy
//!   period with no start counts from when it was recorded), or at or after
//!   the source's retirement; everything before and after stays listed with
//!   its outcome. An untimed window is left out only when pauses cover all
//!   of it, or the source was retired before it began.
//! - Schedules, by type: `daily` and `multiple_daily` every day; `weekly` on
//!   its weekdays; `specific_dates` on its dates; `every_other_day` on days
//!   an even number of days after start_date; `tapering` on days a taper
//!   step covers, with that step's dose_amount (and dose_unit), and its own
//!   times or else the schedule's; `prn` never.
//! - A schedule's clock times are its `times` plus its `slots` read through
//!   the person's notification preference (a cleared slot time gives no
//!   dose); repeats of one clock time count once. Each is that wall-clock
//!   time on the day in the household time zone, converted to UTC with
//!   jiff's "compatible" disambiguation: a time skipped by a daylight-saving
//!   change moves forward by the gap (01:30 on the spring-forward day is
//!   02:30 summer time), a time that happens twice is the earlier one. So a
//!   time always gives exactly one dose. A schedule's window is the day;
//!   positions count its doses from 1 in time order.
//! - Routine person medications have no set times: `max_daily_doses`
//!   (default 1; at most [`MAX_POSITIONS`]) doses per dose-cycle window
//!   (`daily` the day, `weekly` the ISO week Monday to Sunday, `monthly` the calendar month; default
//!   daily), scheduled_at null. They are listed on every day of their
//!   window with the same keys.
//! - Outcome: `taken` when a medication take names the occurrence (source,
//!   window start, position), else the saved `dose_occurrences` outcome,
//!   else `open`.
//! - Warnings (about the source's takes in its dose-cycle window, the day
//!   unless a cycle says otherwise): more takes than `max_daily_doses`
//!   (a taper step's own limits win), and two consecutive takes closer than
//!   `min_hours_between_doses`.
//!
//! Queries: visible people (one), schedules (one), assignments (one),
//! pause periods (one), plan revisions (one), slot times once per person
//! with schedules, takes (one), saved outcomes (one). The signing secret is
//! read once per request.

pub mod history;
pub mod model;
pub mod outcomes;
pub mod projection;
pub mod routes;
pub mod store;

use std::collections::HashMap;

use jiff::Timestamp;
use jiff::civil::{Date, Time};
use jiff::tz::TimeZone;
use rusqlite::Connection;
use rust_decimal::Decimal;

use crate::auth::{Actor, access};
use crate::care::notification_preferences::slots::{self, SlotTimes};
use crate::care::occurrence_key::{self, Occurrence};
use crate::care::schedule_config::{self, ScheduleConfig, Slot, TaperStep};
use crate::decimal::Dec;
use crate::domain::ResourceId;
use crate::error::{ApiError, Result};
use crate::household::{people, store as household_store};
use crate::medicine::vocab::{DoseCycle, ScheduleType};
use history::{Revisions, Timeline};
use model::{DayMeta, DoseOccurrence, MAX_DAILY_DOSES_EXCEEDED, TOO_SOON};
pub use projection::{PlannedDose, ScheduleHistory, planned_doses, untimed_window};
use projection::{paused_at, paused_throughout};
use store::{Pause, PersonRef, SourceCommon, SourceIds, Take};

pub const SCHEDULE: &str = "schedule";
pub const PERSON_MEDICATION: &str = "person_medication";
/// At most this many untimed doses per assignment window are projected
/// (max_daily_doses has no upper bound; a day's list must stay small).
pub const MAX_POSITIONS: i64 = 100;

/// The window of a dose cycle that contains `date`: the day, its ISO week
/// (Monday to Sunday) or its calendar month. No cycle means daily.
pub fn cycle_window(cycle: Option<DoseCycle>, date: Date) -> (Date, Date) {
    match cycle {
        None | Some(DoseCycle::Daily) => (date, date),
        Some(DoseCycle::Weekly) => {
            let back = i64::from(date.weekday().to_monday_zero_offset());
            let monday = date.saturating_sub(jiff::Span::new().days(back));
            (monday, monday.saturating_add(jiff::Span::new().days(6)))
        }
        Some(DoseCycle::Monthly) => (date.first_of_month(), date.last_of_month()),
    }
}

/// Clock times from `times` and `slots` (slot times from the person's
/// preference; a cleared slot gives none), sorted, each once.
pub fn clock_times(times: &[Time], slots: &[Slot], slot_times: &SlotTimes) -> Vec<Time> {
    let mut all: Vec<Time> = times.to_vec();
    all.extend(slots.iter().filter_map(|s| slot_times.slot(s.as_str())));
    all.sort();
    all.dedup();
    all
}

/// Whether a non-tapering schedule has doses on `date` (its date range
/// already checked).
fn applies_on(
    schedule_type: ScheduleType,
    config: &ScheduleConfig,
    start: Date,
    date: Date,
) -> bool {
    use ScheduleType as T;
    match schedule_type {
        T::Daily | T::MultipleDaily => true,
        T::Weekly => config.weekdays.contains(&date.weekday()),
        T::SpecificDates => config.dates.contains(&date),
        T::EveryOtherDay => start
            .until(date)
            .is_ok_and(|span| span.get_days().rem_euclid(2) == 0),
        T::Tapering => config.taper_step_on(date).is_some(),
        T::Prn => false,
    }
}

/// The clock times of a schedule's doses on `date` and the taper step in
/// force (tapering only); empty when it has none that day.
pub fn schedule_times_on<'a>(
    schedule_type: ScheduleType,
    config: &'a ScheduleConfig,
    start: Date,
    date: Date,
    slot_times: &SlotTimes,
) -> (Vec<Time>, Option<&'a TaperStep>) {
    if !applies_on(schedule_type, config, start, date) {
        return (Vec::new(), None);
    }
    let step = match schedule_type {
        ScheduleType::Tapering => config.taper_step_on(date),
        _ => None,
    };
    let times = match step {
        Some(step) if !step.times.is_empty() => step.times.clone(),
        _ => clock_times(&config.times, &config.slots, slot_times),
    };
    (times, step)
}

/// A wall-clock time on `date` in `tz` as an instant: a skipped time moves
/// forward by the gap, a repeated one is the earlier (jiff's "compatible").
pub fn instant(tz: &TimeZone, date: Date, time: Time) -> Result<Timestamp> {
    tz.to_ambiguous_timestamp(date.to_datetime(time))
        .compatible()
        .map_err(|e| ApiError::internal(format!("local time {date} {time}: {e}")))
}

/// The start of `date` in `tz` as an instant.
pub(super) fn start_of(tz: &TimeZone, date: Date) -> Result<Timestamp> {
    tz.to_ambiguous_timestamp(date.to_datetime(Time::midnight()))
        .compatible()
        .map_err(|e| ApiError::internal(format!("start of {date}: {e}")))
}

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
    from: String,
    until: String,
    max_doses: Option<i64>,
    min_hours: Option<Dec>,
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
        outcome: "open".into(),
        reason: None,
        note: None,
        medication_take_id: None,
        medication_take_portable_id: None,
        warnings: Vec::new(),
    }
}

/// Warnings about takes (sorted by time) against a source's limits.
fn warnings(takes: &[&Take], max_doses: Option<i64>, min_hours: Option<Dec>) -> Vec<String> {
    let mut out = Vec::new();
    if max_doses.is_some_and(|max| takes.len() as i64 > max) {
        out.push(MAX_DAILY_DOSES_EXCEEDED.to_string());
    }
    if let Some(min_hours) = min_hours.filter(|h| h.is_positive()) {
        // Overflow: a limit beyond any gap between two instants.
        let min_millis = min_hours.0.checked_mul(Decimal::from(3_600_000));
        let times: Vec<Timestamp> = takes
            .iter()
            .filter_map(|t| t.taken_at.parse::<Timestamp>().ok())
            .collect();
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

/// Everything a projection reads besides the sources themselves: the
/// saved plan history, the household zone over time, and slot times over
/// time per person (read once each).
struct Inputs<'c> {
    conn: &'c Connection,
    revisions: Revisions,
    zones: Timeline<TimeZone>,
    slots: HashMap<i64, Timeline<SlotTimes>>,
}

impl Inputs<'_> {
    fn slots(&mut self, person_id: i64) -> Result<&Timeline<SlotTimes>> {
        if !self.slots.contains_key(&person_id) {
            let current = slots::slot_times(self.conn, person_id)?;
            let timeline = self.revisions.slot_times(person_id, current);
            self.slots.insert(person_id, timeline);
        }
        Ok(&self.slots[&person_id])
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
    let tz = household_store::time_zone(conn, actor.household_id)?;
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
    let schedules = store::schedules(conn, actor.household_id, &people)?;
    let assignments = store::assignments(conn, actor.household_id, &people)?;
    let pauses = store::pauses(conn, actor.household_id, &people)?;
    let pauses_of = |source_type: &str, source_id: i64| -> Vec<&Pause> {
        pauses
            .iter()
            .filter(|p| p.source_type == source_type && p.source_id == source_id)
            .collect()
    };
    let revisions = Revisions::load(conn, actor.household_id)?;
    let zones = revisions.time_zone(actor.household_id, tz.clone());
    let mut inputs = Inputs {
        conn,
        revisions,
        zones,
        slots: HashMap::new(),
    };

    let mut expected: Vec<Expected> = Vec::new();
    let mut limits: Vec<Limits> = Vec::new();
    let mut sources = SourceIds::default();
    let (mut first_window, mut last_window) = (date, date);

    let mut add_limits = |limits: &mut Vec<Limits>,
                          zone: &TimeZone,
                          source_type: &'static str,
                          source: &SourceCommon,
                          window: (Date, Date),
                          max_doses: Option<i64>,
                          min_hours: Option<Dec>|
     -> Result<usize> {
        first_window = first_window.min(window.0);
        last_window = last_window.max(window.1);
        limits.push(Limits {
            source_type,
            source_id: source.id,
            from: crate::time::format(start_of(zone, window.0)?),
            until: crate::time::format(start_of(zone, window.1.tomorrow().unwrap_or(window.1))?),
            max_doses,
            min_hours,
        });
        Ok(limits.len() - 1)
    };

    for schedule in &schedules {
        let source = &schedule.common;
        let plans =
            inputs
                .revisions
                .schedule(source.id, schedule.plan.clone(), schedule.updated_at);
        let slots = inputs.slots(source.person_id)?.clone();
        let planned = planned_doses(date, &plans, &inputs.zones, &slots)?;
        let paused = pauses_of(SCHEDULE, source.id);
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
            continue;
        };
        sources.schedules.push(source.id);
        let zone = inputs.zones.at(governing.scheduled_at.min(now)).clone();
        let limit = add_limits(
            &mut limits,
            &zone,
            SCHEDULE,
            source,
            cycle_window(governing.dose_cycle, date),
            governing.max_daily_doses,
            governing.min_hours_between_doses,
        )?;
        for planned in listed {
            let mut dose = blank(SCHEDULE, source, (date, date), planned.position);
            dose.scheduled_at = Some(crate::time::format(planned.scheduled_at));
            dose.dose_amount = planned.dose_amount;
            dose.dose_unit = planned.dose_unit;
            expected.push(Expected { dose, limit });
        }
    }

    for assignment in &assignments {
        let source = &assignment.common;
        let plans =
            inputs
                .revisions
                .assignment(source.id, assignment.plan.clone(), assignment.updated_at);
        let Some((window, plan)) = untimed_window(date, &plans, &inputs.zones, now)? else {
            continue;
        };
        // The window in the zone of the plan that governs it (its end, or now).
        let end_now = start_of(
            inputs.zones.at(now),
            window.1.tomorrow().unwrap_or(window.1),
        )?;
        let governed_at = (end_now - jiff::SignedDuration::from_micros(1)).min(now);
        let zone = inputs.zones.at(governed_at).clone();
        let window_from = start_of(&zone, window.0)?;
        let window_until = start_of(&zone, window.1.tomorrow().unwrap_or(window.1))?;
        if assignment.retired_at.is_some_and(|r| r <= window_from)
            || paused_throughout(
                &pauses_of(PERSON_MEDICATION, source.id),
                window_from,
                window_until,
            )
        {
            continue;
        }
        sources.person_medications.push(source.id);
        let limit = add_limits(
            &mut limits,
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
            expected.push(Expected { dose, limit });
        }
    }

    if expected.is_empty() {
        return Ok((Vec::new(), meta));
    }

    // Each source's window is read in its own zone (the zone may have changed).
    let from = limits
        .iter()
        .map(|l| l.from.clone())
        .min()
        .unwrap_or_default();
    let until = limits
        .iter()
        .map(|l| l.until.clone())
        .max()
        .unwrap_or_default();
    let takes = store::takes(conn, &sources, &from, &until, first_window, last_window)?;
    let outcomes = store::saved_outcomes(conn, actor.household_id, &people, date)?;

    let mut linked: HashMap<(&str, i64, &str, i64), &Take> = HashMap::new();
    for take in &takes {
        if let (Some(window), Some(position)) = (&take.window_starts_on, take.position) {
            linked
                .entry((&take.source_type, take.source_id, window, position))
                .or_insert(take);
        }
    }
    let source_warnings: Vec<Vec<String>> = limits
        .iter()
        .map(|l| {
            let within: Vec<&Take> = takes
                .iter()
                .filter(|t| {
                    t.source_type == l.source_type
                        && t.source_id == l.source_id
                        && t.taken_at >= l.from
                        && t.taken_at < l.until
                })
                .collect();
            warnings(&within, l.max_doses, l.min_hours)
        })
        .collect();

    let secret = occurrence_key::secret(conn)?;
    let mut out: Vec<DoseOccurrence> = expected
        .into_iter()
        .map(|Expected { mut dose, limit }| {
            let window = dose.window_starts_on.to_string();
            let position = i64::from(dose.position);
            if let Some(take) = linked.get(&(dose.source_type, dose.source_id, &window, position)) {
                dose.outcome = "taken".into();
                dose.medication_take_id = Some(take.id);
                dose.medication_take_portable_id = Some(take.portable_id.clone());
            } else if let Some(saved) = outcomes.get(&(
                dose.source_type.to_string(),
                dose.source_id,
                window,
                position,
            )) {
                dose.outcome = saved.outcome.clone();
                dose.reason = saved.reason.clone();
                dose.note = saved.note.clone();
                dose.medication_take_id = saved.medication_take_id;
                dose.medication_take_portable_id = saved.medication_take_portable_id.clone();
            }
            dose.warnings = source_warnings[limit].clone();
            dose.occurrence_key = occurrence_key::sign_with(
                &secret,
                &Occurrence {
                    source_type: dose.source_type.to_string(),
                    source_portable_id: dose.source_portable_id.clone(),
                    window_starts_on: dose.window_starts_on,
                    position: dose.position,
                },
            );
            dose
        })
        .collect();
    out.sort_by(|a, b| {
        (
            a.person_id,
            a.scheduled_at.is_none(),
            &a.scheduled_at,
            a.source_type != SCHEDULE,
            a.source_id,
            a.position,
        )
            .cmp(&(
                b.person_id,
                b.scheduled_at.is_none(),
                &b.scheduled_at,
                b.source_type != SCHEDULE,
                b.source_id,
                b.position,
            ))
    });
    Ok((out, meta))
}

/// Parses the `date` query parameter: strictly `YYYY-MM-DD` (422 otherwise).
pub fn parse_date_param(text: Option<&str>) -> Result<Option<Date>> {
    text.map(|t| {
        schedule_config::parse_date(t)
            .ok_or_else(|| ApiError::invalid("date", "must be a date written YYYY-MM-DD"))
    })
    .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(text: &str) -> Date {
        text.parse().unwrap()
    }

    fn t(h: i8, m: i8) -> Time {
        Time::new(h, m, 0, 0).unwrap()
    }

    #[test]
    fn cycle_windows() {
        assert_eq!(
            cycle_window(None, d("2027-03-10")),
            (d("2027-03-10"), d("2027-03-10"))
        );
        // 2027-03-10 is a Wednesday.
        assert_eq!(
            cycle_window(Some(DoseCycle::Weekly), d("2027-03-10")),
            (d("2027-03-08"), d("2027-03-14"))
        );
        assert_eq!(
            cycle_window(Some(DoseCycle::Weekly), d("2027-03-14")),
            (d("2027-03-08"), d("2027-03-14"))
        );
        assert_eq!(
            cycle_window(Some(DoseCycle::Monthly), d("2027-02-14")),
            (d("2027-02-01"), d("2027-02-28"))
        );
    }

    #[test]
    fn daylight_saving_changes_give_one_instant_per_time() {
        let tz = TimeZone::get("Europe/London").unwrap();
        let at = |date: &str, time: Time| crate::time::format(instant(&tz, d(date), time).unwrap());
        assert_eq!(at("2027-03-27", t(8, 0)), "2027-03-27T08:00:00.000000Z");
        assert_eq!(at("2027-03-28", t(8, 0)), "2027-03-28T07:00:00.000000Z");
        // Skipped: 01:30 GMT does not exist; it moves forward to 02:30 BST.
        assert_eq!(at("2027-03-28", t(1, 30)), "2027-03-28T01:30:00.000000Z");
        // Repeated: the earlier (BST) one.
        assert_eq!(at("2027-10-31", t(1, 30)), "2027-10-31T00:30:00.000000Z");
    }

    #[test]
    fn slots_resolve_through_preferences() {
        let slots = SlotTimes {
            morning: Some(t(7, 0)),
            afternoon: None,
            evening: Some(t(8, 0)),
            night: None,
        };
        assert_eq!(
            clock_times(
                &[t(8, 0), t(6, 0)],
                &[Slot::Morning, Slot::Afternoon, Slot::Evening],
                &slots
            ),
            vec![t(6, 0), t(7, 0), t(8, 0)]
        );
    }
}
