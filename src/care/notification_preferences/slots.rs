//! The times of a person's four day slots, which schedule `slots` resolve
//! to: read by the dose projection, plan history and forecasts, written
//! only through the notification preference rules.

use jiff::civil::Time;
use rusqlite::Connection;

use super::store::{self, PreferenceRow};
use crate::error::Result;

/// The times of a person's four day slots; `None` when the person cleared
/// the slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotTimes {
    pub morning: Option<Time>,
    pub afternoon: Option<Time>,
    pub evening: Option<Time>,
    pub night: Option<Time>,
}

impl SlotTimes {
    /// The slot times of a person who never saved preferences.
    pub const DEFAULT: SlotTimes = SlotTimes {
        morning: Some(Time::constant(8, 0, 0, 0)),
        afternoon: Some(Time::constant(13, 0, 0, 0)),
        evening: Some(Time::constant(18, 0, 0, 0)),
        night: Some(Time::constant(22, 0, 0, 0)),
    };

    /// The time of a slot by its `schedule_config` name (`morning`,
    /// `afternoon`, `evening`, `night`); `None` for a cleared or unknown slot.
    pub fn slot(&self, name: &str) -> Option<Time> {
        match name {
            "morning" => self.morning,
            "afternoon" => self.afternoon,
            "evening" => self.evening,
            "night" => self.night,
            _ => None,
        }
    }
}

/// The person's four slot times: their saved ones, or the defaults when
/// they never saved preferences. For schedules with `slots`.
pub fn slot_times(conn: &Connection, person_id: i64) -> Result<SlotTimes> {
    Ok(match store::find_by_person(conn, person_id)? {
        None => SlotTimes::DEFAULT,
        Some(row) => slot_times_of(&row),
    })
}

pub(super) fn slot_times_of(row: &PreferenceRow) -> SlotTimes {
    let time = |t: &Option<String>| t.as_deref().and_then(parse_time);
    SlotTimes {
        morning: time(&row.morning_time),
        afternoon: time(&row.afternoon_time),
        evening: time(&row.evening_time),
        night: time(&row.night_time),
    }
}

/// A time of day written `HH:MM` or `HH:MM:SS` (two digits each, 00:00 to
/// 23:59:59).
pub fn parse_time(text: &str) -> Option<Time> {
    let parts: Vec<&str> = text.split(':').collect();
    if !(2..=3).contains(&parts.len()) {
        return None;
    }
    let mut numbers = [0i8; 3];
    for (number, part) in numbers.iter_mut().zip(&parts) {
        if part.len() != 2 || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *number = part.parse().ok()?;
    }
    Time::new(numbers[0], numbers[1], numbers[2], 0).ok()
}

/// The stored and answered form of a time: `HH:MM:SS`.
pub fn format_time(time: Time) -> String {
    format!(
        "{:02}:{:02}:{:02}",
        time.hour(),
        time.minute(),
        time.second()
    )
}
