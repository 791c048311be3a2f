//! The shapes a schedule_config is made of: the named days and parts of
//! the day, and a tapering step.

use jiff::civil::{Date, Time, Weekday};

use crate::decimal::Dec;
use crate::domain::vocabulary;
use crate::medicine::vocab::DoseUnit;

/// The keys of one tapering step, in the order they are written.
pub(super) const STEP_KEYS: [&str; 7] = [
    "start_date",
    "end_date",
    "dose_amount",
    "dose_unit",
    "max_daily_doses",
    "min_hours_between_doses",
    "times",
];

vocabulary!(
    /// A day of a weekly schedule. Declared from Monday, jiff's own order.
    WeekdayName {
        Monday => "monday",
        Tuesday => "tuesday",
        Wednesday => "wednesday",
        Thursday => "thursday",
        Friday => "friday",
        Saturday => "saturday",
        Sunday => "sunday",
    }
);

impl WeekdayName {
    pub fn day(self) -> Weekday {
        Weekday::from_monday_zero_offset(self as i8).expect("seven names, Monday first")
    }

    pub fn of(day: Weekday) -> WeekdayName {
        let name = WeekdayName::ALL[day.to_monday_zero_offset() as usize];
        WeekdayName::parse(name).expect("seven names, Monday first")
    }
}

vocabulary!(
    /// A named part of the day; its clock time is the person's preference.
    /// Declared in the order of the day, which is also its sort order.
    Slot {
        Morning => "morning",
        Afternoon => "afternoon",
        Evening => "evening",
        Night => "night",
    }
);

impl PartialOrd for Slot {
    fn partial_cmp(&self, other: &Slot) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Slot {
    fn cmp(&self, other: &Slot) -> std::cmp::Ordering {
        (*self as u8).cmp(&(*other as u8))
    }
}

/// One step of a tapering schedule: from `start_date` to `end_date`
/// (inclusive) this dose replaces the schedule's.
#[derive(Debug, Clone, PartialEq)]
pub struct TaperStep {
    pub start_date: Date,
    pub end_date: Date,
    pub dose_amount: Dec,
    /// `None`: the schedule's dose_unit.
    pub dose_unit: Option<DoseUnit>,
    pub max_daily_doses: Option<i64>,
    pub min_hours_between_doses: Option<Dec>,
    /// Sorted, unique; empty: the schedule's times and slots.
    pub times: Vec<Time>,
}
