//! Notification preferences of the signed-in member's own person: which
//! reminders they get, and the times of the four day slots (morning,
//! afternoon, evening, night) that schedule `slots` resolve to.
//!
//! The operations address the person linked to the caller's membership; a
//! membership without one has no preferences (404). Reading needs view
//! access to that person, changing needs manage access. Until the first
//! write there is no row: reads answer the defaults and never write one;
//! the first PATCH or PUT creates it (and the person's
//! `notification_preference_id` appears, so the person gets a new version).
//! If-Match is optional on changes (stale → 409).

pub mod model;
pub mod routes;
pub mod slots;
pub mod store;

use crate::db::WriteTx;
use jiff::civil::Time;
use rusqlite::Connection;

use crate::auth::{AccessLevel, Actor, access};
use crate::care::dose_occurrences::history;
use crate::care::schedule_config::{self, Slot};
use crate::care::schedules;
use crate::db::change_feed::{self, Action, Change};
use crate::domain::{IfMatch, ResourceId, Timestamp, etag};
use crate::error::{ApiError, Problems, Result};
use crate::household::people::{self, store::PersonRow};
use crate::household::store as household_store;

use model::{NotificationPreference, NotificationPreferenceAttributes};
use slots::{SlotTimes, format_time, parse_time, slot_times_of};
use store::PreferenceRow;

pub const RECORD_TYPE: &str = crate::domain::record_type::NOTIFICATION_PREFERENCE;
/// Clearing a slot time that a running schedule uses.
pub const SLOT_TIME_IN_USE: &str = "slot_time_in_use";

/// A slot time that a running schedule uses cannot be cleared (409
/// `slot_time_in_use` naming the schedules): the schedule would silently
/// have no dose at that part of the day.
fn refuse_clearing_used_slots(
    conn: &Connection,
    actor: &Actor,
    person_id: i64,
    before: &SlotTimes,
    after: &SlotTimes,
) -> Result<()> {
    let cleared: Vec<Slot> = Slot::ALL
        .iter()
        .filter_map(|name| Slot::parse(name))
        .filter(|slot| before.slot(slot.as_str()).is_some() && after.slot(slot.as_str()).is_none())
        .collect();
    if cleared.is_empty() {
        return Ok(());
    }
    let tz = household_store::time_zone(conn, actor.household_id)?;
    let today = jiff::Timestamp::now().to_zoned_datetime(tz).date();
    let mut users = Vec::new();
    let mut slots_used = Vec::new();
    for (portable_id, schedule_type, config) in
        schedules::store::running_for_person(conn, person_id, today)?
    {
        let Ok(config) = schedule_config::parse(schedule_type, &config) else {
            continue;
        };
        let used: Vec<&Slot> = cleared
            .iter()
            .filter(|s| config.slots.contains(s))
            .collect();
        if !used.is_empty() {
            users.push(portable_id);
            slots_used.extend(used.into_iter().map(|s| format!("{}_time", s.as_str())));
        }
    }
    if users.is_empty() {
        return Ok(());
    }
    slots_used.sort();
    slots_used.dedup();
    Err(ApiError::conflict(
        SLOT_TIME_IN_USE,
        format!(
            "{} cannot be cleared: schedules {} use it; change or delete those schedules first",
            slots_used.join(", "),
            users.join(", ")
        ),
    ))
}

/// The settings of a person who never saved preferences (not yet a row:
/// `id` 0, no portable id).
fn defaults(person_id: i64) -> PreferenceRow {
    let time = |t: Option<Time>| t.map(format_time);
    PreferenceRow {
        id: 0,
        portable_id: String::new(),
        person_id,
        enabled: true,
        dose_due_enabled: true,
        missed_dose_enabled: true,
        low_stock_enabled: true,
        private_text_enabled: false,
        morning_time: time(SlotTimes::DEFAULT.morning),
        afternoon_time: time(SlotTimes::DEFAULT.afternoon),
        evening_time: time(SlotTimes::DEFAULT.evening),
        night_time: time(SlotTimes::DEFAULT.night),
        lock_version: 0,
        created_at: Timestamp::now(),
        updated_at: Timestamp::now(),
    }
}

fn to_api(row: PreferenceRow, person: &PersonRow) -> NotificationPreference {
    let persisted = !row.portable_id.is_empty();
    NotificationPreference {
        id: persisted.then_some(row.id),
        portable_id: persisted.then_some(row.portable_id),
        person_id: person.id,
        person_portable_id: person.portable_id.clone(),
        enabled: row.enabled,
        dose_due_enabled: row.dose_due_enabled,
        missed_dose_enabled: row.missed_dose_enabled,
        low_stock_enabled: row.low_stock_enabled,
        private_text_enabled: row.private_text_enabled,
        morning_time: row.morning_time,
        afternoon_time: row.afternoon_time,
        evening_time: row.evening_time,
        night_time: row.night_time,
        updated_at: persisted.then_some(row.updated_at),
        lock_version: row.lock_version,
    }
}

/// The person linked to the caller's membership, reachable at `needed`
/// (404 without a linked person or outside scope, 403 below `needed`).
fn linked_person(conn: &Connection, actor: &Actor, needed: AccessLevel) -> Result<PersonRow> {
    let person_id = actor.person_id.ok_or_else(|| {
        ApiError::NotFound(
            "your membership has no linked person, so there are no notification preferences \
             to read or change"
                .into(),
        )
    })?;
    access::require_person(conn, actor, person_id, needed)?;
    people::store::find(conn, actor.household_id, &ResourceId::Numeric(person_id))?
        .ok_or_else(|| ApiError::not_found("person"))
}

/// `getNotificationPreference`: the saved preferences, or the defaults.
pub fn get(conn: &Connection, actor: &Actor) -> Result<NotificationPreference> {
    let person = linked_person(conn, actor, AccessLevel::View)?;
    let row = store::find_by_person(conn, person.id)?.unwrap_or_else(|| defaults(person.id));
    Ok(to_api(row, &person))
}

/// Applies attributes, collecting every problem. `whole` (PUT) makes the
/// five flags required.
fn apply(
    row: &mut PreferenceRow,
    attrs: NotificationPreferenceAttributes,
    whole: bool,
) -> Result<()> {
    let mut problems = Problems::default();
    let flags = [
        ("enabled", attrs.enabled, &mut row.enabled),
        (
            "dose_due_enabled",
            attrs.dose_due_enabled,
            &mut row.dose_due_enabled,
        ),
        (
            "missed_dose_enabled",
            attrs.missed_dose_enabled,
            &mut row.missed_dose_enabled,
        ),
        (
            "low_stock_enabled",
            attrs.low_stock_enabled,
            &mut row.low_stock_enabled,
        ),
        (
            "private_text_enabled",
            attrs.private_text_enabled,
            &mut row.private_text_enabled,
        ),
    ];
    for (field, value, target) in flags {
        match value {
            None if whole => problems.add(field, "is required"),
            Some(None) => problems.add(field, "must not be null"),
            Some(Some(value)) => *target = value,
            None => {}
        }
    }
    let times = [
        ("morning_time", attrs.morning_time, &mut row.morning_time),
        (
            "afternoon_time",
            attrs.afternoon_time,
            &mut row.afternoon_time,
        ),
        ("evening_time", attrs.evening_time, &mut row.evening_time),
        ("night_time", attrs.night_time, &mut row.night_time),
    ];
    for (field, value, target) in times {
        match value {
            Some(Some(text)) => match parse_time(text.trim()) {
                Some(time) => *target = Some(format_time(time)),
                None => problems.add(
                    field,
                    "must be a time of day written HH:MM or HH:MM:SS, from 00:00 to 23:59:59",
                ),
            },
            Some(None) => *target = None,
            None => {}
        }
    }
    problems.check("the notification preferences are invalid")
}

fn record(conn: &WriteTx, actor: &Actor, row: &PreferenceRow, action: Action) -> Result<()> {
    change_feed::append(
        conn,
        Change {
            household_id: actor.household_id,
            record_type: RECORD_TYPE,
            record_id: row.id,
            record_portable_id: &row.portable_id,
            action,
            person_id: Some(row.person_id),
        },
    )
}

/// Shared by PATCH and PUT: manage access to the linked person, the
/// precondition, the change, and the row created on the first write.
fn write(
    conn: &WriteTx,
    actor: &Actor,
    if_match: &IfMatch,
    attrs: NotificationPreferenceAttributes,
    whole: bool,
) -> Result<NotificationPreference> {
    let person = linked_person(conn, actor, AccessLevel::Manage)?;
    write_for(conn, actor, person, if_match, attrs, whole)
}

/// A portable import's preferences of any person of the household (the
/// REST operations only reach the caller's own person): manage access to
/// that person, then the same rule as a PUT.
pub fn restore_for(
    conn: &WriteTx,
    actor: &Actor,
    person_id: &ResourceId,
    attrs: NotificationPreferenceAttributes,
) -> Result<NotificationPreference> {
    let person = people::find_for(conn, actor, person_id, AccessLevel::Manage)?;
    write_for(conn, actor, person, &IfMatch(None), attrs, true)
}

fn write_for(
    conn: &WriteTx,
    actor: &Actor,
    mut person: PersonRow,
    if_match: &IfMatch,
    attrs: NotificationPreferenceAttributes,
    whole: bool,
) -> Result<NotificationPreference> {
    let existing = store::find_by_person(conn, person.id)?;
    match &existing {
        Some(row) => if_match.check(&etag(&row.portable_id, row.lock_version))?,
        // No version exists yet, so any If-Match names one that is gone.
        None if if_match.0.is_some() => return Err(ApiError::stale_etag()),
        None => {}
    }
    let mut row = existing.clone().unwrap_or_else(|| defaults(person.id));
    if whole {
        row.morning_time = None;
        row.afternoon_time = None;
        row.evening_time = None;
        row.night_time = None;
    }
    apply(&mut row, attrs, whole)?;
    let before = existing.as_ref().map_or(SlotTimes::DEFAULT, slot_times_of);
    let after = slot_times_of(&row);
    refuse_clearing_used_slots(conn, actor, person.id, &before, &after)?;
    let now = Timestamp::now();
    // Slot doses before the change keep their times.
    history::record(
        conn,
        actor.household_id,
        history::SLOT_TIMES,
        person.id,
        &history::slot_times_state(&before),
        &history::slot_times_state(&after),
        now.as_str(),
    )?;
    if existing.is_some() {
        row.lock_version += 1;
        row.updated_at = now;
        store::update(conn, &row)?;
        record(conn, actor, &row, Action::Update)?;
    } else {
        row.portable_id = crate::db::new_portable_id();
        row.lock_version = 1;
        row.created_at = now.clone();
        row.updated_at = now;
        row.id = store::insert(conn, actor.household_id, &row)?;
        record(conn, actor, &row, Action::Create)?;
        people::touch(conn, actor, &mut person)?;
    }
    Ok(to_api(row, &person))
}

/// `updateNotificationPreference` (PATCH): any subset of the attributes;
/// the first write starts from the defaults.
pub fn update(
    conn: &WriteTx,
    actor: &Actor,
    if_match: &IfMatch,
    attrs: NotificationPreferenceAttributes,
) -> Result<NotificationPreference> {
    write(conn, actor, if_match, attrs, false)
}

/// `replaceNotificationPreference` (PUT): all five flags required; absent
/// times become null.
pub fn replace(
    conn: &WriteTx,
    actor: &Actor,
    if_match: &IfMatch,
    attrs: NotificationPreferenceAttributes,
) -> Result<NotificationPreference> {
    write(conn, actor, if_match, attrs, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_read_strictly_and_written_with_seconds() {
        let normal = |s: &str| parse_time(s).map(format_time);
        assert_eq!(normal("07:30").as_deref(), Some("07:30:00"));
        assert_eq!(normal("07:30:15").as_deref(), Some("07:30:15"));
        assert_eq!(normal("00:00").as_deref(), Some("00:00:00"));
        assert_eq!(normal("23:59:59").as_deref(), Some("23:59:59"));
        for bad in [
            "24:00",
            "7:30",
            "07:60",
            "07:30:60",
            "07",
            "07:30:00:00",
            "ab:cd",
            "",
            "07:3O",
            "+7:30",
            "07:30:5",
        ] {
            assert_eq!(parse_time(bad), None, "{bad}");
        }
    }

    #[test]
    fn defaults_match_the_default_slots() {
        let row = defaults(1);
        assert_eq!(row.morning_time.as_deref(), Some("08:00:00"));
        assert_eq!(row.afternoon_time.as_deref(), Some("13:00:00"));
        assert_eq!(row.evening_time.as_deref(), Some("18:00:00"));
        assert_eq!(row.night_time.as_deref(), Some("22:00:00"));
        assert!(row.enabled && !row.private_text_enabled);
        assert_eq!(
            SlotTimes::DEFAULT.slot("evening"),
            Some(Time::constant(18, 0, 0, 0))
        );
        assert_eq!(SlotTimes::DEFAULT.slot("noon"), None);
    }

    #[test]
    fn put_requires_every_flag() {
        let mut row = defaults(1);
        let err = apply(&mut row, NotificationPreferenceAttributes::default(), true).unwrap_err();
        match err {
            ApiError::Validation { errors, .. } => {
                assert_eq!(errors.len(), 5, "{errors:?}")
            }
            other => panic!("{other:?}"),
        }
    }
}
