//! The plan over time: which doses a schedule's plan, the person's slot
//! times and the household zone give on a day, each from the state in
//! force at the dose's own time, and which of them pauses leave out.

use jiff::Timestamp;
use jiff::civil::Date;
use jiff::tz::TimeZone;
use rusqlite::Connection;

use super::history::{Revisions, Timeline};
use super::store::{self, Pause, ScheduleSource};
use super::{SCHEDULE, cycle_window, instant, schedule_times_on, start_of};
use crate::care::notification_preferences::slots::{self, SlotTimes};
use crate::care::person_medications::model::AdministrationKind;
use crate::care::plan::{AssignmentPlan, SchedulePlan};
use crate::care::schedule_config::TaperStep;
use crate::decimal::Dec;
use crate::error::Result;
use crate::household::store as household_store;
use crate::medicine::vocab::{DoseCycle, DoseUnit, ScheduleType};

/// One expected dose of a schedule on a day, as the plan in force at its
/// own scheduled time gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedDose {
    /// 1-based, in time order within the day.
    pub position: u32,
    pub scheduled_at: Timestamp,
    pub dose_amount: Dec,
    pub dose_unit: DoseUnit,
    pub dose_cycle: Option<DoseCycle>,
    /// The taper step's own limits, else the schedule's.
    pub max_daily_doses: Option<i64>,
    pub min_hours_between_doses: Option<Dec>,
}

/// The expected doses of a schedule on `date`, before pauses and
/// retirement are applied. Time is split wherever the schedule's plan, the
/// person's slot times or the household zone changes; each part gives the
/// doses of `date` that its own state schedules inside it. So a change
/// only moves doses after it, and the doses before it keep their times and
/// positions (positions count every planned dose of the day in time order).
pub fn planned_doses(
    date: Date,
    plans: &Timeline<SchedulePlan>,
    zones: &Timeline<TimeZone>,
    slots: &Timeline<SlotTimes>,
) -> Result<Vec<PlannedDose>> {
    let mut changes: Vec<Timestamp> = plans
        .changes()
        .chain(zones.changes())
        .chain(slots.changes())
        .collect();
    changes.sort();
    changes.dedup();
    // In every zone the day lies within a day of its UTC midnight.
    let midnight = start_of(&TimeZone::UTC, date)?;
    let day = jiff::SignedDuration::from_hours(24);
    let (near_from, near_until) = (midnight - day, midnight + day * 2);
    let mut doses: Vec<PlannedDose> = Vec::new();
    for part in 0..=changes.len() {
        let from = part.checked_sub(1).map(|i| changes[i]);
        let until = changes.get(part).copied();
        if until.is_some_and(|u| u <= near_from) || from.is_some_and(|f| f >= near_until) {
            continue;
        }
        let (plan, tz, slot_times) = match from {
            None => (plans.first(), zones.first(), slots.first()),
            Some(at) => (plans.at(at), zones.at(at), slots.at(at)),
        };
        if plan.schedule_type == ScheduleType::Prn
            || date < plan.start_date
            || plan.end_date.is_some_and(|end| date > end)
        {
            continue;
        }
        let Some(config) = plan.config() else {
            continue;
        };
        let (times, step) = schedule_times_on(
            plan.schedule_type,
            config,
            plan.start_date,
            date,
            slot_times,
        );
        for time in times {
            let at = instant(tz, date, time)?;
            if from.is_some_and(|f| at < f) || until.is_some_and(|u| at >= u) {
                continue;
            }
            doses.push(PlannedDose {
                position: 0,
                scheduled_at: at,
                dose_amount: step.map_or(plan.dose_amount, |s| s.dose_amount),
                dose_unit: step.and_then(|s| s.dose_unit).unwrap_or(plan.dose_unit),
                dose_cycle: plan.dose_cycle,
                max_daily_doses: step
                    .and_then(|s| s.max_daily_doses)
                    .or(plan.max_daily_doses),
                min_hours_between_doses: step
                    .and_then(|s| s.min_hours_between_doses)
                    .or(plan.min_hours_between_doses),
            });
        }
    }
    doses.sort_by_key(|d| d.scheduled_at);
    for (index, dose) in doses.iter_mut().enumerate() {
        dose.position = index as u32 + 1;
    }
    Ok(doses)
}

/// The window of an untimed (routine assignment) dose cycle containing
/// `date` and the plan that governs it: the one in force at the end of
/// the window, or now for the current window. `None` when that plan has no
/// expected doses (as needed).
pub fn untimed_window(
    date: Date,
    plans: &Timeline<AssignmentPlan>,
    zones: &Timeline<TimeZone>,
    now: Timestamp,
) -> Result<Option<((Date, Date), AssignmentPlan)>> {
    let just_before = |at: Timestamp| at - jiff::SignedDuration::from_micros(1);
    let day_end = start_of(zones.at(now), date.tomorrow().unwrap_or(date))?;
    let guess = plans.at(just_before(day_end).min(now));
    let window = cycle_window(guess.dose_cycle, date);
    let window_end = start_of(zones.at(now), window.1.tomorrow().unwrap_or(window.1))?;
    let plan = plans.at(just_before(window_end).min(now));
    if plan.administration_kind != AdministrationKind::Routine {
        return Ok(None);
    }
    Ok(Some((window, plan.clone())))
}

/// One schedule's plan over time with everything its doses depend on, for
/// rules outside the listing (a take linked to an occurrence, or recorded
/// at a time, follows the dose the plan gave then).
pub struct ScheduleHistory {
    pub source: ScheduleSource,
    plans: Timeline<SchedulePlan>,
    zones: Timeline<TimeZone>,
    slots: Timeline<SlotTimes>,
    pauses: Vec<Pause>,
}

impl ScheduleHistory {
    /// The schedule `schedule_id` of the household (retired ones too).
    pub fn load(
        conn: &Connection,
        household_id: i64,
        schedule_id: i64,
    ) -> Result<Option<ScheduleHistory>> {
        let Some(source) = store::schedule(conn, household_id, schedule_id)? else {
            return Ok(None);
        };
        let revisions =
            Revisions::load_for_schedule(conn, household_id, schedule_id, source.common.person_id)?;
        let pauses = store::pauses_of_source(conn, household_id, SCHEDULE, schedule_id)?;
        let zone = household_store::time_zone(conn, household_id)?;
        let slot_times = slots::slot_times(conn, source.common.person_id)?;
        Ok(Some(ScheduleHistory {
            plans: revisions.schedule(schedule_id, source.plan.clone(), source.updated_at),
            zones: revisions.time_zone(household_id, zone),
            slots: revisions.slot_times(source.common.person_id, slot_times),
            pauses,
            source,
        }))
    }

    /// The schedule's expected doses on `date` exactly as
    /// `listDoseOccurrences` lists them (positions from the plan; doses in
    /// a pause or after deletion left out), each with the dose and limits
    /// (a taper step's) in force for it.
    pub fn doses_on(&self, date: Date) -> Result<Vec<PlannedDose>> {
        let pauses: Vec<&Pause> = self.pauses.iter().collect();
        Ok(planned_doses(date, &self.plans, &self.zones, &self.slots)?
            .into_iter()
            .filter(|d| {
                self.source.retired_at.is_none_or(|r| d.scheduled_at < r)
                    && !paused_at(&pauses, d.scheduled_at)
            })
            .collect())
    }

    /// The plan in force at `at`.
    pub fn plan_at(&self, at: Timestamp) -> &SchedulePlan {
        self.plans.at(at)
    }

    /// The taper step in force at `at` (the step covering that day in the
    /// zone then in force), for a tapering plan.
    pub fn taper_step_at(&self, at: Timestamp) -> Option<TaperStep> {
        let plan = self.plans.at(at);
        if plan.schedule_type != ScheduleType::Tapering {
            return None;
        }
        let date = at.to_zoned_datetime(self.zones.at(at).clone()).date();
        plan.config()?.taper_step_on(date).cloned()
    }
}

/// Whether `at` falls inside a pause of the source (from its start up to
/// its end).
pub(super) fn paused_at(pauses: &[&Pause], at: Timestamp) -> bool {
    pauses
        .iter()
        .any(|p| p.from <= at && p.until.is_none_or(|until| at < until))
}

/// Whether pauses cover all of `[from, until)`.
pub(super) fn paused_throughout(pauses: &[&Pause], from: Timestamp, until: Timestamp) -> bool {
    let mut periods: Vec<(Timestamp, Option<Timestamp>)> =
        pauses.iter().map(|p| (p.from, p.until)).collect();
    periods.sort_by_key(|p| p.0);
    let mut covered_to = from;
    for (start, end) in periods {
        if start > covered_to {
            break;
        }
        match end {
            None => return true,
            Some(end) => covered_to = covered_to.max(end),
        }
        if covered_to >= until {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pause(from: &str, until: Option<&str>) -> Pause {
        Pause {
            source_type: SCHEDULE.into(),
            source_id: 1,
            from: from.parse().unwrap(),
            until: until.map(|u| u.parse().unwrap()),
        }
    }

    #[test]
    fn pauses_cover_instants_and_whole_windows() {
        let a = pause("2027-03-10T07:00:00Z", Some("2027-03-10T09:00:00Z"));
        let b = pause("2027-03-10T09:00:00Z", Some("2027-03-11T00:00:00Z"));
        let open = pause("2027-03-12T10:00:00Z", None);
        let ts = |text: &str| text.parse::<Timestamp>().unwrap();
        let all = [&a, &b, &open];
        assert!(paused_at(&all, ts("2027-03-10T07:00:00Z")));
        assert!(
            !paused_at(&[&a], ts("2027-03-10T09:00:00Z")),
            "the end is open"
        );
        assert!(!paused_at(&all, ts("2027-03-12T09:59:59Z")));
        assert!(paused_at(&all, ts("2030-01-01T00:00:00Z")));
        // Adjacent periods together cover a window; a gap does not.
        assert!(paused_throughout(
            &all,
            ts("2027-03-10T07:00:00Z"),
            ts("2027-03-11T00:00:00Z")
        ));
        assert!(!paused_throughout(
            &[&b],
            ts("2027-03-10T00:00:00Z"),
            ts("2027-03-11T00:00:00Z")
        ));
        assert!(!paused_throughout(
            &all,
            ts("2027-03-12T00:00:00Z"),
            ts("2027-03-13T00:00:00Z")
        ));
        assert!(paused_throughout(
            &all,
            ts("2027-03-13T00:00:00Z"),
            ts("2027-03-14T00:00:00Z")
        ));
    }
}
