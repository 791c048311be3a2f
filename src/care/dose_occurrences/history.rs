//! Plan history: what the expected-dose projection depends on, as it was
//! from each change on, so that a change never rewrites past doses.
//!
//! Four things move a projected dose: a schedule's plan (type, config,
//! dates, dose, cycle, limits), a direct assignment's plan (kind, dose,
//! cycle, limits), a person's slot times (notification preferences) and the
//! household's time zone. Each change of one of them appends a revision
//! (`plan_revisions`) effective from the moment of the change. A subject
//! with no revision has had its current state all along; on its first
//! change the state it had until then is saved first, with no start
//! (NULL: "since always"), so the earliest revision governs all time before
//! the first change, including days before the row was created (a carer
//! entering a regime that started earlier).
//!
//! The projection reads these as [`Timeline`]s and splits time where any
//! of a source's inputs changes (see `super::list`).

use crate::db::PrepareKept;
use crate::db::WriteTx;
use std::collections::HashMap;

use jiff::Timestamp;
use jiff::tz::TimeZone;
use rusqlite::{Connection, params};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::care::notification_preferences::slots::{self, SlotTimes};
use crate::care::plan::{AssignmentPlan, PERSON_MEDICATION, Planned, SCHEDULE, SchedulePlan};
use crate::error::Result;

pub const SLOT_TIMES: &str = "slot_times";
pub const TIME_ZONE: &str = "time_zone";

/// Slot times as kept in a revision: `HH:MM:SS` or null per slot.
pub fn slot_times_state(times: &SlotTimes) -> Value {
    let time = |t: Option<jiff::civil::Time>| t.map(slots::format_time);
    serde_json::json!({
        "morning": time(times.morning),
        "afternoon": time(times.afternoon),
        "evening": time(times.evening),
        "night": time(times.night),
    })
}

fn slot_times_from(state: &Value) -> Option<SlotTimes> {
    let time = |key: &str| -> Option<Option<jiff::civil::Time>> {
        match &state[key] {
            Value::Null => Some(None),
            Value::String(text) => slots::parse_time(text).map(Some),
            _ => None,
        }
    };
    Some(SlotTimes {
        morning: time("morning")?,
        afternoon: time("afternoon")?,
        evening: time("evening")?,
        night: time("night")?,
    })
}

pub fn time_zone_state(name: &str) -> Value {
    serde_json::json!({ "time_zone": name })
}

/// Records a change of `subject` at `at` (the change's own time): nothing
/// when the projection-relevant state did not change; otherwise the state
/// before (when the subject has no history yet, with no start) and after.
pub fn record(
    conn: &WriteTx,
    household_id: i64,
    subject: &str,
    subject_id: i64,
    before: &Value,
    after: &Value,
    at: &str,
) -> Result<()> {
    if before == after {
        return Ok(());
    }
    let known: bool = conn
        .prepare_kept(
            "SELECT EXISTS (SELECT 1 FROM plan_revisions WHERE subject_type = ?1 AND subject_id = ?2)",
        )?
        .query_row(params![subject, subject_id], |r| r.get(0))?;
    let mut insert = conn.prepare_kept(
        "INSERT INTO plan_revisions (household_id, subject_type, subject_id, effective_at, state)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    if !known {
        insert.execute(params![
            household_id,
            subject,
            subject_id,
            None::<String>,
            before.to_string()
        ])?;
    }
    insert.execute(params![
        household_id,
        subject,
        subject_id,
        at,
        after.to_string()
    ])?;
    Ok(())
}

/// A source row's change (sources::save): its plan before and after.
pub fn record_source<R: Planned>(
    conn: &WriteTx,
    household_id: i64,
    subject_id: i64,
    before: &R,
    after: &R,
    at: &str,
) -> Result<()> {
    record(
        conn,
        household_id,
        R::SUBJECT,
        subject_id,
        &before.plan(),
        &after.plan(),
        at,
    )
}

/// The states of one input over time: each from its start (`None`: since
/// always) until the next one's.
#[derive(Debug, Clone)]
pub struct Timeline<T> {
    entries: Vec<(Option<Timestamp>, T)>,
}

impl<T: Clone> Timeline<T> {
    /// Only the current state, all along.
    pub fn constant(state: T) -> Timeline<T> {
        Timeline {
            entries: vec![(None, state)],
        }
    }

    /// The state in force at `at`.
    pub fn at(&self, at: Timestamp) -> &T {
        self.entries
            .iter()
            .rev()
            .find(|(from, _)| from.is_none_or(|from| from <= at))
            .or(self.entries.first())
            .map(|(_, state)| state)
            .expect("a timeline has at least one state")
    }

    /// The state at the very start (before any change).
    pub fn first(&self) -> &T {
        &self.entries[0].1
    }

    /// The moments at which the state changes.
    pub fn changes(&self) -> impl Iterator<Item = Timestamp> + '_ {
        self.entries.iter().filter_map(|(from, _)| *from)
    }
}

/// A subject's saved states, each from its start (`None`: since always).
type States = Vec<(Option<Timestamp>, Value)>;

/// The saved revisions of a household's subjects, by (subject type, id),
/// in order.
#[derive(Debug, Default)]
pub struct Revisions {
    by_subject: HashMap<(String, i64), States>,
}

impl Revisions {
    /// Every revision of the household's subjects (one query).
    pub fn load(conn: &Connection, household_id: i64) -> Result<Revisions> {
        let mut statement = conn.prepare_kept(
            "SELECT subject_type, subject_id, effective_at, state FROM plan_revisions
             WHERE household_id = ?1
             ORDER BY subject_type, subject_id, effective_at IS NOT NULL, effective_at, id",
        )?;
        Self::read(statement.query(params![household_id])?)
    }

    /// The revisions of what one schedule's doses depend on: its plan, its
    /// person's slot times and the household's time zone (one query, by
    /// subject, however long the household's history).
    pub fn load_for_schedule(
        conn: &Connection,
        household_id: i64,
        schedule_id: i64,
        person_id: i64,
    ) -> Result<Revisions> {
        let mut statement = conn.prepare_kept(
            "SELECT subject_type, subject_id, effective_at, state FROM plan_revisions
             WHERE household_id = ?1
               AND ((subject_type = ?2 AND subject_id = ?3)
                 OR (subject_type = ?4 AND subject_id = ?5)
                 OR (subject_type = ?6 AND subject_id = ?1))
             ORDER BY subject_type, subject_id, effective_at IS NOT NULL, effective_at, id",
        )?;
        Self::read(statement.query(params![
            household_id,
            SCHEDULE,
            schedule_id,
            SLOT_TIMES,
            person_id,
            TIME_ZONE
        ])?)
    }

    /// Whether the schedule's plan was ever revised. One that never was has
    /// its current plan all along: a take's planned dose needs no history.
    pub fn schedule_was_revised(
        conn: &Connection,
        household_id: i64,
        schedule_id: i64,
    ) -> Result<bool> {
        Ok(conn
            .prepare_kept(
                "SELECT EXISTS (SELECT 1 FROM plan_revisions
                 WHERE subject_type = ?1 AND subject_id = ?2 AND household_id = ?3)",
            )?
            .query_row(params![SCHEDULE, schedule_id, household_id], |r| r.get(0))?)
    }

    /// Revisions from rows of (subject type, subject id, effective_at,
    /// state), in order.
    fn read(mut rows: rusqlite::Rows<'_>) -> Result<Revisions> {
        let mut by_subject: HashMap<(String, i64), States> = HashMap::new();
        while let Some(r) = rows.next()? {
            let row = (
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, String>(3)?,
            );
            let (subject, id, from, state) = row;
            let from = from.and_then(|t| t.parse::<Timestamp>().ok());
            let Ok(state) = serde_json::from_str::<Value>(&state) else {
                continue;
            };
            by_subject
                .entry((subject, id))
                .or_default()
                .push((from, state));
        }
        Ok(Revisions { by_subject })
    }

    /// The timeline of one subject: its revisions read with `read`, or
    /// `current` all along when it has none (or none can be read). A
    /// current state that differs from the last revision (a write that
    /// kept no history) holds from `current_since` (else from now).
    fn timeline<T: Clone + PartialEq>(
        &self,
        subject: &str,
        id: i64,
        current: T,
        current_since: Option<Timestamp>,
        read: impl Fn(&Value) -> Option<T>,
    ) -> Timeline<T> {
        let mut entries: Vec<(Option<Timestamp>, T)> = self
            .by_subject
            .get(&(subject.to_string(), id))
            .map(|revisions| {
                revisions
                    .iter()
                    .filter_map(|(from, state)| Some((*from, read(state)?)))
                    .collect()
            })
            .unwrap_or_default();
        match entries.last() {
            None => return Timeline::constant(current),
            Some((_, last)) if *last != current => {
                entries.push((Some(current_since.unwrap_or_else(Timestamp::now)), current))
            }
            Some(_) => {}
        }
        // The earliest state governs all time before the first change.
        entries[0].0 = None;
        entries.sort_by_key(|(from, _)| *from);
        Timeline { entries }
    }

    fn typed<T: DeserializeOwned>(state: &Value) -> Option<T> {
        serde_json::from_value(state.clone()).ok()
    }

    pub fn schedule(
        &self,
        id: i64,
        current: SchedulePlan,
        since: Option<Timestamp>,
    ) -> Timeline<SchedulePlan> {
        self.timeline(SCHEDULE, id, current, since, Self::typed)
    }

    pub fn assignment(
        &self,
        id: i64,
        current: AssignmentPlan,
        since: Option<Timestamp>,
    ) -> Timeline<AssignmentPlan> {
        self.timeline(PERSON_MEDICATION, id, current, since, Self::typed)
    }

    pub fn slot_times(&self, person_id: i64, current: SlotTimes) -> Timeline<SlotTimes> {
        self.timeline(SLOT_TIMES, person_id, current, None, slot_times_from)
    }

    pub fn time_zone(&self, household_id: i64, current: TimeZone) -> Timeline<TimeZone> {
        self.timeline(TIME_ZONE, household_id, current, None, |state| {
            TimeZone::get(state["time_zone"].as_str()?).ok()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_state_holds_before_the_first_change() {
        let mut revisions = Revisions::default();
        revisions.by_subject.insert(
            (TIME_ZONE.into(), 1),
            vec![
                (None, time_zone_state("Europe/London")),
                (
                    Some("2027-03-10T12:00:00Z".parse().unwrap()),
                    time_zone_state("America/New_York"),
                ),
            ],
        );
        let zones = revisions.time_zone(1, TimeZone::get("America/New_York").unwrap());
        let name = |at: &str| {
            zones
                .at(at.parse().unwrap())
                .iana_name()
                .unwrap()
                .to_string()
        };
        assert_eq!(name("2000-01-01T00:00:00Z"), "Europe/London");
        assert_eq!(name("2027-03-10T11:59:59Z"), "Europe/London");
        assert_eq!(name("2027-03-10T12:00:00Z"), "America/New_York");
        assert_eq!(zones.changes().count(), 1);
        // No history: the current state all along.
        let other = revisions.time_zone(2, TimeZone::UTC);
        assert_eq!(other.changes().count(), 0);
        assert_eq!(other.first(), &TimeZone::UTC);
        // A current state the history does not know holds from when it was set.
        let since: Timestamp = "2027-04-01T00:00:00Z".parse().unwrap();
        let plans = revisions.timeline(TIME_ZONE, 1, time_zone_state("UTC"), Some(since), |v| {
            Some(v.clone())
        });
        assert_eq!(plans.at(since), &time_zone_state("UTC"));
        assert_eq!(
            plans.at("2027-03-31T00:00:00Z".parse().unwrap()),
            &time_zone_state("America/New_York")
        );
    }
}
