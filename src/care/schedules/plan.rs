//! The rules a schedule's plan must keep as a whole, beyond what
//! `schedule_config` checks key by key (see `check_plan`).

use jiff::civil::Date;

use crate::care::notification_preferences::slots::SlotTimes;
use crate::care::schedule_config::{FIELD, ScheduleConfig};
use crate::error::Problems;
use crate::medicine::vocab::{DoseCycle, DoseUnit, ScheduleType};

/// What a plan check needs besides the config: the schedule's own dates,
/// dose and limit, and the clock times its slots resolve to now.
pub struct PlanContext<'a> {
    pub schedule_type: ScheduleType,
    pub start_date: Date,
    pub end_date: Option<Date>,
    pub dose_unit: DoseUnit,
    pub dose_cycle: Option<DoseCycle>,
    pub max_daily_doses: Option<i64>,
    pub slot_times: &'a SlotTimes,
}

/// The rules that need more than the config alone (checked once the
/// config and the schedule's other attributes are valid): every slot must
/// resolve to a time (a dose without a time would silently vanish), dates
/// and taper steps lie within start_date..end_date (end_date inclusive),
/// a step's unit is the schedule's, a prn schedule has no `times`, and
/// max_daily_doses is not below what the plan itself gives in every cycle.
pub fn check_plan(config: &ScheduleConfig, plan: &PlanContext<'_>, problems: &mut Problems) {
    use ScheduleType as T;
    let field = |key: &str| format!("{FIELD}.{key}");
    if plan.schedule_type == T::Prn {
        if !config.times.is_empty() {
            problems.add(
                &field("times"),
                "is not allowed on prn schedules: an as-needed schedule has no set times",
            );
        }
        return;
    }
    for slot in &config.slots {
        if plan.slot_times.slot(slot.as_str()).is_none() {
            let name = slot.as_str();
            problems.add(
                &field("slots"),
                format!(
                    "the {name} slot has no time in the person's notification preferences \
                     (set {name}_time first)"
                ),
            );
        }
    }
    let within =
        |date: Date| plan.start_date <= date && plan.end_date.is_none_or(|end| date <= end);
    if !config.dates.iter().all(|d| within(*d)) {
        problems.add(
            &field("dates"),
            "must all fall within start_date..end_date (end_date included)",
        );
    }
    let daily_times =
        crate::care::dose_occurrences::clock_times(&config.times, &config.slots, plan.slot_times)
            .len() as i64;
    let daily_cycle = matches!(plan.dose_cycle, None | Some(DoseCycle::Daily));
    for (i, step) in config.taper_steps.iter().enumerate() {
        let at = |key: &str| format!("{FIELD}.taper_steps[{i}].{key}");
        if !within(step.start_date) || !within(step.end_date) {
            problems.add(
                &at("start_date"),
                "the step must fall within start_date..end_date (end_date included)",
            );
        }
        if step.dose_unit.is_some_and(|unit| unit != plan.dose_unit) {
            problems.add(&at("dose_unit"), "must be the schedule's dose_unit");
        }
        let per_day = if step.times.is_empty() {
            daily_times
        } else {
            step.times.len() as i64
        };
        match (step.max_daily_doses, daily_cycle) {
            (Some(max), true) if max < per_day => problems.add(
                &at("max_daily_doses"),
                "is below the doses the step itself plans each day",
            ),
            (None, true) if plan.max_daily_doses.is_some_and(|max| max < per_day) => problems.add(
                "max_daily_doses",
                "is below the doses a taper step plans each day",
            ),
            _ => {}
        }
    }
    if let (Some(max), Some(planned)) = (
        plan.max_daily_doses,
        planned_per_cycle(plan.schedule_type, config, daily_times, plan.dose_cycle),
    ) && max < planned
    {
        problems.add(
            "max_daily_doses",
            "is below the doses the schedule itself plans in every dose cycle",
        );
    }
}

/// The fewest doses a repeating plan gives in any one full dose-cycle
/// window (a month counts as 28 days); `None` for plans that do not repeat
/// (specific dates, tapering: their steps are checked one by one).
fn planned_per_cycle(
    schedule_type: ScheduleType,
    config: &ScheduleConfig,
    daily_times: i64,
    cycle: Option<DoseCycle>,
) -> Option<i64> {
    use ScheduleType as T;
    let days = match (schedule_type, cycle) {
        (T::Daily | T::MultipleDaily, None | Some(DoseCycle::Daily)) => 1,
        (T::Daily | T::MultipleDaily, Some(DoseCycle::Weekly)) => 7,
        (T::Daily | T::MultipleDaily, Some(DoseCycle::Monthly)) => 28,
        (T::EveryOtherDay, None | Some(DoseCycle::Daily)) => 1,
        (T::EveryOtherDay, Some(DoseCycle::Weekly)) => 3,
        (T::EveryOtherDay, Some(DoseCycle::Monthly)) => 14,
        (T::Weekly, None | Some(DoseCycle::Daily)) => 1,
        (T::Weekly, Some(DoseCycle::Weekly)) => config.weekdays.len() as i64,
        (T::Weekly, Some(DoseCycle::Monthly)) => 4 * config.weekdays.len() as i64,
        _ => return None,
    };
    Some(days * daily_times)
}
