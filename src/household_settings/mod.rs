//! Household settings: the household's name, time zone and app token
//! maximum age (kept by `household`), the missed-dose grace (kept by
//! `reminders`), and, read only, how reminder delivery goes and what the
//! server's configuration keeps off. An aggregate of several areas, so it
//! sits above them all. Only owners and administrators read or change it.

pub mod model;
pub mod routes;

use crate::db::WriteTx;
use rusqlite::Connection;
use serde_json::json;

use crate::auth::Actor;
use crate::care::dose_occurrences::history;
use crate::domain::canonical_time_zone;
use crate::domain::{IfMatch, Versioned};
use crate::error::{ApiError, Problems, Result};
use crate::household::{MAX_TOKEN_AGE_DAYS, audit};
use model::{HouseholdSettings, SettingsAttributes};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// PATCH: any subset of fields.
    Update,
    /// PUT: every field required.
    Replace,
}

fn current(conn: &Connection, actor: &Actor) -> Result<HouseholdSettings> {
    let mut household = crate::household::store::find(conn, actor.household_id)?
        .ok_or_else(|| ApiError::not_found("household"))?;
    // A zone stored before names were canonicalised is answered canonically.
    if let Ok(canonical) = canonical_time_zone(&household.time_zone) {
        household.time_zone = canonical;
    }
    let grace = crate::reminders::grace_minutes(conn, actor.household_id)?;
    Ok(HouseholdSettings::of(household, grace))
}

pub fn get(conn: &Connection, actor: &Actor) -> Result<HouseholdSettings> {
    actor.require_manager("view household settings")?;
    current(conn, actor)
}

/// PATCH: changes the fields sent.
pub fn update(
    conn: &WriteTx,
    actor: &Actor,
    if_match: &IfMatch,
    attrs: SettingsAttributes,
) -> Result<HouseholdSettings> {
    change(conn, actor, if_match, attrs, Mode::Update)
}

/// PUT: sets every field; each is required.
pub fn replace(
    conn: &WriteTx,
    actor: &Actor,
    if_match: &IfMatch,
    attrs: SettingsAttributes,
) -> Result<HouseholdSettings> {
    change(conn, actor, if_match, attrs, Mode::Replace)
}

fn change(
    conn: &WriteTx,
    actor: &Actor,
    if_match: &IfMatch,
    attrs: SettingsAttributes,
    mode: Mode,
) -> Result<HouseholdSettings> {
    actor.require_manager("change household settings")?;
    let mut settings = current(conn, actor)?;
    if_match.check(&settings.etag())?;
    validate(&attrs, mode)?;
    let before = settings.clone();
    if let Some(Some(name)) = attrs.name {
        settings.name = name.trim().to_string();
    }
    if let Some(Some(time_zone)) = attrs.time_zone {
        settings.time_zone = canonical_time_zone(&time_zone)?;
    }
    if let Some(Some(days)) = attrs.app_token_max_age_days {
        settings.app_token_max_age_days = days;
    }
    if let Some(Some(minutes)) = attrs.missed_dose_grace_minutes {
        settings.missed_dose_grace_minutes = minutes;
    }
    let mut changed = Vec::new();
    if settings.name != before.name {
        changed.push("name");
    }
    if settings.time_zone != before.time_zone {
        changed.push("time_zone");
    }
    if settings.app_token_max_age_days != before.app_token_max_age_days {
        changed.push("app_token_max_age_days");
    }
    if settings.missed_dose_grace_minutes != before.missed_dose_grace_minutes {
        changed.push("missed_dose_grace_minutes");
        crate::reminders::store::set_grace_minutes(
            conn,
            actor.household_id,
            settings.missed_dose_grace_minutes,
        )?;
    }
    if changed.is_empty() {
        // Nothing to write: the version (and ETag) stays as it is.
        return Ok(settings);
    }
    settings.lock_version += 1;
    settings.updated_at = crate::domain::Timestamp::now();
    // Doses before the change keep the zone they were scheduled in.
    history::record(
        conn,
        actor.household_id,
        history::TIME_ZONE,
        actor.household_id,
        &history::time_zone_state(&before.time_zone),
        &history::time_zone_state(&settings.time_zone),
        settings.updated_at.as_str(),
    )?;
    crate::household::store::update(conn, &settings.household())?;
    audit::record(
        conn,
        actor.household_id,
        Some(actor.membership_id),
        "household.settings_updated",
        ("household", settings.id),
        json!({ "changed": changed }),
    )?;
    Ok(settings)
}

/// Checks submitted attributes, collecting every problem before answering.
fn validate(attrs: &SettingsAttributes, mode: Mode) -> Result<()> {
    let mut problems = Problems::default();
    let mut add = |field: &str, message: &str| problems.add(field, message);
    let days_range = format!("must be an integer from 1 to {MAX_TOKEN_AGE_DAYS}");
    match &attrs.name {
        None if mode == Mode::Replace => add("name", "is required"),
        Some(None) => add("name", "must not be null"),
        _ => {}
    }
    match &attrs.time_zone {
        None if mode == Mode::Replace => add("time_zone", "is required"),
        Some(None) => add("time_zone", "must not be null"),
        Some(Some(tz)) if canonical_time_zone(tz).is_err() => {
            add("time_zone", "must be a known IANA time zone name")
        }
        _ => {}
    }
    match attrs.app_token_max_age_days {
        None if mode == Mode::Replace => add("app_token_max_age_days", "is required"),
        Some(None) => add("app_token_max_age_days", "must not be null"),
        Some(Some(days)) if !(1..=MAX_TOKEN_AGE_DAYS).contains(&days) => {
            add("app_token_max_age_days", &days_range)
        }
        _ => {}
    }
    let grace = crate::reminders::MAX_GRACE_MINUTES;
    match attrs.missed_dose_grace_minutes {
        Some(None) => add("missed_dose_grace_minutes", "must not be null"),
        Some(Some(minutes)) if !(1..=grace).contains(&minutes) => add(
            "missed_dose_grace_minutes",
            &format!("must be an integer from 1 to {grace}"),
        ),
        _ => {}
    }
    problems.check("the household settings are invalid")
}
