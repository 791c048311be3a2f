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

mod day;
pub mod history;
pub mod model;
pub mod outcomes;
pub mod projection;
pub mod routes;
pub mod store;

use jiff::Timestamp;
use jiff::civil::{Date, Time};
use jiff::tz::TimeZone;

use crate::care::notification_preferences::slots::SlotTimes;
use crate::care::schedule_config::{self, ScheduleConfig, Slot, TaperStep};
use crate::error::{ApiError, Result};
use crate::medicine::vocab::{DoseCycle, ScheduleType};
pub use day::list;
pub use projection::ScheduleHistory;

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

/// Whether a schedule has doses on `date` (`None`: none that day) and, for
/// a tapering one, the taper step in force.
pub fn schedule_day(
    schedule_type: ScheduleType,
    config: &ScheduleConfig,
    start: Date,
    date: Date,
) -> Option<Option<&TaperStep>> {
    if !applies_on(schedule_type, config, start, date) {
        return None;
    }
    Some(match schedule_type {
        ScheduleType::Tapering => config.taper_step_on(date),
        _ => None,
    })
}

/// A taper step's own clock times, when it has any: they replace the
/// schedule's on the step's days.
pub fn own_times(step: Option<&TaperStep>) -> Option<&[Time]> {
    step.map(|s| s.times.as_slice()).filter(|t| !t.is_empty())
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
    let Some(step) = schedule_day(schedule_type, config, start, date) else {
        return (Vec::new(), None);
    };
    let times = own_times(step).map_or_else(
        || clock_times(&config.times, &config.slots, slot_times),
        <[Time]>::to_vec,
    );
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

/// What a `date` that is not strictly `YYYY-MM-DD` is refused with.
pub(crate) const DATE_RULE: &str = "must be a date written YYYY-MM-DD";

/// Parses the `date` of the MCP tool: strictly `YYYY-MM-DD` (422 otherwise).
pub fn parse_date_param(text: Option<&str>) -> Result<Option<Date>> {
    text.map(|t| schedule_config::parse_date(t).ok_or_else(|| ApiError::invalid("date", DATE_RULE)))
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
        let at = |date: &str, time: Time| {
            crate::domain::Timestamp::from_jiff(instant(&tz, d(date), time).unwrap())
        };
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
