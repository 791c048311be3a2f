//! How an import makes a record of each collection: through the create
//! rule its REST operation and sync batches use, with the record's
//! portable fields given as that rule's attributes. Each answers the new
//! record's row id and portable id.

use serde_json::{Value, json};

use super::records::{attributes, portable_ref, strings, typed};
use crate::auth::Actor;
use crate::care::{
    health_events, medication_takes, notification_preferences, person_medications, schedules,
};
use crate::db::WriteTx;
use crate::domain::{IfMatch, ResourceId};
use crate::error::{ApiError, Result};
use crate::household::{locations, people};
use crate::medicine::{dosage_options, medications};
use crate::portable::model::RawRecord;

/// A location through the location rule.
pub(super) fn location(tx: &WriteTx, actor: &Actor, rec: &RawRecord) -> Result<(i64, String)> {
    let attrs = typed(attributes(
        rec,
        &[("name", "name"), ("description", "description")],
    ))?;
    let made = locations::create(tx, actor, attrs)?;
    Ok((made.id, made.portable_id))
}

/// A medication through the medication rule, its stock and identifiers as
/// the bundle gives them.
pub(super) fn medication(tx: &WriteTx, actor: &Actor, rec: &RawRecord) -> Result<(i64, String)> {
    let attrs = typed(attributes(
        rec,
        &[
            ("location_portable_id", "location_id"),
            ("name", "name"),
            ("friendly_name", "friendly_name"),
            ("category", "category"),
            ("description", "description"),
            ("dose_amount", "dose_amount"),
            ("dose_unit", "dose_unit"),
            ("default_schedule_type", "default_schedule_type"),
            ("current_supply", "current_supply"),
            ("reorder_threshold", "reorder_threshold"),
            ("barcode", "barcode"),
            ("dmd_code", "dmd_code"),
            ("dmd_system", "dmd_system"),
            ("dmd_concept_class", "dmd_concept_class"),
        ],
    ))?;
    let made = medications::create(tx, actor, &crate::care::forecast::CarePlan, attrs)?;
    Ok((made.id, made.portable_id))
}

/// A dosage option of a medication through the dosage option rule.
pub(super) fn dosage_option(tx: &WriteTx, actor: &Actor, rec: &RawRecord) -> Result<(i64, String)> {
    let attrs = typed(attributes(
        rec,
        &[
            ("medication_portable_id", "medication_id"),
            ("amount", "amount"),
            ("unit", "unit"),
            ("frequency", "frequency"),
            ("description", "description"),
            ("default_for_adults", "default_for_adults"),
            ("default_for_children", "default_for_children"),
            ("default_max_daily_doses", "default_max_daily_doses"),
            (
                "default_min_hours_between_doses",
                "default_min_hours_between_doses",
            ),
            ("default_dose_cycle", "default_dose_cycle"),
            ("current_supply", "current_supply"),
            ("reorder_threshold", "reorder_threshold"),
        ],
    ))?;
    let made = dosage_options::create(tx, actor, &crate::care::forecast::CarePlan, attrs)?;
    Ok((made.option.id, made.option.portable_id))
}

/// A person, then the person's membership of each location the bundle names.
pub(super) fn person(tx: &WriteTx, actor: &Actor, rec: &RawRecord) -> Result<(i64, String)> {
    let made = create_person(tx, actor, rec)?;
    for location in strings(rec, "location_portable_ids") {
        let attrs = typed(json!({"person_id": made.1}))?;
        locations::memberships::create(tx, actor, &ResourceId::Portable(location), attrs)?;
    }
    Ok(made)
}

/// A person's notification preferences, restored through the rule that
/// sets them.
pub(super) fn notification_preferences(
    tx: &WriteTx,
    actor: &Actor,
    rec: &RawRecord,
) -> Result<(i64, String)> {
    let person = portable_ref(rec, "person_portable_id")?;
    let attrs = typed(attributes(
        rec,
        &[
            ("enabled", "enabled"),
            ("dose_due_enabled", "dose_due_enabled"),
            ("missed_dose_enabled", "missed_dose_enabled"),
            ("low_stock_enabled", "low_stock_enabled"),
            ("private_text_enabled", "private_text_enabled"),
            ("morning_time", "morning_time"),
            ("afternoon_time", "afternoon_time"),
            ("evening_time", "evening_time"),
            ("night_time", "night_time"),
        ],
    ))?;
    let made = notification_preferences::restore_for(tx, actor, &person, attrs)?;
    let id = made
        .id
        .ok_or_else(|| ApiError::internal("restored preferences have no id"))?;
    let pid = made
        .portable_id
        .ok_or_else(|| ApiError::internal("restored preferences have no id"))?;
    Ok((id, pid))
}

/// A schedule through the schedule rule.
pub(super) fn schedule(tx: &WriteTx, actor: &Actor, rec: &RawRecord) -> Result<(i64, String)> {
    let attrs = typed(attributes(
        rec,
        &[
            ("person_portable_id", "person_id"),
            ("medication_portable_id", "medication_id"),
            (
                "source_dosage_option_portable_id",
                "source_dosage_option_id",
            ),
            ("dose_amount", "dose_amount"),
            ("dose_unit", "dose_unit"),
            ("frequency", "frequency"),
            ("dose_cycle", "dose_cycle"),
            ("max_daily_doses", "max_daily_doses"),
            ("min_hours_between_doses", "min_hours_between_doses"),
            ("schedule_type", "schedule_type"),
            ("schedule_config", "schedule_config"),
            ("start_date", "start_date"),
            ("end_date", "end_date"),
            ("notes", "notes"),
        ],
    ))?;
    let made = schedules::create(tx, actor, attrs)?;
    Ok((made.record.source.id, made.record.source.portable_id))
}

/// A direct assignment through the person medication rule.
pub(super) fn person_medication(
    tx: &WriteTx,
    actor: &Actor,
    rec: &RawRecord,
) -> Result<(i64, String)> {
    let attrs = typed(attributes(
        rec,
        &[
            ("person_portable_id", "person_id"),
            ("medication_portable_id", "medication_id"),
            (
                "source_dosage_option_portable_id",
                "source_dosage_option_id",
            ),
            ("dose_amount", "dose_amount"),
            ("dose_unit", "dose_unit"),
            ("dose_cycle", "dose_cycle"),
            ("max_daily_doses", "max_daily_doses"),
            ("min_hours_between_doses", "min_hours_between_doses"),
            ("administration_kind", "administration_kind"),
            ("notes", "notes"),
        ],
    ))?;
    let made = person_medications::create(tx, actor, attrs)?;
    Ok((made.record.source.id, made.record.source.portable_id))
}

/// A take through the rule that restores one with its own time: a take
/// whose client_uuid the destination already holds is a conflict, never a
/// second take.
pub(super) fn medication_take(
    tx: &WriteTx,
    actor: &Actor,
    rec: &RawRecord,
) -> Result<(i64, String)> {
    let input = typed(attributes(
        rec,
        &[
            ("source_type", "source_type"),
            ("source_portable_id", "source_id"),
            ("taken_at", "taken_at"),
            ("client_uuid", "client_uuid"),
            ("dose_amount", "dose_amount"),
            ("dose_unit", "dose_unit"),
            (
                "taken_from_medication_portable_id",
                "taken_from_medication_id",
            ),
            ("taken_from_location_portable_id", "taken_from_location_id"),
        ],
    ))?;
    let made = medication_takes::restore(tx, actor, input)?;
    if made.replayed {
        return Err(ApiError::conflict("client_uuid", made.take.portable_id));
    }
    Ok((made.take.id, made.take.portable_id))
}

/// A health event through the health event rule.
pub(super) fn health_event(tx: &WriteTx, actor: &Actor, rec: &RawRecord) -> Result<(i64, String)> {
    let attrs = typed(attributes(
        rec,
        &[
            ("person_portable_id", "person_id"),
            ("event_kind", "event_kind"),
            ("severity", "severity"),
            ("title", "title"),
            ("notes", "notes"),
            ("started_on", "started_on"),
            ("ended_on", "ended_on"),
            ("medication_portable_ids", "medication_ids"),
        ],
    ))?;
    let made = health_events::create(tx, actor, attrs)?;
    Ok((made.id, made.portable_id))
}

/// A person through the person rule. Only set-up makes a person without a
/// date of birth (a member's own person); such a person is made the same
/// way and then given the bundle's type and capacity through the update
/// rule.
fn create_person(tx: &WriteTx, actor: &Actor, record: &RawRecord) -> Result<(i64, String)> {
    let has_birth_date = record.get("date_of_birth").is_some_and(|v| !v.is_null());
    if has_birth_date {
        let attrs = typed(attributes(
            record,
            &[
                ("name", "name"),
                ("email", "email"),
                ("date_of_birth", "date_of_birth"),
                ("person_type", "person_type"),
                ("has_capacity", "has_capacity"),
            ],
        ))?;
        let made = people::create(tx, actor, attrs)?;
        return Ok((made.id, made.portable_id));
    }
    actor.require_manager("import a person without a date of birth")?;
    let name = record
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::invalid("name", "is required"))?;
    let id = people::create_linked(tx, actor.household_id, name)?;
    let attrs = typed(attributes(
        record,
        &[
            ("email", "email"),
            ("person_type", "person_type"),
            ("has_capacity", "has_capacity"),
        ],
    ))?;
    let made = people::update(tx, actor, &ResourceId::Numeric(id), &IfMatch(None), attrs)?;
    Ok((made.id, made.portable_id))
}
